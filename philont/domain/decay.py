"""Relevance decay of facts over time: namespace time constants, pinning and forget candidates."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from datetime import datetime, timedelta

from philont.errors import InvalidInputError

__all__ = [
    "DEFAULT_FORGET_THRESHOLD",
    "DEFAULT_TAU_DAYS",
    "MS_PER_DAY",
    "PIN_SENTINEL",
    "Decayer",
    "decayer",
    "effective_tau_days",
    "inherited_tau",
    "is_forget_candidate",
    "is_pinned",
    "namespace_tau_days",
    "score",
    "score_days",
    "score_fact",
    "validate_tau_override",
]

PIN_SENTINEL = -1.0
"""The ``decay_tau_days`` value stored for a pinned fact (any negative value means pinned)."""

DEFAULT_TAU_DAYS = 365.0
"""Time constant, in days, of namespaces without a more specific rule."""

DEFAULT_FORGET_THRESHOLD = 0.05
"""Scores strictly below this make a fact a candidate for (human-confirmed) forgetting."""

_NAMESPACE_TAU_DAYS: dict[str, float] = {
    "user": math.inf,
    "project": 60.0,
    "context": 1.0,
    "session": 1.0,
}

MS_PER_DAY = 86_400_000
"""Milliseconds per day: ``age_ms / MS_PER_DAY`` is the exact quotient rounded once, the same
float as ``timedelta(milliseconds=age_ms) / timedelta(days=1)``."""

_DAY = timedelta(days=1)


@functools.lru_cache(maxsize=4096)
def namespace_tau_days(namespace: str) -> float:
    """Return the default time constant (days) of a namespace, from its root before the first '.'.

    ``user`` never decays (infinity), ``project`` uses 60, ``context`` and ``session`` use 1, and
    every other root uses :data:`DEFAULT_TAU_DAYS`. Matching is case-sensitive.

    Cached: the memory prefix scores every current fact on every turn, and a store holds few
    namespaces (the rule depends on the text alone).
    """
    root = namespace.split(".", 1)[0]
    return _NAMESPACE_TAU_DAYS.get(root, DEFAULT_TAU_DAYS)


def is_pinned(decay_tau_days: float | None) -> bool:
    """Return whether a stored ``decay_tau_days`` marks the fact as pinned (not None and < 0)."""
    return decay_tau_days is not None and decay_tau_days < 0


def validate_tau_override(value: float, name: str = "decay_tau_days") -> float:
    """Return ``value`` if it is acceptable as a new ``decay_tau_days`` override, else raise.

    Accepted: a finite number of days > 0, or exactly :data:`PIN_SENTINEL` (returned as a float).
    Refused with :class:`~philont.errors.InvalidInputError`: 0 (the original computes ``0/0`` =
    NaN for it), other negative numbers (only the sentinel pins), infinity (pin instead), NaN,
    booleans and non-numbers. ``None`` ("use the namespace default") is the caller's business.
    ``name``: the argument the refusal names (``set_tau`` calls it ``days``).
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInputError.of(name, f"must be a number of days, got {value!r}", value=value)
    tau = float(value)
    if tau == PIN_SENTINEL:
        return PIN_SENTINEL
    if not math.isfinite(tau) or tau <= 0:
        raise InvalidInputError.of(
            name,
            f"must be a finite number of days > 0, or {PIN_SENTINEL} to pin; got {value!r}",
            value=value,
        )
    return tau


def inherited_tau(stored: object) -> float | None:
    """Return the ``decay_tau_days`` a fact's new version takes from the key's current version
    when the write gives none.

    A pin (any negative, as :func:`is_pinned` reads it) or an infinite τ (never decays) comes
    over as :data:`PIN_SENTINEL`; a valid override as is. A value no write of ours can set (0, or
    NaN written by the original or by hand, or a stored value that is no number at all) is not
    carried on: the new version decays by its namespace (``None``) instead of inheriting a
    setting that scores it 0 or cannot be scored.
    """
    if isinstance(stored, bool) or not isinstance(stored, int | float):
        return None
    if math.isnan(stored) or stored == 0:
        return None
    if stored < 0 or math.isinf(stored):
        return PIN_SENTINEL
    return float(stored)


