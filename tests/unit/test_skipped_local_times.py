"""Local times a zone skips or shows twice, checked against an oracle built from UTC arithmetic.

RFC 5545 computes a series' occurrences as local times from DTSTART's local time (§3.8.5.3) and
reads a local time the zone skips with the offset before the gap, so it lands a gap later
(§3.3.5): ``FREQ=HOURLY;INTERVAL=2`` from 02:30 on the Berlin spring day is 03:30 summer time,
then 04:30, 06:30, ... (the series from 02:30), not 05:30, 07:30 (the series from 03:30, which
an event that kept only its start's instant ran). A host's aware time in a gap means the same
instant whatever its ``fold`` (PEP 495 reads ``fold=1`` an hour *earlier*). ``UNTIL`` given as
a date bounds the series by that whole local day, to the first instant of the next.

The oracle knows neither philont nor zoneinfo's fold rules: a zone is only its UTC offset at
each UTC instant (``astimezone``, which is unambiguous), a wall time is placed by trying the
offsets in force a day either side, and a series is its start plus whole steps of wall time.
Every test is derandomized (a fixed set of draws, the same on every run: no flaky draws).
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from philont.domain import timepolicy
from philont.domain.series import keep_skipped_time, occurrences
from philont.errors import InvalidInputError

GAP_ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Chatham")
"""Gaps of 1 h at 02:00, 1 h at 02:00, 30 min at 02:00, 1 h at 02:45."""
MIDNIGHT_FOLD = "America/Santiago"
"""Goes back from 24:00 to 23:00: the last hour of a day is shown twice."""
UNITS = {"HOURLY": 3600, "MINUTELY": 60, "SECONDLY": 1}
STEPS = st.sampled_from(
    [("HOURLY", n) for n in (1, 2, 3, 4, 5, 6, 7, 12)]
    + [("MINUTELY", n) for n in (10, 15, 20, 25, 45, 90, 100, 240)]
    + [("SECONDLY", n) for n in (600, 1350, 5400, 7777)]
)
DERANDOMIZED = settings(max_examples=150, deadline=None, derandomize=True)


# --- the oracle ----------------------------------------------------------------------------------


def offset(at: datetime, zone: ZoneInfo) -> timedelta:
    """The zone's UTC offset at the UTC instant ``at``."""
    return at.astimezone(zone).utcoffset() or timedelta(0)


def instants(wall: datetime, zone: ZoneInfo) -> list[datetime]:
    """Every UTC instant the zone shows the naive ``wall`` at, ascending (none in a gap, two in
    an overlap): the offsets in force a day either side, each kept when it holds there."""
    near = wall.replace(tzinfo=UTC)
    tried = {offset(near - timedelta(days=1), zone), offset(near + timedelta(days=1), zone)}
    return sorted(near - o for o in tried if offset(near - o, zone) == o)


def place(wall: datetime, zone: ZoneInfo, not_before: datetime | None = None) -> datetime:
    """RFC 5545 §3.3.5: a shown time is its first instant (its second when the first lies before
    ``not_before``, a series begun in the second pass); a skipped one is read with the offset
    before the gap."""
    found = instants(wall, zone)
    if not found:
        near = wall.replace(tzinfo=UTC)
        return near - offset(near - timedelta(days=1), zone)
    if not_before is not None and found[0] < not_before:
        return found[-1]
    return found[0]


@functools.cache
def changes(zone_name: str, year: int) -> tuple[tuple[datetime, timedelta, timedelta], ...]:
    """The zone's changes of offset in ``year``: (UTC instant, offset before, offset after), by
    stepping quarter hours, then minutes."""
    zone = ZoneInfo(zone_name)
    found = []
    at = datetime(year, 1, 1, tzinfo=UTC)
    while at.year == year:
        nxt = at + timedelta(minutes=15)
        before, after = offset(at, zone), offset(nxt, zone)
        if after != before:
            change = at
            while offset(change, zone) == before:
                change += timedelta(minutes=1)
            found.append((change, before, after))
        at = nxt
    return tuple(found)


