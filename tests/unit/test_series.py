"""Calendar series: checked on write with the arithmetic the read uses, expanded over windows
with bounded work, counts that say what was left out, and no overflow at the calendar's ends."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont.domain.rrule_engine import Work
from philont.domain.series import (
    CHECK_WORK_LIMIT,
    EVENT_WORK_LIMIT,
    check_event,
    expand,
)
from philont.domain.timepolicy import MAX_INSTANT, MIN_INSTANT, clamp
from philont.errors import InvalidInputError, TimeOutOfRangeError
from tests.timegen import extreme_rules

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"


def _utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


# --- checked on write ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "end", "rule", "reason"),
    [
        # The poison rows: each used to be accepted and then break every listing.
        (_utc(2026, 1, 1), _utc(9999, 6, 1), "FREQ=YEARLY", "would end past the supported"),
        (_utc(2026, 1, 1), None, "FREQ=DAILY;INTERVAL=99999999", "steps past the end"),
        (_utc(2026, 1, 1), None, "FREQ=SECONDLY;BYSETPOS=366;BYMONTH=1", "never occurs"),
        (_utc(1990, 1, 1), None, "FREQ=DAILY;BYMONTHDAY=1,15;COUNT=900000", "needs more than"),
        (_utc(2026, 1, 1), None, "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;INTERVAL=4", "no occurrence"),
        (_utc(9999, 12, 29), None, "FREQ=YEARLY;BYMONTH=1", "no occurrence before the end"),
        # a listing counted 500 in-progress occurrences at 105 steps each (52,000 > 50,000)
        (_utc(1, 1, 2), _utc(3170, 1, 1), "FREQ=YEARLY;BYDAY=MO,TU;BYSETPOS=1", "look back"),
    ],
)
def test_rules_a_listing_could_not_handle_are_refused_on_write(
    start: datetime, end: datetime | None, rule: str, reason: str
) -> None:
    with pytest.raises(InvalidInputError, match=reason):
        check_event(start, end, "UTC", rule)


def test_a_yearly_leap_day_series_starting_on_a_leap_year_is_accepted() -> None:
    got = check_event(_utc(2028, 2, 29, 9), None, "UTC", "FREQ=YEARLY;INTERVAL=4")
    assert got.first == _utc(2028, 2, 29, 9) and got.last is None


@pytest.mark.parametrize(
    ("start", "end"),
    [
        (datetime.fromisoformat("0001-01-01T00:00:00+14:00"), None),
        (_utc(2026, 1, 1), datetime.fromisoformat("9999-12-31T23:59:59-14:00")),
        (_utc(9999, 12, 31), None),
    ],
)
def test_times_at_the_ends_of_the_calendar_are_invalid_input(
    start: datetime, end: datetime | None
) -> None:
    with pytest.raises(TimeOutOfRangeError):
        check_event(start, end, "UTC", "FREQ=DAILY")


def test_a_count_series_reports_its_last_occurrence_and_what_checking_it_cost() -> None:
    got = check_event(_utc(2026, 1, 5, 9), None, "Europe/Berlin", "FREQ=WEEKLY;BYDAY=MO;COUNT=3")
    assert got.last == _utc(2026, 1, 19, 9)  # 10:00 in Berlin, like the start
    assert 0 < got.steps <= 100


def test_a_huge_count_that_repeats_weekly_is_checked_arithmetically() -> None:
    got = check_event(_utc(1990, 1, 1), None, "UTC", "FREQ=DAILY;BYDAY=MO,FR;COUNT=100000")
    assert got.last is not None and got.last.year == 2948 and got.steps <= 200
    # A million would run past the end of the calendar: an open series, as far as listing goes.
    longer = check_event(_utc(1990, 1, 1), None, "UTC", "FREQ=DAILY;BYDAY=MO,FR;COUNT=1000000")
    assert longer.last is None and longer.steps <= 200


# --- expanded on read ------------------------------------------------------------------------


def test_a_series_ending_at_the_end_of_the_calendar_stops_instead_of_overflowing() -> None:
    start = _utc(9999, 12, 20, 12)
    got = expand(
        start, start + timedelta(days=3), "FREQ=DAILY", "Pacific/Kiritimati", start, MAX_INSTANT
    )
    assert got.items and all(end is not None and end <= MAX_INSTANT for _, end in got.items)
    assert got.items[-1][0] <= MAX_INSTANT - timedelta(days=3)


def test_a_stored_row_with_a_rule_that_never_occurs_costs_one_step_per_day_of_window() -> None:
    work = Work(EVENT_WORK_LIMIT)
    got = expand(
        _utc(2026, 1, 1),
        None,
        "FREQ=SECONDLY;BYSETPOS=366;BYMONTH=1",
        "UTC",
        _utc(2027, 1, 1),
        _utc(2027, 4, 1),
        work=work,
    )
    assert got.items == () and got.total == 0
    assert work.steps <= 100  # the old expansion walked every second of every January


def test_counts_go_past_the_shown_occurrences_up_to_the_count_limit() -> None:
    start = _utc(2026, 1, 1)
    window = (_utc(2026, 6, 1), _utc(2026, 6, 1, 2))  # 121 minutes
    exact = expand(start, None, "FREQ=MINUTELY", "UTC", *window, limit=10, count_limit=500)
    assert (len(exact.items), exact.total, exact.exact) == (10, 121, True)
    capped = expand(start, None, "FREQ=MINUTELY", "UTC", *window, limit=10, count_limit=50)
    assert (len(capped.items), capped.exact) == (10, False)
    assert 50 <= capped.total < 121 and capped.items == exact.items


@pytest.mark.parametrize(
    ("zone", "dst_hours"), [("UTC", 0), ("Pacific/Apia", 0), ("Europe/Berlin", 1)]
)
def test_a_series_every_second_costs_what_it_lists_and_counts_not_what_its_window_holds(
    zone: str, dst_hours: int
) -> None:
    work = Work(EVENT_WORK_LIMIT)
    lo = _utc(2026, 3, 28)  # Berlin changes its clocks that night
    got = expand(
        _utc(2020, 1, 1),
        None,
        "FREQ=SECONDLY",
        zone,
        lo,
        lo + timedelta(days=90),
        limit=50,
        count_limit=500,
        work=work,
    )
    assert [at for at, _ in got.items] == [lo + timedelta(seconds=i) for i in range(50)]
    assert (got.total, got.exact) == (500, False)  # 7.8 million exist; 500 were counted
    # Two steps per occurrence looked at (making it, placing it); next to a change of offset
    # the scan widens by the size of the change, at both ends.
    assert work.steps <= 2 * (550 + 2 * 3600 * dst_hours)


def test_occurrences_after_keep_until_are_counted_but_not_kept() -> None:
    start = _utc(2026, 1, 1)
    window = (_utc(2026, 6, 1), _utc(2026, 6, 1, 1))
    got = expand(start, None, "FREQ=MINUTELY", "UTC", *window, keep_until=_utc(2026, 6, 1, 0, 4))
    assert [at.minute for at, _ in got.items] == [0, 1, 2, 3, 4] and got.total == 61


def test_an_occurrence_lasting_longer_than_the_window_is_listed_once_per_occurrence() -> None:
    start = _utc(2026, 1, 1, 9)
    got = expand(
        start, start + timedelta(days=2), "FREQ=DAILY", "UTC", _utc(2026, 6, 1), _utc(2026, 6, 1)
    )
    assert [at for at, _ in got.items] == [_utc(2026, 5, 30, 9), _utc(2026, 5, 31, 9)]


def _middle_window(start: datetime) -> tuple[datetime, datetime]:
    """The property test's window at half the way to the end of the calendar (90 days)."""
    span = (MAX_INSTANT - start).total_seconds()
    lo = clamp(start, timedelta(seconds=span * 0.5)) - timedelta(days=1)
    return lo, clamp(lo, timedelta(days=90))


