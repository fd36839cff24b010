"""Fusing keyword and vector evidence by score (pure functions, no database).

Reciprocal-rank fusion throws the scores away and adds little over keyword search; here each
channel's scores are put on one scale and mixed with a weight:

    fused = top * ((1 - w) * keyword / top + w * similarity')

where ``top`` is the best keyword score of the query (so fused scores stay on the keyword
scale the rest of the ranking — neighbour shares, priors, tie-breaks — expects), and
``similarity'`` is the cosine similarity min-max normalised over the vector candidates (the
best one 1, the weakest 0). A document found by one channel only gets 0 from the other.
The weights were chosen on the LoCoMo development set (docs/embeddings.md).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["FusionWeights", "fuse", "normalised"]

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True)
class FusionWeights:
    """The vector share ``w`` per channel (0: keyword only; 1: vector only). Messages: 0.2,
    the best pooled R@10 and R@20 on the LoCoMo dev set with all-MiniLM-L6-v2 (0.1-0.5
    compared, docs/embeddings.md). Notes and skills have no dev set: the same value."""

    messages: float = 0.2
    notes: float = 0.2
    skills: float = 0.2

    def __post_init__(self) -> None:
        for name in ("messages", "notes", "skills"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"fusion weight {name} must be within 0..1, not {value!r}")


def normalised(similar: Mapping[K, float]) -> dict[K, float]:
    """Similarities min-max scaled to 0..1 (all equal: all 1)."""
    if not similar:
        return {}
    lo = min(similar.values())
    span = max(similar.values()) - lo
    if span <= 0:
        return {k: 1.0 for k in similar}
    return {k: (s - lo) / span for k, s in similar.items()}


def fuse(keyword: Mapping[K, float], similar: Mapping[K, float], weight: float) -> dict[K, float]:
    """Keyword scores fused with vector similarities (see the module docstring); documents
    whose fused score is 0 are left out. With no vector candidates the keyword scores are
    returned unchanged."""
    if not similar or weight <= 0.0:
        return dict(keyword)
    top = max(keyword.values(), default=0.0)
    if top <= 0.0:
        top = 1.0
    vec = normalised(similar)
    fused: dict[K, float] = {}
    for key in keyword.keys() | vec.keys():
        value = top * ((1.0 - weight) * keyword.get(key, 0.0) / top + weight * vec.get(key, 0.0))
        if value > 0.0:
            fused[key] = value
    return fused
