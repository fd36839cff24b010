"""Wall-clock time of a zone and instants: the one placing rule that calendar series, cron
schedules and all-day events share.

A wall-clock time is placed at the instant the zone shows it; a time the zone skips (the
spring gap) moves forward by the size of the gap (02:30 in Berlin on the spring day is 03:30
summer time), and a time the zone shows twice (the autumn overlap) is its first instant, the
summer-time one. This is RFC 5545's rule for DTSTART and recurrences, and Python's ``fold=0``.
A calendar series that began in the second pass of a repeated hour stays there (``place``'s
``not_before``), and one whose skipped time lands on the instant of another of its occurrences
counts them as one (:func:`skipped_twin`, :func:`gaps_between`; see
:class:`philont.domain.rrule_work.Repeats`).

Wall-clock order is instant order except next to a change of UTC offset: there a time skipped
by the gap lands on the same instant as the time one gap-size later, and the second pass of a
repeated hour lies after the first. Searches therefore start and stop with a margin of the
offset changes nearby (:func:`local_bound`), which is nothing at all in a zone without one.
"""

from __future__ import annotations

import functools
import zoneinfo
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Final, NamedTuple

from philont.domain import timepolicy

__all__ = [
    "PROBE",
    "all_day_days",
    "day_start",
    "gaps_between",
    "local_bound",
    "naive_local",
    "place",
    "skipped_twin",
]

PROBE: Final = timedelta(days=2)
"""More than any UTC-offset jump (Samoa skipped a whole day in 2011): how far around a point the
zone is probed for a change of offset."""


def naive_local(at: datetime, zone: zoneinfo.ZoneInfo) -> tuple[datetime, timedelta]:
    """An instant as naive wall-clock time of ``zone`` (whole seconds) plus the sub-second rest.
    Instants come from the supported range, whose margin keeps this from overflowing."""
    local = at.astimezone(zone)
    return local.replace(tzinfo=None, microsecond=0), timedelta(microseconds=local.microsecond)


def place(
    naive: datetime, zone: zoneinfo.ZoneInfo, not_before: datetime | None = None
) -> datetime | None:
    """A wall-clock time of ``zone`` as a UTC instant; None outside the supported range.
    Gap times shift forward by the gap; ambiguous ones take their first instant (fold=0), or
    their second when the first lies before ``not_before`` (a series that starts in the second
    pass of a repeated hour, at its own start, goes on from there instead of back in time)."""
    try:
        at = naive.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if not_before is not None and at < not_before:
            at = max(at, naive.replace(tzinfo=zone, fold=1).astimezone(UTC))
    except (OverflowError, ValueError):
        return None
    return at if timepolicy.MIN_INSTANT <= at <= timepolicy.MAX_INSTANT else None


def offset_spread(at: datetime, zone: zoneinfo.ZoneInfo) -> timedelta:
    """The largest change of UTC offset within ``PROBE`` of ``at`` (zero in most places)."""
    offsets = set()
    for probe in (-PROBE, timedelta(0), PROBE):
        offset = timepolicy.clamp(at, probe).astimezone(zone).utcoffset()
        offsets.add(offset or timedelta(0))
    return max(offsets) - min(offsets)


def local_bound(at: datetime, zone: zoneinfo.ZoneInfo, side: int) -> datetime:
    """The wall-clock time of ``zone`` that bounds a scan for instants up to (``side`` +1) or
    from (-1) ``at``: ``at`` in local time widened by the offset changes found around it, and a
    second. Every wall-clock time before the bound from -1 is placed before ``at``; every one
    after the bound from +1 is placed after it."""
    widen = offset_spread(at, zone) + timedelta(seconds=1)
    local, _ = naive_local(at, zone)
    try:
        return local + side * widen
    except OverflowError:
        return datetime.max if side > 0 else datetime.min