def _earliest_overlapping(
    rule: str, start: datetime, duration: timedelta, lo: datetime, n: int
) -> list[datetime]:
    """dateutil's answer (UTC): the first ``n`` starts still in progress at ``lo``."""
    naive = start.replace(tzinfo=None)
    series = rrulestr(rule + ";WKST=MO", dtstart=naive)
    first = series.after((lo - duration).replace(tzinfo=None))
    got = [] if first is None else list(series.xafter(first, count=n, inc=True))
    return [at.replace(tzinfo=UTC) for at in got]


def test_a_daily_new_year_event_lasting_three_thousand_years_is_listed_within_its_limit() -> None:
    # The heavy run's falsifying example: accepted on write, but listing a window in year 5000
    # walked every day back to year 1830 (occurrences that started then are still running).
    rule, start = "FREQ=DAILY;BYMONTH=1;BYMONTHDAY=1;BYSECOND=0", _utc(1, 1, 2)
    end = clamp(start, timedelta(seconds=100_000_000_000))
    check_event(start, end, "UTC", rule)
    lo, hi = _middle_window(start)
    work = Work(EVENT_WORK_LIMIT)
    got = expand(start, end, rule, "UTC", lo, hi, limit=50, count_limit=500, work=work)
    # Every New Year's midnight from year 2 on, each lasting as long as the first.
    running = [y for y in range(2, 5001) if _utc(y, 1, 1) + (end - start) > lo]
    assert [at for at, _ in got.items] == [_utc(y, 1, 1) for y in running[:50]]
    assert running[0] == 1832 and (got.total, got.exact) == (500, False)
    assert work.steps <= EVENT_WORK_LIMIT


