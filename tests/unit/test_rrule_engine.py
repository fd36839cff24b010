"""The bounded RRULE engine: the same occurrences as dateutil, and work that is counted and
bounded by construction (no rule, start date or COUNT makes one call walk the calendar)."""

from __future__ import annotations

import itertools
import os
from datetime import datetime, timedelta

import pytest
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from philont.domain.rrule import parse_rule
from philont.domain.rrule_engine import Series, Work, WorkLimitExceeded
from philont.errors import InvalidInputError
from tests.timegen import dense_rules, extreme_rules, sparse_rules

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"


def _series(rule: str, start: datetime, limit: int = 1_000_000) -> Series:
    return Series(parse_rule(rule), start, Work(limit))


def _first(rule: str, start: datetime, lower: datetime, n: int) -> list[datetime]:
    return list(itertools.islice(_series(rule, start).occurrences_from(lower), n))


# --- the same occurrences as dateutil -----------------------------------------------------------


def _compare_with_dateutil(rule: str, start: datetime, skip: timedelta) -> None:
    try:
        parsed = parse_rule(rule)
    except InvalidInputError:
        assume(False)  # e.g. a numbered BYDAY next to BYWEEKNO, which RFC 5545 forbids
    lower = start + skip
    series = Series(parsed, start, Work(100_000))
    try:
        assume(series.never_reason() is None)
        ours = list(itertools.islice(series.occurrences_from(lower), 12))
    except WorkLimitExceeded:
        assume(False)  # rare enough to need more than a listing may spend: not an oracle case
    # Dense cases only: dateutil walks as far as our 12th occurrence (or 3 years), no further.
    assume(len(ours) == 12 and ours[-1] - lower < timedelta(days=3 * 366))
    if "FREQ=WEEKLY" in parsed.text and "BYSETPOS" in parsed.text:
        # A start that is not an occurrence is "not synchronized with the rule", and RFC 5545
        # leaves that series undefined; dateutil then takes BYSETPOS over the first week from
        # the start on (a partial week), but over whole months for MONTHLY. We take whole
        # periods for both (test_a_weekly_bysetpos_counts_the_whole_first_week).
        assume(next(iter(series.occurrences_from(start)), None) == start)
    # dateutil's default week start is the locale's; RFC 5545's is Monday.
    text = parsed.text if "WKST" in parsed.text else parsed.text + ";WKST=MO"
    theirs = list(itertools.islice((x for x in rrulestr(text, dtstart=start) if x >= lower), 12))
    assert ours == theirs


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=dense_rules())
def test_the_engine_yields_what_dateutil_yields_from_any_point_of_a_series(
    case: tuple[str, datetime, timedelta],
) -> None:
    _compare_with_dateutil(*case)


@pytest.mark.reliability
@settings(
    max_examples=1500 if HEAVY else 300, deadline=None, suppress_health_check=list(HealthCheck)
)
@given(case=dense_rules())
def test_heavy_the_engine_yields_what_dateutil_yields(
    case: tuple[str, datetime, timedelta],
) -> None:
    _compare_with_dateutil(*case)


@pytest.mark.parametrize(
    ("rule", "start", "expected"),
    [
        # RFC 5545: a BYDAY list is a union (dateutil intersects plain and numbered weekdays).
        (
            "FREQ=MONTHLY;BYDAY=FR,1MO",
            datetime(2026, 6, 1, 9),
            ["2026-06-01", "2026-06-05", "2026-06-12", "2026-06-19", "2026-06-26", "2026-07-03"],
        ),
        # ISO week 1 of 2026 began on Monday 2025-12-29, before the start.
        ("FREQ=YEARLY;BYWEEKNO=1;BYDAY=MO", datetime(2026, 1, 1), ["2027-01-04", "2028-01-03"]),
        ("FREQ=YEARLY;BYYEARDAY=-1;BYDAY=TH", datetime(2026, 1, 1), ["2026-12-31", "2037-12-31"]),
    ],
)
def test_known_series_have_their_known_days(
    rule: str, start: datetime, expected: list[str]
) -> None:
    got = _first(rule, start, start, len(expected))
    assert [d.date().isoformat() for d in got] == expected


