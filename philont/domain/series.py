"""Calendar series: an event's RRULE checked once, before anything is written, and expanded over
a window in the event's own zone with bounded work.

Both sides use the same arithmetic (:mod:`philont.domain.rrule_engine`) and the same limit
(``EVENT_WORK_LIMIT``), so an event that was accepted can always be listed, and an event that
could not be listed is refused when it is written. Rows that never passed the check (written
by another program or by hand) cannot hang or crash a listing either: the expansion stops at
its work limit, and a series simply ends where the supported calendar ends.
"""

from __future__ import annotations

import bisect
import functools
import math
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Final

from philont.domain import timepolicy, wallclock
from philont.domain.rrule import Freq, Rule, bad_rule, parse_rule, until_fields
from philont.domain.rrule_engine import Series, Work, WorkLimitExceeded
from philont.domain.rrule_grid import DAY, UNIT
from philont.errors import InvalidInputError, InvalidTimeRangeError, TimeOutOfRangeError

__all__ = [
    "CHECK_WORK_LIMIT",
    "DEFAULT_OCCURRENCE_LIMIT",
    "EVENT_WORK_LIMIT",
    "MAX_LISTING_LIMIT",
    "EventCheck",
    "Expansion",
    "all_day_dates",
    "check_event",
    "expand",
    "keep_skipped_time",
    "occurrences",
    "validate_rrule",
]

MAX_LISTING_LIMIT: Final = 1000
"""Most events one calendar listing returns (the service's cap, the command line's --limit)."""
DEFAULT_OCCURRENCE_LIMIT: Final = 1000
"""Most occurrences one expansion returns; counted from the window, not from the series start."""

EVENT_WORK_LIMIT: Final = 50_000
"""Steps one event may cost when a listing expands it (well under a second even for the
slowest kind of step)."""

CHECK_WORK_LIMIT: Final = EVENT_WORK_LIMIT // 2
"""Steps the check on write may take: finding the first occurrence and counting through a COUNT
costs what entering any later window costs, so half the read limit leaves the other half for
the window itself."""


@dataclass(frozen=True)
class EventCheck:
    """What :func:`check_event` found: the normalised rule (None for a one-shot), the first
    occurrence, the last one of a COUNT series (None when open-ended) and the steps it took."""

    rrule: str | None
    first: datetime
    last: datetime | None
    steps: int


@dataclass(frozen=True)
class Expansion:
    """The occurrences of one event in a window.

    ``items``: the earliest ``limit`` as ``(start, end)`` in UTC (``end`` None without an end),
    sorted. ``total``: how many overlap the window; exact when ``exact``, else a lower bound
    (counting stopped at ``count_limit``). ``steps``: work spent (see ``rrule_engine.Work``).
    """

    items: tuple[tuple[datetime, datetime | None], ...]
    total: int
    exact: bool
    steps: int


def all_day_dates(start: datetime, end: datetime | None, tz: str) -> tuple[date, date] | None:
    """The first and last day (inclusive) of an all-day event or occurrence in its zone ``tz``
    (:func:`philont.domain.wallclock.all_day_days`); None for any other, and for a zone that is
    not IANA (a row another program wrote)."""
    try:
        zone = timepolicy.zone(tz)
    except InvalidInputError:
        return None
    days = wallclock.all_day_days(start, end, zone)
    if days is None:
        return None
    first = start.astimezone(zone).date()
    return first, first + timedelta(days=days - 1)


