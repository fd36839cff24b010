"""Recurrence: RFC 5545 RRULEs in the event's zone, cron and interval schedules, missed runs."""

from __future__ import annotations

import bisect
import enum
import functools
import re
import zoneinfo
from dataclasses import dataclass
from datetime import MAXYEAR, UTC, datetime, timedelta
from typing import Final

from croniter import (  # type: ignore[import-untyped]  # no py.typed, no stubs installed
    CroniterBadDateError,
    CroniterError,
    croniter,
)
from dateutil.rrule import rrule as DateutilRule
from dateutil.rrule import rrulestr

from philont.domain.kinds import ScheduleKind
from philont.errors import InvalidInputError, InvalidTimeRangeError

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

# --- time zones --------------------------------------------------------------------------------

_NON_PORTABLE_ZONES: Final = frozenset({"localtime", "posixrules"})
"""Keys some systems expose that mean "whatever this machine is set to", not an IANA zone."""


@functools.cache
def _zone_names() -> dict[str, str]:
    return {
        name.casefold(): name
        for name in zoneinfo.available_timezones()
        if name not in _NON_PORTABLE_ZONES
    }


def validate_timezone(name: object) -> str:
    """The canonical spelling of an IANA zone name (``europe/berlin`` -> ``Europe/Berlin``).

    Raises ``InvalidInputError`` for anything that is not a zone of the IANA database
    (offsets such as ``+02:00``, abbreviations such as ``CEST``, the machine-local ``localtime``).
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError(
            f"timezone must be an IANA zone name such as 'Europe/Berlin' or 'UTC', got {name!r}"
        )
    canonical = _zone_names().get(name.strip().casefold())
    if canonical is None:
        raise InvalidInputError(
            f"timezone {name!r} is not an IANA zone name (e.g. 'Europe/Berlin', "
            "'America/New_York', 'UTC')",
            timezone=name,
        )
    return canonical


def _zone(name: object) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(validate_timezone(name))


def _aware(value: object, name: str) -> datetime:
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{name} must be a datetime, got {value!r}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"{name} must be timezone-aware, got naive {value.isoformat()}")
    return value


def _plus(value: datetime, delta: timedelta) -> datetime:
    """``value + delta`` clamped to the representable range instead of overflowing."""
    try:
        return value + delta
    except OverflowError:
        return (
            datetime.max.replace(tzinfo=UTC)
            if delta > timedelta(0)
            else datetime.min.replace(tzinfo=UTC)
        )


# --- RRULE parsing and validation ----------------------------------------------------------------

DEFAULT_OCCURRENCE_LIMIT: Final = 1000
"""Most occurrences one expansion returns; counted from the window, not from the series start."""

MAX_RULE_LENGTH: Final = 1000

_FREQS: Final = ("YEARLY", "MONTHLY", "WEEKLY", "DAILY", "HOURLY", "MINUTELY", "SECONDLY")
_PART_ORDER: Final = (
    "FREQ",
    "INTERVAL",
    "COUNT",
    "UNTIL",
    "BYSECOND",
    "BYMINUTE",
    "BYHOUR",
    "BYDAY",
    "BYMONTHDAY",
    "BYYEARDAY",
    "BYWEEKNO",
    "BYMONTH",
    "BYSETPOS",
    "WKST",
)
_WEEKDAYS: Final = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")
# name -> (smallest magnitude, largest magnitude, negative values allowed)
_INT_LISTS: Final[dict[str, tuple[int, int, bool]]] = {
    "BYSECOND": (0, 59, False),
    "BYMINUTE": (0, 59, False),
    "BYHOUR": (0, 23, False),
    "BYMONTHDAY": (1, 31, True),
    "BYYEARDAY": (1, 366, True),
    "BYWEEKNO": (1, 53, True),
    "BYMONTH": (1, 12, False),
    "BYSETPOS": (1, 366, True),
}
_INT_RE: Final = re.compile(r"[+-]?\d{1,9}")
_BYDAY_RE: Final = re.compile(r"([+-]?\d{1,2})?(MO|TU|WE|TH|FR|SA|SU)")
_UNTIL_RE: Final = re.compile(r"(\d{8})(?:T(\d{6})(Z?))?")

# Frequencies whose period is a fixed wall-clock length: a series can be fast-forwarded by whole
# periods without changing which occurrences it produces (MONTHLY/YEARLY are cheap to iterate).
_FIXED_PERIOD: Final[dict[str, timedelta]] = {
    "WEEKLY": timedelta(weeks=1),
    "DAILY": timedelta(days=1),
    "HOURLY": timedelta(hours=1),
    "MINUTELY": timedelta(minutes=1),
    "SECONDLY": timedelta(seconds=1),
}

_GAP_MARGIN: Final = timedelta(days=2)
"""More than any UTC-offset jump (Samoa skipped a whole day in 2011): occurrences shifted out of a
DST gap can land this far from their wall-clock order, so scans keep going this much longer."""

_PROBE_YEARS: Final = 100


@dataclass(frozen=True)
class _Rule:
    text: str
    freq: str
    interval: int
    count: int | None
    until: str | None
    parts: tuple[tuple[str, str], ...]

    def has(self, name: str) -> bool:
        return any(key == name for key, _ in self.parts)


def _bad_rule(rule: str, reason: str) -> InvalidInputError:
    return InvalidInputError(f"invalid RRULE {rule!r}: {reason}", rrule=rule)


def _int_value(rule: str, name: str, value: str, low: int, high: int, negative: bool) -> int:
    if _INT_RE.fullmatch(value) is None:
        raise _bad_rule(rule, f"{name} value {value!r} is not an integer")
    number = int(value)
    if not low <= abs(number) <= high or (number < 0 and not negative):
        sign = "±" if negative else ""
        raise _bad_rule(rule, f"{name} value {value!r} is outside {sign}{low}..{sign}{high}")
    return number


def _normalise_part(rule: str, freq: str | None, name: str, value: str) -> str:
    if not value:
        raise _bad_rule(rule, f"{name} has no value")
    if name == "FREQ":
        if value not in _FREQS:
            raise _bad_rule(rule, f"FREQ must be one of {', '.join(_FREQS)}, got {value!r}")
        return value
    if name in ("INTERVAL", "COUNT"):
        if not value.isdigit() or int(value) < 1:
            raise _bad_rule(rule, f"{name} must be a positive integer, got {value!r}")
        return str(int(value))
    if name == "UNTIL":
        match = _UNTIL_RE.fullmatch(value)
        if match is None:
            raise _bad_rule(rule, f"UNTIL must be YYYYMMDD or YYYYMMDDTHHMMSS[Z], got {value!r}")
        try:
            _until_fields(value)
        except ValueError as exc:
            raise _bad_rule(rule, f"UNTIL {value!r} is not a valid date: {exc}") from exc
        return value
    if name == "WKST":
        if value not in _WEEKDAYS:
            raise _bad_rule(rule, f"WKST must be one of {', '.join(_WEEKDAYS)}, got {value!r}")
        return value
    items = value.split(",")
    if name == "BYDAY":
        out = []
        for item in items:
            match = _BYDAY_RE.fullmatch(item)
            if match is None:
                raise _bad_rule(rule, f"BYDAY item {item!r} is not [+/-n]MO..SU")
            ordinal, day = match.groups()
            if ordinal is None:
                out.append(day)
                continue
            n = _int_value(rule, "BYDAY", ordinal, 1, 53, True)
            if freq not in ("MONTHLY", "YEARLY"):
                raise _bad_rule(rule, "a numbered BYDAY (like 1MO) needs FREQ=MONTHLY or YEARLY")
            out.append(f"{n}{day}")
        return ",".join(out)
    low, high, negative = _INT_LISTS[name]
    return ",".join(str(_int_value(rule, name, item, low, high, negative)) for item in items)


def _check_combinations(rule: str, freq: str, names: set[str], parts: dict[str, str]) -> None:
    """The rule-part restrictions of RFC 5545 section 3.3.10."""
    if "COUNT" in names and "UNTIL" in names:
        raise _bad_rule(rule, "COUNT and UNTIL must not both be given")
    if "BYWEEKNO" in names and freq != "YEARLY":
        raise _bad_rule(rule, "BYWEEKNO is only allowed with FREQ=YEARLY")
    if "BYYEARDAY" in names and freq in ("DAILY", "WEEKLY", "MONTHLY"):
        raise _bad_rule(rule, f"BYYEARDAY is not allowed with FREQ={freq}")
    if "BYMONTHDAY" in names and freq == "WEEKLY":
        raise _bad_rule(rule, "BYMONTHDAY is not allowed with FREQ=WEEKLY")
    if (
        freq == "YEARLY"
        and "BYWEEKNO" in names
        and any(not day.isalpha() for day in parts.get("BYDAY", "").split(",") if day)
    ):
        raise _bad_rule(rule, "a numbered BYDAY is not allowed together with BYWEEKNO")
    if "BYSETPOS" in names and not any(n.startswith("BY") and n != "BYSETPOS" for n in names):
        raise _bad_rule(rule, "BYSETPOS needs another BYxxx part to select from")


@functools.lru_cache(maxsize=1024)
def _parse_rule(rule: str) -> _Rule:
    text = rule.strip().upper()
    if text.startswith("RRULE:"):
        text = text[len("RRULE:") :]
    if not text:
        raise _bad_rule(rule, "the rule is empty")
    if len(text) > MAX_RULE_LENGTH:
        raise _bad_rule(rule, f"the rule is longer than {MAX_RULE_LENGTH} characters")
    if "DTSTART" in text:
        raise _bad_rule(rule, "DTSTART must not be inside the rule; the event's start is the start")
    if any(c.isspace() for c in text) or ":" in text:
        raise _bad_rule(
            rule, "only one RRULE value is supported (no DTSTART, EXDATE, RDATE or line breaks)"
        )
    raw: dict[str, str] = {}
    for piece in text.split(";"):
        if not piece:
            continue  # tolerate a trailing or doubled ';'
        name, sep, value = piece.partition("=")
        if not sep:
            raise _bad_rule(rule, f"part {piece!r} is not NAME=VALUE")
        if name not in _PART_ORDER:
            raise _bad_rule(rule, f"unknown rule part {name!r}")
        if name in raw:
            raise _bad_rule(rule, f"{name} is given twice")
        raw[name] = value
    freq = raw.get("FREQ")
    if freq is None:
        raise _bad_rule(rule, "FREQ is required")
    freq = _normalise_part(rule, None, "FREQ", freq)
    parts = {name: _normalise_part(rule, freq, name, value) for name, value in raw.items()}
    _check_combinations(rule, freq, set(parts), parts)
    ordered = tuple((name, parts[name]) for name in _PART_ORDER if name in parts)
    parsed = _Rule(
        text=";".join(f"{name}={value}" for name, value in ordered),
        freq=freq,
        interval=int(parts.get("INTERVAL", "1")),
        count=int(parts["COUNT"]) if "COUNT" in parts else None,
        until=parts.get("UNTIL"),
        parts=ordered,
    )
    return parsed


def _rule_of(rrule: object) -> _Rule:
    if not isinstance(rrule, str):
        raise InvalidInputError(
            f"rrule must be a string like 'FREQ=WEEKLY;BYDAY=MO', got {rrule!r}"
        )
    return _parse_rule(rrule)


def _until_fields(value: str) -> tuple[datetime, bool]:
    """UNTIL as a naive datetime plus whether it was UTC (``Z``); date-only means end of day."""
    match = _UNTIL_RE.fullmatch(value)
    assert match is not None
    day, clock, zulu = match.groups()
    if clock is None:
        return datetime.strptime(day, "%Y%m%d").replace(hour=23, minute=59, second=59), False
    return datetime.strptime(day + clock, "%Y%m%d%H%M%S"), zulu == "Z"


def _until_instant(rule: _Rule, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """UNTIL as an aware instant: ``...Z`` is UTC; a date or a floating time is read in the
    event's zone (a date includes that whole local day)."""
    if rule.until is None:
        return None
    naive, is_utc = _until_fields(rule.until)
    return naive.replace(tzinfo=UTC) if is_utc else naive.replace(tzinfo=zone).astimezone(UTC)


