"""What ``list_upcoming`` tells a model about when things happen.

1. An item with a zone (a calendar event's zone, a cron reminder's zone, the zone a one-shot
   reminder was given in) is shown at its wall time there, with the zone's offset at that
   instant, next to the UTC instant: the model talking to the user in that zone need not
   convert (it got DST days wrong). The text is read back here and must name the same
   instant, in the zone's offset of that day.
2. Items at the same moment are listed by title (events) or name (tasks), then id: the same
   order whatever order they were created in, on SQLite and PostgreSQL alike (ids are random).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont import tools
from philont.domain.timeparse import iso
from philont.store import Store

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: target)

ZONES = [
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",  # skips midnight
    "Australia/Lord_Howe",  # a 30-minute DST shift
    "Pacific/Chatham",  # +12:45 / +13:45
    "Asia/Kolkata",  # +05:30, no DST
    "America/St_Johns",  # -03:30 / -02:30
    "Europe/London",  # offset 0 in winter, still a zone of its own
]
DST_DAYS = [
    datetime(2026, 3, 29, tzinfo=UTC),  # Europe forward
    datetime(2026, 10, 25, tzinfo=UTC),  # Europe back
    datetime(2026, 3, 8, tzinfo=UTC),  # North America forward
    datetime(2026, 11, 1, tzinfo=UTC),  # North America back
    datetime(2026, 4, 5, tzinfo=UTC),  # Southern hemisphere back
    datetime(2026, 9, 6, tzinfo=UTC),  # Chile forward
    datetime(2026, 10, 4, tzinfo=UTC),  # Australia forward
    datetime(2026, 9, 27, tzinfo=UTC),  # Chatham forward
]

instants = st.one_of(
    st.tuples(st.sampled_from(DST_DAYS), st.integers(-36 * 60, 36 * 60)).map(
        lambda p: p[0] + timedelta(minutes=p[1])
    ),
    st.datetimes(datetime(1900, 1, 1), datetime(2200, 1, 1)).map(
        lambda d: d.replace(microsecond=0, tzinfo=UTC)
    ),
)

SHOWN = re.compile(
    r"@ (?P<wall>\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?)(?P<offset>[+-]\d\d:\d\d(?::\d\d)?) "
    r"(?P<zone>[A-Za-z_/+-]+) = (?P<utc>\S+Z)"
)


Opener = Callable[[], "Path | URL"]


@pytest.fixture
def fresh(backend: str, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest):  # type: ignore[no-untyped-def]
    """A new, empty memory per call (one per hypothesis example)."""

    def new() -> Path | URL:
        if backend == "postgres":
            url: URL = request.getfixturevalue("pg_agent")()
            return url
        return tmp_path_factory.mktemp("upcoming") / "m.sqlite"

    return new


def _read_back(line: str, zone: str) -> datetime:
    """The instant a listing line names, checked against its own wall time and offset."""
    found = SHOWN.search(line)
    assert found is not None, line
    assert found["zone"] == zone, line
    local = datetime.fromisoformat(found["wall"].replace(" ", "T") + found["offset"])
    utc = datetime.fromisoformat(found["utc"].replace("Z", "+00:00"))
    assert local == utc, line  # the wall time with its offset is the UTC instant shown
    there = utc.astimezone(ZoneInfo(zone))
    assert local.utcoffset() == there.utcoffset(), line  # the zone's offset on that day
    return utc


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(zone=st.sampled_from(ZONES), at=instants)
def test_a_zoned_event_is_shown_at_its_wall_time_next_to_the_utc_instant(
    fresh: Opener, zone: str, at: datetime
) -> None:
    now = at - timedelta(hours=1)
    with Store.open(fresh(), clock=lambda: now) as store:
        created = tools.call(
            "create_calendar_event",
            {"title": "Dentist", "starts_at": at.isoformat(), "timezone": zone},
            db=store,
        )
        assert created.ok, created.error
        listed = tools.call("list_upcoming", {"window_days": 1}, db=store)
    assert listed.ok, listed.error
    (line,) = listed.text.splitlines()
    assert line.startswith("- [event] Dentist @ "), line
    assert _read_back(line, zone) == at
    assert _read_back(created.text, zone) == at  # the same rule in the tool that made it


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(zone=st.sampled_from(ZONES), day=st.sampled_from(DST_DAYS), hour=st.integers(0, 23))
@example(zone="Pacific/Chatham", day=datetime(2026, 4, 5, tzinfo=UTC), hour=13)
def test_a_cron_reminder_is_shown_at_its_wall_time_in_its_zone(
    fresh: Opener, zone: str, day: datetime, hour: int
) -> None:
    now = day - timedelta(days=1)
    with Store.open(fresh(), clock=lambda: now) as store:
        made = tools.call(
            "schedule_reminder",
            {"name": "water", "message": "drink", "cron": f"30 {hour} * * *", "timezone": zone},
            db=store,
        )
        assert made.ok, made.error
        # Two days: the first run can be more than a day away (Chatham at UTC+13:45 has
        # passed 13:30 a day before `day` begins in UTC, and the next one is 24h + 45min away).
        listed = tools.call("list_upcoming", {"window_days": 2}, db=store)
    assert listed.ok, listed.error
    first = datetime.fromisoformat(made.data["next_run_at"])
    line = next(li for li in listed.text.splitlines() if li.startswith("- [task] water @ "))
    assert _read_back(line, zone) == first
    assert _read_back(made.text, zone) == first


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(zone=st.sampled_from(ZONES), at=instants, with_offset=st.booleans())
def test_a_one_shot_reminder_is_shown_at_its_wall_time_in_the_zone_it_was_given_in(
    fresh: Opener, zone: str, at: datetime, with_offset: bool
) -> None:
    # The wall time as the user said it (no offset, read in `timezone`) or with its offset:
    # either way the reminder keeps its zone and is listed at its wall time there.
    local = at.astimezone(ZoneInfo(zone))
    given_at = local.isoformat() if with_offset else local.replace(tzinfo=None).isoformat()
    now = at - timedelta(hours=1)
    with Store.open(fresh(), clock=lambda: now) as store:
        made = tools.call(
            "schedule_reminder",
            {"name": "call mum", "message": "call", "at": given_at, "timezone": zone},
            db=store,
        )
        assert made.ok, made.error
        listed = tools.call("list_upcoming", {"window_days": 1}, db=store)
    assert listed.ok, listed.error
    first = datetime.fromisoformat(made.data["next_run_at"])
    (line,) = listed.text.splitlines()
    assert line.startswith("- [task] call mum @ "), line
    assert _read_back(line, zone) == first
    assert _read_back(made.text, zone) == first
    assert made.data["cron_expr"] == f"once@{zone}"
    assert (made.data["kind"], made.data["timezone"]) == ("once", zone)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    zone=st.sampled_from(ZONES),
    at=instants,
    interval_ms=st.sampled_from([60_000, 3_600_000, 86_400_000, 7 * 86_400_000]),
)
@example(zone="Europe/Berlin", at=datetime(2026, 10, 25, 1, 0, tzinfo=UTC), interval_ms=60_000)
def test_an_interval_reminder_starts_at_its_wall_time_and_is_listed_in_its_zone(
    fresh: Opener, zone: str, at: datetime, interval_ms: int
) -> None:
    # An interval has no wall-clock meaning but its first run: `at` (here a wall time
    # without an offset) is read in `timezone`, and its runs are listed there; the row stays
    # Philont's own interval (the zone rides in the payload).
    # the wall time as text says nothing of which pass of a repeated hour: fold=0, the first
    local = at.astimezone(ZoneInfo(zone)).replace(tzinfo=None, fold=0)
    now = at - timedelta(hours=1)
    args = {"name": "stretch", "message": "stand up", "interval_ms": interval_ms}
    with Store.open(fresh(), clock=lambda: now) as store:
        made = tools.call(
            "schedule_reminder", args | {"at": local.isoformat(), "timezone": zone}, db=store
        )
        assert made.ok, made.error
        listed = tools.call("list_upcoming", {"window_days": 1}, db=store)
    first = datetime.fromisoformat(made.data["next_run_at"])
    assert first == local.replace(tzinfo=ZoneInfo(zone)).astimezone(UTC)  # fold=0, gap forward
    assert (made.data["kind"], made.data["timezone"]) == ("interval", zone)
    assert made.data["cron_expr"] == f"interval:{interval_ms}"
    assert made.data["payload"] == {"message": "stand up", "timezone": zone}
    assert _read_back(made.text, zone) == first
    lines = listed.text.splitlines()
    assert lines[0].startswith("- [task] stretch @ "), lines
    assert _read_back(lines[0], zone) == first


def test_an_interval_reminder_says_its_wall_time_moves_where_the_clocks_change(
    fresh: Opener,
) -> None:
    now = datetime(2026, 3, 1, 8, tzinfo=UTC)
    args = {"name": "pill", "message": "take it", "interval_ms": 86_400_000}
    with Store.open(fresh(), clock=lambda: now) as store:
        berlin = tools.call(
            "schedule_reminder",
            args | {"at": "2026-03-02T09:00", "timezone": "Europe/Berlin"},
            db=store,
        )
        tokyo = tools.call(
            "schedule_reminder",
            args | {"name": "pill2", "at": "2026-03-02T09:00", "timezone": "Asia/Tokyo"},
            db=store,
        )
    assert berlin.ok and tokyo.ok, (berlin.text, tokyo.text)
    assert "first run @ 2026-03-02 09:00+01:00 Europe/Berlin = 2026-03-02T08:00:00.000Z" in (
        berlin.text
    )
    assert "wall time in Europe/Berlin moves when the clocks there change" in berlin.text
    assert "use cron" in berlin.text
    assert "2026-03-02 09:00+09:00 Asia/Tokyo" in tokyo.text
    assert "moves" not in tokyo.text  # Tokyo keeps its offset


def test_items_without_a_zone_are_shown_as_before(fresh: Opener) -> None:
    now = datetime(2026, 3, 29, 0, 0, tzinfo=UTC)
    at = now + timedelta(hours=3)
    with Store.open(fresh(), clock=lambda: now) as store:
        tools.call(
            "create_calendar_event",
            {"title": "Call", "starts_at": at.isoformat(), "timezone": "UTC"},
            db=store,
        )
        once = {"name": "once", "message": "hi", "at": at.isoformat(), "timezone": "Etc/UTC"}
        made = tools.call("schedule_reminder", once, db=store)
        every = {"name": "tick", "message": "hi", "interval_ms": 3 * 3600_000}
        tools.call("schedule_reminder", every | {"timezone": "Etc/GMT"}, db=store)
        listed = tools.call("list_upcoming", {"window_days": 1}, db=store)
    assert made.data["cron_expr"] is None  # a UTC one-shot is stored as Philont stores it
    assert listed.text.splitlines() == [
        f"- [event] Call @ {iso(at)} (UTC)",
        f"- [task] once @ {iso(at)} (prompt)",
        f"- [task] tick @ {iso(at)} (prompt)",
    ]


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    titles=st.lists(
        st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc", "Z")), min_size=1),
        min_size=2,
        max_size=5,
    ),
    names=st.lists(st.sampled_from(["b", "a", "B", "é", "z", "a2", "Ä"]), unique=True, max_size=4),
    data=st.data(),
)
def test_items_at_the_same_moment_are_listed_by_title_then_id_whatever_the_creation_order(
    fresh: Opener, titles: list[str], names: list[str], data: st.DataObject
) -> None:
    now = datetime(2026, 10, 24, 12, 0, tzinfo=UTC)
    at = datetime(2026, 10, 25, 1, 30, tzinfo=UTC)  # 02:30 in Berlin, the first pass
    zones = data.draw(st.lists(st.sampled_from(["UTC", "Europe/Berlin"]), min_size=len(titles)))
    plan = [("event", t, z) for t, z in zip(titles, zones, strict=False)]
    plan += [("task", n, "UTC") for n in names]
    order = data.draw(st.permutations(plan))
    with Store.open(fresh(), clock=lambda: now) as store:
        for kind, text, zone in order:
            if kind == "event":
                args = {"title": text, "starts_at": at.isoformat(), "timezone": zone}
                made = tools.call("create_calendar_event", args, db=store)
            else:
                args = {"name": text, "message": "m", "at": at.isoformat(), "timezone": zone}
                made = tools.call("schedule_reminder", args, db=store)
            assert made.ok, made.error
        listed = tools.call("list_upcoming", {"window_days": 2}, db=store)
    assert listed.ok, listed.error
    events = [(o["event"]["title"], o["event"]["id"]) for o in listed.data["events"]]
    tasks = [(r["schedule"]["name"], r["schedule"]["id"]) for r in listed.data["schedules"]]
    assert events == sorted(events)  # code point order, on both backends
    assert tasks == sorted(tasks)
    assert len(events) == len(titles) and len(tasks) == len(names)
    kinds = [line.split("]")[0] for line in listed.text.splitlines()]
    assert kinds == ["- [event"] * len(events) + ["- [task"] * len(tasks)