def gaps(zone_name: str, year: int) -> list[tuple[datetime, timedelta]]:
    """The zone's gaps in ``year``: (first skipped wall time, size)."""
    return [
        ((at + before).replace(tzinfo=None), after - before)
        for at, before, after in changes(zone_name, year)
        if after > before
    ]


def overlaps(zone_name: str, year: int) -> list[tuple[datetime, timedelta]]:
    """The zone's overlaps in ``year``: (first wall time shown twice, size)."""
    return [
        ((at + after).replace(tzinfo=None), before - after)
        for at, before, after in changes(zone_name, year)
        if after < before
    ]


def series(
    start: datetime, step: timedelta, count: int, zone: ZoneInfo, begin: datetime | None = None
) -> list[datetime]:
    """The first ``count`` distinct instants of the wall-clock series ``start + k * step``, each
    placed, none before the start's own instant ``begin`` (default: where ``start`` is placed),
    ascending."""
    begin = place(start, zone) if begin is None else begin
    seen: list[datetime] = []
    wall = start
    while len(seen) < count:
        at = place(wall, zone, begin)
        if at >= begin and at not in seen:
            seen.append(at)
        wall += step
    return sorted(seen)


# --- 1. a finer-than-daily series from a skipped time ------------------------------------------


def test_every_two_hours_from_a_skipped_time_runs_from_that_time() -> None:
    zone = ZoneInfo("Europe/Berlin")
    wall = datetime(2026, 3, 29, 2, 30)
    rule = keep_skipped_time("FREQ=HOURLY;INTERVAL=2;COUNT=4", wall, "Europe/Berlin")
    start = place(wall, zone)
    got = occurrences(start, None, rule, "Europe/Berlin", start, start + timedelta(days=1))
    shown = [at.astimezone(zone).strftime("%H:%M") for at, _ in got]
    assert shown == ["03:30", "04:30", "06:30", "08:30"]  # not 03:30, 05:30, 07:30, 09:30


@DERANDOMIZED
@given(
    zone_name=st.sampled_from(GAP_ZONES),
    year=st.integers(2026, 2032),
    into=st.floats(0, 1, exclude_max=True),
    seconds=st.integers(0, 59),
    step=STEPS,
    count=st.integers(2, 8),
)
# every 20 minutes from 02:10 on Lord Howe's spring night: 02:10 is at 02:40, and the 02:30
# its steps reach exists but lies before that start: no occurrence
@example("Australia/Lord_Howe", 2026, 0.34, 0, ("MINUTELY", 20), 4)
def test_a_series_from_a_skipped_time_steps_from_that_time(
    zone_name: str, year: int, into: float, seconds: int, step: tuple[str, int], count: int
) -> None:
    zone = ZoneInfo(zone_name)
    skipped, size = gaps(zone_name, year)[0]
    wall = skipped + timedelta(minutes=int(size / timedelta(minutes=1) * into), seconds=seconds)
    freq, interval = step
    each = timedelta(seconds=interval * UNITS[freq])
    want = series(wall, each, count, zone)
    start = place(wall, zone)
    text = f"FREQ={freq};INTERVAL={interval};COUNT={count}"
    try:
        rule = keep_skipped_time(text, wall, zone_name)
    except InvalidInputError:
        # Refused only where the start given and the instant it lands on make two series.
        landed = start.astimezone(zone).replace(tzinfo=None)
        assert series(landed, each, 100, zone) != series(wall, each, 100, zone)
        return
    window = (start - timedelta(days=1), want[-1] + timedelta(days=1))
    got = occurrences(start, None, rule, zone_name, *window)
    assert [at for at, _ in got] == want, (wall, rule)


# --- 2. a host's aware time in a gap, either fold -----------------------------------------------


@DERANDOMIZED
@given(
    zone_name=st.sampled_from((*GAP_ZONES, MIDNIGHT_FOLD)),
    year=st.integers(2026, 2032),
    gap=st.booleans(),
    minutes=st.integers(-90, 90),
    fold=st.integers(0, 1),
)
def test_an_aware_time_in_a_gap_is_read_forward_whatever_its_fold(
    zone_name: str, year: int, gap: bool, minutes: int, fold: int
) -> None:
    zone = ZoneInfo(zone_name)
    near, _ = (gaps if gap else overlaps)(zone_name, year)[0]
    wall = near + timedelta(minutes=minutes)
    given_time = wall.replace(tzinfo=zone, fold=fold)
    found = instants(wall, zone)
    # skipped: forward, as fold=0 reads it; shown once: that instant; shown twice: the pass
    # the fold names (PEP 495)
    want = place(wall, zone) if not found else found[min(fold, len(found) - 1)]
    assert timepolicy.instant(given_time, "at") == want


