"""Date text of a form ISO-8601 has that the tools do not take (an ordinal date, a week date
without its day or outside its year, the end of a day as 24:00): refused by name, saying what
to write instead, and what it says to write means the time that was meant."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.timeparse import parse_time
from philont.errors import InvalidInputError

GENERIC = "is not an ISO-8601"
times = st.sampled_from(
    ["", "T09:30", "T0930", " 23:59:59", "T00:00Z", "T12:00+05:30", "T07:15-03:00"]
)
years = st.integers(min_value=2, max_value=9998)  # inside the supported times in every zone


def _refusal(text: str) -> str:
    with pytest.raises(InvalidInputError) as raised:
        parse_time(text, field="at", tz="Europe/Berlin")
    message = raised.value.message
    assert message.startswith("at: "), message
    assert GENERIC not in message, message  # the form is named, not the generic refusal
    return message


def _same(suggested: str, meant: str) -> None:
    """The text the refusal suggests is read as the time that was meant."""
    assert parse_time(suggested, field="at", tz="Europe/Berlin") == parse_time(
        meant, field="at", tz="Europe/Berlin"
    )


@given(year=years, day=st.integers(min_value=1, max_value=366), at=times, dash=st.booleans())
def test_an_ordinal_date_is_refused_with_its_calendar_date(
    year: int, day: int, at: str, dash: bool
) -> None:
    text = f"{year:04d}{'-' if dash else ''}{day:03d}{at}"
    message = _refusal(text)
    assert f"ordinal date (day {day} of {year:04d})" in message
    last = date(year, 12, 31).timetuple().tm_yday
    if day > last:
        assert f"({year} has {last} days)" in message
        return
    calendar = (date(year, 1, 1) + timedelta(days=day - 1)).isoformat()
    found = re.search(r"write the calendar date, (.*)$", message)
    assert found is not None, message
    assert found[1] == f"{calendar}{at}"
    _same(found[1], f"{calendar}{at}")


@given(year=years, week=st.integers(min_value=1, max_value=53), at=times.filter(bool))
def test_a_week_without_its_day_is_refused_with_its_monday(year: int, week: int, at: str) -> None:
    weeks = date(year, 12, 28).isocalendar().week
    message = _refusal(f"{year:04d}-W{week:02d}{at}")
    if week > weeks:
        assert f"{year} has ISO weeks 01 to {weeks}" in message
        return
    found = re.search(r"\(Sunday\): (.+) for its Monday, or its calendar date, (.*)$", message)
    assert found is not None, message
    monday = date.fromisocalendar(year, week, 1)
    _same(found[1], f"{monday.isoformat()}{at}")
    _same(found[2], f"{monday.isoformat()}{at}")


@given(
    year=years,
    week=st.sampled_from([0, 54, 60, 99]) | st.integers(min_value=0, max_value=99),
    day=st.integers(min_value=0, max_value=9),
    at=times,
)
def test_a_week_date_outside_its_year_or_week_is_refused_by_name(
    year: int, week: int, day: int, at: str
) -> None:
    weeks = date(year, 12, 28).isocalendar().week
    text = f"{year:04d}-W{week:02d}-{day}{at}"
    if 1 <= week <= weeks and 1 <= day <= 7:
        assert parse_time(text, field="at") is not None  # a real week date is taken
        return
    message = _refusal(text)
    if not 1 <= week <= weeks:
        assert f"names week {week}, and {year} has ISO weeks 01 to {weeks}" in message
    else:
        assert f"names weekday {day}; the weekday of a week date runs from 1" in message


@given(
    day=st.dates(min_value=date(1, 1, 2), max_value=date(9999, 12, 28)),
    end=st.sampled_from(["24", "24:00", "2400", "24:00:00", "240000", "24:00:00.0", "24:00:00,0"]),
    offset=st.sampled_from(["", "Z", "+02:00", "-0330", "+14:00"]),
    sep=st.sampled_from("T "),
)
def test_the_end_of_a_day_as_24_00_is_refused_with_the_next_midnight(
    day: date, end: str, offset: str, sep: str
) -> None:
    message = _refusal(f"{day.isoformat()}{sep}{end}{offset}")
    found = re.search(r"write 00:00 of the next day, (.*)$", message)
    assert found is not None, message
    midnight = datetime.combine(day, time()) + timedelta(days=1)
    _same(found[1], midnight.isoformat() + offset)


def test_the_other_refusals_say_what_pythons_reader_found() -> None:
    for text, reason in [
        ("2026-04-31T09:00", "day is out of range for month"),
        ("2026-02-29", "day is out of range for month"),
        ("2026-04-01T25:00", "hour must be in 0..23"),
    ]:
        with pytest.raises(InvalidInputError, match=re.escape(reason)):
            parse_time(text, field="at")


def test_a_reminder_at_an_ordinal_date_says_which_day_it_is() -> None:
    # what the model reads back from the tool (the same parse_time)
    with pytest.raises(InvalidInputError, match=r"write the calendar date, 2026-05-03T09:00"):
        parse_time("2026-123T09:00", field="at", tz="UTC", needs_clock=True)
    assert parse_time("2026-05-03T09:00", field="at") == datetime(2026, 5, 3, 9, tzinfo=UTC)
