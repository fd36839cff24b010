"""Epoch *seconds* where a tool takes epoch milliseconds (a model's commonest time mistake:
``1900000000`` for 2030-03-17) are refused by name with the value that was meant, through every
tool argument that takes a time, and write nothing. Read as milliseconds they were silently
times in January 1970: a fact's event stored as 1970-01-21, a calendar event created then, a
recall window that excluded nothing, a reminder refused as "in the past"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import tools
from philont.domain.timeparse import parse_time
from philont.errors import InvalidInputError
from tests.tools.helpers import DbTarget, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

# (tool, the arguments it needs besides the time, the fields that take a time)
TIME_TOOLS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (
        "store_fact",
        {"namespace": "user", "key": "k", "value": 1, "fact_kind": "event"},
        ("occurred_at", "valid_from", "valid_until"),
    ),
    ("recall_sessions", {"query": "flat"}, ("since", "until", "around")),
    ("create_calendar_event", {"title": "x", "timezone": "UTC"}, ("starts_at", "ends_at")),
    ("schedule_reminder", {"name": "r", "message": "m"}, ("at",)),
]
CASES = [(tool, base, name) for tool, base, names in TIME_TOOLS for name in names]

SECONDS = 1_900_000_000  # 2030-03-17T17:46:40Z in epoch seconds
SECONDS_SIZED_MS = 100_000_000_000
"""Epoch milliseconds smaller than this in size (1966-10-31 .. 1973-03-03), 0 aside, are refused:
they are the size of epoch seconds (up to the year 5138)."""
seconds_sized = st.integers(-SECONDS_SIZED_MS + 1, SECONDS_SIZED_MS - 1).filter(bool)


def _arguments(base: dict[str, Any], field: str, value: object) -> dict[str, Any]:
    args = dict(base)
    if field == "ends_at":
        args["starts_at"] = SECONDS * 1000 - 3_600_000
    args[field] = value
    return args


@pytest.mark.parametrize(("tool", "base", "field"), CASES)
def test_epoch_seconds_are_refused_by_name_with_the_milliseconds_meant(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    before = snapshot(tool_target)
    for value in (SECONDS, float(SECONDS), -SECONDS):
        result = tools.call(tool, _arguments(base, field, value), db=tool_target)
        assert result.error_code == "invalid_arguments", (value, result.text)
        error = result.error or ""
        assert error.startswith(f"{field}: "), error
        assert "seconds" in error and "milliseconds" in error, error
        if value > 0:  # the value meant, ready to send again
            assert f"{SECONDS * 1000}" in error and "2030-03-17T17:46:40" in error, error
    assert snapshot(tool_target) == before


@pytest.mark.parametrize(("tool", "base", "field"), CASES)
def test_the_same_time_in_milliseconds_is_taken(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    result = tools.call(tool, _arguments(base, field, SECONDS * 1000), db=tool_target)
    assert result.ok, result.text


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    case=st.sampled_from(CASES),
    value=seconds_sized,
)
def test_any_seconds_sized_number_is_refused_and_writes_nothing(
    case: tuple[str, dict[str, Any], str], value: int, tool_target: DbTarget
) -> None:
    tool, base, field = case
    before = snapshot(tool_target)
    result = tools.call(tool, _arguments(base, field, value), db=tool_target)
    assert result.error_code == "invalid_arguments", (value, result.text)
    assert (result.error or "").startswith(f"{field}: "), result.error
    assert snapshot(tool_target) == before


@given(value=seconds_sized)
def test_parse_time_refuses_seconds_sized_numbers_for_every_caller(value: int) -> None:
    """The command line (``--since 1796000000``) and the learner read times with
    ``parse_time``: the same rule there."""
    with pytest.raises(InvalidInputError, match=r"^since: .*seconds"):
        parse_time(value, field="since")


@given(
    moment=st.datetimes(
        min_value=datetime(1, 1, 3), max_value=datetime(9999, 12, 29), timezones=st.just(UTC)
    ).filter(lambda t: abs(t.timestamp() * 1000) >= SECONDS_SIZED_MS)
)
def test_every_time_outside_the_seconds_sized_span_is_still_taken_in_milliseconds(
    moment: datetime,
) -> None:
    ms = int(moment.timestamp() * 1000)
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert parse_time(ms, field="at") == epoch + timedelta(milliseconds=ms)


def test_zero_is_the_same_instant_in_seconds_and_milliseconds_and_is_taken(
    tool_target: DbTarget,
) -> None:
    result = tools.call("recall_sessions", {"query": "flat", "since": 0}, db=tool_target)
    assert result.ok, result.text
    assert parse_time(0, field="since") == datetime(1970, 1, 1, tzinfo=UTC)


def test_every_schema_advertises_the_milliseconds_it_takes_and_strict_mode_one_integer() -> None:
    """The schemas a model reads say it: the integer ranges skip the seconds-sized span, and
    OpenAI's strict shape (no ranges) keeps one integer branch, not one per range."""
    plain = {t["name"]: t["input_schema"] for t in tools.anthropic_tools()}
    strict = {
        t["function"]["name"]: t["function"]["parameters"] for t in tools.openai_tools(strict=True)
    }
    for tool, _base, field in CASES:
        text = str(plain[tool]["properties"][field])
        assert "epoch seconds are refused" in text, (tool, field)
        assert f"'minimum': {SECONDS_SIZED_MS}" in text, (tool, field)
        branches = strict[tool]["properties"][field].get("anyOf", [])
        assert branches.count({"type": "integer"}) == 1, (tool, field, branches)
