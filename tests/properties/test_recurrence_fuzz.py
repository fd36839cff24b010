"""Fuzzing calendar rules through the tools: any RRULE (every FREQ with BYSETPOS, COUNT,
INTERVAL and UNTIL at their extremes), any start, any zone: create_calendar_event answers with an
event or a refusal, never internal_error, within its work limit; and list_upcoming afterwards is
always ok, capped and bounded, whatever was accepted before."""

from __future__ import annotations

import os
from datetime import datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import tools
from philont.services.calendar import LISTING_WORK_LIMIT
from tests.timegen import extreme_rules
from tests.tools.helpers import DbTarget, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
REFUSALS = {"invalid_input", "time_out_of_range", "invalid_time_range", "invalid_arguments"}


def _create_then_list(
    case: tuple[str, datetime, str], duration_s: int | None, target: DbTarget
) -> None:
    rule, start, zone = case
    args = {"title": "fuzz", "starts_at": start.isoformat(), "timezone": zone, "rrule": rule}
    if duration_s is not None:
        args["ends_at"] = int(start.timestamp() * 1000) + duration_s * 1000
    before = snapshot(target)
    created = tools.call("create_calendar_event", args, db=target)
    if not created.ok:
        assert created.error_code in REFUSALS, created.text
        assert snapshot(target) == before
    listed = tools.call("list_upcoming", {"window_days": 90}, db=target)
    assert listed.ok, listed.text
    assert listed.data["work_steps"] <= LISTING_WORK_LIMIT
    assert listed.data["shown"] <= 50 and len(listed.text) <= 51 * 400


durations = st.none() | st.sampled_from([0, 3600, 400 * 86_400, 10**11]) | st.integers(0, 10**9)


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=extreme_rules(), duration_s=durations)
def test_any_rule_is_an_event_or_a_refusal_and_listing_stays_ok_and_bounded(
    case: tuple[str, datetime, str], duration_s: int | None, tool_target: DbTarget
) -> None:
    _create_then_list(case, duration_s, tool_target)


@pytest.mark.reliability
@settings(
    max_examples=500 if HEAVY else 100,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=extreme_rules(), duration_s=durations)
def test_heavy_any_rule_is_an_event_or_a_refusal_and_listing_stays_ok_and_bounded(
    case: tuple[str, datetime, str], duration_s: int | None, tool_target: DbTarget
) -> None:
    _create_then_list(case, duration_s, tool_target)
