"""ScheduleService on a real SQLite file: creating, replacing, cancelling, claiming, breaking."""

from __future__ import annotations

import json
import multiprocessing
import queue as queue_module
import re
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import Engine, event, func, select, text, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from philont.db.models import Schedule, ScheduleOutcome
from philont.domain.recurrence import ScheduleKind
from philont.errors import InvalidInputError, InvalidTimeRangeError, ScheduleNotFoundError
from philont.schemas.schedules import OutcomeStatus
from philont.services.schedules import ScheduleService
from philont.testing import factories
from philont.testing.factories import ScheduleFactory
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock


def _utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0
) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


@pytest.fixture
def schedules(session: Session, clock: FakeClock) -> ScheduleService:
    return ScheduleService(joined(session, clock))


def _rows(session: Session) -> list[tuple[str, bool]]:
    return [
        (r.name, r.enabled)
        for r in session.scalars(select(Schedule).order_by(Schedule.created_at, Schedule.name))
    ]


def _count(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Schedule)) or 0)


# --- creating ------------------------------------------------------------------------------------


def test_a_one_shot_reminder_fires_at_its_time_and_carries_its_message(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    at = clock.now + timedelta(hours=2)
    rec = schedules.create("dentist", message="Call the dentist", at=at)

    assert (rec.kind, rec.cron_expr, rec.next_run_at, rec.enabled) == (
        ScheduleKind.ONCE,
        None,
        at,
        True,
    )
    assert (rec.action_type, rec.payload, rec.created_by) == (
        "prompt",
        {"message": "Call the dentist"},
        "llm_external",
    )
    assert (rec.consecutive_failures, rec.paused_until, rec.created_at) == (0, None, clock.now)
    assert schedules.get(rec.id) == rec


def test_an_interval_schedule_is_stored_in_philonts_format_and_first_runs_one_interval_later(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("water", message="Drink water", interval_ms=1_800_000)

    assert (rec.kind, rec.cron_expr, rec.interval_ms) == (
        ScheduleKind.INTERVAL,
        "interval:1800000",
        1_800_000,
    )
    assert rec.next_run_at == clock.now + timedelta(minutes=30)


def test_a_cron_schedule_stores_its_zone_in_the_expression(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    clock.now = _utc(2026, 6, 12, 10)  # a Friday, after 09:00 Berlin
    rec = schedules.create(
        "weekday", message="Plan the day", cron="0 9 * * 1-5", timezone="Europe/Berlin"
    )

    assert (rec.kind, rec.cron, rec.cron_timezone) == (
        ScheduleKind.CRON,
        "0 9 * * 1-5",
        "Europe/Berlin",
    )
    assert rec.cron_expr == "cron:0 9 * * 1-5@Europe/Berlin"
    assert rec.next_run_at == _utc(2026, 6, 15, 7)  # Monday 09:00 summer time


_PHILONT_INTERVAL = re.compile(r"^interval:(\d+)$")


def _philont_next_run(expr: str | None, last: int) -> int | None:
    """The original's ``computeNextRun`` (spec 13.2): None makes a row a one-shot."""
    match = None if not expr else _PHILONT_INTERVAL.match(expr)
    return None if match is None or int(match[1]) <= 0 else last + int(match[1])


def test_a_one_shot_keeps_the_zone_it_was_given_in_and_stays_a_one_shot_for_philont(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    at = clock.now + timedelta(hours=2)
    rec = schedules.create("dentist", message="Call", at=at, timezone="europe/berlin")

    assert (rec.kind, rec.timezone, rec.cron_timezone) == (ScheduleKind.ONCE, "Europe/Berlin", None)
    assert rec.cron_expr == "once@Europe/Berlin"
    assert schedules.get(rec.id) == rec
    assert schedules.list() == [rec]  # the raw-value reader agrees with the ORM one
    # What the original reads from the row: due at next_run_at, then no next run, so markRun
    # disables it (a one-shot), payload where its dispatcher looks.
    row = session.execute(
        text("SELECT cron_expr, next_run_at, payload_json FROM memory_schedules")
    ).one()
    assert row.next_run_at == int(at.timestamp() * 1000)
    assert _philont_next_run(row.cron_expr, row.next_run_at) is None
    assert json.loads(row.payload_json) == {"message": "Call"}
    clock.now = at
    (claim,) = schedules.claim_due()
    assert (claim.schedule.enabled, claim.schedule.timezone) == (False, "Europe/Berlin")


@pytest.mark.parametrize(
    "zone",
    ["UTC", "Etc/UTC", "zulu", "Etc/GMT", "gmt", "Etc/GMT-0", "Etc/GMT+0", "GMT0", "Greenwich"],
)
def test_a_one_shot_given_in_utc_is_stored_as_philont_stores_it(
    schedules: ScheduleService, clock: FakeClock, zone: str
) -> None:
    rec = schedules.create("dentist", message="m", at=clock.now + timedelta(hours=1), timezone=zone)
    assert (rec.cron_expr, rec.timezone) == (None, None)


def test_a_once_row_with_a_zone_nobody_knows_is_a_plain_one_shot(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    rec = schedules.create("dentist", message="m", at=clock.now + timedelta(hours=1))
    session.execute(update(Schedule).values(cron_expr="once@Mars/Olympus_Mons"))
    got = schedules.get(rec.id)
    assert got is not None and (got.kind, got.timezone) == (ScheduleKind.ONCE, None)


def test_an_interval_keeps_the_zone_of_its_first_run_and_stays_an_interval_for_philont(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    at = clock.now + timedelta(hours=2)
    rec = schedules.create(
        "stretch", message="Stand up", at=at, interval_ms=3_600_000, timezone="europe/berlin"
    )

    assert (rec.kind, rec.interval_ms, rec.timezone) == (
        ScheduleKind.INTERVAL,
        3_600_000,
        "Europe/Berlin",
    )
    assert (rec.cron_expr, rec.cron_timezone, rec.next_run_at) == ("interval:3600000", None, at)
    assert schedules.get(rec.id) == rec
    assert schedules.list() == [rec]  # the raw-value reader agrees with the ORM one
    # What the original reads from the row: an interval it repeats (a zone in cron_expr
    # would have made it a one-shot there), the message where its dispatcher looks.
    row = session.execute(
        text("SELECT cron_expr, next_run_at, payload_json FROM memory_schedules")
    ).one()
    assert _philont_next_run(row.cron_expr, row.next_run_at) == row.next_run_at + 3_600_000
    assert json.loads(row.payload_json) == {"message": "Stand up", "timezone": "Europe/Berlin"}
    clock.now = at
    (claim,) = schedules.claim_due()
    assert claim.schedule.enabled and claim.schedule.timezone == "Europe/Berlin"
    assert claim.schedule.next_run_at == at + timedelta(hours=1)


@pytest.mark.parametrize("zone", ["UTC", "Etc/GMT", "zulu", "Europe/Berlin"])
def test_an_interval_without_at_first_runs_an_interval_from_now(
    schedules: ScheduleService, session: Session, clock: FakeClock, zone: str
) -> None:
    rec = schedules.create("tick", message="m", interval_ms=60_000, timezone=zone)
    utc = zone != "Europe/Berlin"
    assert rec.next_run_at == clock.now + timedelta(minutes=1)
    assert rec.timezone == (None if utc else "Europe/Berlin")
    assert rec.payload == ({"message": "m"} if utc else {"message": "m", "timezone": zone})


@pytest.mark.parametrize(
    ("held", "zone", "ok"),
    [
        ("Europe/Berlin", "Europe/Berlin", True),
        ("europe/berlin", "Europe/Berlin", True),
        ("UTC", "Etc/GMT", True),
        ("Asia/Tokyo", "Europe/Berlin", False),
        ("Europe/Berlin", "UTC", False),
        (7, "Europe/Berlin", False),
        ("Mars/Olympus", "Europe/Berlin", False),
    ],
)
def test_an_intervals_payload_timezone_must_agree_with_its_timezone(
    schedules: ScheduleService, session: Session, held: object, zone: str, ok: bool
) -> None:
    def make() -> object:
        return schedules.create(
            "tick", payload={"message": "m", "timezone": held}, interval_ms=60_000, timezone=zone
        )

    if ok:
        assert make() is not None
        return
    with pytest.raises(InvalidInputError, match="disagree"):
        make()
    assert _count(session) == 0


def test_an_interval_whose_second_run_leaves_the_calendar_is_refused(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    last = datetime(9999, 12, 30, 23, 59, tzinfo=UTC)
    with pytest.raises(InvalidInputError, match="outside the supported times"):
        schedules.create("x", message="m", at=last, interval_ms=3_600_000)
    assert _count(session) == 0


@pytest.mark.parametrize(
    "when",
    [
        {"at": "soon", "interval_ms": 60_000, "cron": "0 9 * * *"},
        {"at": "soon", "cron": "0 9 * * *"},
        {"interval_ms": 60_000, "cron": "0 9 * * *"},
        {},
    ],
)
def test_at_or_an_interval_or_both_or_cron_alone_must_be_given(
    schedules: ScheduleService, session: Session, clock: FakeClock, when: dict[str, Any]
) -> None:
    if when.get("at") == "soon":
        when["at"] = clock.now + timedelta(hours=1)

    with pytest.raises(InvalidInputError, match="cron alone; got"):
        schedules.create("x", message="m", **when)

    assert _count(session) == 0


@pytest.mark.parametrize("interval", ["5000", 5000.0, 1.5, True, 0, 999, -60_000, 10**21])
def test_an_interval_that_is_not_an_int_of_at_least_a_second_is_refused(
    schedules: ScheduleService, session: Session, interval: object
) -> None:
    with pytest.raises(InvalidInputError, match="interval_ms"):
        schedules.create("x", message="m", interval_ms=interval)  # type: ignore[arg-type]

    assert _count(session) == 0


def test_an_at_more_than_a_minute_in_the_past_is_refused(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    with pytest.raises(InvalidInputError, match="in the past"):
        schedules.create("x", message="m", at=clock.now - timedelta(minutes=5))

    assert _count(session) == 0


def test_an_at_a_few_seconds_in_the_past_fires_at_the_next_poll(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("x", message="m", at=clock.now - timedelta(seconds=30))

    assert [c.schedule.id for c in schedules.claim_due()] == [rec.id]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"at": datetime(2026, 6, 14, 9)}, "timezone-aware"),
        ({"at": "2026-06-14T09:00:00Z"}, "datetime"),
        ({"action_type": "shell"}, "action_type"),
        ({"action_type": "autonomous_turn", "message": None}, "prompt"),
        ({"action_type": "reflect", "message": None}, "sessionId"),
        ({"payload": ["not", "a", "dict"]}, "payload"),
        ({"payload": {"message": "other"}}, "disagree"),
        ({"message": "   "}, "message"),
        ({"name": ""}, "name"),
        ({"cron": "* * * *", "at": None}, "5 fields"),
        ({"cron": "0 9 * * *", "at": None, "timezone": "Berlin"}, "IANA"),
        ({"created_by": ""}, "created_by"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    schedules: ScheduleService,
    session: Session,
    clock: FakeClock,
    kwargs: dict[str, Any],
    match: str,
) -> None:
    args: dict[str, Any] = {"name": "x", "message": "m", "at": clock.now + timedelta(hours=1)}
    args |= kwargs
    name = args.pop("name")

    with pytest.raises(InvalidInputError, match=match):
        schedules.create(name, **args)

    assert _count(session) == 0


def test_an_autonomous_turn_stores_its_prompt_where_the_dispatcher_reads_it(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create(
        "heartbeat", message="Check the build", interval_ms=600_000, action_type="autonomous_turn"
    )

    assert rec.payload == {"prompt": "Check the build", "replyChannel": "silent"}


def test_a_reflect_schedule_takes_its_session_from_the_payload(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create(
        "reflect", payload={"sessionId": "s-1"}, at=clock.now, action_type="reflect"
    )

    assert (rec.action_type, rec.payload) == ("reflect", {"sessionId": "s-1"})


@pytest.mark.parametrize("project", ["a", "-ab", "ab-", "Berlin", "berlin flat", "x" * 61, 7])
def test_a_project_that_is_not_kebab_case_of_2_to_60_characters_is_refused(
    schedules: ScheduleService, clock: FakeClock, project: object
) -> None:
    # a number is refused by its declared type (ScheduleSpec's), before the kebab-case rule
    rule = "must be text" if isinstance(project, int) else "must be kebab-case: 2-60 characters"
    with pytest.raises(InvalidInputError, match=f"^project: {rule}"):
        schedules.create("x", message="m", at=clock.now, project=project)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("project", "stored"),
    [("ab", "ab"), (" berlin-flat ", "berlin-flat"), ("x" * 60, "x" * 60), ("  ", None)],
)
def test_kebab_case_projects_are_stored_trimmed(
    schedules: ScheduleService, clock: FakeClock, project: str, stored: str | None
) -> None:
    assert schedules.create("x", message="m", at=clock.now, project=project).project == stored


# --- replacing and cancelling ------------------------------------------------------------------


def test_replacing_disables_the_enabled_same_named_schedules_and_adds_the_new_one(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    old = schedules.create("water", message="Drink water", interval_ms=3_600_000)
    schedules.create("other", message="m", interval_ms=3_600_000)
    clock.advance(seconds=1)

    new, replaced = schedules.replace("water", message="Drink more water", interval_ms=1_800_000)

    assert replaced == 1
    assert _rows(session) == [("other", True), ("water", False), ("water", True)]
    assert (got := schedules.get(old.id)) is not None and not got.enabled
    assert schedules.find_by_name("water") == new


def test_replacing_a_name_nobody_uses_replaces_nothing(schedules: ScheduleService) -> None:
    _, replaced = schedules.replace("fresh", message="m", interval_ms=60_000)

    assert replaced == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"interval_ms": 1.5},
        {"interval_ms": "5000"},
        {"cron": "0 9 * * *", "at": "soon"},
        {"cron": "every morning"},
        {"interval_ms": 60_000, "project": "Bad Project"},
    ],
)
def test_a_replacement_that_is_invalid_leaves_the_old_schedule_running(
    schedules: ScheduleService, session: Session, clock: FakeClock, bad: dict[str, Any]
) -> None:
    old = schedules.create("water", message="Drink water", interval_ms=3_600_000)
    if bad.get("at") == "soon":
        bad["at"] = clock.now + timedelta(hours=1)

    with pytest.raises(InvalidInputError):
        schedules.replace("water", message="Drink more water", **bad)

    assert _rows(session) == [("water", True)]
    assert schedules.find_by_name("water") == old


def test_cancelling_by_name_matches_the_exact_name_only(
    schedules: ScheduleService, session: Session
) -> None:
    schedules.create("water", message="m", interval_ms=60_000)
    schedules.create("water-plants", message="m", interval_ms=60_000)
    schedules.create("a", message="m", interval_ms=60_000)

    cancelled = schedules.cancel(name="water")

    assert [c.name for c in cancelled] == ["water"]
    assert _rows(session) == [("a", True), ("water", False), ("water-plants", True)]


def test_cancelling_is_soft_and_keeps_the_row(schedules: ScheduleService, session: Session) -> None:
    rec = schedules.create("water", message="m", interval_ms=60_000)

    (cancelled,) = schedules.cancel(id=rec.id)

    assert cancelled.enabled is False
    assert (got := schedules.get(rec.id)) is not None and got.enabled is False
    assert _count(session) == 1


def test_cancelling_ignores_disabled_schedules_and_names_what_is_enabled(
    schedules: ScheduleService,
) -> None:
    rec = schedules.create("water", message="m", interval_ms=60_000)
    schedules.create("stretch", message="m", interval_ms=60_000)
    schedules.cancel(id=rec.id)

    with pytest.raises(ScheduleNotFoundError, match="Currently enabled: stretch"):
        schedules.cancel(name="water")


def test_cancelling_with_nothing_enabled_says_none(schedules: ScheduleService) -> None:
    with pytest.raises(ScheduleNotFoundError, match="Currently enabled: none"):
        schedules.cancel(name="water")


def test_cancelling_needs_a_name_or_an_id(schedules: ScheduleService) -> None:
    with pytest.raises(InvalidInputError):
        schedules.cancel()


def test_cancelling_with_a_name_and_an_id_needs_them_to_agree(
    schedules: ScheduleService, session: Session
) -> None:
    water = schedules.create("water", message="m", interval_ms=60_000)
    schedules.create("stretch", message="m", interval_ms=60_000)

    with pytest.raises(InvalidInputError, match="not 'stretch'"):
        schedules.cancel(name="stretch", id=water.id)
    assert _rows(session) == [("stretch", True), ("water", True)]

    assert [c.id for c in schedules.cancel(name="water", id=water.id)] == [water.id]


# --- reading -------------------------------------------------------------------------------------


def test_find_by_name_returns_the_newest_enabled_one(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    schedules.create("water", message="old", interval_ms=60_000)
    clock.advance(seconds=1)
    newer = schedules.create("water", message="new", interval_ms=60_000)
    clock.advance(seconds=1)
    newest = schedules.create("water", message="newest", interval_ms=60_000)
    schedules.cancel(id=newest.id)

    assert schedules.find_by_name("water") == newer
    assert schedules.find_by_name("nobody") is None


def test_listing_orders_by_next_run_and_can_hide_disabled_ones(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    late = schedules.create("late", message="m", interval_ms=3_600_000)
    soon = schedules.create("soon", message="m", interval_ms=60_000)
    off = schedules.create("off", message="m", at=clock.now + timedelta(minutes=30))
    schedules.cancel(id=off.id)

    assert [r.name for r in schedules.list()] == ["soon", "off", "late"]
    assert [r.id for r in schedules.list(enabled_only=True)] == [soon.id, late.id]


def test_due_between_lists_runs_in_the_window_and_flags_overdue_ones(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    now = clock.now
    with factories.bound(session):
        factories.create(ScheduleFactory, name="in-window", next_run_at=now + timedelta(hours=2))
        factories.create(ScheduleFactory, name="overdue", next_run_at=now - timedelta(days=3))
        factories.create(ScheduleFactory, name="after", next_run_at=now + timedelta(days=2))
        factories.create(
            ScheduleFactory, name="disabled", next_run_at=now + timedelta(hours=1), enabled=False
        )
        factories.create(
            ScheduleFactory,
            name="paused-past-end",
            next_run_at=now - timedelta(hours=1),
            paused_until=now + timedelta(days=3),
        )
        factories.create(
            ScheduleFactory,
            name="paused-into-window",
            next_run_at=now - timedelta(hours=1),
            paused_until=now + timedelta(hours=5),
        )

    got = schedules.due_between(now, now + timedelta(days=1)).runs

    assert [(r.schedule.name, r.run_at - now, r.overdue) for r in got] == [
        ("overdue", timedelta(days=-3), True),
        ("in-window", timedelta(hours=2), False),
        ("paused-into-window", timedelta(hours=5), False),
    ]


def test_due_between_refuses_a_window_ending_before_it_starts(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    with pytest.raises(InvalidTimeRangeError):
        schedules.due_between(clock.now, clock.now - timedelta(seconds=1))


# --- claiming ------------------------------------------------------------------------------------


def test_claiming_a_due_one_shot_disables_it_and_carries_its_occurrence(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    at = clock.now + timedelta(minutes=10)
    rec = schedules.create("dentist", message="m", at=at)
    clock.advance(minutes=11)

    (claim,) = schedules.claim_due()

    assert (claim.schedule.id, claim.occurrence, claim.claimed_at) == (rec.id, at, clock.now)
    assert (claim.schedule.enabled, claim.schedule.last_run_at) == (False, clock.now)
    assert schedules.claim_due() == []


def test_nothing_is_claimed_before_it_is_due(schedules: ScheduleService, clock: FakeClock) -> None:
    schedules.create("water", message="m", interval_ms=60_000)
    clock.advance(seconds=59)

    assert schedules.claim_due() == []


def test_a_claimed_interval_schedule_advances_on_its_grid(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("water", message="m", interval_ms=60_000)
    clock.advance(seconds=61)  # a poll one second late

    (claim,) = schedules.claim_due()

    assert claim.occurrence == rec.next_run_at
    assert claim.schedule.next_run_at == rec.next_run_at + timedelta(minutes=1)  # no drift


def test_a_schedule_3_5_intervals_late_fires_once_and_skips_to_the_next_grid_point(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("hourly", message="m", interval_ms=3_600_000)
    clock.now = rec.next_run_at + timedelta(hours=3, minutes=30)

    claims = schedules.claim_due()

    assert [c.occurrence for c in claims] == [rec.next_run_at]  # one late run, not a burst
    assert claims[0].schedule.next_run_at == rec.next_run_at + timedelta(hours=4)
    assert schedules.claim_due() == []


def test_a_claimed_cron_schedule_moves_to_its_next_cron_time(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    clock.now = _utc(2026, 6, 12, 6)  # Friday, 08:00 Berlin
    schedules.create("weekday", message="m", cron="0 9 * * 1-5", timezone="Europe/Berlin")
    clock.now = _utc(2026, 6, 12, 7, 0, 5)

    (claim,) = schedules.claim_due()

    assert claim.occurrence == _utc(2026, 6, 12, 7)
    assert claim.schedule.next_run_at == _utc(2026, 6, 15, 7)


@pytest.mark.parametrize(
    "cron", ["*/30 * * * *", "0 2 * * *", "30 1 * * *", "*/30 2 * * *", "15,45 2,3 * * *"]
)
@pytest.mark.parametrize(
    "day_before",
    [_utc(2026, 3, 28, 12), _utc(2026, 10, 24, 12)],  # Berlin's spring and autumn changes
    ids=["spring", "autumn"],
)
def test_a_poller_claims_each_local_cron_time_once_across_the_change_of_clocks(
    schedules: ScheduleService, clock: FakeClock, cron: str, day_before: datetime
) -> None:
    # Polling every 7 minutes for a day and a half: every intended Berlin wall time is claimed
    # once (02:30 of the spring gap at 03:30, the repeated autumn hour once), in order, and
    # each next run lies after the one claimed.
    from tests.cron_oracle import oracle

    clock.now = day_before
    rec = schedules.create("berlin", message="m", cron=cron, timezone="Europe/Berlin")
    occurrences, runs = [], [rec.next_run_at]
    while clock.now < day_before + timedelta(hours=36):
        clock.advance(minutes=7)
        for claim in schedules.claim_due():
            occurrences.append(claim.occurrence)
            runs.append(claim.schedule.next_run_at)
    assert occurrences == oracle(cron, "Europe/Berlin", day_before, occurrences[-1])
    assert runs == sorted(set(runs))


def test_claiming_honours_the_limit_oldest_first(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    with factories.bound(session):
        for minutes in (3, 1, 2):
            factories.create(
                ScheduleFactory,
                name=f"m{minutes}",
                next_run_at=clock.now - timedelta(minutes=minutes),
            )

    assert [c.schedule.name for c in schedules.claim_due(limit=2)] == ["m3", "m2"]
    assert [c.schedule.name for c in schedules.claim_due()] == ["m1"]


def test_a_paused_schedule_is_not_claimed_until_its_pause_ends(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    with factories.bound(session):
        factories.create(
            ScheduleFactory,
            name="paused",
            recurring=True,
            next_run_at=clock.now - timedelta(hours=3),
            paused_until=clock.now + timedelta(minutes=30),
        )

    assert schedules.claim_due() == []
    clock.advance(minutes=30)
    (claim,) = schedules.claim_due()
    assert claim.occurrence == clock.now - timedelta(hours=3, minutes=30)  # fired once, late
    assert claim.schedule.next_run_at == claim.occurrence + timedelta(hours=4)  # on its grid
    assert schedules.claim_due() == []


def test_a_row_with_an_unreadable_expression_fires_once_like_the_original(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    with factories.bound(session):
        factories.create(
            ScheduleFactory, name="odd", cron_expr="cron:* * * *", next_run_at=clock.now
        )

    (claim,) = schedules.claim_due()

    assert (claim.schedule.kind, claim.schedule.enabled) == (ScheduleKind.ONCE, False)


def test_a_claim_is_lost_when_the_row_changed_between_read_and_update(
    schedules: ScheduleService, engine: Engine, clock: FakeClock, backend: str
) -> None:
    rec = schedules.create("water", message="m", interval_ms=60_000)
    clock.advance(minutes=1)
    interfered: list[bool] = []

    def another_poller(
        conn: Any, cursor: Any, statement: str, params: Any, context: Any, many: bool
    ) -> None:
        # Another process claims the same occurrence right before our compare-and-set runs.
        if statement.startswith("UPDATE memory_schedules SET next_run_at") and not interfered:
            interfered.append(True)
            mark = "%s" if backend == "postgres" else "?"  # the driver's parameter style
            cursor.execute(
                f"UPDATE memory_schedules SET next_run_at = next_run_at + 60000 WHERE id = {mark}",
                (rec.id,),
            )

    event.listen(engine, "before_cursor_execute", another_poller)
    try:
        claims = schedules.claim_due()
    finally:
        event.remove(engine, "before_cursor_execute", another_poller)

    assert interfered == [True]
    assert claims == []


# --- outcomes and the circuit breaker ------------------------------------------------------------


def _fail(schedules: ScheduleService, schedule_id: str, at: datetime) -> Any:
    return schedules.record_outcome(
        schedule_id, ok=False, fired_at=at, duration_ms=1500, summary="boom"
    )


def test_three_failures_pause_a_schedule_for_an_hour(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)

    first = _fail(schedules, rec.id, clock.now)
    second = _fail(schedules, rec.id, clock.advance(minutes=10))
    third = _fail(schedules, rec.id, clock.advance(minutes=10))

    assert [r.consecutive_failures for r in (first, second, third)] == [1, 2, 3]
    assert (first.paused_until, second.paused_until) == (None, None)
    assert third.paused_until == clock.now + timedelta(hours=1)


def test_a_success_resets_the_failures_and_lifts_the_pause(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)
    for _ in range(3):
        _fail(schedules, rec.id, clock.now)

    ok = schedules.record_outcome(
        rec.id, ok=True, fired_at=clock.now, duration_ms=900, summary="all good"
    )

    assert (ok.consecutive_failures, ok.paused_until) == (0, None)


def test_failures_while_paused_do_not_extend_the_pause(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)
    for _ in range(3):
        paused = _fail(schedules, rec.id, clock.now)
    until = paused.paused_until

    later = _fail(schedules, rec.id, clock.advance(minutes=20))

    assert (later.consecutive_failures, later.paused_until) == (4, until)


def test_a_failure_after_the_pause_ended_pauses_again(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)
    for _ in range(3):
        _fail(schedules, rec.id, clock.now)

    again = _fail(schedules, rec.id, clock.advance(hours=1, minutes=5))

    assert again.paused_until == clock.now + timedelta(hours=1)


def test_the_threshold_and_pause_can_be_chosen(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)

    got = schedules.record_outcome(
        rec.id,
        ok=False,
        fired_at=clock.now,
        duration_ms=1,
        summary="x",
        threshold=1,
        pause=timedelta(minutes=5),
    )

    assert got.paused_until == clock.now + timedelta(minutes=5)


def test_outcomes_are_recorded_under_the_schedules_name_and_listed_newest_first(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)
    schedules.record_outcome(
        rec.id,
        ok=True,
        fired_at=clock.now,
        duration_ms=1200,
        summary="http 3✓",
        http_ok=3,
        http_status={"200": 3},
    )
    schedules.record_outcome(
        rec.id,
        ok=True,
        fired_at=clock.advance(minutes=10),
        duration_ms=800,
        summary="fail 1x",
        http_ok=2,
        http_fail=1,
        http_status={"200": 2, "500": 1},
        failure_signatures=["HTTP 500"],
    )
    schedules.record_outcome(
        rec.id, ok=False, fired_at=clock.advance(minutes=10), duration_ms=50, summary="threw"
    )

    got = schedules.outcomes(rec.id)

    assert [o.outcome for o in got] == [
        OutcomeStatus.FAILED,
        OutcomeStatus.PARTIAL,
        OutcomeStatus.OK,
    ]
    assert got[1].http_status == {"200": 2, "500": 1} and got[1].failure_signatures == ["HTTP 500"]
    assert {o.schedule_id for o in got} == {"heartbeat"}  # Philont keys outcomes by name
    assert [o.text_summary for o in schedules.outcomes(rec.id, limit=1)] == ["threw"]
    assert schedules.outcomes("heartbeat", limit=2) == got[:2]


def test_outcomes_of_one_millisecond_come_in_one_order_every_time(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    """Runs fired and recorded in the same millisecond were listed in whatever order the
    database read them (a limit cut an arbitrary one); now by id, newest id first."""
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)
    for summary in ("one", "two", "three"):
        schedules.record_outcome(
            rec.id, ok=True, fired_at=clock.now, duration_ms=1, summary=summary
        )
    ids = sorted(session.scalars(select(ScheduleOutcome.id)))
    for new_id, summary in zip(ids, ("one", "two", "three"), strict=True):  # read in id order
        session.execute(
            update(ScheduleOutcome)
            .where(ScheduleOutcome.text_summary == summary)
            .values(id=new_id + "x")
        )
    session.flush()

    got = schedules.outcomes(rec.id)

    assert [o.text_summary for o in got] == ["three", "two", "one"]
    assert [o.text_summary for o in schedules.outcomes(rec.id, limit=1)] == ["three"]


def test_the_outcome_history_survives_a_same_name_replacement(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    old = schedules.create("heartbeat", message="check", interval_ms=600_000)
    schedules.record_outcome(old.id, ok=True, fired_at=clock.now, duration_ms=1, summary="one")

    new, _ = schedules.replace("heartbeat", message="check harder", interval_ms=600_000)

    assert [o.text_summary for o in schedules.outcomes(new.id)] == ["one"]


def test_every_http_call_failing_is_a_failed_run(
    schedules: ScheduleService, clock: FakeClock
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)
    schedules.record_outcome(
        rec.id, ok=True, fired_at=clock.now, duration_ms=1, summary="x", http_fail=2
    )

    assert schedules.outcomes(rec.id)[0].outcome is OutcomeStatus.FAILED


def test_recording_an_outcome_for_an_unknown_schedule_fails_and_writes_nothing(
    schedules: ScheduleService, session: Session, clock: FakeClock
) -> None:
    with pytest.raises(ScheduleNotFoundError):
        schedules.record_outcome(
            "no-such-id", ok=True, fired_at=clock.now, duration_ms=1, summary="x"
        )

    assert session.scalar(select(func.count()).select_from(ScheduleOutcome)) == 0


@pytest.mark.parametrize(
    "bad",
    [
        {"ok": 1},
        {"duration_ms": -1},
        {"duration_ms": 1.5},
        {"summary": None},
        {"http_ok": True},
        {"http_status": {"200": "3"}},
        {"failure_signatures": "HTTP 500"},
        {"threshold": 0},
        {"pause": timedelta(0)},
        {"fired_at": datetime(2026, 6, 14, 9)},
    ],
)
def test_a_bad_outcome_is_refused_and_nothing_is_written(
    schedules: ScheduleService, session: Session, clock: FakeClock, bad: dict[str, Any]
) -> None:
    rec = schedules.create("heartbeat", message="check", interval_ms=600_000)
    args: dict[str, Any] = {"ok": False, "fired_at": clock.now, "duration_ms": 1, "summary": "x"}

    with pytest.raises(InvalidInputError):
        schedules.record_outcome(rec.id, **(args | bad))

    assert session.scalar(select(func.count()).select_from(ScheduleOutcome)) == 0
    assert (got := schedules.get(rec.id)) is not None and got.consecutive_failures == 0


# --- two processes racing for the same occurrences -----------------------------------------------

RACE_T0 = _utc(2026, 6, 14, 4, 0)
RACE_STEP = timedelta(minutes=2)  # shorter than every interval: no occurrence is skipped
RACE_STEPS = 30  # one simulated hour
RACE_WORKERS = 4
RACE_MAX_ATTEMPTS = 20


def _fixed(at: datetime) -> Callable[[], datetime]:
    return lambda: at


def _race_worker(db: str, worker: int, nows: list[datetime], barrier: Any, out: Any) -> None:
    """Poll claim_due at each `now` in lockstep with the other workers; report what we won."""
    from philont.db.engine import create_engine

    engine = create_engine(db)
    won: list[tuple[str, str]] = []
    retries = 0
    began = time.perf_counter()
    try:
        for now in nows:
            barrier.wait(timeout=60)  # every process polls the same `now` at the same moment
            for _attempt in range(RACE_MAX_ATTEMPTS):
                try:
                    with Session(engine) as s, s.begin():
                        claims = ScheduleService(joined(s, _fixed(now))).claim_due(now)
                        batch = [(c.schedule.id, c.occurrence.isoformat()) for c in claims]
                    won.extend(batch)  # only once the transaction has committed
                    break
                except OperationalError:  # "database is locked" past busy_timeout
                    retries += 1
            else:
                raise RuntimeError(f"worker {worker} gave up at {now}")
        out.put((worker, won, retries, time.perf_counter() - began, None))
    except BaseException as exc:  # report, never hang the others
        barrier.abort()
        out.put((worker, won, retries, time.perf_counter() - began, repr(exc)))
    finally:
        engine.dispose()


def _seed_race(engine: Engine) -> dict[str, list[str]]:
    """Recurring and one-shot schedules created at RACE_T0; returns each one's due times."""
    last = RACE_T0 + RACE_STEP * (RACE_STEPS - 1)
    expected: dict[str, list[str]] = {}
    with Session(engine) as s, s.begin():
        svc = ScheduleService(joined(s, lambda: RACE_T0))
        for minutes in (3, 4.5, 7, 13):
            rec = svc.create(f"every-{minutes}", message="m", interval_ms=int(minutes * 60_000))
            step = timedelta(minutes=minutes)
            times, t = [], rec.next_run_at
            while t <= last:
                times.append(t)
                t += step
            expected[rec.id] = [x.isoformat() for x in times]
        for cron, step_minutes in (("*/5 * * * *", 5), ("*/3 * * * *", 3)):
            rec = svc.create(f"cron-{step_minutes}", message="m", cron=cron)
            times = [
                RACE_T0 + timedelta(minutes=step_minutes * k)
                for k in range(1, 61 // step_minutes + 1)
                if RACE_T0 + timedelta(minutes=step_minutes * k) <= last
            ]
            expected[rec.id] = [x.isoformat() for x in times]
        for offset in (timedelta(minutes=7), timedelta(minutes=33, seconds=20), timedelta(hours=2)):
            rec = svc.create(f"once-{offset}", message="m", at=RACE_T0 + offset)
            due = RACE_T0 + offset
            expected[rec.id] = [due.isoformat()] if due <= last else []
    return expected


def test_processes_polling_at_once_fire_every_due_occurrence_exactly_once(
    engine: Engine, backend: str, request: pytest.FixtureRequest
) -> None:
    if backend == "postgres":  # the workers open the same agent schema by its URL
        target = engine.url.render_as_string(hide_password=False)
    else:
        target = str(request.getfixturevalue("db_path"))
    expected = _seed_race(engine)
    engine.dispose()
    nows = [RACE_T0 + RACE_STEP * i for i in range(RACE_STEPS)]
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(RACE_WORKERS)
    out = ctx.Queue()
    workers = [
        ctx.Process(target=_race_worker, args=(target, i, nows, barrier, out))
        for i in range(RACE_WORKERS)
    ]
    for p in workers:
        p.start()
    try:
        results = [out.get(timeout=120) for _ in workers]
    except queue_module.Empty:  # pragma: no cover - a worker died without reporting
        pytest.fail("a race worker did not report")
    finally:
        for p in workers:
            p.join(timeout=30)
            if p.is_alive():  # pragma: no cover
                p.kill()

    assert [error for *_, error in results] == [None] * RACE_WORKERS
    claims = [claim for _, won, *_ in results for claim in won]
    duplicates = [c for c, n in Counter(claims).items() if n > 1]
    assert duplicates == []
    wanted = {(sid, at) for sid, times in expected.items() for at in times}
    assert set(claims) == wanted
    assert len(claims) == len(wanted) > 50
    # Everyone got a share: the claims were really contended, not served by one process.
    assert sum(1 for _, won, *_ in results if won) >= 2
    retries = sum(r for _, _, r, *_ in results)
    seconds = max(t for *_, t, _ in results)
    shares = sorted(len(won) for _, won, *_ in results)
    print(
        f"race: {len(claims)} claims, per process {shares}, {retries} lock retries, {seconds:.2f} s"
    )
