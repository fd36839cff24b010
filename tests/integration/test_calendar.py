"""CalendarService on a real SQLite file: creating, upserting by reference, expanding windows."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db.models import CalendarEvent
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.services.calendar import CalendarService
from philont.testing import factories
from philont.testing.factories import CalendarEventFactory
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock

BERLIN = ZoneInfo("Europe/Berlin")


def _utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


@pytest.fixture
def calendar(session: Session, clock: FakeClock) -> CalendarService:
    return CalendarService(joined(session, clock))


def _count(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(CalendarEvent)) or 0)


def test_creating_an_event_returns_it(calendar: CalendarService, clock: FakeClock) -> None:
    start = datetime(2026, 6, 20, 14, 0, tzinfo=BERLIN)
    rec = calendar.create(
        "Dentist", start, ends_at=start + timedelta(hours=1), timezone="Europe/Berlin"
    )

    assert uuid.UUID(rec.id).version == 4
    assert (rec.title, rec.starts_at, rec.ends_at) == (
        "Dentist",
        _utc(2026, 6, 20, 12),
        _utc(2026, 6, 20, 13),
    )
    assert (rec.timezone, rec.rrule, rec.created_at) == ("Europe/Berlin", None, clock.now)
    assert calendar.get(rec.id) == rec


def test_the_rule_and_zone_are_stored_normalised(calendar: CalendarService) -> None:
    rec = calendar.create(
        "Standup",
        datetime(2026, 6, 1, 9, 30, tzinfo=BERLIN),
        timezone="europe/berlin",
        rrule="byday=mo,we;freq=weekly",
    )

    assert (rec.timezone, rec.rrule) == ("Europe/Berlin", "FREQ=WEEKLY;BYDAY=MO,WE")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"title": "  "}, InvalidInputError),
        ({"title": None}, InvalidInputError),
        ({"timezone": ""}, InvalidInputError),
        ({"timezone": "Berlin"}, InvalidInputError),
        ({"starts_at": datetime(2026, 6, 1, 9)}, InvalidInputError),  # naive
        ({"starts_at": "2026-06-01T09:00:00Z"}, InvalidInputError),
        ({"ends_at": _utc(2026, 6, 1, 8)}, InvalidTimeRangeError),
        ({"rrule": "FREQ=FORTNIGHTLY"}, InvalidInputError),
        ({"rrule": "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30"}, InvalidInputError),
        ({"external_ref": ""}, InvalidInputError),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    calendar: CalendarService, session: Session, kwargs: dict[str, object], error: type[Exception]
) -> None:
    args: dict[str, object] = {
        "title": "Dentist",
        "starts_at": _utc(2026, 6, 1, 9),
        "timezone": "UTC",
    } | kwargs
    title, starts_at = args.pop("title"), args.pop("starts_at")

    with pytest.raises(error):
        calendar.create(title, starts_at, **args)  # type: ignore[arg-type]

    assert _count(session) == 0


def test_an_event_may_end_when_it_starts(calendar: CalendarService) -> None:
    at = _utc(2026, 6, 1, 9)
    assert calendar.create("Call", at, ends_at=at, timezone="UTC").ends_at == at


def test_creating_again_with_the_same_external_ref_updates_the_event_in_place(
    calendar: CalendarService, session: Session, clock: FakeClock
) -> None:
    first = calendar.create(
        "Flight", _utc(2026, 7, 1, 6), timezone="UTC", external_ref="ics:abc", related_fact_id="f1"
    )
    clock.advance(hours=1)

    second = calendar.create(
        "Flight LH123 (moved)",
        _utc(2026, 7, 1, 8),
        timezone="Europe/Berlin",
        external_ref="ics:abc",
    )

    assert _count(session) == 1
    assert (second.id, second.created_at) == (first.id, first.created_at)
    assert (second.title, second.starts_at, second.timezone) == (
        "Flight LH123 (moved)",
        _utc(2026, 7, 1, 8),
        "Europe/Berlin",
    )
    assert second.related_fact_id is None  # every field becomes what the latest call says
    assert calendar.find_by_external_ref("ics:abc") == second


def test_events_without_an_external_ref_are_never_merged(
    calendar: CalendarService, session: Session
) -> None:
    calendar.create("Gym", _utc(2026, 7, 1, 6), timezone="UTC")
    calendar.create("Gym", _utc(2026, 7, 1, 6), timezone="UTC")

    assert _count(session) == 2


def test_an_invalid_update_by_external_ref_leaves_the_event_as_it_was(
    calendar: CalendarService,
) -> None:
    first = calendar.create("Flight", _utc(2026, 7, 1, 6), timezone="UTC", external_ref="ics:x")

    with pytest.raises(InvalidInputError):
        calendar.create("Flight", _utc(2026, 7, 1, 6), timezone="Nowhere", external_ref="ics:x")

    assert calendar.find_by_external_ref("ics:x") == first


def test_an_unknown_external_ref_or_id_finds_nothing(calendar: CalendarService) -> None:
    assert calendar.find_by_external_ref("nope") is None
    assert calendar.get(str(uuid.uuid4())) is None


def test_deleting_an_event_reports_whether_it_existed(
    calendar: CalendarService, session: Session
) -> None:
    rec = calendar.create("Dentist", _utc(2026, 6, 1, 9), timezone="UTC")

    assert calendar.delete(rec.id) is True
    assert calendar.delete(rec.id) is False
    assert calendar.get(rec.id) is None
    assert _count(session) == 0


def test_between_expands_series_and_sorts_occurrences_by_start(
    calendar: CalendarService,
) -> None:
    standup = calendar.create(
        "Standup",
        datetime(2026, 6, 1, 9, 30, tzinfo=BERLIN),
        ends_at=datetime(2026, 6, 1, 9, 45, tzinfo=BERLIN),
        timezone="Europe/Berlin",
        rrule="FREQ=WEEKLY;BYDAY=MO,WE",
    )
    dentist = calendar.create("Dentist", datetime(2026, 6, 2, 8, 0, tzinfo=BERLIN), timezone="UTC")

    got = calendar.between(_utc(2026, 6, 1), _utc(2026, 6, 8, 23)).occurrences

    assert [(o.event.title, o.starts_at.astimezone(BERLIN).strftime("%a %H:%M")) for o in got] == [
        ("Standup", "Mon 09:30"),
        ("Dentist", "Tue 08:00"),
        ("Standup", "Wed 09:30"),
        ("Standup", "Mon 09:30"),
    ]
    assert got[0].event == standup and got[1].event == dentist
    assert got[0].ends_at == got[0].starts_at + timedelta(minutes=15)
    assert got[1].ends_at is None


def test_a_daily_series_keeps_its_local_time_across_the_dst_change(
    calendar: CalendarService,
) -> None:
    calendar.create(
        "Pills",
        datetime(2026, 3, 1, 9, 0, tzinfo=BERLIN),
        timezone="Europe/Berlin",
        rrule="FREQ=DAILY",
    )

    got = calendar.between(_utc(2026, 3, 28), _utc(2026, 3, 30, 23)).occurrences

    assert [o.starts_at.hour for o in got] == [8, 7, 7]
    assert {o.starts_at.astimezone(BERLIN).hour for o in got} == {9}


def test_an_event_in_progress_at_the_window_start_is_listed(calendar: CalendarService) -> None:
    calendar.create("Conference", _utc(2026, 6, 1, 8), ends_at=_utc(2026, 6, 3, 17), timezone="UTC")
    calendar.create("Breakfast", _utc(2026, 6, 2, 7), ends_at=_utc(2026, 6, 2, 8), timezone="UTC")

    got = calendar.between(_utc(2026, 6, 2, 8), _utc(2026, 6, 2, 20)).occurrences

    assert [o.event.title for o in got] == ["Conference"]  # Breakfast ended at the window start


def test_one_shots_outside_the_window_and_series_starting_after_it_are_not_listed(
    calendar: CalendarService,
) -> None:
    calendar.create("Before", _utc(2026, 5, 1, 8), timezone="UTC")
    calendar.create("After", _utc(2026, 7, 1, 8), timezone="UTC")
    calendar.create("Later series", _utc(2026, 7, 1, 8), timezone="UTC", rrule="FREQ=DAILY")
    calendar.create(
        "Finished series", _utc(2026, 5, 1, 8), timezone="UTC", rrule="FREQ=DAILY;COUNT=3"
    )

    assert calendar.between(_utc(2026, 6, 1), _utc(2026, 6, 30)).occurrences == []


def test_a_window_ending_before_it_starts_is_refused(calendar: CalendarService) -> None:
    with pytest.raises(InvalidTimeRangeError):
        calendar.between(_utc(2026, 6, 2), _utc(2026, 6, 1))


def test_naive_window_bounds_are_refused(calendar: CalendarService) -> None:
    with pytest.raises(InvalidInputError):
        calendar.between(datetime(2026, 6, 1), _utc(2026, 6, 2))


def test_upcoming_lists_the_next_week_from_the_clock(
    calendar: CalendarService, clock: FakeClock
) -> None:
    calendar.create("Soon", clock.now + timedelta(days=2), timezone="UTC")
    calendar.create("Too late", clock.now + timedelta(days=8), timezone="UTC")
    calendar.create("Past", clock.now - timedelta(days=1), timezone="UTC")

    assert [o.event.title for o in calendar.upcoming().occurrences] == ["Soon"]
    nine_days = calendar.upcoming(timedelta(days=9)).occurrences
    assert [o.event.title for o in nine_days] == ["Soon", "Too late"]
    later = clock.now + timedelta(days=7)
    assert [o.event.title for o in calendar.upcoming(now=later).occurrences] == ["Too late"]


def test_a_negative_upcoming_window_is_refused(calendar: CalendarService) -> None:
    with pytest.raises(InvalidInputError):
        calendar.upcoming(timedelta(days=-1))


def test_a_decades_old_daily_series_still_shows_up(calendar: CalendarService) -> None:
    calendar.create("Birthday call", _utc(1995, 1, 1, 18), timezone="UTC", rrule="FREQ=DAILY")

    got = calendar.between(_utc(2026, 6, 1), _utc(2026, 6, 3)).occurrences

    assert [o.starts_at for o in got] == [_utc(2026, 6, 1, 18), _utc(2026, 6, 2, 18)]


def test_rows_the_original_wrote_with_rules_it_could_not_parse_list_as_one_shots(
    calendar: CalendarService, session: Session
) -> None:
    with factories.bound(session):
        factories.create(
            CalendarEventFactory,
            title="Legacy",
            starts_at=_utc(2026, 6, 1, 9),
            rrule="FREQ=FORTNIGHTLY",
            timezone="UTC",
        )
        factories.create(
            CalendarEventFactory, title="Empty rule", starts_at=_utc(2026, 6, 1, 10), rrule=""
        )
        factories.create(
            CalendarEventFactory, title="Odd zone", starts_at=_utc(2026, 6, 1, 11), timezone="Mars"
        )

    got = calendar.between(_utc(2026, 6, 1), _utc(2026, 6, 30)).occurrences

    assert [(o.event.title, o.starts_at) for o in got] == [
        ("Legacy", _utc(2026, 6, 1, 9)),
        ("Empty rule", _utc(2026, 6, 1, 10)),
        ("Odd zone", _utc(2026, 6, 1, 11)),
    ]


def test_rows_the_original_wrote_with_a_lowercase_daily_rule_now_recur(
    calendar: CalendarService, session: Session
) -> None:
    with factories.bound(session):
        factories.create(
            CalendarEventFactory,
            title="Walk",
            starts_at=_utc(2026, 6, 1, 9),
            rrule="freq=daily",
            timezone="UTC",
        )

    got = calendar.between(_utc(2026, 6, 1), _utc(2026, 6, 3, 12)).occurrences

    assert [o.starts_at.day for o in got] == [1, 2, 3]
