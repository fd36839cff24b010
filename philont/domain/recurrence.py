"""Recurrence of schedules: cron and interval grids, missed runs; calendar RRULEs live in
:mod:`philont.domain.series` (re-exported here)."""

from __future__ import annotations

import enum
import functools
import re
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from croniter import (  # type: ignore[import-untyped]  # no py.typed, no stubs installed
    CroniterBadDateError,
    CroniterError,
    croniter,
)

from philont.domain import timepolicy, wallclock
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
    "ONCE_PREFIX",
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
    "one_shot",
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
    return timepolicy.forward_in_gap(value)  # a skipped time is read forward, whatever its fold


# --- schedules: interval and cron ---------------------------------------------------------------

INTERVAL_PREFIX: Final = "interval:"
CRON_PREFIX: Final = "cron:"
ONCE_PREFIX: Final = "once@"
MIN_INTERVAL_MS: Final = 1000
MAX_INTERVAL_MS: Final = 10 * 366 * 86_400_000
"""About ten years: longer intervals belong in a calendar event."""

_INTERVAL_EXPR_RE: Final = re.compile(r"interval:(\d{1,15})", re.ASCII)
_CRON_TICK: Final = timedelta(minutes=1)
"""The resolution of cron: two cron times are at least this far apart on the wall clock."""
_CRON_SCAN_STEPS: Final = 3 * 1441 + 16
"""Cron times one search may step through. Away from a change of UTC offset it takes one or
two; next to one it starts up to the change's size before ``after`` and looks as far past the
first time found (at most a day each way: Samoa skipped a whole day in 2011), one step per
matching minute."""


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
    """How a schedule repeats: once, every ``interval_ms``, or on a cron grid in ``timezone``.
    A one-shot's ``timezone`` is the zone its time was given in (for showing it), or None."""

    kind: ScheduleKind
    interval_ms: int | None = None
    cron: str | None = None
    timezone: str | None = None

    @property
    def expr(self) -> str | None:
        """The ``memory_schedules.cron_expr`` text: NULL, ``interval:<ms>`` (Philont's format),
        ``cron:<5 fields>@<zone>`` or ``once@<zone>`` (ours; Philont reads both as a one-shot
        and won't crash: for ``once@<zone>`` that is exactly what it is)."""
        if self.kind is ScheduleKind.INTERVAL:
            return f"{INTERVAL_PREFIX}{self.interval_ms}"
        if self.kind is ScheduleKind.CRON:
            return f"{CRON_PREFIX}{self.cron}@{self.timezone}"
        return None if self.timezone is None else f"{ONCE_PREFIX}{self.timezone}"


ONE_SHOT: Final = Recurrence(ScheduleKind.ONCE)


def one_shot(tz: object = "UTC") -> Recurrence:
    """A one-shot whose time was given in the IANA zone ``tz``: it keeps the zone so listings
    show its wall time there; a UTC zone is not kept (the row is then Philont's, NULL)."""
    name = validate_timezone(tz)
    if timepolicy.is_utc(name):
        return ONE_SHOT
    return Recurrence(ScheduleKind.ONCE, timezone=name)


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


_CRON_NAMES: Final = {
    name: number
    for names, first in (
        ("jan feb mar apr may jun jul aug sep oct nov dec", 1),
        ("sun mon tue wed thu fri sat", 0),
    )
    for number, name in enumerate(names.split(), first)
}
_CRON_RANGE: Final = re.compile(r"(\w+)-(\w+)(?:/\d+)?", re.ASCII)


def _cron_value(text: str) -> int | None:
    low = text.lower()
    return int(low) if low.isascii() and low.isdigit() else _CRON_NAMES.get(low)


def _one_value_ranges(field: str) -> str:
    """A field with each range that names one value (``1-1``, ``mon-1``, ``5-5/2``) written as
    that value: croniter reads such a range as ``*``, every value (``0 9 * * 1-1`` fired
    daily)."""
    parts = []
    for part in field.split(","):
        found = _CRON_RANGE.fullmatch(part)
        first = None if found is None else _cron_value(found[1])
        if first is not None and found is not None and first == _cron_value(found[2]):
            part = found[1]
        parts.append(part)
    return ",".join(parts)