def day_start(day: date, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """The first instant of a local day: its midnight, or, where the zone skips midnight
    (Santiago, Havana, Beirut change their clocks at 00:00), the first time after the gap.
    None outside the supported range."""
    return place(datetime.combine(day, time()), zone)


def all_day_days(start: datetime, end: datetime | None, zone: zoneinfo.ZoneInfo) -> int | None:
    """How many whole local days an event spans when it is an all-day event: it starts at the
    first instant of a day of ``zone`` and ends at the first instant of a later one (iCalendar's
    all-day shape, the end exclusive). None for any other event (a timed one, or one without an
    end)."""
    if end is None or end <= start:
        return None
    first, after = start.astimezone(zone).date(), end.astimezone(zone).date()
    if day_start(first, zone) != start or day_start(after, zone) != end:
        return None
    # The days it covers up to its end (a day the zone skipped entirely, as Samoa skipped
    # 30 December 2011, is not one of them).
    last = (end - timedelta(microseconds=1)).astimezone(zone).date()
    return (last - first).days + 1


# --- the gaps of a zone: where wall-clock times are skipped ---------------------------------------

_SAMPLE: Final = timedelta(days=7)
"""How often a year is probed for a change of offset: closer than any two changes of a zone
(the shortest DST suspensions, for Ramadan, last weeks; a change and its undoing within a
week would go unseen)."""


def _offset(at: datetime, zone: zoneinfo.ZoneInfo) -> timedelta:
    return at.astimezone(zone).utcoffset() or timedelta(0)


def _change_at(lo: datetime, hi: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The first instant (whole seconds) after ``lo`` with the offset ``hi`` has."""
    target = _offset(hi, zone)
    while hi - lo > timedelta(seconds=1):
        mid = lo + (hi - lo) // 2
        mid -= timedelta(microseconds=mid.microsecond)
        if _offset(mid, zone) == target:
            hi = mid
        else:
            lo = mid
    return hi


class _Gap(NamedTuple):
    change: datetime  # the instant the offset grows
    before: timedelta  # the offset before it
    size: timedelta  # how much wall-clock time is skipped
    end: datetime  # the first wall-clock time after the gap (naive)


@functools.lru_cache(maxsize=4096)
def _gaps_of_year(zone: zoneinfo.ZoneInfo, year: int) -> tuple[_Gap, ...]:
    """The changes of ``zone`` in the UTC year ``year`` that skip wall-clock time: where the
    offset grew, the times from the change read with the old offset up to it read with the
    new one do not exist."""
    first = max(datetime(year, 1, 1, tzinfo=UTC), timepolicy.MIN_INSTANT)
    end = timepolicy.clamp(datetime(year, 12, 31, tzinfo=UTC), timedelta(days=1))
    gaps = []
    at, offset = first, _offset(first, zone)
    while at < end:
        nxt = min(at + _SAMPLE, end)
        later = _offset(nxt, zone)
        if later != offset:
            if later > offset:
                change = _change_at(at, nxt, zone)
                wall = (change + later).replace(tzinfo=None)
                gaps.append(_Gap(change, offset, later - offset, wall))
            offset = later
        at = nxt
    return tuple(gaps)


def gaps_between(
    lo: datetime, hi: datetime, zone: zoneinfo.ZoneInfo
) -> Iterator[tuple[datetime, datetime, timedelta]]:
    """The gaps of ``zone`` whose change lies in ``[lo, hi]`` (instants, clamped to the supported
    range), ascending, as (first skipped wall-clock time, first wall-clock time after the gap,
    its size). Built once per zone and year."""
    lo, hi = max(lo, timepolicy.MIN_INSTANT), min(hi, timepolicy.MAX_INSTANT)
    for year in range(lo.year, hi.year + 1):
        for gap in _gaps_of_year(zone, year):
            if lo <= gap.change <= hi:
                yield gap.end - gap.size, gap.end, gap.size


def skipped_twin(wall: datetime, zone: zoneinfo.ZoneInfo) -> datetime | None:
    """The skipped wall-clock time that :func:`place` puts on the instant of ``wall`` (it reads
    a skipped time with the offset before the gap, which lands a gap later): ``wall`` less the
    gap's size, when ``wall`` lies within that size after a gap. None elsewhere (an O(1) look
    at the gaps of its year)."""
    for year in range(max(wall.year - 1, timepolicy.MIN_INSTANT.year), wall.year + 1):
        for gap in _gaps_of_year(zone, year):
            if gap.end <= wall < gap.end + gap.size:
                return wall - gap.size
    return None
