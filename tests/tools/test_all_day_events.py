"""All-day events through the tools, as a user west or east of UTC sees them: created from a
date alone, stored in Philont's two columns (the day's first instant and the next day's),
listed by their date all day long, never on the day before and never gone at 00:30."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from philont import Store, tools
from philont.domain import wallclock
from philont.errors import InvalidInputError, InvalidTimeRangeError
from tests.tools.helpers import DbTarget, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

ZONES = (
    "America/Los_Angeles",
    "America/New_York",
    "Pacific/Pago_Pago",  # UTC-11
    "UTC",
    "Europe/Berlin",
    "Asia/Tokyo",
    "Pacific/Kiritimati",  # UTC+14
    "America/Santiago",  # skips midnight in September
    "America/Havana",  # skips midnight in March
)


class _Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> _Clock:
    return _Clock()


@pytest.fixture
def store(tool_target: DbTarget, clock: _Clock) -> Iterator[Store]:
    with Store.open(tool_target, clock=clock) as s:
        yield s


def _listed(store: Store, days: int = 1) -> tools.ToolResult:
    result = tools.call("list_upcoming", {"window_days": days}, db=store)
    assert result.ok, result.text
    return result


class _Undo(Exception):
    pass


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    zone=st.sampled_from(ZONES),
    day=st.dates(date(2000, 1, 1), date(2040, 12, 31))
    | st.sampled_from([date(2026, 3, 29), date(2026, 11, 1), date(2025, 9, 7), date(2026, 3, 8)]),
    into=st.sampled_from([0, 30, 12 * 60, 23 * 60 + 59]) | st.integers(0, 24 * 60 - 1),
    recurring=st.booleans(),
)
@example(zone="America/Los_Angeles", day=date(2026, 12, 4), into=30, recurring=False)
@example(zone="Pacific/Kiritimati", day=date(2026, 12, 4), into=23 * 60 + 59, recurring=False)
def test_an_all_day_event_is_listed_by_its_date_all_day_and_not_before_or_after(
    store: Store, clock: _Clock, zone: str, day: date, into: int, recurring: bool
) -> None:
    where = ZoneInfo(zone)
    first = wallclock.day_start(day, where)
    after = wallclock.day_start(day + timedelta(days=1), where)
    assert first is not None and after is not None
    now = min(first + timedelta(minutes=into), after - timedelta(seconds=1))
    args = {"title": "Birthday", "starts_at": day.isoformat(), "timezone": zone}
    if recurring:
        args["rrule"] = "FREQ=YEARLY"
    try:
        with store.begin() as mem:
            clock.now = first - timedelta(days=30)
            created = tools.call("create_calendar_event", args, db=mem)
            assert created.ok, created.text
            assert f"all-day calendar event 'Birthday' on {day}" in created.text
            # during the day, from its first minute to its last: listed, by its date
            clock.now = now
            during = tools.call("list_upcoming", {"window_days": 1}, db=mem)
            assert f"- [event] Birthday on {day} (all day, {zone}" in during.text, during.text
            assert during.data["events"][0]["first_day"] == day.isoformat()
            # the evening before (23:30 local): coming up tomorrow, shown by its date
            clock.now = first - timedelta(minutes=30)
            before = tools.call("list_upcoming", {"window_days": 1}, db=mem)
            assert f"Birthday on {day} " in before.text
            # from the next day's first instant on: no longer today's
            clock.now = after
            later = tools.call("list_upcoming", {"window_days": 1}, db=mem)
            assert f"on {day} " not in later.text
            raise _Undo
    except _Undo:
        pass


def test_a_multi_day_event_is_shown_with_its_first_and_last_day(
    store: Store, clock: _Clock
) -> None:
    clock.now = datetime(2026, 12, 5, 20, tzinfo=UTC)  # 12:00 on the 5th in Los Angeles
    args = {
        "title": "Conference",
        "starts_at": "2026-12-04",
        "ends_at": "2026-12-06",
        "timezone": "America/Los_Angeles",
    }
    assert tools.call("create_calendar_event", args, db=store).ok
    listed = _listed(store)
    assert "- [event] Conference 2026-12-04 to 2026-12-06 (all day, America/Los_Angeles)" in (
        listed.text
    )
    with store.begin(write=False) as mem:
        (event,) = mem.calendar.list().events
    assert event.all_day
    assert (event.starts_at, event.ends_at) == (  # Philont's columns: the two midnights
        datetime(2026, 12, 4, 8, tzinfo=UTC),
        datetime(2026, 12, 7, 8, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("arguments", "argument"),
    [
        ({"starts_at": "2026-12-04", "ends_at": "2026-12-04T18:00:00"}, "starts_at, ends_at"),
        ({"starts_at": "2026-12-04T09:00:00", "ends_at": "2026-12-05"}, "starts_at, ends_at"),
        ({"starts_at": "2026-12-04", "rrule": "FREQ=HOURLY"}, "rrule"),
        ({"starts_at": "2026-12-04", "rrule": "FREQ=DAILY;BYHOUR=9"}, "rrule"),
        ({"starts_at": "2026-02-30"}, "starts_at"),
        ({"starts_at": "2026-12-04", "ends_at": "2026-12-03"}, "starts_at, ends_at"),
        (
            {"starts_at": "2026-12-04T10:00:00", "ends_at": "2026-12-04T09:00:00"},
            "starts_at, ends_at",
        ),
    ],
)
def test_bad_all_day_arguments_are_refused_by_name_and_write_nothing(
    tool_target: DbTarget, arguments: dict[str, str], argument: str
) -> None:
    before = snapshot(tool_target)
    result = tools.call(
        "create_calendar_event", {"title": "x", "timezone": "UTC", **arguments}, db=tool_target
    )
    assert not result.ok
    assert (result.error or "").startswith(f"{argument}: "), result.text
    assert snapshot(tool_target) == before


def test_a_host_creates_an_all_day_event_from_dates(store: Store, clock: _Clock) -> None:
    clock.now = datetime(2026, 12, 4, 8, 30, tzinfo=UTC)  # 00:30 in Los Angeles
    with store.begin() as mem:
        event = mem.calendar.create_all_day(
            "Holiday",
            date(2026, 12, 4),
            last_day=date(2026, 12, 5),
            timezone="America/Los_Angeles",
        )
        assert event.all_day
        today = mem.calendar.upcoming(timedelta(hours=1))
        assert [(o.first_day, o.last_day) for o in today.occurrences] == [
            (date(2026, 12, 4), date(2026, 12, 5))
        ]
        with pytest.raises(InvalidInputError, match=r"^first_day: must be a date"):
            mem.calendar.create_all_day("x", datetime(2026, 12, 4), timezone="UTC")  # type: ignore[arg-type]
        with pytest.raises(InvalidTimeRangeError, match=r"^first_day, last_day: "):
            mem.calendar.create_all_day(
                "x", date(2026, 12, 4), last_day=date(2026, 12, 1), timezone="UTC"
            )
        assert mem.calendar.count() == 1


def test_philonts_date_only_rows_stay_the_instant_it_stored(store: Store, clock: _Clock) -> None:
    # The original read "2027-06-19" as UTC midnight and stored no end (the fixture's "Lease
    # minimum term ends"): one instant, 02:00 in Berlin. It is not guessed to be all-day (an
    # 08:00 Shanghai or 09:00 Tokyo event is stored exactly like it).
    clock.now = datetime(2027, 6, 18, 12, tzinfo=UTC)
    with store.begin() as mem:
        event = mem.calendar.create(
            "Lease ends", datetime(2027, 6, 19, tzinfo=UTC), timezone="Europe/Berlin"
        )
    assert not event.all_day
    shown = "- [event] Lease ends @ 2027-06-19 02:00+02:00 Europe/Berlin = 2027-06-19T00:00:00.000Z"
    assert shown in _listed(store).text


@pytest.mark.parametrize("day", ["20260204", "2026-W06-3", "2026W063"])
def test_every_iso_form_of_a_date_is_a_date_for_the_tools(
    store: Store, clock: _Clock, tool_target: DbTarget, day: str
) -> None:
    """A date in ISO-8601's basic or week form is the same day as ``2026-02-04``: an all-day
    event, a reminder refused for want of a time of day (writing nothing), a recall window
    through the end of that day (the original form decided by the text's length)."""
    made = tools.call(
        "create_calendar_event",
        {"title": "Dentist", "starts_at": day, "timezone": "America/Los_Angeles"},
        db=store,
    )
    assert made.ok and made.data["all_day"], made.text
    assert "all-day calendar event 'Dentist' on 2026-02-04" in made.text
    before = snapshot(tool_target)
    at = tools.call("schedule_reminder", {"name": "r", "message": "m", "at": day}, db=store)
    assert at.error_code == "invalid_input" and "a date without a time of day" in at.text
    assert snapshot(tool_target) == before
    with store.begin() as mem:
        mem.timeline.append("the dentist called back")
    clock.now = datetime(2026, 2, 4, 20, tzinfo=UTC)
    with store.begin() as mem:
        mem.timeline.append("evening: the dentist again")
    clock.now = datetime(2026, 3, 1, tzinfo=UTC)
    until = tools.call("recall_sessions", {"query": "dentist", "until": day}, db=store)
    assert until.ok and "evening" in until.text, until.text
