"""Listings of calendar events and schedules are bounded and survive bad stored rows: rows the
original program or a hand-written INSERT left behind are skipped, counted and removable, work
is counted, and what a listing returns is capped with the rest counted."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session

from philont.domain import recurrence, series
from philont.domain.kinds import ScheduleKind
from philont.errors import InvalidInputError, UnreadableRowError
from philont.services.calendar import (
    DEFAULT_LISTING_LIMIT,
    LISTING_COUNT_LIMIT,
    LISTING_WORK_LIMIT,
    CalendarService,
)
from philont.services.schedules import ScheduleService
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock

NOW = datetime(2026, 6, 14, 4, 0, tzinfo=UTC)  # the FakeClock's start
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ms(at: datetime) -> int:
    return (at - EPOCH) // timedelta(milliseconds=1)


def _insert_event(session: Session, id: str, **values: Any) -> None:
    row = {
        "id": id,
        "title": f"raw {id}",
        "starts_at": _ms(NOW - timedelta(days=1)),
        "ends_at": None,
        "rrule": None,
        "timezone": "UTC",
        "created_at": _ms(NOW),
    } | values
    session.execute(
        text(
            "INSERT INTO memory_calendar (id, title, starts_at, ends_at, rrule, timezone, "
            "created_at) VALUES (:id, :title, :starts_at, :ends_at, :rrule, :timezone, "
            ":created_at)"
        ),
        row,
    )


@pytest.fixture
def calendar(session: Session, clock: FakeClock) -> CalendarService:
    return CalendarService(joined(session, clock))


@pytest.fixture
def schedules(session: Session, clock: FakeClock) -> ScheduleService:
    return ScheduleService(joined(session, clock))


# --- one stored row never breaks a listing -------------------------------------------------------


def test_rows_with_impossible_times_are_skipped_counted_named_and_removable(
    calendar: CalendarService, session: Session
) -> None:
    good = calendar.create("Walk", NOW - timedelta(days=3), timezone="UTC", rrule="FREQ=DAILY")
    _insert_event(
        session, "starts-in-year-minus-146-million", starts_at=-(2**62), rrule="FREQ=DAILY"
    )
    _insert_event(session, "created-past-the-calendar", created_at=2**62, rrule="FREQ=DAILY")
    _insert_event(session, "ends-past-the-calendar", ends_at=2**62)

    listing = calendar.upcoming()

    assert [o.event.id for o in listing.occurrences] == [good.id] * 8  # both ends included
    assert listing.skipped_bad_rows == 3
    assert {row.id for row in listing.skipped} == {
        "starts-in-year-minus-146-million",
        "created-past-the-calendar",
        "ends-past-the-calendar",
    }
    assert all("outside the supported times" in row.reason for row in listing.skipped)
    with pytest.raises(UnreadableRowError, match="philont calendar remove"):
        calendar.get("created-past-the-calendar")
    assert {bad.id for bad in calendar.list().skipped} == {row.id for row in listing.skipped}
    for row in listing.skipped:
        assert row.id is not None and calendar.delete(row.id)
    assert calendar.upcoming().skipped_bad_rows == 0


def test_importing_an_event_again_by_reference_repairs_its_unreadable_row(
    calendar: CalendarService, session: Session, clock: FakeClock
) -> None:
    _insert_event(session, "imported", starts_at=-(2**62), created_at=2**62)
    session.execute(text("UPDATE memory_calendar SET external_ref = 'ics:1' WHERE id = 'imported'"))

    event = calendar.create("Flight", NOW + timedelta(days=2), timezone="UTC", external_ref="ics:1")

    assert (event.id, event.created_at) == ("imported", clock.now)
    assert calendar.get("imported") == event


def test_the_issues_poison_rows_are_listed_degraded_or_skipped_and_never_fatal(
    calendar: CalendarService, session: Session
) -> None:
    start = _ms(NOW - timedelta(days=30))
    poison = {
        # each used to make every later list_upcoming fail or take minutes
        "ends-in-9999": {"ends_at": _ms(datetime(9999, 6, 1, tzinfo=UTC)), "rrule": "FREQ=YEARLY"},
        "interval-99999999": {"rrule": "FREQ=DAILY;INTERVAL=99999999"},
        "never-occurs": {"rrule": "FREQ=SECONDLY;BYSETPOS=366;BYMONTH=1"},
        "count-from-1990": {
            "starts_at": _ms(datetime(1990, 1, 1, tzinfo=UTC)),
            "rrule": "FREQ=SECONDLY;COUNT=999999999999",
        },
        "rare-count-from-year-1": {
            "starts_at": _ms(datetime(1, 1, 2, tzinfo=UTC)),
            "rrule": "FREQ=DAILY;BYMONTHDAY=1;COUNT=999999999",
        },
        "machine-zone": {"rrule": "FREQ=DAILY", "timezone": "localtime"},
    }
    for id, values in poison.items():
        _insert_event(session, id, **({"starts_at": start} | values))

    listing = calendar.upcoming(timedelta(days=90), limit=50)

    by_event: dict[str, int] = {}
    for occ in listing.occurrences:
        by_event[occ.event.id] = by_event.get(occ.event.id, 0) + 1
    assert by_event.get("ends-in-9999", 0) == 1  # the 2026 occurrence, in progress until 9999
    assert "count-from-1990" in by_event and "never-occurs" not in by_event
    assert [row.id for row in listing.skipped] == ["rare-count-from-year-1"]
    assert "needs more than" in listing.skipped[0].reason
    assert listing.degraded_rows == 2  # unreadable rule or zone: a one-shot, like the original
    assert listing.work_steps <= LISTING_WORK_LIMIT
    assert len(listing.occurrences) == 50 and listing.more > 0


# --- capped, counted, bounded ------------------------------------------------------------------


@pytest.mark.parametrize("freq", ["SECONDLY", "MINUTELY"])
def test_an_event_every_second_over_a_year_is_listed_bounded_and_says_it_counted_part(
    calendar: CalendarService, freq: str
) -> None:
    # RFC 5545 frequencies are all allowed (the original's DAILY/WEEKLY subset is its defect
    # Q-C9); a year of seconds (31.5 million occurrences) costs what is listed and counted.
    calendar.create("Tick", NOW - timedelta(days=30), timezone="UTC", rrule=f"FREQ={freq}")

    listing = calendar.upcoming(timedelta(days=365))

    step = timedelta(seconds=1) if freq == "SECONDLY" else timedelta(minutes=1)
    starts = [o.starts_at for o in listing.occurrences]
    assert starts == [NOW + i * step for i in range(DEFAULT_LISTING_LIMIT)]
    assert (listing.total, listing.total_is_exact) == (LISTING_COUNT_LIMIT, False)
    assert listing.more == LISTING_COUNT_LIMIT - DEFAULT_LISTING_LIMIT
    assert listing.work_steps <= 3 * LISTING_COUNT_LIMIT


def test_many_frequent_events_return_the_earliest_and_count_the_rest(
    calendar: CalendarService,
) -> None:
    for n in range(30):
        calendar.create(f"Ping {n}", NOW - timedelta(days=400), timezone="UTC", rrule="FREQ=HOURLY")

    listing = calendar.between(NOW, NOW + timedelta(days=90), limit=40)

    assert len(listing.occurrences) == 40
    starts = [o.starts_at for o in listing.occurrences]
    assert starts == sorted(starts) and starts[-1] <= NOW + timedelta(hours=1)
    assert listing.total > 40 and listing.more == listing.total - 40
    assert listing.rows_read == 30
    # Each series is entered at the window and stops counting at the listing's count budget.
    assert listing.work_steps <= 30 * 2_000


def test_expensive_rows_stop_at_the_listing_work_limit_and_the_rest_are_counted_as_skipped(
    calendar: CalendarService, session: Session
) -> None:
    for n in range(6):
        _insert_event(
            session,
            f"expensive-{n}",
            starts_at=_ms(datetime(1, 1, 2, tzinfo=UTC)),
            rrule="FREQ=DAILY;BYMONTHDAY=2;COUNT=999999999",
        )

    listing = calendar.upcoming()

    assert listing.work_steps <= LISTING_WORK_LIMIT + series.EVENT_WORK_LIMIT
    assert listing.skipped_bad_rows == 6 and not listing.total_is_exact
    assert listing.rows_read < 6  # the rest were not even expanded


def test_the_check_a_caller_runs_before_its_transaction_is_not_repeated_by_create(
    calendar: CalendarService,
) -> None:
    start, rule = NOW + timedelta(days=1), "FREQ=MONTHLY;BYDAY=-1FR;COUNT=1200"
    checked = series.check_event(start, None, "Europe/Berlin", rule)
    before = series._check_series.cache_info().hits

    event = calendar.create("Review", start, timezone="Europe/Berlin", rrule=rule)

    assert series._check_series.cache_info().hits == before + 1
    assert event.rrule == checked.rrule


# --- schedules --------------------------------------------------------------------------------


def _insert_schedule(session: Session, id: str, **values: Any) -> None:
    row = {
        "id": id,
        "name": id,
        "next_run_at": _ms(NOW - timedelta(minutes=5)),
        "action_type": "prompt",
        "payload_json": '{"message":"hi"}',
        "enabled": 1,
        "created_at": _ms(NOW - timedelta(days=1)),
    } | values
    session.execute(
        text(
            "INSERT INTO memory_schedules (id, name, next_run_at, action_type, payload_json, "
            "enabled, created_at) VALUES (:id, :name, :next_run_at, :action_type, "
            ":payload_json, :enabled, :created_at)"
        ),
        row,
    )


def test_due_between_caps_in_sql_counts_the_rest_and_skips_unreadable_rows(
    schedules: ScheduleService, session: Session
) -> None:
    for n in range(12):
        schedules.create(f"every-{n}", message="m", interval_ms=60_000 * (n + 1))
    _insert_schedule(session, "payload-not-json", payload_json="{not json")
    _insert_schedule(session, "runs-in-year-minus-146-million", next_run_at=-(2**62))

    listing = schedules.due_between(NOW, NOW + timedelta(days=1), limit=5)

    assert len(listing.runs) + listing.skipped_bad_rows == 5
    assert {row.id for row in listing.skipped} <= {
        "payload-not-json",
        "runs-in-year-minus-146-million",
    }
    assert listing.total == 14 - listing.skipped_bad_rows and listing.more == listing.total - len(
        listing.runs
    )
    assert [r.run_at for r in listing.runs] == sorted(r.run_at for r in listing.runs)


def test_claim_due_stops_an_unreadable_due_row_and_still_claims_the_readable_ones(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    _insert_schedule(session, "payload-not-json", payload_json="{not json")
    _insert_schedule(session, "fine")

    claims = schedules.claim_due()

    assert [c.schedule.id for c in claims] == ["fine"]
    with pytest.raises(UnreadableRowError):
        schedules.get("payload-not-json")
    assert schedules.claim_due(clock.advance(hours=1)) == []  # the bad row no longer comes up
    enabled = session.execute(
        text("SELECT enabled FROM memory_schedules WHERE id = 'payload-not-json'")
    ).scalar_one()
    assert enabled == 0


def test_a_schedule_without_a_next_run_runs_once_and_stops_without_blocking_the_poll(
    schedules: ScheduleService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A recurrence rule that cannot give the next run (the cron of a repeated DST hour used
    # to raise "found no time"): the poll claims that run, ends that schedule, and still
    # claims the others; it used to raise, and the rolled-back poll left every due schedule
    # waiting until the rule could answer again.
    broken = schedules.create("broken", message="m", cron="*/5 * * * *")
    fine = schedules.create("fine", message="m", interval_ms=60_000)
    real = recurrence.next_after

    def next_after(rec: recurrence.Recurrence, **kwargs: Any) -> datetime | None:
        if rec.kind is ScheduleKind.CRON:
            raise InvalidInputError("cron expression found no time after the due one")
        return real(rec, **kwargs)

    monkeypatch.setattr(recurrence, "next_after", next_after)
    claims = schedules.claim_due(NOW + timedelta(minutes=10))

    assert {c.schedule.id for c in claims} == {broken.id, fine.id}
    assert not schedules.get(broken.id).enabled
    assert schedules.get(fine.id).enabled