def _croniter(fields: str, start: datetime) -> Any:
    """croniter over normalised fields, with cron's rule for the two day fields: a day matches
    day-of-month OR day-of-week only when both are restricted, i.e. neither contains ``*`` (or
    croniter's ``?``); otherwise both must match. (croniter ORs them whenever neither is exactly
    ``*``, so ``0 9 */2 * 1``, every other day that is a Monday, fired on odd days and on
    Mondays.)"""
    _, _, days, _, weekdays = fields.split()
    either = not any(star in field for field in (days, weekdays) for star in "*?")
    return croniter(fields, start, day_or=either)


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
    if not expr.isascii():  # another script's digits: croniter's own message named none
        raise InvalidInputError.of(
            "cron", f"cron expression {expr!r} must be written in ASCII (digits 0-9)", cron=expr
        )
    normalised = " ".join(_one_value_ranges(field) for field in fields)
    try:
        _croniter(normalised, datetime(2000, 1, 1)).get_next(datetime)
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
    """A standard 5-field cron expression, whitespace-normalised (a range naming one value
    written as that value); ``InvalidInputError`` for anything else (6-7 fields, ``@daily``
    macros, hashed ``H`` fields, dates that never come)."""
    if not isinstance(expr, str):
        raise InvalidInputError.of("cron", f"must be a string, got {expr!r}")
    return _validate_cron(expr)


def _next_cron(fields: str, zone: zoneinfo.ZoneInfo, after: datetime) -> datetime:
    # croniter steps naive wall-clock time of the zone; each wall time is placed in the zone
    # (wallclock.place: gap times shift forward, ambiguous ones take their first instant) and
    # the earliest instant strictly after ``after`` wins, so each local wall time fires once.
    # Near a change of offset wall order is not instant order (a gap time lands one gap later,
    # at or after real times that follow it; a repeated hour's second pass comes after its
    # first): the search starts and stops with that margin (nothing elsewhere).
    it = _croniter(fields, wallclock.local_bound(after, zone, -1))
    best: datetime | None = None
    stop = datetime.max
    cause: Exception | None = None
    try:
        for _ in range(_CRON_SCAN_STEPS):
            wall: datetime = it.get_next(datetime)
            if wall > stop:
                break
            at = wallclock.place(wall, zone)
            if at is None:
                if wall.year > 5000:
                    break  # the supported calendar ends
                continue
            if at > after and (best is None or at < best):
                best, stop = at, wallclock.local_bound(at, zone, +1)
                if stop < wall + _CRON_TICK:
                    break  # no offset change nearby: no later cron time can come before it
        else:
            if best is None:
                raise InvalidInputError(
                    f"cron expression {fields!r} found no time after {after.isoformat()}"
                )
    except (CroniterError, OverflowError, ValueError) as exc:
        cause = exc  # croniter left the calendar while searching
    if best is None:
        raise TimeOutOfRangeError(
            f"cron expression {fields!r} has no time after {after.isoformat()} within the "
            "supported calendar"
        ) from cause
    return best


def next_cron(expr: str, after: datetime, tz: str = "UTC") -> datetime:
    """The first time strictly after ``after`` that the 5-field cron ``expr`` names, evaluated in
    the zone ``tz`` (``0 9 * * *`` in Europe/Berlin is 09:00 Berlin time in summer and winter),
    returned as an aware UTC datetime. Each wall time fires once: a time the clock skips moves
    forward by the gap, a time it shows twice fires at its first instant (see
    :mod:`philont.domain.wallclock`)."""
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
    ``cron:<5 fields>@<zone>``, ``once@<zone>``. Anything else raises ``InvalidInputError``."""
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
    elif expr.startswith(ONCE_PREFIX):
        return one_shot(expr[len(ONCE_PREFIX) :])
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
