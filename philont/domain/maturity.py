"""Skill maturity grades: the promotion/demotion ladder, disuse decay and callability rules."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from datetime import datetime, timedelta

from philont.errors import InvalidInputError

__all__ = [
    "CONFIRMED_MIN_SUCCESS",
    "DEFAULT_DISUSE_AFTER",
    "DEPRECATED_CONSECUTIVE_FAILURES",
    "DEPRECATED_FAILURE_RATIO",
    "DEPRECATED_RATIO_MIN_SUCCESS",
    "STABLE_MAX_FAILURE_RATIO",
    "STABLE_MIN_SUCCESS",
    "Grade",
    "Outcome",
    "callable_skill",
    "caveat",
    "disuse_grade",
    "is_callable",
    "next_grade",
    "parse_grade",
    "recipe_is_callable",
    "stored_as",
    "string_list",
]


class Grade(enum.StrEnum):
    """The maturity of a skill; the values are the strings stored in ``memory_skills.maturity``."""

    PLAYBOOK = "playbook"
    DRAFT = "draft"
    CONFIRMED = "confirmed"
    STABLE = "stable"
    DEPRECATED = "deprecated"


class Outcome(enum.StrEnum):
    """The observed result of using a skill once."""

    SUCCESS = "success"
    FAILURE = "failure"


CONFIRMED_MIN_SUCCESS = 2
STABLE_MIN_SUCCESS = 5
STABLE_MAX_FAILURE_RATIO = 0.1
DEPRECATED_CONSECUTIVE_FAILURES = 3
DEPRECATED_RATIO_MIN_SUCCESS = 5
DEPRECATED_FAILURE_RATIO = 0.3

DEFAULT_DISUSE_AFTER = timedelta(days=90)
"""How long a confirmed or stable skill may go unused before it drops one tier."""

_ONE_TIER_DOWN: dict[Grade, Grade] = {
    Grade.STABLE: Grade.CONFIRMED,
    Grade.CONFIRMED: Grade.DRAFT,
    Grade.DRAFT: Grade.DRAFT,
}

_CALLABLE = frozenset({Grade.DRAFT, Grade.CONFIRMED, Grade.STABLE})

_CAVEATS: dict[Grade, str] = {
    Grade.PLAYBOOK: "[lesson only — not callable]",
    Grade.DRAFT: "[draft — not yet proven, verify before relying on it]",
    Grade.CONFIRMED: "[confirmed]",
    Grade.STABLE: "[stable]",
    Grade.DEPRECATED: "[deprecated — proven unreliable, use only as a counter-example]",
}


def _failure_ratio(successes: int, failures: int) -> float:
    # Failures per success (not per use), as in the original; max() avoids dividing by zero.
    return failures / max(1, successes)


def next_grade(
    current: Grade,
    *,
    successes: int,
    failures: int,
    consecutive_failures: int,
    outcome: Outcome,
) -> Grade:
    """Return the grade after one recorded outcome; the counters already include that outcome.

    * ``playbook`` and ``deprecated`` never move automatically.
    * On success, promote at most one tier: draft -> confirmed when ``successes >= 2`` and
      ``failures == 0``; confirmed -> stable when ``successes >= 5`` and
      ``failures / max(1, successes) < 0.1``; otherwise unchanged.
    * On failure: ``consecutive_failures >= 3`` -> deprecated; else ``successes >= 5`` and
      ``failures / max(1, successes) > 0.3`` -> deprecated; else demote one tier
      (stable -> confirmed, confirmed -> draft, draft stays draft).

    Negative counters raise :class:`~philont.errors.InvalidInputError`.
    """
    for name, count in (
        ("successes", successes),
        ("failures", failures),
        ("consecutive_failures", consecutive_failures),
    ):
        if count < 0:
            raise InvalidInputError.of(name, f"must be >= 0, got {count}")

    if current in (Grade.PLAYBOOK, Grade.DEPRECATED):
        return current

    ratio = _failure_ratio(successes, failures)
    if outcome == Outcome.SUCCESS:
        if current == Grade.DRAFT and successes >= CONFIRMED_MIN_SUCCESS and failures == 0:
            return Grade.CONFIRMED
        if (
            current == Grade.CONFIRMED
            and successes >= STABLE_MIN_SUCCESS
            and ratio < STABLE_MAX_FAILURE_RATIO
        ):
            return Grade.STABLE
        return current

    if consecutive_failures >= DEPRECATED_CONSECUTIVE_FAILURES:
        return Grade.DEPRECATED
    if successes >= DEPRECATED_RATIO_MIN_SUCCESS and ratio > DEPRECATED_FAILURE_RATIO:
        return Grade.DEPRECATED
    return _ONE_TIER_DOWN[current]


def is_callable(grade: Grade) -> bool:
    """Return whether a skill of this grade may be handed out for use (draft/confirmed/stable)."""
    return grade in _CALLABLE


_STORED = {g.value: g for g in Grade}


def caveat(grade: Grade) -> str:
    """Return the short bracketed tag shown next to a skill of this grade."""
    return _CAVEATS[grade]


def parse_grade(value: str | None, fallback: Grade = Grade.DRAFT) -> Grade:
    """Return the grade whose stored value is exactly ``value``, or ``fallback`` if none is."""
    if value is None:
        return fallback
    try:
        return Grade(value)
    except ValueError:
        return fallback


def _require_aware(value: datetime, name: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError.of(name, f"must be a timezone-aware datetime, got {value!r}")


def disuse_grade(
    current: Grade,
    *,
    last_used_at: datetime | None,
    created_at: datetime,
    now: datetime,
    after: timedelta = DEFAULT_DISUSE_AFTER,
) -> Grade:
    """Return the grade after disuse decay: one tier down for a long-unused proven skill.

    A stable or confirmed skill whose ``last_used_at`` (``created_at`` when never used) lies
    strictly more than ``after`` before ``now`` drops ONE tier (stable -> confirmed,
    confirmed -> draft). Every other grade, and every recently used skill, is returned unchanged.

    This function is stateless, so it cannot tell "unused for 200 days" from "unused for 200
    days and already demoted once". The service must re-anchor the clock after a drop: it stores
    when it demoted the skill and passes the later of that moment and the last use as
    ``last_used_at``. A long-unused skill then loses one tier per ``after`` period, not all tiers
    at once.

    Datetimes must be timezone-aware and ``after`` positive
    (:class:`~philont.errors.InvalidInputError` otherwise).
    """
    _require_aware(created_at, "created_at")
    _require_aware(now, "now")
    if last_used_at is not None:
        _require_aware(last_used_at, "last_used_at")
    if after <= timedelta(0):
        raise InvalidInputError.of("after", f"must be a positive duration, got {after}")

    if current not in (Grade.STABLE, Grade.CONFIRMED):
        return current
    anchor = last_used_at if last_used_at is not None else created_at
    if now - anchor > after:
        return _ONE_TIER_DOWN[current]
    return current


def _has_content(items: list[str] | None) -> bool:
    return items is not None and any(item.strip() for item in items)


def stored_as(grades: Iterable[Grade]) -> tuple[list[str], bool]:
    """What a stored grade may be to read as one of ``grades`` (:func:`parse_grade`): these
    stored values, and (the bool) any text that is no grade's value when ``grades`` holds the
    fallback, draft. For SQL filters that must keep what a read of the row would show."""
    chosen = set(grades)
    wanted = [g.value for g in Grade if g in chosen]
    return wanted, Grade.DRAFT.value in wanted


def callable_skill(
    *,
    maturity: str | Grade,
    recipe_revision: int | None,
    steps: list[str] | str | None,
    verification: str | None,
    tool_policy: list[str] | str | None,
) -> bool:
    """Whether a stored skill may be handed out for use: a callable grade and, when it has a
    recipe (``recipe_revision`` above 0; 0 or None means none), a complete one. ``steps`` and
    ``tool_policy`` may be the stored JSON text (read only when the grade allows a call)."""
    # an unknown stored grade reads as draft (parse_grade), as the skill's record reads it:
    # the prefix and searches left out a skill that use() hands out
    grade = maturity if isinstance(maturity, Grade) else parse_grade(maturity)
    if not is_callable(grade):
        return False
    if recipe_revision is None or recipe_revision <= 0:
        return True
    return recipe_is_callable(
        steps=string_list(steps), verification=verification, tool_policy=string_list(tool_policy)
    )


def string_list(value: object) -> list[str]:
    """The strings of a stored list (JSON text or already parsed); anything else is empty.
    Defensive: other software writes these columns too."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return []
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def recipe_is_callable(
    *, steps: list[str] | None, verification: str | None, tool_policy: list[str] | None
) -> bool:
    """Return whether a recipe is complete enough to be called as a skill.

    It needs at least one non-blank step, a non-blank verification and at least one non-blank
    tool-policy entry. Blank entries do not count, so ``["  "]`` is as empty as ``[]``.
    """
    return (
        _has_content(steps)
        and verification is not None
        and bool(verification.strip())
        and _has_content(tool_policy)
    )
