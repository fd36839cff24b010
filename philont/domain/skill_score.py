"""Skill ranking score: use volume x Laplace-smoothed success rate x recency (Philont's scoreSkill).

``score = ln(2 + use_count) * (successes + 1) / (successes + failures + 2) * recency`` where

* ``recency = 0.1`` for a never-used skill (``last_used_at`` is None);
* otherwise ``recency = exp(-max(0, days since last use) / tau)`` with ``tau = 30`` days for
  positive skills and ``90`` for negative ones.

Philont calls ``tau`` a "half-life" (spec Q-K6), but it is an e-folding time: the factor is
``1/e ~ 0.37`` after ``tau`` days, not 0.5. We keep Philont's formula, so skills rank as they did
there, and name the constants for what they are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Protocol

from philont.domain.kinds import SkillKind
from philont.errors import InvalidInputError

__all__ = [
    "NEGATIVE_RECENCY_TAU_DAYS",
    "NEVER_USED_RECENCY",
    "POSITIVE_RECENCY_TAU_DAYS",
    "recency",
    "recency_factor",
    "score_idle",
    "score_skill",
    "score_stored",
]

POSITIVE_RECENCY_TAU_DAYS = 30.0
"""E-folding time of the recency factor of a positive skill (Philont's "half-life" of 30)."""

NEGATIVE_RECENCY_TAU_DAYS = 90.0
"""E-folding time for negative skills: lessons about what to avoid stay relevant longer."""

NEVER_USED_RECENCY = 0.1
"""Recency factor of a skill that was never used."""

_DAY = timedelta(days=1)
_NEGATIVE = SkillKind.NEGATIVE  # an enum member looked up once: every score reads it


def _require_aware(value: datetime, name: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError.of(name, f"must be a timezone-aware datetime, got {value!r}")


def _require_count(value: int, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError.of(name, f"must be an integer >= 0, got {value!r}")


def recency(idle_days: float | None, kind: SkillKind) -> float:
    """Return ``exp(-max(0, idle_days) / tau)``, the days since the last use given (0.1 if
    never used, ``None``)."""
    return _recency(idle_days, kind == _NEGATIVE)


def _recency(idle_days: float | None, negative: bool) -> float:
    if idle_days is None:
        return NEVER_USED_RECENCY
    tau = NEGATIVE_RECENCY_TAU_DAYS if negative else POSITIVE_RECENCY_TAU_DAYS
    return math.exp(-max(0.0, idle_days) / tau)


def _idle_days(last_used_at: datetime | None, now: datetime) -> float | None:
    _require_aware(now, "now")
    if last_used_at is None:
        return None
    _require_aware(last_used_at, "last_used_at")
    return (now - last_used_at) / _DAY


def recency_factor(*, last_used_at: datetime | None, now: datetime, kind: SkillKind) -> float:
    """Return ``exp(-days_since_last_use / tau)`` (0.1 if never used; future uses count as now)."""
    return recency(_idle_days(last_used_at, now), kind)


def score_skill(
    *,
    use_count: int,
    success_count: int,
    failure_count: int,
    last_used_at: datetime | None,
    now: datetime,
    kind: SkillKind = SkillKind.POSITIVE,
) -> float:
    """Return the ranking score of a skill (higher ranks first); see the module docstring.

    Counters must be integers >= 0 and datetimes timezone-aware
    (:class:`~philont.errors.InvalidInputError` otherwise). A never-used new skill scores
    ``ln 2 * 0.5 * 0.1 ~ 0.0347``.
    """
    idle_days = _idle_days(last_used_at, now)
    return score_idle(
        use_count=use_count,
        success_count=success_count,
        failure_count=failure_count,
        idle_days=idle_days,
        kind=kind,
    )


def score_idle(
    *,
    use_count: int,
    success_count: int,
    failure_count: int,
    idle_days: float | None,
    kind: SkillKind = SkillKind.POSITIVE,
) -> float:
    """:func:`score_skill` with the time since the last use given in days (``None``: never
    used), for ranking code holding stored epoch milliseconds (``idle_ms / MS_PER_DAY``)."""
    return _score(use_count, success_count, failure_count, idle_days, kind == _NEGATIVE)


def _score(
    use_count: int,
    success_count: int,
    failure_count: int,
    idle_days: float | None,
    negative: bool,
) -> float:
    """:func:`score_idle` by position (:func:`score_stored` calls it once a row)."""
    if not (  # the usual case in one test; anything else gets the precise checks
        type(use_count) is int
        and type(success_count) is int
        and type(failure_count) is int
        and min(use_count, success_count, failure_count) >= 0
    ):
        _require_count(use_count, "use_count")
        _require_count(success_count, "success_count")
        _require_count(failure_count, "failure_count")
    volume = math.log(2 + use_count)
    success_rate = (success_count + 1) / (success_count + failure_count + 2)
    return volume * success_rate * _recency(idle_days, negative)


class StoredSkill(Protocol):
    """The stored values :func:`score_stored` reads of a skill: its counters, its last use
    (epoch ms, None: never) and its kind as stored text."""

    @property
    def use_count(self) -> int: ...
    @property
    def success_count(self) -> int: ...
    @property
    def failure_count(self) -> int: ...
    @property
    def last_used_at(self) -> int | None: ...
    @property
    def kind(self) -> str: ...


_US_PER_DAY = 86_400_000_000


def score_stored(skills: Iterable[StoredSkill], now_us: int) -> list[float]:
    """:func:`score_idle` of each stored skill at ``now_us`` (epoch microseconds): idle for
    ``(now_us - last_used_at * 1000) / 86_400_000_000`` days (None: never used), negative when
    its stored kind is ``negative`` (any other text reads as positive). For the memory
    prefix, which ranks every skill on every turn."""
    score = _score
    return [
        score(
            sk.use_count,
            sk.success_count,
            sk.failure_count,
            None if sk.last_used_at is None else (now_us - sk.last_used_at * 1000) / _US_PER_DAY,
            sk.kind == "negative",
        )
        for sk in skills
    ]
