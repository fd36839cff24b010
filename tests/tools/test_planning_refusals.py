"""The four planning tools (create_calendar_event, list_upcoming, schedule_reminder,
cancel_schedule) as a demanding user calls them: one argument of a good call replaced by a bad
or arbitrary value. Whatever the value, the call is answered; when it is refused for its input,
the message starts with that argument's name, once (or with the names of a refused combination
that includes it), and nothing was written."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from philont import Memory, tools
from tests.tools.helpers import DbTarget, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

INPUT_CODES = {"invalid_input", "invalid_arguments", "invalid_time_range", "time_out_of_range"}

GOOD: dict[str, dict[str, Any]] = {
    "create_calendar_event": {
        "title": "Dentist",
        "starts_at": "2031-06-01T09:00:00",
        "ends_at": "2031-06-01T10:00:00",
        "timezone": "Europe/Berlin",
        "rrule": "FREQ=WEEKLY;COUNT=3",
    },
    "list_upcoming": {"window_days": 7},
    "schedule_reminder": {
        "name": "water",
        "message": "water the plants",
        "cron": "*/30 2 * * *",
        "timezone": "Europe/Berlin",
    },
    "cancel_schedule": {"name": "seeded"},
}
BAD: dict[str, list[Any]] = {
    "title": ["", "   ", "x" * 301, 5],
    "starts_at": [
        "next Tuesday",
        "2031-02-30T09:00:00",
        "2031-06-01T09:00:00+25:00",
        "9999-12-31T23:59:59-14:00",
        "0001-01-01",
        1.5,
        2**63,
        True,
    ],
    "ends_at": [
        "2031-06-01T08:00:00",  # before the start
        "2031-06-01",  # a date for a timed event
        "2031-05-31T23:59:59Z",
        "soon",
    ],
    "timezone": ["Mars/Base", "CEST", "+02:00", "localtime", "posix/Europe/Berlin", "", 7],
    "rrule": [
        "FREQ=FORTNIGHTLY",
        "FREQ=DAILY;COUNT=0",
        "FREQ=YEARLY;UNTIL=20200101",  # before the first occurrence
        "FREQ=DAILY;COUNT=5;UNTIL=20400101",
        "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=30",  # never
        "FREQ=DAILY;INTERVAL=0",
        "DTSTART:20310601T090000Z",
    ],
    "window_days": [0, 91, -1, "7", 1.5, True, 10**30],
    "name": ["", "   ", "x" * 101, 3],
    "message": ["", " ", "x" * 4001],
    "at": [
        "2020-01-01T00:00:00Z",  # in the past
        "tomorrow",
        "9999-12-31T23:59:59-14:00",
        -(2**70),
        "2031-06-01",  # a date without a time: a reminder at midnight is rarely meant
    ],
    "interval_ms": [0, 999, 10**15, 1.5, "5000", True],
    "cron": ["61 * * * *", "@daily", "0 0 30 2 *", "* * * *", "0 9 * * 8", "L L L L L"],
    "action_type": ["reflect", "PROMPT", ""],
    "project": ["Bad Project", "-x-", "x" * 61, 5],
    "id": ["", 5, "x" * 201],
}
SCHEMAS = {t["name"]: t["input_schema"] for t in tools.anthropic_tools()}


def _args(tool: str) -> set[str]:
    return set(SCHEMAS[tool]["properties"])


ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(max_size=30),
    st.lists(st.integers(), max_size=2),
)


@pytest.fixture
def seeded(tool_target: DbTarget) -> DbTarget:
    with Memory.open(tool_target) as mem:
        mem.schedules.create("seeded", interval_ms=60_000)
        mem.calendar.create("Seed", datetime(2031, 6, 2, tzinfo=UTC), timezone="UTC")
    return tool_target


def _names_it(error: str, argument: str) -> bool:
    head = error.split(": ", 1)[0]
    return argument in head.split(", ") and f"{argument}: {argument}: " not in error


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
@example(data=None)
def test_a_bad_value_of_any_argument_is_refused_by_its_name_and_writes_nothing(
    seeded: DbTarget, data: st.DataObject | None
) -> None:
    cases = [(tool, name) for tool in GOOD for name in sorted(_args(tool))]
    if data is None:  # the table, every bad value of every argument
        draws = [(tool, name, value) for tool, name in cases for value in BAD.get(name, [])]
    else:
        tool, name = data.draw(st.sampled_from(cases))
        value = data.draw(st.sampled_from(BAD[name]) | ANY_VALUE if name in BAD else ANY_VALUE)
        draws = [(tool, name, value)]
    for tool, name, value in draws:
        before = snapshot(seeded)
        result = tools.call(tool, {**GOOD[tool], name: value}, db=seeded)
        shown = f"{tool}({name}={value!r:.60}): {result.text[:300]}"
        assert result.error_code != "internal_error", shown
        if result.error_code in INPUT_CODES:
            assert _names_it(result.error or "", name), shown
            assert snapshot(seeded) == before, shown
        elif value in BAD.get(name, []) and value is not None:
            raise AssertionError(f"accepted a bad value: {shown}")


def test_cancelling_twice_is_not_found_the_second_time_and_keeps_the_history(
    seeded: DbTarget,
) -> None:
    first = tools.call("cancel_schedule", {"name": "seeded"}, db=seeded)
    assert first.ok and first.data["cancelled_ids"]
    again = tools.call("cancel_schedule", {"name": "seeded"}, db=seeded)
    assert (again.ok, again.error_code) == (False, "schedule_not_found")
    with Memory.open(seeded) as mem:
        assert [s.enabled for s in mem.schedules.list()] == [False]


RULES_WITH_DIGITS = {
    "rrule": [
        "FREQ=DAILY;INTERVAL=3;COUNT=4",
        "FREQ=MONTHLY;BYMONTHDAY=7;COUNT=2",
        "FREQ=WEEKLY;UNTIL=20311231",
        "FREQ=MONTHLY;BYDAY=2TU;COUNT=2",
        "FREQ=YEARLY;BYMONTH=6;UNTIL=20340601T090000Z",
    ],
    "cron": ["*/30 2 * * *", "0 9 * * 1-5", "15 8 1 * *", "0 0 * 6 0"],
}
TOOL_OF = {"rrule": "create_calendar_event", "cron": "schedule_reminder"}
OTHER_DIGITS = st.characters(categories=["Nd"]).filter(lambda ch: not ch.isascii())


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
@example(data=None)
def test_a_digit_of_another_script_in_a_rule_is_refused_by_its_name(
    seeded: DbTarget, data: st.DataObject | None
) -> None:
    # int() reads every script's digits: "INTERVAL=٣" was stored as INTERVAL=3 and
    # "BYMONTHDAY=٧" as 7, while "UNTIL=٢٠٣١١٢٣١" failed with strptime's own words and a cron
    # field with croniter's. A rule is written in ASCII; any other digit is refused, naming it.
    if data is None:
        examples = [("rrule", "FREQ=DAILY;INTERVAL=3;COUNT=4", "3", "٣"),
                    ("rrule", "FREQ=MONTHLY;BYMONTHDAY=7;COUNT=2", "7", "٧"),
                    ("rrule", "FREQ=WEEKLY;UNTIL=20311231", "2", "٢"),
                    ("cron", "15 8 1 * *", "8", "٨")]  # fmt: skip
        draws = [(name, rule, rule.index(ascii_digit), digit)
                 for name, rule, ascii_digit, digit in examples]  # fmt: skip
    else:
        name = data.draw(st.sampled_from(sorted(RULES_WITH_DIGITS)))
        rule = data.draw(st.sampled_from(RULES_WITH_DIGITS[name]))
        at = data.draw(st.sampled_from([i for i, ch in enumerate(rule) if ch.isdigit()]))
        draws = [(name, rule, at, data.draw(OTHER_DIGITS))]
    for name, rule, at, digit in draws:
        assert rule[at].isascii() and rule[at].isdigit()
        tool = TOOL_OF[name]
        before = snapshot(seeded)
        odd = rule[:at] + digit + rule[at + 1 :]
        result = tools.call(tool, {**GOOD[tool], name: odd}, db=seeded)
        shown = f"{tool}({name}={odd!r}): {result.text[:300]}"
        assert result.error_code in INPUT_CODES, shown
        assert _names_it(result.error or "", name), shown
        assert "does not match format" not in (result.error or ""), shown  # strptime's
        assert snapshot(seeded) == before, shown