def _build(
    rule: _Rule,
    dtstart: datetime,
    *,
    until: datetime | None = None,
    probe: bool = False,
    extra: tuple[str, ...] = (),
) -> DateutilRule:
    """A dateutil rule from a parsed one. UNTIL is passed as a UTC instant (``until``) because
    dateutil wants UTC when DTSTART carries a zone; a probe drops COUNT and UNTIL."""
    skip = {"UNTIL", "COUNT"} if probe else {"UNTIL"}
    pieces = [f"{name}={value}" for name, value in rule.parts if name not in skip]
    if not rule.has("WKST"):
        pieces.append("WKST=MO")  # RFC default; dateutil would use calendar.firstweekday()
    pieces.extend(extra)
    if until is not None:
        pieces.append("UNTIL=" + until.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ"))
    try:
        built = rrulestr(";".join(pieces), dtstart=dtstart)
    except (ValueError, TypeError, KeyError, OverflowError) as exc:
        raise _bad_rule(rule.text, str(exc)) from exc
    if not isinstance(built, DateutilRule):  # pragma: no cover - single RRULE text
        raise _bad_rule(rule.text, "not a single recurrence rule")
    return built


def _align_forward(start: datetime, target: datetime, step: timedelta) -> datetime:
    """The latest ``start + k * step`` (k >= 0) that is not after ``target``."""
    if target <= start:
        return start
    return start + ((target - start) // step) * step


def _probe_start(rule: _Rule, start: datetime) -> tuple[datetime, tuple[str, ...]]:
    """A start on the same recurrence grid as ``start`` but near the end of the calendar, plus
    the rule parts dateutil would otherwise default from the start (which moves)."""
    target = datetime(MAXYEAR - _PROBE_YEARS, 1, 1)
    if rule.freq in _FIXED_PERIOD:
        return _align_forward(start, target, _FIXED_PERIOD[rule.freq] * rule.interval), ()
    pins: list[str] = []
    if not any(rule.has(n) for n in ("BYWEEKNO", "BYYEARDAY", "BYMONTHDAY", "BYDAY")):
        pins.append(f"BYMONTHDAY={start.day}")
        if rule.freq == "YEARLY" and not rule.has("BYMONTH"):
            pins.append(f"BYMONTH={start.month}")
    if rule.freq == "MONTHLY":
        months = (target.year - start.year) * 12 + target.month - start.month
        years, month0 = divmod(start.month - 1 + months // rule.interval * rule.interval, 12)
        moved = datetime(start.year + years, month0 + 1, 1, start.hour, start.minute, start.second)
    else:
        years = (target.year - start.year) // rule.interval * rule.interval
        moved = datetime(start.year + years, 1, 1, start.hour, start.minute, start.second)
    return max(moved, start), tuple(pins)


@functools.lru_cache(maxsize=1024)
def _check_satisfiable(rule: _Rule, start: datetime) -> None:
    """Refuse rules that never produce an occurrence (``FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30``).

    dateutil would search such a rule all the way to year 9999 (seconds of CPU on every
    expansion). The probe runs the rule, on the same interval grid, over the last century of the
    calendar only, which the Gregorian 400-year cycle makes representative; it ends quickly.
    """
    moved, pins = _probe_start(rule, start)
    probe = _build(rule, moved, probe=True, extra=pins)
    try:
        first = next(iter(probe), None)
    except (ValueError, OverflowError) as exc:
        raise _bad_rule(rule.text, str(exc)) from exc
    if first is None:
        raise _bad_rule(rule.text, "no date satisfies all of its parts, so it never occurs")


def _naive_local(start: datetime, zone: zoneinfo.ZoneInfo) -> tuple[datetime, timedelta]:
    local = start.astimezone(zone)
    return local.replace(tzinfo=None, microsecond=0), timedelta(microseconds=local.microsecond)


def validate_rrule(rule: object, start: datetime, tz: object) -> str:
    """Validate an RRULE for a series starting at ``start`` in zone ``tz``; return it normalised.

    The whole of RFC 5545's RRULE as dateutil implements it is accepted (every FREQ, INTERVAL,
    COUNT, UNTIL, BYxxx, BYSETPOS, WKST), case-insensitively, with an optional ``RRULE:``
    prefix. Refused with ``InvalidInputError`` (dateutil's reason included where it has one):
    unknown or repeated parts, out-of-range values, the combinations RFC 5545 forbids (COUNT with
    UNTIL, BYWEEKNO outside YEARLY, ...), DTSTART/EXDATE/RDATE text, a rule no date satisfies,
    and an UNTIL before the first occurrence. The normalised form is upper case with the parts
    in RFC order (``FREQ=WEEKLY;BYDAY=MO,WE``), which Philont itself can still read.
    """
    start = _aware(start, "start")
    zone = _zone(tz)
    parsed = _rule_of(rule)
    naive, _ = _naive_local(start, zone)
    _check_satisfiable(parsed, naive)
    until = _until_instant(parsed, zone)
    if until is not None:
        real = _build(parsed, naive.replace(tzinfo=zone), until=until)
        if next(iter(real), None) is None:
            raise _bad_rule(parsed.text, "UNTIL lies before the first occurrence")
    return parsed.text


def _overlaps(occ_start: datetime, duration: timedelta, lo: datetime, hi: datetime) -> bool:
    return occ_start <= hi and (occ_start >= lo or occ_start + duration > lo)


def occurrences(
    start: datetime,
    end: datetime | None,
    rrule: str | None,
    tz: str,
    window_start: datetime,
    window_end: datetime,
    *,
    limit: int = DEFAULT_OCCURRENCE_LIMIT,
) -> list[tuple[datetime, datetime | None]]:
    """The occurrences ``(start, end)`` of an event that overlap ``[window_start, window_end]``,
    as aware UTC datetimes sorted by start (``end`` is None when the event has no end).

    Overlap: an occurrence is listed when it starts inside the window, or started before it and
    is still in progress at ``window_start`` (its end is after ``window_start``; ending exactly at
    the window start does not count). Zero-length occurrences count when they start inside.

    Recurrences are expanded in wall-clock time of the zone ``tz`` from the event's local start,
    so "daily at 09:00 Europe/Berlin" stays 09:00 local across DST. A local time that does not
    exist (inside a spring-forward gap) is shifted forward by the gap; an ambiguous one
    (fall-back) is its first instant. Every occurrence lasts ``end - start`` exactly (RFC 5545).
    A start that the rule itself does not produce is not an occurrence (dateutil, RFC: undefined).

    ``limit`` caps the result (the earliest ``limit`` occurrences in the window); it counts from
    the window, and daily-or-finer series without COUNT are fast-forwarded to the window, so old
    series cost as little as new ones.
    """
    start = _aware(start, "start")
    window_start = _aware(window_start, "window_start")
    window_end = _aware(window_end, "window_end")
    if end is not None and _aware(end, "end") < start:
        raise InvalidTimeRangeError(start, end, "event")
    if window_end < window_start:
        raise InvalidTimeRangeError(window_start, window_end, "window")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
    zone = _zone(tz)
    duration = end - start if end is not None else timedelta(0)

    def pair(at: datetime) -> tuple[datetime, datetime | None]:
        return at, (at + duration if end is not None else None)

    if rrule is None:
        first = start.astimezone(UTC)
        return [pair(first)] if _overlaps(first, duration, window_start, window_end) else []

    parsed = _rule_of(rrule)
    naive, sub_second = _naive_local(start, zone)
    _check_satisfiable(parsed, naive)
    dtstart = naive
    if parsed.count is None and parsed.freq in _FIXED_PERIOD:
        step = _FIXED_PERIOD[parsed.freq] * parsed.interval
        scan_from = _plus(window_start, -duration - _GAP_MARGIN).astimezone(zone)
        # One period of slack: dateutil drops occurrences before DTSTART within its first period.
        dtstart = _align_forward(naive, scan_from.replace(tzinfo=None) - step, step)
    built = _build(parsed, dtstart.replace(tzinfo=zone), until=_until_instant(parsed, zone))

    found: list[datetime] = []
    seen: set[datetime] = set()
    stop_at = _plus(window_end, _GAP_MARGIN)
    for occ in built:
        at = occ.astimezone(UTC) + sub_second
        if at > stop_at:
            break
        if at in seen or not _overlaps(at, duration, window_start, window_end):
            continue
        if len(found) >= limit and at >= found[-1]:
            continue
        seen.add(at)
        bisect.insort(found, at)
        if len(found) > limit:
            seen.discard(found.pop())
        if len(found) >= limit:
            stop_at = min(stop_at, _plus(found[-1], _GAP_MARGIN))
    return [pair(at) for at in found]


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
        raise InvalidInputError(
            f"interval_ms must be an integer number of milliseconds, got "
            f"{type(value).__name__} {value!r}",
            interval_ms=value,
        )
    if not MIN_INTERVAL_MS <= value <= MAX_INTERVAL_MS:
        raise InvalidInputError(
            f"interval_ms must be between {MIN_INTERVAL_MS} (1 s) and {MAX_INTERVAL_MS}, "
            f"got {value}",
            interval_ms=value,
        )
    return value


@functools.lru_cache(maxsize=512)
def _validate_cron(expr: str) -> str:
    fields = expr.split()
    if len(fields) != 5:
        raise InvalidInputError(
            f"cron expression {expr!r} must have exactly 5 fields (minute hour day-of-month "
            f"month day-of-week), it has {len(fields)}",
            cron=expr,
        )
    if "@" in expr:
        raise InvalidInputError(f"cron expression {expr!r} must not contain '@'", cron=expr)
    normalised = " ".join(fields)
    try:
        croniter(normalised, datetime(2000, 1, 1)).get_next(datetime)
    except CroniterBadDateError as exc:
        raise InvalidInputError(f"cron expression {expr!r} never fires", cron=expr) from exc
    except (CroniterError, ValueError, TypeError, KeyError) as exc:
        raise InvalidInputError(f"invalid cron expression {expr!r}: {exc}", cron=expr) from exc
    return normalised


def validate_cron(expr: object) -> str:
    """A standard 5-field cron expression, whitespace-normalised; ``InvalidInputError`` for
    anything else (6-7 fields, ``@daily`` macros, hashed ``H`` fields, dates that never come)."""
    if not isinstance(expr, str):
        raise InvalidInputError(f"cron expression must be a string, got {expr!r}")
    return _validate_cron(expr)


def _next_cron(fields: str, zone: zoneinfo.ZoneInfo, after: datetime) -> datetime:
    # croniter steps naive wall-clock time of the zone; each wall time is then placed in the
    # zone (gap times shift forward, ambiguous ones take their first instant) and the first
    # instant strictly after ``after`` wins. So each local wall time fires at most once.
    local = after.astimezone(zone).replace(tzinfo=None)
    it = croniter(fields, local)
    for _ in range(_CRON_MAX_STEPS):
        candidate: datetime = it.get_next(datetime)
        instant = candidate.replace(tzinfo=zone).astimezone(UTC)
        if instant > after:
            return instant
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
        return now + timedelta(milliseconds=recurrence.interval_ms)
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

    None for a one-shot. Anchored to the schedule's grid, never to ``now``: an interval
    schedule's runs stay at ``due + k * interval``, a cron schedule's on its cron times. See
    ``MissedRunPolicy`` for what happens to occurrences between ``due`` and ``now``.
    """
    due = _aware(due, "due").astimezone(UTC)
    now = _aware(now, "now").astimezone(UTC)
    policy = MissedRunPolicy(policy)
    if recurrence.kind is ScheduleKind.INTERVAL:
        assert recurrence.interval_ms is not None
        step = timedelta(milliseconds=recurrence.interval_ms)
        if policy is MissedRunPolicy.CATCH_UP or now < due:
            return due + step
        return due + ((now - due) // step + 1) * step
    if recurrence.kind is ScheduleKind.CRON:
        assert recurrence.cron is not None
        after = due if policy is MissedRunPolicy.CATCH_UP else max(due, now)
        return _next_cron(recurrence.cron, _zone(recurrence.timezone), after)
    return None
