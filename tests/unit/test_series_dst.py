"""Calendar series across a zone's changes of offset: COUNT=N gives N distinct instants.

A wall-clock time the clock skips (the spring gap) is read with the offset before the gap, so
it lands a gap later, on the instant of the wall time a gap later (RFC 5545 §3.3.5). When the
series has both (``FREQ=HOURLY`` from 00:30 on the Berlin spring day: 02:30 and 03:30 are both
03:30 summer time), they are one occurrence: the later in wall-clock order is a repeat, neither
listed nor counted, so COUNT still yields its N occurrences (it gave N - 1). A time shown twice
(the autumn overlap) is its first instant, so nothing there is listed twice.

The oracle knows nothing of the engine: dateutil expands the rule over naive wall-clock times
(from the start's, or from the skipped time that lands on the start when only that one fits the
rule's BYHOUR/BYMINUTE: ``series_wall``), Python places each (``fold=0``; ``fold=1`` when the
first pass of a repeated hour lies before the event's start, which began in the second), and
the first N distinct instants in wall-clock order are the series.
"""

from __future__ import annotations

import functools
import itertools
import zoneinfo
from datetime import UTC, datetime, timedelta

import pytest
from dateutil.rrule import rrulestr
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from philont.domain.rrule_engine import Work
from philont.domain.series import EVENT_WORK_LIMIT, check_event, expand
from philont.errors import InvalidInputError

ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago")


@functools.cache
def changes(zone_name: str, year: int) -> tuple[datetime, ...]:
    """The instants (UTC, to the minute) where the zone's offset changes in ``year``: found by
    stepping hours and then minutes, independently of philont."""
    zone = zoneinfo.ZoneInfo(zone_name)
    found = []
    at = datetime(year, 1, 1, tzinfo=UTC)
    while at.year == year:
        nxt = at + timedelta(hours=1)
        if at.astimezone(zone).utcoffset() != nxt.astimezone(zone).utcoffset():
            minute = at
            before = at.astimezone(zone).utcoffset()
            while minute.astimezone(zone).utcoffset() == before:
                minute += timedelta(minutes=1)
            found.append(minute)
        at = nxt
    return tuple(found)


def _fits(rule: str, wall: datetime) -> bool:
    """Whether ``wall``'s time of day is one the rule's BYHOUR and BYMINUTE allow."""
    parts = dict(part.split("=") for part in rule.split(";"))
    return all(
        name not in parts or getattr(wall, field) in map(int, parts[name].split(","))
        for name, field in (("BYHOUR", "hour"), ("BYMINUTE", "minute"))
    )


def series_wall(rule: str, start: datetime, zone: zoneinfo.ZoneInfo) -> datetime:
    """The wall-clock time the series runs from: the start's, or the time its day skipped that
    lands on the start's instant (read with the offset before the gap) when only that one is a
    time of day the rule allows: an event made at 02:30 on the Berlin spring day is stored at
    03:30 summer time, and daily at 02:30 it stays (so BYHOUR=2 from 03:30 on that day is a
    series from 02:30, its first occurrence the start itself)."""
    local = start.astimezone(zone).replace(tzinfo=None)
    for minutes in range(1, 181):
        twin = local - timedelta(minutes=minutes)
        placed = twin.replace(tzinfo=zone).astimezone(UTC)  # fold=0: the offset before a gap
        skipped = placed.astimezone(zone).replace(tzinfo=None) != twin
        if skipped and placed == start and _fits(rule, twin) and not _fits(rule, local):
            return twin
    return local


def oracle(rule: str, start: datetime, zone_name: str) -> list[datetime]:
    """The first COUNT distinct instants of the wall-clock series (wall-clock order), sorted."""
    zone = zoneinfo.ZoneInfo(zone_name)
    local = series_wall(rule, start, zone)
    count = int(rule.split("COUNT=")[1].split(";")[0])
    plain = rule.replace(f"COUNT={count}", f"COUNT={count * 40}")
    seen: list[datetime] = []
    known: set[datetime] = set()
    for wall in rrulestr(plain, dtstart=local):
        at = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
        if at < start:  # a repeated hour's first pass, before a start in its second pass
            at = wall.replace(tzinfo=zone, fold=1).astimezone(UTC)
        if at not in known:
            known.add(at)
            seen.append(at)
            if len(seen) == count:
                break
    return sorted(seen)