@pytest.mark.parametrize(
    "rule",
    [
        "FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=29",
        "FREQ=WEEKLY;BYMONTH=1",
        "FREQ=HOURLY;INTERVAL=8760",
        "FREQ=SECONDLY;INTERVAL=31622400",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO",
    ],
)
def test_a_sparse_event_lasting_millennia_is_listed_from_centuries_back_within_its_limit(
    rule: str,
) -> None:
    start = _utc(1, 1, 2)
    end = clamp(start, timedelta(seconds=100_000_000_000))
    check_event(start, end, "UTC", rule)
    lo, hi = _middle_window(start)
    work = Work(EVENT_WORK_LIMIT)
    got = expand(start, end, rule, "UTC", lo, hi, limit=50, count_limit=500, work=work)
    assert [at for at, _ in got.items] == _earliest_overlapping(rule, start, end - start, lo, 50)
    assert work.steps <= EVENT_WORK_LIMIT


# --- any rule, any start: checked or refused, and then always listable -----------------------


def _accepted_rules_can_always_be_listed(
    case: tuple[str, datetime, str], duration_s: int, window_at: float
) -> None:
    rule, start, zone = case
    end = clamp(start, timedelta(seconds=duration_s)) if duration_s >= 0 else None
    try:
        checked = check_event(start, end, zone, rule)
    except InvalidInputError:
        return
    assert checked.steps <= CHECK_WORK_LIMIT
    assert checked.first >= start - timedelta(seconds=1)
    # Windows of list_upcoming's largest size, at the start, somewhere later, at the end.
    span = (MAX_INSTANT - start).total_seconds()
    for lo in (start, clamp(start, timedelta(seconds=span * window_at)), MAX_INSTANT):
        lo = max(MIN_INSTANT, lo - timedelta(days=1))
        hi = clamp(lo, timedelta(days=90))
        work = Work(EVENT_WORK_LIMIT)
        got = expand(start, end, rule, zone, lo, hi, limit=50, count_limit=500, work=work)
        starts = [at for at, _ in got.items]
        assert starts == sorted(starts) and len(starts) <= got.total
        assert all(at <= hi for at in starts)
        assert work.steps <= EVENT_WORK_LIMIT


def test_a_count_series_from_year_one_listed_at_the_end_of_the_calendar() -> None:
    # found by the heavy test below: once repeats across DST were counted, a window past the
    # series' end walked the series three times (50,470 steps for one that costs 16,807)
    rule = "FREQ=DAILY;COUNT=390;BYMONTH=1,2;BYMINUTE=0;BYSECOND=0;BYDAY=MO;BYSETPOS=1"
    _accepted_rules_can_always_be_listed((rule, datetime(1, 1, 2, tzinfo=UTC), "UTC"), -1, 0.0)


durations = st.sampled_from([-1, 0, 3600, 86_400 * 400, 10**11]) | st.integers(-1, 10**9)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=extreme_rules(), duration_s=durations, window_at=st.floats(0, 1))
def test_an_accepted_event_can_always_be_listed_within_its_work_limit(
    case: tuple[str, datetime, str], duration_s: int, window_at: float
) -> None:
    _accepted_rules_can_always_be_listed(case, duration_s, window_at)


@pytest.mark.reliability
@settings(
    max_examples=5000 if HEAVY else 300, deadline=None, suppress_health_check=list(HealthCheck)
)
@given(case=extreme_rules(), duration_s=durations, window_at=st.floats(0, 1))
def test_heavy_an_accepted_event_can_always_be_listed_within_its_work_limit(
    case: tuple[str, datetime, str], duration_s: int, window_at: float
) -> None:
    _accepted_rules_can_always_be_listed(case, duration_s, window_at)