def _until_instant(rule: Rule, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """UNTIL as the last instant it allows: ``...Z`` is UTC; a floating time is read in the
    event's zone; a date allows that whole local day, up to the first instant of the next
    (its last microsecond: an occurrence at 23:59:59.5, or in the second pass of a repeated
    23:00 hour where the clocks go back at midnight, is still on that day). RFC 5545 §3.3.10
    asks for a UTC time when DTSTART has a zone; the other two are read as the day or time of
    the event's zone that they name. Clamped to the supported range."""
    if rule.until is None:
        return None
    naive, is_utc, is_date = until_fields(rule.until)
    if is_utc:
        return timepolicy.clamp(naive.replace(tzinfo=UTC))
    if is_date:
        after = None if naive.year > 9998 else wallclock.day_start(naive + timedelta(1), zone)
        local = None if after is None else after - timedelta(microseconds=1)
    else:
        local = wallclock.place(naive, zone)
    if local is None:
        return timepolicy.MAX_INSTANT if naive.year > 5000 else timepolicy.MIN_INSTANT
    return local


def _aware(value: object, name: str) -> datetime:
    return timepolicy.instant(value, name)


class _ZoneRepeats:
    """:class:`~philont.domain.rrule_engine.Repeats` of a zone: a wall-clock time its clock skips
    is placed a gap later (:func:`~philont.domain.wallclock.place`), on the instant of the wall
    time a gap later; when the series has both, the later one (in wall-clock order) is the
    repeat. So ``FREQ=HOURLY;COUNT=5`` from 00:30 on the spring-forward day in Berlin gives
    00:30, 01:30, 03:30 (its 02:30), 04:30 and 05:30: five instants, none twice. A series that
    starts at a skipped time has no occurrence before the instant it lands on either."""

    def __init__(self, zone: zoneinfo.ZoneInfo, work: Work, begin: datetime) -> None:
        self.zone = zone
        self.work = work
        self.begin = begin

    def place(self, wall: datetime) -> datetime | None:
        """Where an occurrence is: :func:`~philont.domain.wallclock.place`, never before the
        series' start (whole seconds)."""
        return wallclock.place(wall, self.zone, self.begin)

    def repeats(self, series: Series, wall: datetime) -> bool:
        source = wallclock.skipped_twin(wall, self.zone)
        if source is None:
            return False
        if source < series.start:
            # A series from a skipped time (every 20 minutes from 02:10 on Lord Howe's spring
            # night, whose 02:10 is at 02:40) reaches times after the gap that lie before its
            # own start (02:30): none is an occurrence, as none of a second-pass start's is.
            moved = self.place(wall)
            return moved is not None and moved < self.begin
        return series.has(source)

    def before(self, series: Series, lower: datetime) -> int:
        begin = self.place(series.start)
        if begin is None or lower <= series.start:
            return 0
        # Offsets are under a day: the wall time ``lower`` lies within a day of that UTC time.
        end = timepolicy.clamp(lower.replace(tzinfo=UTC), timedelta(days=1))
        total = 0
        self.work.spend(end.year - begin.year + 1)  # a look at each year's changes
        for _, after_gap, size in wallclock.gaps_between(begin, end, self.zone):
            self.work.spend(1)
            last = min(after_gap + size, lower) - timedelta(seconds=1)
            for wall in series.occurrences_from(after_gap, last, plain=True):
                total += self.repeats(series, wall)
        return total

    def latest(self, series: Series, last: datetime) -> datetime | None:
        """The latest instant of the occurrences up to ``last`` (in wall-clock order): its
        own, or that of a skipped time shortly before it, read a gap later (MINUTELY with
        INTERVAL=45 from 01:59 in Berlin's spring night: 02:44 is at 03:44, after 03:29)."""
        at = self.place(last)
        if at is None:
            return None
        latest = at
        for skipped, after_gap, size in wallclock.gaps_between(
            at - timedelta(days=1), at, self.zone
        ):
            lo = max(skipped, last - size + timedelta(seconds=1), series.start)
            hi = min(after_gap, last) - timedelta(seconds=1)
            for wall in series.occurrences_from(lo, hi, plain=True):
                moved = self.place(wall)
                latest = latest if moved is None else max(latest, moved)
        return latest


def _within_a_day(series: Series) -> bool:
    """Whether two occurrences of ``series`` can lie a day or less apart (an upper bound:
    True where that is not cheap to rule out)."""
    rule, days = series.rule, series.days
    if series.grid is not None or len(series.times) > 1:
        return True
    if rule.freq is Freq.DAILY and rule.interval >= 2:
        return False
    parts = (days.months, days.monthdays, days.yeardays, days.weeknos, days.nth)
    weekdays = days.weekdays
    if weekdays is not None and parts == (None,) * 5 and rule.freq in (Freq.DAILY, Freq.WEEKLY):
        return any((b - a) % 7 == 1 for a in weekdays for b in weekdays)  # two adjacent days
    kind = {Freq.YEARLY: "year", Freq.MONTHLY: "month", Freq.WEEKLY: "week"}.get(rule.freq)
    return kind is None or days.max_per_range(kind) > 1


def _series(
    rule: Rule, naive: datetime, begin: datetime, zone: zoneinfo.ZoneInfo, work: Work
) -> tuple[Series, _ZoneRepeats]:
    """The wall-clock series from ``naive``, whose own start is the instant ``begin``; with
    the zone's repeats when two of its occurrences can lie a day or less apart (no gap is
    longer: Samoa skipped one day), so a sparser series pays nothing for them."""
    zoned = _ZoneRepeats(zone, work, begin)
    series = Series(rule, naive, work)
    if _within_a_day(series):
        series.repeats = zoned
    return series, zoned


# --- checking on write -----------------------------------------------------------------------


def check_event(
    starts_at: datetime,
    ends_at: datetime | None,
    timezone: str,
    rrule: str | None,
    *,
    work_limit: int = CHECK_WORK_LIMIT,
) -> EventCheck:
    """Everything expensive about a calendar event, checked without a database (run it before
    the write transaction begins; :meth:`CalendarService.create` runs it too, cached).

    Refused with ``InvalidInputError`` (subclasses for time ranges): times outside the supported
    range, an end before the start, a zone that is not IANA, an RRULE that does not parse, that
    provably never occurs, whose first occurrence lies past the calendar or past its UNTIL,
    whose next occurrence would end past the supported range (a yearly event lasting until
    9999), that repeats more often than daily or by hours, minutes or seconds for an all-day
    event, or that needs more than ``work_limit`` steps to find its first occurrence or to
    count through its COUNT (what every later listing would pay).
    """
    start = _aware(starts_at, "starts_at")
    end = None if ends_at is None else _aware(ends_at, "ends_at")
    if end is not None and end < start:
        raise InvalidTimeRangeError(start, end, names=("starts_at", "ends_at"), what="event")
    zone_name = timepolicy.validate_timezone(timezone)
    if rrule is None:
        return EventCheck(None, start, start, 0)
    parsed = parse_rule(rrule)
    duration = None if end is None else end - start
    all_day = wallclock.all_day_days(start, end, timepolicy.zone(zone_name)) is not None
    return _check_series(parsed, start, duration, zone_name, work_limit, all_day)


def _series_start(
    start: datetime, zone: zoneinfo.ZoneInfo, rule: Rule, all_day: bool
) -> tuple[datetime, timedelta]:
    """The naive local start a series is expanded from, and the sub-second rest. An all-day
    series runs from midnight even when its first day began later (a zone that skips
    midnight), so each later day starts at its own first instant. A series that began at a
    time its first day skipped (02:30 on the Berlin spring day: stored at 03:30 summer time,
    where 02:30 lands) runs from that skipped time when its rule says so
    (:func:`keep_skipped_time` wrote the times of day its own steps reach into the rule), so
    daily keeps 02:30 on the later days, and every two hours goes on at 04:30, 06:30."""
    if all_day:
        return datetime.combine(start.astimezone(zone).date(), time()), timedelta(0)
    naive, sub_second = wallclock.naive_local(start, zone)
    twin = wallclock.skipped_twin(naive, zone)
    if twin is not None and _time_fits(rule, twin) and not _time_fits(rule, naive):
        return twin, sub_second
    return naive, sub_second


_TIME_PARTS: Final = (("BYHOUR", "hour"), ("BYMINUTE", "minute"), ("BYSECOND", "second"))
_FIELDS: Final = {"hour": (3600, 24), "minute": (60, 60), "second": (1, 60)}
"""Each time-of-day field's length in seconds and how many values it has."""


def _time_fits(rule: Rule, wall: datetime) -> bool:
    """Whether the time of day ``wall`` is one the rule's BYHOUR, BYMINUTE and BYSECOND allow."""
    given = (rule.byhour, rule.byminute, rule.bysecond)
    return all(
        not allowed or getattr(wall, field) in allowed
        for allowed, (_, field) in zip(given, _TIME_PARTS, strict=True)
    )


def _reached(rule: Rule, wall: datetime) -> dict[str, set[int]]:
    """The hours, minutes and seconds of the day that a series from ``wall`` reaches by its own
    steps, before its BYxxx parts: ``wall``'s alone for a step of whole days, all the times of
    day congruent to it modulo the step's greatest common divisor with a day for a finer one
    (every 2 hours from 02:30: 00:30, 02:30, ..., 22:30)."""
    step = rule.interval * UNIT[rule.freq] if rule.freq in UNIT else DAY
    period = math.gcd(step, DAY)
    seconds = range((wall.hour * 3600 + wall.minute * 60 + wall.second) % period, DAY, period)
    return {field: {t // unit % size for t in seconds} for field, (unit, size) in _FIELDS.items()}


def _marks(rule: Rule, wall: datetime, landed: datetime) -> list[str]:
    """The parts that tell the series from ``wall`` from the one from ``landed``: each of
    BYHOUR, BYMINUTE, BYSECOND the rule lacks whose reached times (:func:`_reached`) leave out
    the landed time's; with them, for a FREQ finer than a day, every other part it filters by
    (hours of HOURLY, down to seconds of SECONDLY) that leaves some value out, or the engine
    would try every minute and second of each hour allowed."""
    reached = _reached(rule, wall)
    given = {"hour": rule.byhour, "minute": rule.byminute, "second": rule.bysecond}
    missing = [(part, field) for part, field in _TIME_PARTS if not given[field]]
    telling = {field for _, field in missing if getattr(landed, field) not in reached[field]}
    if telling and rule.freq in UNIT:
        telling |= {
            field
            for _, field in missing
            if _FIELDS[field][0] >= UNIT[rule.freq] and len(reached[field]) < _FIELDS[field][1]
        }
    return [
        f"{part}={','.join(map(str, sorted(reached[field])))}"
        for part, field in missing
        if field in telling
    ]


def keep_skipped_time(rrule: str | None, wall: datetime | None, tz: str) -> str | None:
    """``rrule`` for a series whose first occurrence was given as the naive local time ``wall``
    of zone ``tz``: when ``wall`` is a time that day skips (02:30 on the Berlin spring day), the
    start is stored where it lands (03:30 summer time), and the series' own arithmetic still
    runs from ``wall`` (RFC 5545 §3.8.5.3 computes local times from DTSTART's and moves only
    the skipped ones, §3.3.5). The start column holds only the instant, so the rule is given
    the times of day the series from ``wall`` reaches as ``BYHOUR``, ``BYMINUTE`` or
    ``BYSECOND`` where they leave out the landed time (:func:`_marks`): daily gets
    ``BYHOUR=2`` (``BYMINUTE`` on Lord Howe's half-hour gap), every two hours
    ``BYHOUR=0,2,...,22``, hourly on Lord Howe ``BYMINUTE=15`` from 02:15. None of them drops
    an occurrence of the series from ``wall``; :func:`_series_start` reads them back. Parts the
    rule already has are left as they are; anything else is returned unchanged. A series whose
    steps from ``wall`` miss the landed time but reach an hour, a minute and a second it has
    (every 5 hours, or every 45 minutes, from 02:30 in Berlin) is refused with
    ``InvalidInputError``: no rule part could keep it from running from the landed time."""
    if rrule is None or wall is None:
        return rrule
    zone = timepolicy.zone(tz)
    wall = wall.replace(microsecond=0)
    at = wallclock.place(wall, zone)
    if at is None:
        return rrule
    landed, _ = wallclock.naive_local(at, zone)
    if landed == wall or wallclock.skipped_twin(landed, zone) != wall:
        return rrule
    rule = parse_rule(rrule)
    marks = _marks(rule, wall, landed)
    kept = parse_rule(";".join([rule.text, *marks])) if marks else rule
    moved = int((landed - wall).total_seconds())
    # A finer series' times of day come from its start's steps: the two starts give two series.
    apart = rule.freq in UNIT and moved % (rule.interval * UNIT[rule.freq]) != 0
    if apart and _time_fits(kept, wall) and _time_fits(kept, landed):
        raise bad_rule(
            rule.text,
            f"its steps from {wall:%H:%M:%S}, a time {tz} skips on {wall:%Y-%m-%d}, do not "
            f"pass {landed:%H:%M:%S}, where that time lands, and no BYHOUR, BYMINUTE or "
            "BYSECOND can tell the two starts apart (an event keeps only the instant it "
            f"starts): start at {landed:%H:%M:%S} or on another day",
        )
    return kept.text if marks else rrule


_SUB_DAILY: Final = "an all-day event repeats by whole days: FREQ must be DAILY or longer, " + (
    "without BYHOUR, BYMINUTE or BYSECOND"
)


LOOK_BACK_COUNT: Final = 500
"""Occurrences in progress that a listing must always be able to count within its work limit
(it shows the earliest, and counts more only while its work lasts: the count is then marked
inexact)."""


def _check_look_back(rule: Rule, duration: timedelta, apart: timedelta, per_step: int) -> None:
    """Refuse an event whose occurrences last so long, and cost so many steps each, that a
    listing could not look back over those still in progress within its work limit: it counts
    up to LOOK_BACK_COUNT of them, each costing about what finding the second occurrence cost
    (``per_step``). A yearly rule thinned by BYSETPOS lasting 3,000 years cost 105 steps per
    occurrence and 52,000 for one listing."""
    in_progress = min(LOOK_BACK_COUNT, duration / max(apart, timedelta(seconds=1)))
    if in_progress * max(per_step, 1) > EVENT_WORK_LIMIT // 2:
        raise bad_rule(
            rule.text,
            f"occurrences lasting {duration.days} days, each this costly to find, are too many"
            " to look back over in a listing; make it shorter or the rule simpler",
        )


@functools.lru_cache(maxsize=256)
def _check_series(
    rule: Rule,
    start: datetime,
    duration: timedelta | None,
    zone_name: str,
    work_limit: int,
    all_day: bool = False,
) -> EventCheck:
    zone = timepolicy.zone(zone_name)
    if all_day and (rule.freq > Freq.DAILY or rule.byhour or rule.byminute or rule.bysecond):
        raise bad_rule(rule.text, _SUB_DAILY)
    naive, sub_second = _series_start(start, zone, rule, all_day)
    work = Work(work_limit)
    try:
        series, zoned = _series(rule, naive, start - sub_second, zone, work)
        reason = series.never_reason()
        if reason is not None:
            raise bad_rule(rule.text, f"{reason}, so it never occurs")
        upcoming = series.occurrences_from(naive)
        first = next(upcoming, None)
        first_at = None if first is None else zoned.place(first)
        if first_at is None:
            raise bad_rule(rule.text, "it has no occurrence before the end of the calendar")
        first_at += sub_second
        until = _until_instant(rule, zone)
        if until is not None and until < first_at:
            raise bad_rule(rule.text, "UNTIL lies before the first occurrence")
        spent = work.steps
        following = next(upcoming, None)
        if duration is not None:
            timepolicy.shifted(first_at, duration, "ends_at")
            nxt = None if following is None else zoned.place(following)
            if nxt is not None:
                _check_look_back(rule, duration, nxt - first_at, work.steps - spent)
            if nxt is not None and (until is None or nxt <= until):
                try:
                    timepolicy.shifted(nxt + sub_second, duration, "ends_at")
                except TimeOutOfRangeError as exc:
                    raise bad_rule(
                        rule.text,
                        f"its next occurrence ({nxt.date()}) would end past the supported "
                        f"times; a recurring event cannot last {duration.days} days",
                    ) from exc
        last = series.last()
        last_at = None if last is None else zoned.latest(series, last)
    except WorkLimitExceeded as exc:
        raise bad_rule(
            rule.text,
            f"checking it needs more than {work_limit} steps (it occurs too rarely, or its "
            "COUNT reaches too far); use UNTIL, a larger INTERVAL or fewer parts",
        ) from exc
    return EventCheck(rule.text, first_at, last_at, work.steps)


def validate_rrule(rule: object, start: datetime, tz: object) -> str:
    """Validate an RRULE for a series starting at ``start`` in zone ``tz``; return it normalised.

    The whole of RFC 5545's RRULE is accepted (every FREQ, INTERVAL, COUNT, UNTIL, BYxxx,
    BYSETPOS, WKST), case-insensitively, with an optional ``RRULE:`` prefix. Refused with
    ``InvalidInputError``: unknown or repeated parts, out-of-range values, the combinations
    RFC 5545 forbids, DTSTART/EXDATE/RDATE text, a rule no date satisfies, an UNTIL before the
    first occurrence, and rules too costly to check (see :func:`check_event`). The normalised
    form is upper case with the parts in RFC order (``FREQ=WEEKLY;BYDAY=MO,WE``).
    """
    if not isinstance(rule, str):
        raise InvalidInputError.of(
            "rrule", f"must be a string like 'FREQ=WEEKLY;BYDAY=MO', got {type(rule).__name__}"
        )
    if not isinstance(tz, str):
        raise InvalidInputError.of(
            "timezone", f"must be an IANA zone name, got {type(tz).__name__}"
        )
    checked = check_event(start, None, tz, rule)
    assert checked.rrule is not None
    return checked.rrule


# --- expanding on read -----------------------------------------------------------------------


def _overlaps(at: datetime, end: datetime, lo: datetime, hi: datetime) -> bool:
    return at <= hi and (at >= lo or end > lo)


@dataclass(frozen=True)
class _Length:
    """How long each occurrence lasts: the event's duration, or, for an all-day event, its
    number of whole local days (a day of a DST change has 23 or 25 hours)."""

    duration: timedelta
    days: int | None
    zone: zoneinfo.ZoneInfo

    @property
    def longest(self) -> timedelta:
        return self.duration if self.days is None else timedelta(days=self.days + 1)

    def end(self, at: datetime) -> datetime | None:
        """The end of the occurrence starting at ``at``; None when not representable."""
        if self.days is None:
            return None if self.duration > timepolicy.MAX_INSTANT - at else at + self.duration
        try:
            last = at.astimezone(self.zone).date() + timedelta(days=self.days)
        except OverflowError:
            return None
        return wallclock.day_start(last, self.zone)


class _Collector:
    """The earliest ``limit`` distinct starts kept sorted (up to ``keep_until``), and a count of
    every distinct start seen."""

    def __init__(self, limit: int, keep_until: datetime | None) -> None:
        self.limit = limit
        self.keep_until = keep_until
        self.kept: list[datetime] = []
        self.seen: set[datetime] = set()

    def add(self, at: datetime) -> None:
        if at in self.seen:
            return
        self.seen.add(at)
        if self.keep_until is not None and at > self.keep_until:
            return
        if len(self.kept) >= self.limit and at >= self.kept[-1]:
            return
        bisect.insort(self.kept, at)
        if len(self.kept) > self.limit:
            self.kept.pop()

    def horizon(self) -> datetime | None:
        """Past this start nothing more would be kept."""
        if len(self.kept) >= self.limit:
            return self.kept[-1]
        return self.keep_until


def expand(
    start: datetime,
    end: datetime | None,
    rrule: str | None,
    tz: str,
    window_start: datetime,
    window_end: datetime,
    *,
    limit: int = DEFAULT_OCCURRENCE_LIMIT,
    count_limit: int | None = None,
    keep_until: datetime | None = None,
    work: Work | None = None,
) -> Expansion:
    """The occurrences of an event overlapping ``[window_start, window_end]``, with counts.

    Overlap: an occurrence counts when it starts inside the window, or started before it and
    is still in progress at ``window_start`` (ending exactly at the window start does not).
    Recurrences are expanded in wall-clock time of ``tz`` from the event's local start, so
    "daily at 09:00 Europe/Berlin" stays 09:00 local across DST (gap times shift forward, and
    one that lands on the instant of another occurrence is that occurrence, counted once, so
    COUNT=N gives N instants; ambiguous ones take their first instant, or their second for a
    series that began in the second pass). Every occurrence lasts ``end - start``; an
    all-day event (from the first instant of a local day to that of a later one, see
    :func:`philont.domain.wallclock.all_day_days`) lasts as many whole local days, so an
    occurrence on the day of a DST change still ends at the next midnight.

    Bounded: the series is entered at the window (no walk from an old start, except what a
    COUNT needs, counted in bulk), at most ``count_limit`` occurrences are counted (default
    ``limit``), occurrences after ``keep_until`` are counted but not kept, and ``work`` (default
    ``EVENT_WORK_LIMIT`` steps) ends it with ``WorkLimitExceeded``. The series ends where the
    supported calendar ends instead of overflowing.
    """
    start = _aware(start, "start")
    lo, hi = _aware(window_start, "window_start"), _aware(window_end, "window_end")
    if end is not None and _aware(end, "end") < start:
        raise InvalidTimeRangeError(start, end, names=("start", "end"), what="event")
    if hi < lo:
        raise InvalidTimeRangeError(lo, hi, names=("window_start", "window_end"), what="window")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError.of("limit", f"must be a positive integer, got {limit!r}")
    count_cap = max(limit, count_limit or 0)
    zone = timepolicy.zone(tz)
    stop = None if end is None else _aware(end, "end")
    days = None if rrule is None else wallclock.all_day_days(start, stop, zone)
    length = _Length(timedelta(0) if stop is None else stop - start, days, zone)
    work = work if work is not None else Work(EVENT_WORK_LIMIT)
    collect = _Collector(limit, keep_until)
    exact = True
    if rrule is None:
        if _overlaps(start, stop or start, lo, hi):
            collect.add(start)
    else:
        exact = _scan(parse_rule(rrule), start, length, lo, hi, collect, count_cap, work)
    items = tuple((at, None if stop is None else length.end(at)) for at in collect.kept)
    return Expansion(items, len(collect.seen), exact, work.steps)


def _scan(
    rule: Rule,
    start: datetime,
    length: _Length,
    lo: datetime,
    hi: datetime,
    collect: _Collector,
    count_cap: int,
    work: Work,
) -> bool:
    """Feed the overlapping occurrences to ``collect``; False when counting stopped early."""
    zone = length.zone
    naive, sub_second = _series_start(start, zone, rule, length.days is not None)
    series, zoned = _series(rule, naive, start - sub_second, zone, work)
    scan_from = wallclock.local_bound(timepolicy.clamp(lo, -length.longest), zone, -1)
    scan_to = wallclock.local_bound(hi, zone, +1)
    until = _until_instant(rule, zone)
    if until is not None:
        scan_to = min(scan_to, wallclock.local_bound(until, zone, +1))
    exact = True
    stop = scan_to
    for occurrence in series.occurrences_from(scan_from, scan_to):
        work.spend(1)  # placing it in the zone and in the window: a step of its own
        if occurrence > stop:
            break
        at = zoned.place(occurrence)
        if at is None:
            if occurrence.year > 5000:
                break  # the series ends where the supported calendar ends
            continue
        at += sub_second
        if until is not None and at > until:
            continue
        end = length.end(at)
        if end is None:
            break  # its end would not be representable: the series ends here
        if not _overlaps(at, end, lo, hi):
            continue
        if exact and len(collect.seen) >= count_cap:
            exact = False
        if exact:
            collect.add(at)
        else:
            horizon = collect.horizon()
            if horizon is None:
                break
            stop = min(stop, wallclock.local_bound(horizon, zone, +1))
            if at <= horizon:
                collect.add(at)
    return exact


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
    """The earliest ``limit`` occurrences ``(start, end)`` overlapping the window, as aware UTC
    datetimes sorted by start (see :func:`expand`, which also reports counts and work)."""
    return list(expand(start, end, rrule, tz, window_start, window_end, limit=limit).items)
