"""``list_upcoming`` shows at most ``UPCOMING_PER_SERIES`` occurrences of one recurring event, so
a frequent series (every second, every minute) cannot fill every line and hide the other
events of the window; the series cut short are named, with their count, in the text and the
data. Before, one ``FREQ=SECONDLY`` event hid everything after its first 50 seconds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import tools
from philont.store import Store
from philont.tools.handlers import UPCOMING_PER_SERIES, UPCOMING_SHOWN
from tests.tools.helpers import DbTarget

BOTH_BACKENDS = True  # the test that takes tool_target runs on SQLite and PostgreSQL

NOW = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
FREQUENCIES = ["SECONDLY", "MINUTELY", "HOURLY", "DAILY"]

events = st.lists(
    st.tuples(
        st.sampled_from([None, *FREQUENCIES]),  # None: a one-shot
        st.integers(0, 6 * 24 * 60),  # minutes from now to its start, within the 7-day window
    ),
    min_size=1,
    max_size=8,
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(plan=events)
def test_every_event_of_the_window_is_shown_and_no_series_floods_the_listing(
    tmp_path_factory: object, plan: list[tuple[str | None, int]]
) -> None:
    path = Path(tmp_path_factory.mktemp("upcoming")) / "m.sqlite"  # type: ignore[attr-defined]
    with Store.open(path, clock=lambda: NOW) as store:
        for n, (freq, minutes) in enumerate(plan):
            args = {
                "title": f"event {n}",
                "timezone": "UTC",
                "starts_at": (NOW + timedelta(minutes=minutes, seconds=30)).isoformat(),
            }
            if freq is not None:
                args["rrule"] = f"FREQ={freq}"
            assert tools.call("create_calendar_event", args, db=store).ok
        result = tools.call("list_upcoming", {"window_days": 7}, db=store)
    assert result.ok, result.error
    shown: dict[str, int] = {}
    for occ in result.data["events"]:
        shown[occ["event"]["title"]] = shown.get(occ["event"]["title"], 0) + 1
    assert len(result.data["events"]) <= UPCOMING_SHOWN
    assert all(n <= UPCOMING_PER_SERIES for n in shown.values()), shown
    # 8 events x 5 occurrences fit in 50 lines: every event of the window is shown
    assert set(shown) == {f"event {n}" for n in range(len(plan))}
    named = result.data["capped_series"]
    titles = {occ["event"]["id"]: occ["event"]["title"] for occ in result.data["events"]}
    for event_id, count in named.items():  # cut short: shown 5 times, more in the window
        assert shown[titles[event_id]] == UPCOMING_PER_SERIES
        # a lower bound once counting ran out (the listing says so: total_is_exact)
        assert count > UPCOMING_PER_SERIES or not result.data["total_is_exact"]
    every_minute = {f"event {n}" for n, (f, _) in enumerate(plan) if f in ("SECONDLY", "MINUTELY")}
    assert every_minute <= {titles[i] for i in named}
    assert ("shows its first" in result.text) == bool(named)


def test_a_series_cut_short_is_named_by_its_title_when_none_of_it_is_shown(
    tool_target: DbTarget,
) -> None:
    """A series whose occurrences in the window all come after the 50th line (it began
    yesterday and repeats in the afternoon) is still named by its title in the line that
    names the series cut short: it was named by its bare id, which reads as a title."""
    fill = UPCOMING_SHOWN // UPCOMING_PER_SERIES  # minutely series that fill every line
    with Store.open(tool_target, clock=lambda: NOW) as store:
        afternoon = {
            "title": "afternoon",
            "timezone": "UTC",
            "starts_at": (NOW - timedelta(days=1)).isoformat(),
            "rrule": "FREQ=MINUTELY;BYHOUR=15",
        }
        assert tools.call("create_calendar_event", afternoon, db=store).ok
        for n in range(fill):
            start = NOW + timedelta(seconds=30 + n)
            args = {"title": f"series {n}", "timezone": "UTC", "starts_at": start.isoformat()}
            args["rrule"] = "FREQ=MINUTELY"
            assert tools.call("create_calendar_event", args, db=store).ok
        result = tools.call("list_upcoming", {"window_days": 1}, db=store)
    assert result.ok, result.error
    shown = {occ["event"]["title"] for occ in result.data["events"]}
    assert "afternoon" not in shown and len(result.data["capped_series"]) == fill + 1
    line = next(line for line in result.text.splitlines() if "shows its first" in line)
    assert "'afternoon' " in line, line
    assert not any(event_id in line for event_id in result.data["capped_series"]), line
