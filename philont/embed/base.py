"""The embedder protocol and the one check every embedder's output passes before it is stored."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from philont.errors import EmbedderError

__all__ = ["Embedder", "checked_vectors"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed dimension.

    ``model_id`` names the model (and anything that changes its vectors, such as a prefix or
    a truncation) exactly enough that two embedders with the same id give comparable vectors:
    the index records it and refuses vectors from any other id. ``embed`` returns one vector
    per text, in order; it may be called with up to a backfill batch of texts at once.
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]: ...


def checked_vectors(embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
    """``embedder.embed(texts)`` as unit-length float lists, or :class:`EmbedderError` when the
    embedder gave the wrong number of vectors, a vector of the wrong dimension or a value that
    is not a finite number. An all-zero vector (an empty text, say) stays all zeros."""
    if not texts:
        return []
    vectors = embedder.embed(list(texts))
    if len(vectors) != len(texts):
        raise EmbedderError(
            f"embedder {embedder.model_id!r} returned {len(vectors)} vectors for {len(texts)} texts"
        )
    out: list[list[float]] = []
    for vector in vectors:
        values = [float(x) for x in vector]
        if len(values) != embedder.dimension:
            raise EmbedderError(
                f"embedder {embedder.model_id!r} returned a vector of dimension {len(values)}, "
                f"not its declared {embedder.dimension}"
            )
        norm_sq = math.fsum(x * x for x in values)
        if not math.isfinite(norm_sq):
            raise EmbedderError(f"embedder {embedder.model_id!r} returned a non-finite value")
        norm = math.sqrt(norm_sq)
        out.append([x / norm for x in values] if norm > 0 else values)
    return out