RULES = st.one_of(
    st.tuples(st.just("HOURLY"), st.sampled_from([1, 2, 3]), st.just(3600)),
    st.tuples(st.just("MINUTELY"), st.sampled_from([1, 15, 29, 30, 45, 60, 90]), st.just(60)),
    st.tuples(st.just("SECONDLY"), st.sampled_from([600, 900, 1800, 3600]), st.just(1)),
    st.tuples(st.just("DAILY"), st.just(1), st.just(86_400)),
    st.tuples(st.just("WEEKLY"), st.just(1), st.just(7 * 86_400)),
)
BY_HOURS = st.none() | st.lists(st.integers(0, 5), min_size=1, max_size=4, unique=True)
BY_MINUTES = st.none() | st.lists(st.sampled_from([0, 15, 30, 45]), min_size=1, max_size=3)


def _rule(freq: str, interval: int, count: int, hours: list[int] | None, minutes: object) -> str:
    text = f"FREQ={freq};INTERVAL={interval};COUNT={count}"
    if hours is not None and freq in ("DAILY", "WEEKLY", "HOURLY"):
        text += ";BYHOUR=" + ",".join(map(str, sorted(hours)))
    if isinstance(minutes, list) and freq in ("DAILY", "WEEKLY", "HOURLY"):
        text += ";BYMINUTE=" + ",".join(map(str, sorted(set(minutes))))
    return text


