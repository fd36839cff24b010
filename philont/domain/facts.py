"""Rules of facts over stored values (epoch ms, stored kind text): expiry, ranking, time tag.

One implementation each, used by every path that needs it: FactService, the memory prefix, the
tools and the CLI (through FactRecord).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

from philont.domain import decay
from philont.domain.timeparse import iso
from philont.domain.timepolicy import MAX_INSTANT, MIN_INSTANT

__all__ = ["StoredFact", "is_expired", "is_valid_at", "rank_score", "rank_valid", "time_tag"]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_expired(*, fact_kind: str, valid_until_ms: int | None, now_ms: int) -> bool:
    """A state whose validity window closed before ``now_ms``. Events never expire."""
    return fact_kind != "event" and valid_until_ms is not None and valid_until_ms < now_ms


def is_valid_at(
    *, fact_kind: str, valid_from_ms: int | None, valid_until_ms: int | None, at_ms: int
) -> bool:
    """Whether a fact holds at ``at_ms``: a state inside its validity window (an open bound is
    open; neither expired nor yet to begin); an event always (it is an occurrence, kept)."""
    if fact_kind == "event":
        return True
    if valid_from_ms is not None and valid_from_ms > at_ms:
        return False
    return not is_expired(fact_kind=fact_kind, valid_until_ms=valid_until_ms, now_ms=at_ms)


def rank_score(
    *,
    namespace: str,
    confidence: float,
    created_ms: int,
    accessed_ms: int | None,
    tau_override: float | None,
    now_ms: int,
) -> float:
    """The decayed relevance of a fact at ``now_ms``: its confidence decayed over the days since
    it was last accessed (or created), with its namespace's time constant unless overridden
    (pinned facts never decay; see :mod:`philont.domain.decay`)."""
    anchor = created_ms if accessed_ms is None else accessed_ms
    return decay.score_days(
        confidence=confidence,
        age_days=(now_ms - anchor) / decay.MS_PER_DAY,
        tau_days=decay.effective_tau_days(namespace, tau_override),
    )


class StoredFact(Protocol):
    """The stored values :func:`rank_valid` reads of a fact (epoch ms, the stored kind text)."""

    @property
    def namespace(self) -> str: ...
    @property
    def confidence(self) -> float: ...
    @property
    def fact_kind(self) -> str: ...
    @property
    def created_at(self) -> int: ...
    @property
    def last_accessed_at(self) -> int | None: ...
    @property
    def decay_tau_days(self) -> float | None: ...
    @property
    def valid_from(self) -> int | None: ...
    @property
    def valid_until(self) -> int | None: ...


F = TypeVar("F", bound=StoredFact)


def rank_valid(facts: Iterable[F], now_ms: int) -> list[tuple[float, F]]:
    """``(-rank_score, fact)`` of each fact :func:`is_valid_at` ``now_ms``, in the given order:
    the two rules over many stored facts at once, for the memory prefix (which ranks every
    current fact on every turn). A value that breaks a rule raises as the rule does."""
    return [
        (
            -rank_score(
                namespace=f.namespace,
                confidence=f.confidence,
                created_ms=f.created_at,
                accessed_ms=f.last_accessed_at,
                tau_override=f.decay_tau_days,
                now_ms=now_ms,
            ),
            f,
        )
        for f in facts
        if is_valid_at(
            fact_kind=f.fact_kind,
            valid_from_ms=f.valid_from,
            valid_until_ms=f.valid_until,
            at_ms=now_ms,
        )
    ]


def _iso(ms: int | None, missing: str) -> str:
    if ms is None:
        return missing
    try:
        return iso(_EPOCH + timedelta(0, 0, 0, ms))
    except (OverflowError, ValueError):  # a stored time past the calendar: its nearest end
        return iso(MAX_INSTANT if ms > 0 else MIN_INSTANT)


def time_tag(
    *,
    fact_kind: str,
    created_ms: int,
    occurred_ms: int | None,
    valid_from_ms: int | None,
    valid_until_ms: int | None,
) -> str:
    """``[event@… | recorded …]`` or ``[state from → until | recorded …]`` (UTC ISO), the tag
    the model reads next to a fact."""
    if fact_kind == "event":
        return f"[event@{_iso(occurred_ms, '?')} | recorded {_iso(created_ms, '')}]"
    return (
        f"[state {_iso(valid_from_ms, '?')} → {_iso(valid_until_ms, '∞')}"
        f" | recorded {_iso(created_ms, '')}]"
    )
