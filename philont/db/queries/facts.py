"""Lean reads of ``memory_facts``."""

from __future__ import annotations

from typing import NamedTuple

from philont.db.backend import Raw
from philont.db.models import Fact
from philont.db.ordering import in_code_points
from philont.db.stored_values import register
from philont.db.types import kinds_of

TABLE = "memory_facts"


class FactVersion(NamedTuple):
    """A version of a key as stored: epoch ms, JSON text."""

    id: int
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


register(FactVersion, kinds_of(Fact))

_REALS = ("confidence", "decay_tau_days")


def _columns(raw: Raw) -> str:
    return ", ".join(raw.real(c) if c in _REALS else c for c in FactVersion._fields)


def current(raw: Raw) -> list[FactVersion]:
    """Every current version (not superseded, not forgotten), by namespace, key and age
    (``FactService.list``'s order)."""
    return raw.named(
        FactVersion,
        f"SELECT {_columns(raw)} FROM memory_facts"
        f"{raw.where('superseded_by IS NULL AND forgotten_at IS NULL')}"
        f" ORDER BY {in_code_points('namespace', raw.postgres)},"
        f" {in_code_points('key', raw.postgres)}, created_at",
    )


def others_of_lapsed(raw: Raw, at_ms: int, recorded_by_ms: int) -> list[FactVersion]:
    """The other versions, recorded by ``recorded_by_ms`` and not forgotten by then, of every
    key whose current state is outside its window at ``at_ms`` (the SQL of
    ``philont.services.fact_base.holding``'s one extra read; text in a time column orders
    after every number, as it reads in Python: :mod:`philont.db.stored_values`)."""
    m = raw.mark
    columns = ", ".join(f"v.{c}" for c in FactVersion._fields)
    return raw.named(
        FactVersion,
        f"SELECT {columns} FROM memory_facts c JOIN memory_facts v"
        f" ON v.namespace = c.namespace AND v.key = c.key{raw.same_agent('v', 'c')}"
        + raw.where(
            "c.superseded_by IS NULL AND c.forgotten_at IS NULL AND c.fact_kind != 'event'",
            f"(c.valid_from > {m} OR c.valid_until < {m})",
            f"v.id != c.id AND v.created_at <= {m}",
            f"(v.forgotten_at IS NULL OR v.forgotten_at > {m})",
            alias="c",
        ),
        (at_ms, at_ms, recorded_by_ms, recorded_by_ms),
    )
