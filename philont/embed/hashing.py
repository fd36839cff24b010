"""A deterministic, dependency-free embedder for tests, demos and CI: feature hashing.

It knows no meaning: words and their character trigrams are hashed into signed buckets, so
texts sharing words or word pieces ("deploy", "deployment") get similar vectors. It makes the
whole vector path (storage, search, fusion, backfill) testable without a model; recall
quality must be measured with a real model (scripts/bench_recall.py --embedder).
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from collections.abc import Sequence

from philont.embed.base import noise_floor
from philont.errors import InvalidInputError

__all__ = ["HashEmbedder"]

_WORD = re.compile(r"[^\W_]+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


class HashEmbedder:
    """Signed feature hashing of words (weight 1) and their trigrams (weight 0.5) into
    ``dimension`` buckets; CJK text contributes its characters and character pairs."""

    def __init__(self, dimension: int = 64) -> None:
        if (
            isinstance(dimension, bool)
            or not isinstance(dimension, int)
            or not 8 <= dimension <= 4096
        ):
            raise InvalidInputError.of(
                "dimension", f"must be a whole number from 8 to 4096, got {dimension!r}"
            )
        self._dimension = dimension

    @property
    def model_id(self) -> str:
        return f"philont-hash-v1-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def similarity_floor(self) -> float:
        """Unrelated texts share no feature: their cosine is hash-collision noise, of standard
        deviation ``1/sqrt(dimension)``; the floor is
        :func:`~philont.embed.base.noise_floor` (four of those)."""
        return noise_floor(self._dimension)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        for feature, weight in _features(text):
            digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
            value = int.from_bytes(digest, "little")
            sign = 1.0 if value & 1 else -1.0
            vector[(value >> 1) % self._dimension] += sign * weight
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector


def _features(text: str) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for word in _WORD.findall(text.lower()):
        if _CJK.search(word):
            chars = [c for c in word]
            out += [(f"c:{c}", 0.5) for c in chars]
            out += [(f"w:{a}{b}", 1.0) for a, b in itertools.pairwise(chars)]
            continue
        out.append((f"w:{word}", 1.0))
        padded = f"<{word}>"
        out += [(f"t:{padded[i : i + 3]}", 0.5) for i in range(len(padded) - 2)]
    return out
