"""The embedder protocol and the one check every embedder's output passes before it is stored."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from philont.errors import EmbedderError

BATCH_SIZE = 64
"""Texts per model call and per committed batch (:func:`philont.embed.backfill`)."""

__all__ = [
    "KNOWN_FLOORS",
    "NOISE_SDS",
    "Embedder",
    "checked_vectors",
    "known_floor",
    "noise_floor",
    "similarity_floor",
]

NOISE_SDS = 4.0
"""The default floor, in standard deviations of the cosine of two unrelated random directions
(``1/sqrt(dimension)``): one unrelated item in about 30,000 passes it by chance."""

KNOWN_FLOORS: dict[str, float] = {"sentence-transformers/all-MiniLM-L6-v2": 0.35}
"""Cosine floors of models measured here (docs/embeddings.md, "Similarity floor"), by model
name. all-MiniLM-L6-v2: on the four LoCoMo dev conversations, nonsense and off-topic queries
reach at most 0.32 against any turn, while 99% of real questions have a turn above 0.355."""


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


def similarity_floor(embedder: Embedder) -> float:
    """The cosine below which a stored item is not similar to a query at all (it is not a
    vector candidate): the embedder's own ``similarity_floor`` when it has one, else
    :data:`NOISE_SDS` ``/ sqrt(dimension)``, the noise of unrelated directions. That default
    suits embeddings spread evenly over the sphere (the hashing embedder); a learned model's
    unrelated texts are more alike (all-MiniLM-L6-v2: about 0.1-0.3), so a model should state
    its floor (the adapters take ``similarity_floor=``; :data:`KNOWN_FLOORS` has measured
    ones)."""
    declared = getattr(embedder, "similarity_floor", None)
    if declared is None:
        return noise_floor(embedder.dimension)
    try:
        floor = float(declared)
    except (TypeError, ValueError):
        floor = math.nan
    if not (math.isfinite(floor) and -1.0 <= floor < 1.0):
        raise EmbedderError(
            f"embedder {embedder.model_id!r} states a similarity floor of {declared!r};"
            " a cosine floor must be at least -1 and below 1"
        )
    return floor


def noise_floor(dimension: int) -> float:
    """:data:`NOISE_SDS` ``/ sqrt(dimension)``, at most 0.95 (below 18 dimensions nothing
    stands out from the noise: only a near-copy passes)."""
    return min(NOISE_SDS / math.sqrt(dimension), 0.95)


def known_floor(model_name: str) -> float | None:
    """The measured floor of ``model_name`` (a model hub name), if it is in the table."""
    return KNOWN_FLOORS.get(model_name)


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
