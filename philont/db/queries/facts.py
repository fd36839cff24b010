"""Lean reads of ``memory_facts``."""

from __future__ import annotations

from typing import NamedTuple

from philont.db.backend import Raw
from philont.db.models import Fact
from philont.db.stored_values import register
from philont.db.types import kinds_of

TABLE = "memory_facts"


class CurrentFact(NamedTuple):
    """A current version (not superseded, not forgotten) as stored: epoch ms, JSON text."""

    namespace: str
    key: str
    value_json: str
    confidence: float
    fact_kind: str
    created_at: int
    occurred_at: int | None
    valid_from: int | None
    valid_until: int | None
    last_accessed_at: int | None
    decay_tau_days: float | None


register(CurrentFact, kinds_of(Fact))


def current(raw: Raw) -> list[CurrentFact]:
    """Every current version, by namespace, key and age (``FactService.list``'s order)."""
    return raw.named(
        CurrentFact,
        "SELECT namespace, key, value_json, confidence, fact_kind, created_at, occurred_at,"
        " valid_from, valid_until, last_accessed_at, decay_tau_days FROM memory_facts"
        f"{raw.where('superseded_by IS NULL AND forgotten_at IS NULL')}"
        " ORDER BY namespace, key, created_at",
    )
