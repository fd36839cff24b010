"""Recurrence of schedules: cron and interval grids, missed runs; calendar RRULEs live in
:mod:`philont.domain.series` (re-exported here)."""

from __future__ import annotations

import enum
import functools
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from croniter import (  # type: ignore[import-untyped]  # no py.typed, no stubs installed
    CroniterBadDateError,
    CroniterError,
    croniter,
)

from philont.domain import timepolicy
from philont.domain.kinds import ScheduleKind
from philont.domain.series import DEFAULT_OCCURRENCE_LIMIT, occurrences, validate_rrule
from philont.domain.timepolicy import validate_timezone
from philont.errors import InvalidInputError, TimeOutOfRangeError

__all__ = [
    "CRON_PREFIX",
    "DEFAULT_OCCURRENCE_LIMIT",
    "INTERVAL_PREFIX",
    "MAX_INTERVAL_MS",
    "MIN_INTERVAL_MS",
    "ONE_SHOT",
    "MissedRunPolicy",
    "Recurrence",
    "ScheduleKind",
    "cron_schedule",
    "every",
    "first_run",
    "next_after",
    "next_cron",
    "occurrences",
    "parse_schedule_expr",
    "validate_cron",
    "validate_interval_ms",
    "validate_rrule",
    "validate_timezone",
]


def _zone(name: object) -> zoneinfo.ZoneInfo:
    return timepolicy.zone(name)


