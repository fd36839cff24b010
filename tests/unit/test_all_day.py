"""All-day events without a database: how a date becomes Philont's two instants, which stored
events are all-day, and how their series last whole local days across DST and zones that skip
midnight."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from philont.domain import wallclock
from philont.domain.series import all_day_dates, check_event, expand
from philont.domain.timeparse import all_day_span, event_times
from philont.errors import InvalidInputError, InvalidTimeRangeError, TimeOutOfRangeError

ZONES = (
    "UTC",
    "Europe/Berlin",
    "America/Los_Angeles",  # west of UTC: its midnight is 08:00Z, the UTC date is the next day
    "Pacific/Pago_Pago",  # UTC-11
    "Pacific/Kiritimati",  # UTC+14: its midnight is 10:00Z the day before
    "America/Santiago",  # skips 00:00-01:00 in September
    "America/Havana",  # skips midnight in March
    "Pacific/Apia",  # skipped 30 December 2011
    "Australia/Lord_Howe",  # half-hour DST
)


def test_a_date_alone_is_one_whole_day_of_the_zone() -> None:
    start, end = event_times("2026-12-04", None, tz="America/New_York")
    assert (start, end) == (
        datetime(2026, 12, 4, 5, tzinfo=UTC),
        datetime(2026, 12, 5, 5, tzinfo=UTC),
    )
    assert all_day_dates(start, end, "America/New_York") == (date(2026, 12, 4), date(2026, 12, 4))


def test_a_date_end_is_the_last_day_inclusive() -> None:
    start, end = event_times("2026-12-04", "2026-12-06", tz="Europe/Berlin")
    assert all_day_dates(start, end, "Europe/Berlin") == (date(2026, 12, 4), date(2026, 12, 6))
    assert end - start == timedelta(days=3)


def test_an_all_day_event_on_the_day_clocks_change_lasts_that_day() -> None:
    start, end = event_times("2026-03-29", None, tz="Europe/Berlin")
    assert end - start == timedelta(hours=23)
    start, end = event_times("2025-09-07", None, tz="America/Santiago")  # no midnight that day
    assert start == datetime(2025, 9, 7, 4, tzinfo=UTC)  # 01:00 -03, the day's first instant
    assert all_day_dates(start, end, "America/Santiago") == (date(2025, 9, 7), date(2025, 9, 7))


@pytest.mark.parametrize(
    ("starts_at", "ends_at", "argument"),
    [
        ("2026-12-04", "2026-12-04T18:00:00", "starts_at, ends_at"),  # which was meant?
        ("2026-12-04T09:00:00", "2026-12-05", "starts_at, ends_at"),
        ("2026-13-04", None, "starts_at"),
        ("2026-12-04", "2026-02-30", "ends_at"),
        ("", None, "starts_at"),
        (None, None, "starts_at"),
    ],
)
def test_mixed_or_broken_dates_are_refused_naming_the_argument(
    starts_at: str | None, ends_at: str | None, argument: str
) -> None:
    with pytest.raises(InvalidInputError) as err:
        event_times(starts_at, ends_at, tz="UTC")
    assert err.value.message.startswith(f"{argument}: ")
    named = err.value.details.get("arguments") or (err.value.details["argument"],)
    assert ", ".join(named) == argument


def test_a_last_day_before_the_first_is_refused_naming_both() -> None:
    with pytest.raises(InvalidTimeRangeError) as err:
        event_times("2026-12-04", "2026-12-03", tz="UTC")
    assert err.value.message.startswith("starts_at, ends_at: ")
    assert err.value.details["arguments"] == ("starts_at", "ends_at")


@pytest.mark.parametrize("day", [date(9999, 12, 31), date(1, 1, 1)])
def test_days_at_the_ends_of_the_calendar_are_out_of_range_by_name(day: date) -> None:
    with pytest.raises(TimeOutOfRangeError) as err:
        all_day_span(day, None, "Pacific/Kiritimati" if day.year == 1 else "UTC")
    assert err.value.details["argument"] in ("first_day", "last_day")


def test_a_day_the_zone_skipped_is_refused() -> None:
    with pytest.raises(InvalidInputError, match=r"^starts_at: 2011-12-30 is not a day in"):
        event_times("2011-12-30", None, tz="Pacific/Apia")
    start, end = event_times("2011-12-29", "2011-12-31", tz="Pacific/Apia")
    assert end - start == timedelta(days=2)  # the 29th and the 31st


def test_only_midnight_to_midnight_of_the_events_zone_is_all_day() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    start = datetime(2026, 12, 4, tzinfo=berlin)
    assert wallclock.all_day_days(start, start + timedelta(days=2), berlin) == 2
    assert wallclock.all_day_days(start, None, berlin) is None  # Philont's date-only rows
    assert wallclock.all_day_days(start, start, berlin) is None
    assert wallclock.all_day_days(start, start + timedelta(hours=25), berlin) is None
    utc_midnight = datetime(2026, 12, 4, tzinfo=UTC)  # midnight in UTC, 01:00 in Berlin
    assert wallclock.all_day_days(utc_midnight, utc_midnight + timedelta(days=1), berlin) is None


def test_an_all_day_rule_must_repeat_by_days() -> None:
    start, end = event_times("2026-12-04", None, tz="UTC")
    for rule in ("FREQ=HOURLY", "FREQ=DAILY;BYHOUR=9", "FREQ=WEEKLY;BYMINUTE=30"):
        with pytest.raises(InvalidInputError, match=r"^rrule: .*repeats by whole days"):
            check_event(start, end, "UTC", rule)
    assert check_event(start, end, "UTC", "FREQ=YEARLY").rrule == "FREQ=YEARLY"


@settings(max_examples=200, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    first=st.dates(date(1990, 1, 1), date(2040, 12, 31))
    | st.sampled_from(
        [date(2026, 3, 28), date(2026, 10, 24), date(2025, 9, 5), date(2011, 12, 28)]
    ),
    days=st.integers(1, 3),
    rule=st.sampled_from(["FREQ=DAILY", "FREQ=WEEKLY", "FREQ=DAILY;INTERVAL=2"]),
)
def test_each_occurrence_of_an_all_day_series_is_its_own_whole_days(
    zone: str, first: date, days: int, rule: str
) -> None:
    # Every occurrence runs from the first instant of its day to the first instant of the day
    # after its last one, so the days never drift across DST (a fixed 24 h length would end an
    # occurrence at 01:00 or 23:00) and a day that skips midnight begins after the gap.
    where = ZoneInfo(zone)
    start, end = all_day_span(first, first + timedelta(days=days - 1), zone)
    length = wallclock.all_day_days(start, end, where)  # days the zone skipped do not count
    assert length is not None
    found = expand(start, end, rule, zone, start, start + timedelta(days=20)).items
    assert found
    for at, stop in found:
        assert stop is not None
        span = all_day_dates(at, stop, zone)
        assert span is not None, (at.astimezone(where), stop.astimezone(where))
        assert at == wallclock.day_start(span[0], where)
        assert stop == wallclock.day_start(span[0] + timedelta(days=length), where)
