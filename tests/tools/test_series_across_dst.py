"""A recurring event crossing its zone's change of offset, through create_calendar_event and
list_upcoming: COUNT=N lists N distinct instants, increasing, whether the series crosses the
spring gap (a skipped 02:30 is 03:30 summer time, one occurrence with the series' own 03:30) or
the autumn overlap (a repeated hour listed once). The domain's generated cases are in
tests/unit/test_series_dst.py; here the same rule holds through the tools and the database."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import Store, tools
from philont.domain import wallclock
from tests.tools.helpers import DbTarget

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
    via=st.sampled_from(("tool", "service")),
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
    start = want[0]
    now = start - timedelta(hours=1)
    with Store.open(tool_target, clock=lambda: now) as store:
        if via == "tool":
            args = {"title": "skipped", "timezone": zone_name, "rrule": text}
            created = tools.call(
                "create_calendar_event", args | {"starts_at": wall.isoformat()}, db=store
            )
            assert created.ok, created.text
            event_id = created.data["id"]
        else:
            event_id = store.run(
                lambda mem: (
                    mem.calendar.create(
                        "skipped", wall.replace(tzinfo=zone), timezone=zone_name, rrule=text
                    ).id
                )
            )
        got = store.run(
            lambda mem: [
                o.starts_at
                for o in mem.calendar.between(start, want[-1] + timedelta(days=1)).occurrences
                if o.event.id == event_id
            ]
        )
        store.run(lambda mem: mem.calendar.delete(event_id))  # the next example's
    assert got == want, (wall, text, [g.astimezone(zone).isoformat() for g in got])