def _aware(value: object, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidInputError.of(name, f"must be a datetime, got {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError.of(name, f"must be timezone-aware, got naive {value.isoformat()}")
    return value


# --- schedules: interval and cron ---------------------------------------------------------------

INTERVAL_PREFIX: Final = "interval:"
CRON_PREFIX: Final = "cron:"
MIN_INTERVAL_MS: Final = 1000
MAX_INTERVAL_MS: Final = 10 * 366 * 86_400_000
"""About ten years: longer intervals belong in a calendar event."""

_INTERVAL_EXPR_RE: Final = re.compile(r"interval:(\d{1,15})")
_CRON_MAX_STEPS: Final = 16


class MissedRunPolicy(enum.StrEnum):
    """What happens to occurrences that passed while nobody polled (downtime, a long run).

    ``SKIP`` (the default, and what the scheduler uses): the overdue occurrence fires once, late,
    and the next run is the first occurrence of the schedule's own grid strictly after now
    (interval: ``anchor + k * interval``; cron: the cron grid). Missed occurrences are skipped,
    never fired in a burst, and the grid never drifts by run durations.

    ``CATCH_UP``: the next run is the grid occurrence right after the one that was due, so every
    missed occurrence fires, one per poll (for callers that must account for each one).
    """

    SKIP = "skip"
    CATCH_UP = "catch_up"


@dataclass(frozen=True)
class Recurrence:
    """How a schedule repeats: once, every ``interval_ms``, or on a cron grid in ``timezone``."""

    kind: ScheduleKind
    interval_ms: int | None = None
    cron: str | None = None
    timezone: str | None = None

    @property
    def expr(self) -> str | None:
        """The ``memory_schedules.cron_expr`` text: NULL, ``interval:<ms>`` (Philont's format)
        or ``cron:<5 fields>@<zone>`` (ours; Philont reads it as a one-shot and won't crash)."""
        if self.kind is ScheduleKind.INTERVAL:
            return f"{INTERVAL_PREFIX}{self.interval_ms}"
        if self.kind is ScheduleKind.CRON:
            return f"{CRON_PREFIX}{self.cron}@{self.timezone}"
        return None


ONE_SHOT: Final = Recurrence(ScheduleKind.ONCE)


def validate_interval_ms(value: object) -> int:
    """An interval in whole milliseconds, ``MIN_INTERVAL_MS`` to ``MAX_INTERVAL_MS``.

    Only real ints: ``True``, ``5000.0`` and ``"5000"`` are refused instead of being coerced
    (the original concatenated a string interval into a date thousands of years away).
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError.of(
            "interval_ms",
            f"must be an integer number of milliseconds, got {type(value).__name__} {value!r}",
            interval_ms=value,
        )
    if not MIN_INTERVAL_MS <= value <= MAX_INTERVAL_MS:
        raise InvalidInputError.of(
            "interval_ms",
            f"must be between {MIN_INTERVAL_MS} (1 s) and {MAX_INTERVAL_MS}, got {value}",
            interval_ms=value,
        )
    return value


@functools.lru_cache(maxsize=512)
def _validate_cron(expr: str) -> str:
    fields = expr.split()
    if len(fields) != 5:
        raise InvalidInputError.of(
            "cron",
            f"cron expression {expr!r} must have exactly 5 fields (minute hour day-of-month "
            f"month day-of-week), it has {len(fields)}",
            cron=expr,
        )
    if "@" in expr:
        raise InvalidInputError.of(
            "cron", f"cron expression {expr!r} must not contain '@'", cron=expr
        )
    normalised = " ".join(fields)
    try:
        croniter(normalised, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterBadDateError as exc:
        raise InvalidInputError.of(
            "cron", f"cron expression {expr!r} never fires", cron=expr
        ) from exc
    except (CroniterError, ValueError, TypeError, KeyError) as exc:
        raise InvalidInputError.of(
            "cron", f"invalid cron expression {expr!r}: {exc}", cron=expr
        ) from exc
    return normalised


def validate_cron(expr: object) -> str:
    """A standard 5-field cron expression, whitespace-normalised; ``InvalidInputError`` for
    anything else (6-7 fields, ``@daily`` macros, hashed ``H`` fields, dates that never come)."""
    if not isinstance(expr, str):
        raise InvalidInputError.of("cron", f"must be a string, got {expr!r}")
    return _validate_cron(expr)


def _cron_start(after: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The naive wall time croniter starts after. In the second pass of a repeated hour (clocks
    went back; ``after`` has fold=1) every wall time of the repeat fired in the first pass, and
    croniter would step through a whole hour of times already gone: start at the repeat's end
    (found to the second between ``after`` and ``after`` plus the repeat's length)."""
    local = after.astimezone(zone)
    repeat = (local.replace(fold=0).utcoffset() or timedelta(0)) - (
        local.utcoffset() or timedelta(0)
    )
    if not local.fold or repeat <= timedelta(0):
        return local.replace(tzinfo=None)
    lo, hi = after, after + repeat  # in the repeat, and past it
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) / 2
        lo, hi = (mid, hi) if mid.astimezone(zone).fold else (lo, mid)
    return (hi.astimezone(zone) - timedelta(seconds=1)).replace(tzinfo=None)


def _next_cron(fields: str, zone: zoneinfo.ZoneInfo, after: datetime) -> datetime:
    # croniter steps naive wall-clock time of the zone; each wall time is then placed in the
    # zone (gap times shift forward, ambiguous ones take their first instant) and the first
    # instant strictly after ``after`` wins. So each local wall time fires at most once.
    it = croniter(fields, _cron_start(after, zone))
    try:
        for _ in range(_CRON_MAX_STEPS):
            candidate: datetime = it.get_next(datetime)
            instant = candidate.replace(tzinfo=zone).astimezone(UTC)
            if instant > after:
                return timepolicy.instant(instant, "next cron time")
    except (CroniterError, OverflowError, ValueError) as exc:
        raise TimeOutOfRangeError(
            f"cron expression {fields!r} has no time after {after.isoformat()} within the "
            "supported calendar"
        ) from exc
    raise InvalidInputError(f"cron expression {fields!r} found no time after {after.isoformat()}")


def next_cron(expr: str, after: datetime, tz: str = "UTC") -> datetime:
    """The first time strictly after ``after`` that the 5-field cron ``expr`` names, evaluated in
    the zone ``tz`` (``0 9 * * *`` in Europe/Berlin is 09:00 Berlin time in summer and winter),
    returned as an aware UTC datetime."""
    fields = validate_cron(expr)
    zone = _zone(tz)
    return _next_cron(fields, zone, _aware(after, "after").astimezone(UTC))


def every(interval_ms: object) -> Recurrence:
    """A validated interval recurrence."""
    return Recurrence(ScheduleKind.INTERVAL, interval_ms=validate_interval_ms(interval_ms))


def cron_schedule(expr: object, tz: object = "UTC") -> Recurrence:
    """A validated cron recurrence evaluated in the IANA zone ``tz``."""
    return Recurrence(ScheduleKind.CRON, cron=validate_cron(expr), timezone=validate_timezone(tz))


def parse_schedule_expr(expr: str | None) -> Recurrence:
    """Read ``memory_schedules.cron_expr``: NULL or empty is a one-shot, ``interval:<ms>`` with a
    positive integer (Philont's rule; rows it wrote may be below our 1 s creation minimum),
    ``cron:<5 fields>@<zone>``. Anything else raises ``InvalidInputError``."""
    if expr is None or expr == "":
        return ONE_SHOT
    match = _INTERVAL_EXPR_RE.fullmatch(expr)
    if match is not None:
        ms = int(match.group(1))
        if 0 < ms <= MAX_INTERVAL_MS:
            return Recurrence(ScheduleKind.INTERVAL, interval_ms=ms)
    elif expr.startswith(CRON_PREFIX):
        body, _, tz = expr[len(CRON_PREFIX) :].rpartition("@")
        return cron_schedule(body, tz) if body else cron_schedule(tz, "UTC")
    raise InvalidInputError(f"cannot read schedule expression {expr!r}", cron_expr=expr)


def first_run(recurrence: Recurrence, now: datetime) -> datetime:
    """The first run of a recurring schedule created at ``now``: ``now + interval`` (which
    anchors its grid) or the first cron time strictly after ``now``."""
    now = _aware(now, "now").astimezone(UTC)
    if recurrence.kind is ScheduleKind.INTERVAL:
        assert recurrence.interval_ms is not None
        return timepolicy.shifted(now, timedelta(milliseconds=recurrence.interval_ms), "first run")
    if recurrence.kind is ScheduleKind.CRON:
        assert recurrence.cron is not None
        return _next_cron(recurrence.cron, _zone(recurrence.timezone), now)
    raise InvalidInputError("a one-shot schedule's first run is its 'at' time")


def next_after(
    recurrence: Recurrence,
    *,
    due: datetime,
    now: datetime,
    policy: MissedRunPolicy = MissedRunPolicy.SKIP,
) -> datetime | None:
    """The next run after the occurrence ``due`` fired (or was claimed) at ``now``.

    None for a one-shot, and when the next run would lie past the supported calendar (the
    schedule has ended). Anchored to the schedule's grid, never to ``now``: an interval
    schedule's runs stay at ``due + k * interval``, a cron schedule's on its cron times. See
    ``MissedRunPolicy`` for what happens to occurrences between ``due`` and ``now``.
    """
    due = _aware(due, "due").astimezone(UTC)
    now = _aware(now, "now").astimezone(UTC)
    policy = MissedRunPolicy(policy)
    try:
        if recurrence.kind is ScheduleKind.INTERVAL:
            assert recurrence.interval_ms is not None
            step = timedelta(milliseconds=recurrence.interval_ms)
            if policy is MissedRunPolicy.CATCH_UP or now < due:
                return timepolicy.shifted(due, step, "next run")
            return timepolicy.shifted(due, ((now - due) // step + 1) * step, "next run")
        if recurrence.kind is ScheduleKind.CRON:
            assert recurrence.cron is not None
            after = due if policy is MissedRunPolicy.CATCH_UP else max(due, now)
            return _next_cron(recurrence.cron, _zone(recurrence.timezone), after)
    except TimeOutOfRangeError:
        return None  # the next run would lie past the supported calendar: the schedule ends
    return None
