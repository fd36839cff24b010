"""Read model of a fact version (layer 2: namespaced key -> JSON value, versioned)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from philont.domain.kinds import FactKind
from philont.domain.timeparse import iso
from philont.schemas.base import ReadModel


class FactRecord(ReadModel):
    """One stored version of a fact.

    ``active`` is true for the current version of its key (not superseded, not forgotten).
    ``pinned`` mirrors ``decay_tau_days < 0``. ``score`` is only filled by the calls that rank
    or score (``list(ranked=True)``, ``forget_candidates``); it is ``None`` otherwise.
    """

    id: str
    namespace: str
    key: str
    value: Any
    confidence: float
    fact_kind: FactKind
    created_at: datetime
    occurred_at: datetime | None
    valid_from: datetime | None
    valid_until: datetime | None
    last_accessed_at: datetime | None
    decay_tau_days: float | None
    pinned: bool
    superseded_by: str | None
    supersedes: str | None
    forgotten_at: datetime | None
    active: bool
    score: float | None = None

    def time_tag(self) -> str:
        """``[event@… | recorded …]`` or ``[state from → until | recorded …]`` (UTC ISO)."""
        if self.fact_kind == FactKind.EVENT:
            when = iso(self.occurred_at) if self.occurred_at else "?"
            return f"[event@{when} | recorded {iso(self.created_at)}]"
        start = iso(self.valid_from) if self.valid_from else "?"
        end = iso(self.valid_until) if self.valid_until else "∞"
        return f"[state {start} → {end} | recorded {iso(self.created_at)}]"