@settings(max_examples=300, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    year=st.integers(2000, 2040),
    which=st.integers(0, 1),
    rule=RULES,
    count=st.integers(1, 12),
    steps_before=st.integers(0, 12),
    jitter_min=st.integers(-90, 90),
    hours=BY_HOURS,
    minutes=BY_MINUTES,
)
@example(  # the report: hourly from 00:30 across Berlin's spring gap gave 4 instants, not 5
    zone="Europe/Berlin",
    year=2027,
    which=0,
    rule=("HOURLY", 1, 3600),
    count=5,
    steps_before=2,
    jitter_min=-30,
    hours=None,
    minutes=None,
)
@example(  # started at the change, 03:00 summer time: BYHOUR=2 runs it from 02:00, the start
    zone="Europe/Berlin",
    year=2000,
    which=0,
    rule=("DAILY", 1, 86_400),
    count=1,
    steps_before=0,
    jitter_min=0,
    hours=[0, 1, 2],
    minutes=None,
)
@example(  # from 01:00 every two hours never reaches 0, from the skipped midnight it does
    zone="America/Santiago",
    year=2000,
    which=1,
    rule=("HOURLY", 2, 3600),
    count=1,
    steps_before=0,
    jitter_min=0,
    hours=[0],
    minutes=None,
)
def test_count_gives_count_distinct_increasing_instants_across_offset_changes(
    zone: str,
    year: int,
    which: int,
    rule: tuple[str, int, int],
    count: int,
    steps_before: int,
    jitter_min: int,
    hours: list[int] | None,
    minutes: list[int] | None,
) -> None:
    found = changes(zone, year)
    assume(found)  # Santiago kept one offset through 2015
    change = found[which % len(found)]
    freq, interval, unit = rule
    # Start some steps of the rule before the change, so the series crosses it.
    start = change - timedelta(seconds=unit * interval * steps_before, minutes=jitter_min)
    text = _rule(freq, interval, count, hours, minutes)
    try:
        expected = oracle(text, start, zone)
    except ValueError:  # dateutil: BYHOUR never on the INTERVAL grid; refused here too
        with pytest.raises(InvalidInputError):
            check_event(start, None, zone, text)
        return
    window_end = expected[-1] + timedelta(days=1)
    got = [at for at, _ in expand(start, None, text, zone, start, window_end).items]
    assert got == expected
    assert len(got) == count  # COUNT honoured
    assert all(a < b for a, b in itertools.pairwise(got))  # strictly increasing, no duplicate
    assert check_event(start, None, zone, text).last == expected[-1]
    # Entered later (the COUNT before the window counted, repeats left out), the same tail.
    middle = expected[len(expected) // 2]
    later = [at for at, _ in expand(start, None, text, zone, middle, window_end).items]
    assert later == [at for at in expected if at >= middle]


def test_a_daily_event_at_a_skipped_time_still_occurs_that_day_a_gap_later() -> None:
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    start = datetime(2027, 3, 26, 2, 30, tzinfo=berlin)
    got = expand(start, None, "FREQ=DAILY;COUNT=4", "Europe/Berlin", start, start + timedelta(5))
    local = [at.astimezone(berlin).strftime("%d %H:%M") for at, _ in got.items]
    assert local == ["26 02:30", "27 02:30", "28 03:30", "29 02:30"]


def test_hourly_in_the_autumn_overlap_lists_each_wall_time_once() -> None:
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    start = datetime(2027, 10, 31, 0, 30, tzinfo=berlin)
    got = expand(start, None, "FREQ=HOURLY;COUNT=5", "Europe/Berlin", start, start + timedelta(1))
    local = [at.astimezone(berlin).strftime("%H:%M%z") for at, _ in got.items]
    assert local == ["00:30+0200", "01:30+0200", "02:30+0200", "03:30+0100", "04:30+0100"]


def test_an_event_starting_in_the_second_pass_of_a_repeated_hour_starts_there() -> None:
    # 02:30 winter time, the second 02:30 of the autumn day: the series went back to the first
    # one (an hour before the event began), so a listing from the start lost the start itself.
    berlin = zoneinfo.ZoneInfo("Europe/Berlin")
    start = datetime(2027, 10, 31, 1, 30, tzinfo=UTC)
    got = expand(
        start,
        None,
        "FREQ=MINUTELY;INTERVAL=20;COUNT=4",
        "Europe/Berlin",
        start,
        start + timedelta(1),
    )
    local = [at.astimezone(berlin).strftime("%H:%M%z") for at, _ in got.items]
    assert local == ["02:30+0100", "02:50+0100", "03:10+0100", "03:30+0100"]
    assert check_event(start, None, "Europe/Berlin", "FREQ=DAILY;COUNT=2").first == start


def test_a_daily_series_across_samoas_skipped_day_counts_the_day_once() -> None:
    # 30 December 2011 did not exist in Apia: its 09:00 is read a day later, on the instant of
    # the 31st's own 09:00. One occurrence, counted once: COUNT=3 still gives three days.
    apia = zoneinfo.ZoneInfo("Pacific/Apia")
    start = datetime(2011, 12, 29, 9, 0, tzinfo=apia)
    got = expand(start, None, "FREQ=DAILY;COUNT=3", "Pacific/Apia", start, start + timedelta(9))
    assert [at.astimezone(apia).strftime("%m-%d") for at, _ in got.items] == [
        "12-29",
        "12-31",
        "01-01",
    ]
    assert check_event(start, None, "Pacific/Apia", "FREQ=DAILY;COUNT=3").last == got.items[-1][0]


@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize(
    "rule", ["FREQ=HOURLY;COUNT=20000", "FREQ=MINUTELY;INTERVAL=30;COUNT=40000"]
)
def test_a_count_across_years_of_changes_ends_where_its_distinct_instants_end(
    zone: str, rule: str
) -> None:
    # Entered years later: the repeats of every spring gap before the window are left out of
    # the count, so the series ends as late as the oracle says (not one hour per year early).
    start = datetime(2026, 1, 1, 0, 30, tzinfo=UTC)
    expected = oracle(rule, start, zone)
    lo, hi = expected[-10], expected[-1] + timedelta(days=1)
    got = [at for at, _ in expand(start, None, rule, zone, lo, hi).items]
    assert got == expected[-10:]
    assert check_event(start, None, zone, rule).last == expected[-1]


def test_a_count_series_entered_before_its_end_is_not_walked_to_its_end() -> None:
    # Entered where COUNT runs out inside the window: the occurrences before the window are
    # counted (with their repeats) once; the series' last occurrence, past the entry point, is
    # not looked for. It was (and the count walked again), a listing paying what checking the
    # whole event pays on top: 665 steps here, 359 of them the walk to the end.
    rule, zone = "FREQ=HOURLY;COUNT=30000;BYHOUR=1,2,3", "Europe/Berlin"
    start = datetime(2026, 1, 1, 0, 30, tzinfo=UTC)
    expected = oracle(rule, start, zone)
    lo = expected[-1] - timedelta(days=20)
    work = Work(EVENT_WORK_LIMIT)
    got = expand(start, None, rule, zone, lo, expected[-1] + timedelta(days=1), work=work)
    assert [at for at, _ in got.items] == [at for at in expected if at >= lo]
    assert work.steps <= 400