def test_a_skipped_reminder_time_with_fold_1_is_not_moved_an_hour_early() -> None:
    at = datetime(2026, 3, 29, 2, 30, tzinfo=ZoneInfo("Europe/Berlin"), fold=1)
    assert timepolicy.instant(at, "at") == datetime(2026, 3, 29, 1, 30, tzinfo=UTC)  # 03:30 CEST


# --- 3. UNTIL as a date: the whole local day ---------------------------------------------------


@DERANDOMIZED
@given(
    zone_name=st.sampled_from((*GAP_ZONES, MIDNIGHT_FOLD)),
    year=st.integers(2026, 2032),
    days_after=st.integers(-2, 2),
    seconds_before=st.integers(1, 5 * 3600),
    millis=st.integers(0, 999),
    second_pass=st.booleans(),
    step=st.sampled_from([("HOURLY", 1), ("MINUTELY", 15), ("MINUTELY", 25), ("DAILY", 1)]),
)
# the last second of the day, 23:59:59.5 (the bound was 23:59:59)
@example(MIDNIGHT_FOLD, 2026, 1, 1, 500, False, ("DAILY", 1))
@example("Europe/Berlin", 2027, 0, 1, 999, False, ("HOURLY", 1))
# Santiago's second pass of 23:00-24:00 on the day its clocks go back (the bound was the first)
@example(MIDNIGHT_FOLD, 2026, 0, 50 * 60, 0, True, ("MINUTELY", 15))
def test_until_a_date_ends_the_series_with_that_whole_local_day(
    zone_name: str,
    year: int,
    days_after: int,
    seconds_before: int,
    millis: int,
    second_pass: bool,
    step: tuple[str, int],
) -> None:
    zone = ZoneInfo(zone_name)
    # around a change of offset, the last hours of the UNTIL day (the autumn one: Santiago shows
    # its last hour twice), the start a host's ZoneInfo time, sub-second and in either pass
    repeated, _ = overlaps(zone_name, year)[0]
    last_day = repeated.date() + timedelta(days=days_after)
    wall = datetime.combine(last_day + timedelta(days=1), datetime.min.time())
    wall -= timedelta(seconds=seconds_before)
    aware = wall.replace(tzinfo=zone, fold=int(second_pass), microsecond=millis * 1000)
    start = timepolicy.instant(aware, "start")
    freq, interval = step
    each = timedelta(days=1) if freq == "DAILY" else timedelta(seconds=interval * UNITS[freq])
    local = start.astimezone(zone).replace(tzinfo=None, microsecond=0)
    rest = timedelta(microseconds=start.microsecond)
    want = [
        at + rest
        for at in series(local, each, 200, zone, start - rest)
        if (at + rest).astimezone(zone).date() <= last_day
    ]
    rule = f"FREQ={freq};INTERVAL={interval};UNTIL={last_day:%Y%m%d}"
    if not want:
        return  # the series starts after its UNTIL: refused on write, nothing to list
    window = (start, start + timedelta(days=3))
    got = [at for at, _ in occurrences(start, None, rule, zone_name, *window)]
    assert got == want, (aware, rule)


@pytest.mark.parametrize("millis", [0, 500])
def test_until_a_date_keeps_an_occurrence_in_its_last_second(millis: int) -> None:
    zone = ZoneInfo("Europe/Berlin")
    start = datetime(2026, 3, 1, 23, 59, 59, millis * 1000, tzinfo=zone)
    got = occurrences(
        start, None, "FREQ=DAILY;UNTIL=20260303", "Europe/Berlin", start, start + timedelta(7)
    )
    assert [at.astimezone(zone).day for at, _ in got] == [1, 2, 3]
