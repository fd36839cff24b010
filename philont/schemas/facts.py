"""Read model of a fact version (layer 2: namespaced key -> JSON value, versioned)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from philont.db.types import to_epoch_ms
from philont.domain import facts
from philont.domain.kinds import FactKind
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

    def is_expired_at(self, now: datetime) -> bool:
        """Whether this is a state whose validity window closed before ``now``."""
        until = self.valid_until
        return facts.is_expired(
            fact_kind=self.fact_kind.value,
            valid_until_ms=None if until is None else to_epoch_ms(until),
            now_ms=to_epoch_ms(now),
        )

    def is_valid_at(self, now: datetime) -> bool:
        """Whether this holds at ``now`` (a state inside its window; an event always)."""
        start, until = self.valid_from, self.valid_until
        return facts.is_valid_at(
            fact_kind=self.fact_kind.value,
            valid_from_ms=None if start is None else to_epoch_ms(start),
            valid_until_ms=None if until is None else to_epoch_ms(until),
            at_ms=to_epoch_ms(now),
        )

    def time_tag(self) -> str:
        """``[event@… | recorded …]`` or ``[state from → until | recorded …]`` (UTC ISO)."""

        def ms(value: datetime | None) -> int | None:
            return None if value is None else to_epoch_ms(value)

        return facts.time_tag(
            fact_kind=self.fact_kind.value,
            created_ms=to_epoch_ms(self.created_at),
            occurred_ms=ms(self.occurred_at),
            valid_from_ms=ms(self.valid_from),
            valid_until_ms=ms(self.valid_until),
        )
