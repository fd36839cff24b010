"""A recurring event crossing its zone's change of offset, through create_calendar_event and
list_upcoming: COUNT=N lists N distinct instants, increasing, whether the series crosses the
spring gap (a skipped 02:30 is 03:30 summer time, one occurrence with the series' own 03:30) or
the autumn overlap (a repeated hour listed once). The domain's generated cases are in
tests/unit/test_series_dst.py; here the same rule holds through the tools and the database."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import Store, tools
from philont.domain import wallclock
from tests.tools.helpers import DbTarget
from tests.unit import test_skipped_local_times as skipped_oracle

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

ZONES = ("Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Santiago")
RULES = ("HOURLY", "MINUTELY;INTERVAL=30", "SECONDLY;INTERVAL=900", "HOURLY;INTERVAL=2")


def _next_gap(zone: ZoneInfo, after: datetime) -> tuple[datetime, datetime, timedelta]:
    return next(iter(wallclock.gaps_between(after, after + timedelta(days=400), zone)))


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    zone_name=st.sampled_from(ZONES),
    rule=st.sampled_from(RULES),
    count=st.integers(2, 6),
    minutes_before=st.integers(0, 150),
)
def test_count_through_the_tools_lists_count_instants_across_the_spring_gap(
    tool_target: DbTarget, zone_name: str, rule: str, count: int, minutes_before: int
) -> None:
    zone = ZoneInfo(zone_name)
    skipped, _, _ = _next_gap(zone, datetime(2026, 12, 5, tzinfo=UTC))
    start = wallclock.place(skipped - timedelta(minutes=minutes_before + 1), zone)
    assert start is not None
    now = start - timedelta(hours=1)
    title = f"across {zone_name} {rule} {count} {minutes_before}"
    with Store.open(tool_target, clock=lambda: now) as store:
        created = tools.call(
            "create_calendar_event",
            {
                "title": title,
                "timezone": zone_name,
                "starts_at": start.isoformat(),
                "rrule": f"FREQ={rule};COUNT={count}",
            },
            db=store,
        )
        assert created.ok, created.text
        listed = tools.call("list_upcoming", {"window_days": 2}, db=store)
        assert listed.ok, listed.text
        mine = [
            datetime.fromisoformat(occ["starts_at"])
            for occ in listed.data["events"]
            if occ["event"]["title"] == title
        ]
        store.run(lambda mem: mem.calendar.delete(created.data["id"]))  # the next example's
    shown = min(count, 5)  # list_upcoming shows at most 5 of one series
    assert len(mine) == shown, (mine, listed.text)
    assert all(a < b for a, b in itertools.pairwise(mine))
    if count <= 5:
        assert listed.data["capped_series"] == {}


def _wall_oracle(rule: str, wall: datetime, zone: ZoneInfo) -> list[datetime]:
    """RFC 5545 over naive wall-clock times from the time that was given, each placed in the
    zone (a skipped time a gap later: Python's fold=0), knowing nothing of philont."""
    return [at.replace(tzinfo=zone).astimezone(UTC) for at in rrulestr(rule, dtstart=wall)]


def _created_and_listed(
    target: DbTarget, zone_name: str, wall: datetime, text: str, via: str, want: list[datetime]
) -> list[datetime]:
    """The starts listed from ``want[0]`` to a day after ``want[-1]`` of the series ``text``
    created from the naive local time ``wall``: by the tool (``via`` "tool", the text without an
    offset) or by calendar.create with a ZoneInfo time ("service", or "fold=0"/"fold=1")."""
    zone = ZoneInfo(zone_name)
    with Store.open(target, clock=lambda: want[0] - timedelta(hours=1)) as store:
        if via == "tool":
            args = {"title": "skipped", "timezone": zone_name, "rrule": text}
            created = tools.call(
                "create_calendar_event", args | {"starts_at": wall.isoformat()}, db=store
            )
            assert created.ok, created.text
            event_id = created.data["id"]
        else:
            given_time = wall.replace(tzinfo=zone, fold=int(via == "fold=1"))
            event_id = store.run(
                lambda mem: (
                    mem.calendar.create("skipped", given_time, timezone=zone_name, rrule=text).id
                )
            )
        got = store.run(
            lambda mem: [
                o.starts_at
                for o in mem.calendar.between(want[0], want[-1] + timedelta(days=1)).occurrences
                if o.event.id == event_id
            ]
        )
        store.run(lambda mem: mem.calendar.delete(event_id))  # the next example's
    return got


@settings(
    max_examples=16,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    zone_name=st.sampled_from(ZONES),
    rule=st.sampled_from(("DAILY", "WEEKLY", "DAILY;INTERVAL=3", "MONTHLY", "YEARLY")),
    count=st.integers(2, 4),
    year=st.integers(2026, 2040),
    into_gap=st.floats(0, 1, exclude_max=True),
    via=st.sampled_from(("tool", "service", "fold=1")),
)
def test_a_series_started_at_a_skipped_time_keeps_that_time_on_its_other_days(
    tool_target: DbTarget,
    zone_name: str,
    rule: str,
    count: int,
    year: int,
    into_gap: float,
    via: str,
) -> None:
    # Daily at 02:30 from the Berlin spring day: that day's 02:30 is 03:30 summer time, the
    # other days' are 02:30 (RFC 5545 §3.3.5 moves the skipped occurrence alone). The start was
    # stored as the instant it lands on and the series then ran from 03:30 every day.
    zone = ZoneInfo(zone_name)
    skipped, _, size = _next_gap(zone, datetime(year, 1, 1, tzinfo=UTC))
    wall = skipped + timedelta(minutes=int(size.total_seconds() // 60 * into_gap))
    text = f"FREQ={rule};COUNT={count}"
    want = _wall_oracle(text, wall, zone)
    got = _created_and_listed(tool_target, zone_name, wall, text, via, want)
    assert got == want, (wall, text, [g.astimezone(zone).isoformat() for g in got])


@pytest.mark.parametrize(
    ("zone_name", "wall", "rule", "via"),
    [
        ("Europe/Berlin", datetime(2026, 3, 29, 2, 30), "HOURLY;INTERVAL=2", "tool"),
        ("Europe/Berlin", datetime(2026, 3, 29, 2, 30), "HOURLY;INTERVAL=2", "fold=1"),
        ("America/New_York", datetime(2027, 3, 14, 2, 30), "MINUTELY;INTERVAL=90", "tool"),
        ("Australia/Lord_Howe", datetime(2026, 10, 4, 2, 15), "HOURLY", "fold=0"),
        ("Pacific/Chatham", datetime(2026, 9, 27, 3, 0), "HOURLY;INTERVAL=3", "fold=1"),
    ],
)
def test_a_finer_series_from_a_skipped_time_steps_from_that_time_when_stored(
    tool_target: DbTarget, zone_name: str, wall: datetime, rule: str, via: str
) -> None:
    # Every two hours from 02:30 on the Berlin spring day: RFC 5545 computes 02:30, 04:30,
    # 06:30 and reads the skipped 02:30 as 03:30 summer time. The event kept only the instant
    # 03:30 and ran 03:30, 05:30, 07:30; a host's ZoneInfo 02:30 with fold=1 was 01:30, an hour
    # before the time given (PEP 495), and the series ran from there.
    zone = ZoneInfo(zone_name)
    unit, _, interval = rule.partition(";INTERVAL=")
    each = timedelta(seconds={"HOURLY": 3600, "MINUTELY": 60}[unit] * int(interval or 1))
    want = skipped_oracle.series(wall, each, 5, zone)
    text = f"FREQ={rule};COUNT=5"
    got = _created_and_listed(tool_target, zone_name, wall, text, via, want)
    assert got == want, [g.astimezone(zone).isoformat() for g in got]


def test_a_finer_series_whose_two_starts_cannot_be_told_apart_is_refused(
    tool_target: DbTarget,
) -> None:
    # Every 5 hours from 02:30 (Berlin spring day) reaches 03:30's hour and minute on other
    # days, so no BYHOUR/BYMINUTE keeps it from running from 03:30 (where 02:30 lands): refused,
    # nothing written, rather than listed from a start that was not given.
    args = {"title": "every 5 h", "timezone": "Europe/Berlin", "rrule": "FREQ=HOURLY;INTERVAL=5"}
    with Store.open(tool_target) as store:
        created = tools.call(
            "create_calendar_event", args | {"starts_at": "2026-03-29T02:30"}, db=store
        )
        assert not created.ok and "start at 03:30:00 or on another day" in created.text
        assert store.run(lambda mem: mem.calendar.count()) == 0
