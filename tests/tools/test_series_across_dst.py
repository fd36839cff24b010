"""A recurring event crossing its zone's change of offset, through create_calendar_event and
list_upcoming: COUNT=N lists N distinct instants, increasing, whether the series crosses the
spring gap (a skipped 02:30 is 03:30 summer time, one occurrence with the series' own 03:30) or
the autumn overlap (a repeated hour listed once). The domain's generated cases are in
tests/unit/test_series_dst.py; here the same rule holds through the tools and the database."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

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