def test_a_weekly_bysetpos_counts_the_whole_first_week() -> None:
    # Found by the heavy oracle run: dateutil gives Tue 2000-02-01 (it cuts the first week at
    # the start, so Tuesday is its first day); the week's first MO/TU is Monday 01-31, before
    # the start, so the series begins the next Monday, as a MONTHLY rule does in dateutil too.
    rule = "FREQ=WEEKLY;BYDAY=MO,TU;BYSETPOS=1;WKST=MO"
    got = _first(rule, datetime(2000, 2, 1), datetime(2000, 2, 1), 2)
    assert [d.date().isoformat() for d in got] == ["2000-02-07", "2000-02-14"]
    monthly = _first(
        "FREQ=MONTHLY;BYDAY=MO,TU;BYSETPOS=1", datetime(2000, 2, 15), datetime(2000, 2, 15), 1
    )
    assert monthly == list(
        itertools.islice(
            rrulestr("FREQ=MONTHLY;BYDAY=MO,TU;BYSETPOS=1", dtstart=datetime(2000, 2, 15)), 1
        )
    )


# --- bounded by construction --------------------------------------------------------------------


def test_a_secondly_rule_with_an_impossible_bysetpos_is_decided_in_a_handful_of_steps() -> None:
    series = _series("FREQ=SECONDLY;BYSETPOS=366;BYMONTH=1", datetime(2026, 1, 1))
    assert series.never_reason() is not None
    assert series.work.steps <= 5  # the old check walked every second of a century


def test_rules_no_date_satisfies_are_decided_within_one_gregorian_cycle_of_candidates() -> None:
    for rule in ("FREQ=SECONDLY;BYMONTH=2;BYMONTHDAY=30", "FREQ=DAILY;BYMONTH=4;BYMONTHDAY=31"):
        series = _series(rule, datetime(2026, 1, 1))
        assert series.never_reason() == "no date satisfies all of its parts"
        assert series.work.steps <= 1_000  # 400 years x one candidate day


@pytest.mark.parametrize(
    "rule",
    [
        "FREQ=SECONDLY;COUNT=999999999999999999",
        "FREQ=MINUTELY;INTERVAL=7;COUNT=999999999999",
        "FREQ=DAILY;COUNT=999999999;BYHOUR=8,20",
        "FREQ=WEEKLY;COUNT=999999999;BYDAY=MO,WE,FR",
        "FREQ=DAILY;INTERVAL=3;COUNT=999999999;BYDAY=SA,SU",
    ],
)
def test_a_huge_count_from_the_first_year_costs_the_same_few_steps_as_a_new_series(
    rule: str,
) -> None:
    old = _series(rule, datetime(1, 1, 2, 9))
    new = _series(rule, datetime(2026, 5, 1, 9))
    window = datetime(2026, 6, 1)
    old_got = list(itertools.islice(old.occurrences_from(window), 10))
    new_got = list(itertools.islice(new.occurrences_from(window), 10))
    assert len(old_got) == len(new_got) == 10
    # Occurrences before the window are counted in whole repeating periods, not walked.
    assert old.work.steps <= 600 and new.work.steps <= 600


def test_a_count_series_whose_pattern_does_not_repeat_stops_at_its_work_limit() -> None:
    series = _series("FREQ=DAILY;BYMONTHDAY=1,15;COUNT=999999999", datetime(1, 1, 2), 20_000)
    with pytest.raises(WorkLimitExceeded):
        next(series.occurrences_from(datetime(2026, 6, 1)))
    assert 20_000 < series.work.steps <= 20_000 + 400  # one block at most past the limit


@pytest.mark.parametrize("rule", ["FREQ=MINUTELY", "FREQ=DAILY;BYMONTHDAY=13;BYDAY=FR"])
def test_the_age_of_an_open_series_does_not_change_what_entering_a_window_costs(
    rule: str,
) -> None:
    window = datetime(2026, 6, 1)
    costs = []
    for start in (datetime(1, 1, 2), datetime(1900, 3, 1), datetime(2026, 5, 30)):
        series = _series(rule, start)
        list(itertools.islice(series.occurrences_from(window), 5))
        costs.append(series.work.steps)
    assert max(costs) - min(costs) <= 5 and max(costs) <= 3_000


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=sparse_rules())
def test_skipping_empty_periods_yields_what_dateutil_yields(
    case: tuple[str, datetime, timedelta],
) -> None:
    rule, start, skip = case
    try:
        parsed = parse_rule(rule)
    except InvalidInputError:
        assume(False)  # e.g. BYMONTHDAY with FREQ=WEEKLY
    lower = start + skip
    series = Series(parsed, start, Work(200_000))
    try:
        assume(series.never_reason() is None)
        ours = list(itertools.islice(series.occurrences_from(lower), 6))
    except WorkLimitExceeded:
        assume(False)
    assume(len(ours) == 6 and ours[-1] - lower < timedelta(days=60 * 366))  # dateutil walks
    text = parsed.text if "WKST" in parsed.text else parsed.text + ";WKST=MO"
    theirs = list(itertools.islice((x for x in rrulestr(text, dtstart=start) if x >= lower), 6))
    assert ours == theirs


