"""A date alone is recognised by its ISO-8601 form, never by the length of the text.

``20261204`` and ``2026-W49-5`` name a day as ``2026-12-04`` does: a whole day where a day is
meant (the end of a recall window, an all-day event) and refused where a time of day is needed
(a reminder's ``at``); ten characters that are no date (``1767225600``) are never called one.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, time

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from philont.domain.timeparse import date_alone, event_times, parse_time
from philont.errors import InvalidInputError

FORMS: dict[str, Callable[[date], str]] = {
    "extended": date.isoformat,
    "basic": lambda d: d.strftime("%Y%m%d"),
    "week": lambda d: "{}-W{:02d}-{}".format(*d.isocalendar()),
    "week basic": lambda d: "{}W{:02d}{}".format(*d.isocalendar()),
}
DAYS = st.dates(min_value=date(1000, 1, 3), max_value=date(9999, 12, 1))
ZONES = st.sampled_from(["UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Shanghai"])
NOT_A_CLOCK = "is a date without a time of day"


def _outcome(call: Callable[[], object]) -> object:
    try:
        return call()
    except InvalidInputError as exc:
        return ("refused", str(exc))


@given(DAYS, st.sampled_from(sorted(FORMS)), ZONES, st.booleans())
def test_every_form_of_a_day_reads_as_that_day(day: date, form: str, tz: str, end: bool) -> None:
    text = FORMS[form](day)
    assert date_alone(text, "at") == day
    expected = parse_time(day.isoformat(), field="until", tz=tz, end_of_day=end)
    assert parse_time(text, field="until", tz=tz, end_of_day=end) == expected
    assert event_times(text, None, tz=tz) == event_times(day.isoformat(), None, tz=tz)
    with pytest.raises(InvalidInputError, match=NOT_A_CLOCK):
        parse_time(text, field="at", tz=tz, needs_clock=True)


@given(st.text(alphabet="0123456789-WT:Z+. ", min_size=1, max_size=14))
@example("0001010")
def test_only_a_day_is_called_a_date(text: str) -> None:
    """Whatever the text: "a date without a time of day" only for text that names a day, and
    a date-alone text is read as that day, in every path. (What the refusal says of the text
    itself: of an ordinal date, ``0001010``, it says so of the calendar date it means,
    ``0001-01-10``, "the time it means ... is refused too".)"""
    outcome = _outcome(lambda: parse_time(text, field="at", needs_clock=True))
    day = _outcome(lambda: date_alone(text, "at"))
    said = outcome[1].split("; the time it means")[0] if isinstance(outcome, tuple) else ""
    if NOT_A_CLOCK in said:
        assert isinstance(day, date)
    if isinstance(day, date):
        assert parse_time(text, field="at") == datetime.combine(day, time(0), tzinfo=UTC)


@pytest.mark.parametrize("text", ["1767225600", "abcdefghij", "2026-13-01", "2027-02-29"])
def test_ten_characters_that_are_no_day_are_not_called_a_date(text: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_time(text, field="at", needs_clock=True)
    assert NOT_A_CLOCK not in str(refused.value)
    assert str(refused.value).startswith("at: ")


@pytest.mark.parametrize("text", ["2026-W49", "2026W49"])
def test_a_week_is_no_day(text: str) -> None:
    with pytest.raises(InvalidInputError, match="names a week, not a day"):
        event_times(text, None, tz="UTC")
    with pytest.raises(InvalidInputError, match="names a week, not a day"):
        parse_time(text, field="since")