def effective_tau_days(namespace: str, decay_tau_days: float | None) -> float:
    """Return the time constant (days) that applies to a fact.

    Pinned (negative) -> infinity; an explicit value >= 0 is used as is (a stored 0 means "decays
    instantly", see :func:`score`); ``None`` -> :func:`namespace_tau_days`. A NaN cannot come out
    of SQLite, so it is refused as invalid input rather than guessed at.
    """
    if decay_tau_days is None:
        return namespace_tau_days(namespace)
    if math.isnan(decay_tau_days):
        raise InvalidInputError("decay_tau_days is NaN", value=decay_tau_days)
    if decay_tau_days < 0:
        return math.inf
    return float(decay_tau_days)


def score(*, confidence: float, age: timedelta, tau_days: float) -> float:
    """Return ``confidence * exp(-max(0, age_days) / tau_days)``; see :func:`score_days`."""
    return score_days(confidence=confidence, age_days=age / _DAY, tau_days=tau_days)


def score_days(*, confidence: float, age_days: float, tau_days: float) -> float:
    """Return ``confidence * exp(-max(0, age_days) / tau_days)``, the age given in days (ranking
    code holding stored epoch milliseconds passes ``age_ms / MS_PER_DAY``).

    An infinite ``tau_days`` returns ``confidence`` unchanged. ``tau_days == 0`` decays
    instantly: ``confidence`` at age <= 0, 0.0 at any positive age (the original yields NaN at
    age 0, and a NaN score is never forgettable). A negative or NaN ``tau_days`` raises
    :class:`~philont.errors.InvalidInputError`: callers resolve pins with
    :func:`effective_tau_days` first. (:func:`decayer` of ``tau_days``.)
    """
    return decayer(tau_days)(confidence, age_days)


Decayer = Callable[[float, float], float]
"""``(confidence, age_days) -> score`` at one time constant (:func:`decayer`)."""


def decayer(tau_days: float) -> Decayer:
    """:func:`score_days` at ``tau_days``, checked once: ranking many facts resolves each
    time constant once and scores every fact of it with one positional call."""
    if math.isnan(tau_days) or tau_days < 0:
        raise InvalidInputError(
            f"tau_days must be >= 0 (resolve pins first), got {tau_days!r}", tau_days=tau_days
        )
    if math.isinf(tau_days):
        return _undecayed
    if tau_days == 0:
        return _instant
    exp = math.exp

    def decayed(confidence: float, age_days: float) -> float:
        return confidence * exp(-(0.0 if age_days < 0 else age_days) / tau_days)

    return decayed


def _undecayed(confidence: float, age_days: float) -> float:
    return confidence * 1.0  # a number, also for a stored confidence of another kind


def _instant(confidence: float, age_days: float) -> float:
    return confidence if age_days <= 0 else 0.0


def _require_aware(value: datetime, name: str) -> None:
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError.of(name, f"must be a timezone-aware datetime, got {value!r}")


def score_fact(
    *,
    namespace: str,
    confidence: float,
    created_at: datetime,
    last_accessed_at: datetime | None,
    decay_tau_days: float | None,
    now: datetime,
) -> float:
    """Return the decayed relevance of a fact at ``now``.

    The age is measured from ``last_accessed_at``, or from ``created_at`` when the fact was
    never accessed; a future anchor counts as age 0. All datetimes must be timezone-aware
    (:class:`~philont.errors.InvalidInputError` otherwise).
    """
    _require_aware(created_at, "created_at")
    _require_aware(now, "now")
    if last_accessed_at is not None:
        _require_aware(last_accessed_at, "last_accessed_at")
    anchor = last_accessed_at if last_accessed_at is not None else created_at
    tau = effective_tau_days(namespace, decay_tau_days)
    return score(confidence=confidence, age=now - anchor, tau_days=tau)


def is_forget_candidate(score: float, threshold: float = DEFAULT_FORGET_THRESHOLD) -> bool:
    """Return whether ``score`` is strictly below ``threshold`` (NaN never is).

    This looks at the score only: pinned facts keep their confidence as score, so a pinned fact
    with a tiny confidence would qualify. Callers must exclude pinned facts (:func:`is_pinned`).
    """
    return score < threshold