@pytest.mark.parametrize(
    ("rule", "years"),
    [
        ("FREQ=DAILY;BYMONTH=2;BYMONTHDAY=29", 390),
        ("FREQ=HOURLY;BYMONTH=2;BYMONTHDAY=29;BYHOUR=3", 390),
        ("FREQ=MINUTELY;INTERVAL=7;BYMONTH=2;BYMONTHDAY=29;BYHOUR=3;BYMINUTE=0", 2_000),
        ("FREQ=MONTHLY;BYMONTH=2;BYMONTHDAY=29", 390),
        ("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;BYDAY=MO", 2_000),
        ("FREQ=HOURLY;INTERVAL=8784", 95),
        ("FREQ=MINUTELY;INTERVAL=527041", 95),
    ],
)
def test_a_sparse_series_costs_steps_per_occurrence_not_per_empty_period(
    rule: str, years: int
) -> None:
    # Walking every day (or month, or year) between 100 rare occurrences cost a step each:
    # up to 146,000 steps; a table of the 400-year cycle, or the grid, and a jump each cost few.
    series = _series(rule, datetime(1600, 1, 1))
    got = list(itertools.islice(series.occurrences_from(datetime(1600, 1, 1)), 100))
    assert len(got) == 100 and got == sorted(got) and got[-1].year - got[0].year >= years
    assert series.work.steps <= 12_000


def _entering_costs_at_most_the_limit(case: tuple[str, datetime, str], offset_days: int) -> None:
    text, start, _ = case
    try:
        rule = parse_rule(text)
    except InvalidInputError:
        return
    naive = start.replace(tzinfo=None)
    work = Work(5_000)
    day = min(max(naive.toordinal() + offset_days, 1), datetime.max.toordinal())
    lower = datetime.fromordinal(day).replace(hour=naive.hour)
    try:
        series = Series(rule, naive, work)
        series.never_reason()
        got = list(itertools.islice(series.occurrences_from(lower), 50))
    except WorkLimitExceeded:
        # The step that crossed the limit may have been big (building a day's grid of seconds).
        assert work.steps <= 5_000 + 86_400
        return
    assert got == sorted(got) and all(x >= lower.replace(microsecond=0) for x in got)
    assert work.steps <= 5_000


offsets = st.integers(min_value=-400, max_value=4_000_000)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=extreme_rules(), offset_days=offsets)
def test_any_rule_entered_anywhere_costs_at_most_its_work_limit(
    case: tuple[str, datetime, str], offset_days: int
) -> None:
    _entering_costs_at_most_the_limit(case, offset_days)


@pytest.mark.reliability
@settings(
    max_examples=5000 if HEAVY else 300, deadline=None, suppress_health_check=list(HealthCheck)
)
@given(case=extreme_rules(), offset_days=offsets)
def test_heavy_any_rule_entered_anywhere_costs_at_most_its_work_limit(
    case: tuple[str, datetime, str], offset_days: int
) -> None:
    _entering_costs_at_most_the_limit(case, offset_days)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=dense_rules(), count=st.integers(min_value=1, max_value=300), pick=st.integers(0, 299))
def test_counting_in_bulk_agrees_with_walking_the_series(
    case: tuple[str, datetime, timedelta], count: int, pick: int
) -> None:
    text, start, _ = case
    try:
        rule = parse_rule(f"{text};COUNT={count}")
    except InvalidInputError:
        assume(False)
    try:
        assume(Series(rule, start, Work(20_000)).never_reason() is None)
        walked = list(Series(rule, start, Work(20_000)).occurrences_from(start))
    except WorkLimitExceeded:
        assume(False)
    assert len(walked) <= count
    last = Series(rule, start, Work(2_000_000)).last()
    assert last == (walked[-1] if len(walked) == rule.count else None)
    if walked:
        point = walked[pick % len(walked)]
        counted = Series(rule, start, Work(2_000_000)).count_before(
            (point.toordinal(), point.hour * 3600 + point.minute * 60 + point.second), 10**9
        )
        assert counted == walked.index(point)


@pytest.mark.parametrize("count", [1, 86_000, 86_400 * 3 + 17, 999_999_999])
def test_the_last_occurrence_of_a_count_is_found_by_arithmetic_not_by_walking(count: int) -> None:
    start = datetime(2026, 1, 1, 12)
    series = _series(f"FREQ=SECONDLY;COUNT={count}", start)
    assert series.last() == start + timedelta(seconds=count - 1)
    assert series.work.steps <= 20
