"""Every tool that takes a time or a zone, at the edges: the ends of the calendar, epoch
milliseconds out of range, huge intervals and machine-local zone names are invalid input with a
message (never internal_error), write nothing, and one zone policy holds for every tool. And
list_upcoming stays small and readable whatever the calendar holds."""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from philont import Memory, tools
from philont.domain.timeparse import parse_time
from philont.errors import InvalidInputError
from tests.timegen import NOT_ZONES, ZONES, time_values, zone_names
from tests.tools.helpers import DbTarget, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
REFUSALS = {"invalid_input", "time_out_of_range", "invalid_time_range", "invalid_arguments"}

# (tool, the arguments it needs besides the time, the fields that take a time)
TIME_TOOLS: list[tuple[str, dict[str, Any], tuple[str, ...]]] = [
    (
        "store_fact",
        {"namespace": "user", "key": "k", "value": 1},
        ("occurred_at", "valid_from", "valid_until"),
    ),
    ("recall_sessions", {"query": "flat"}, ("since", "until", "around")),
    ("create_calendar_event", {"title": "x", "timezone": "UTC"}, ("starts_at", "ends_at")),
    ("schedule_reminder", {"name": "r", "message": "m"}, ("at",)),
]
CASES = [(tool, base, name) for tool, base, names in TIME_TOOLS for name in names]
EDGES = [
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "9999-12-31T23:59:59Z",
    8_640_000_000_000_000,
    -62_135_596_800_000,  # 0001-01-01T00:00Z: Python can hold it, no zone west of UTC can show it
    2**63,
]


def _arguments(base: dict[str, Any], field: str, value: object) -> dict[str, Any]:
    args = dict(base)
    if field == "ends_at":
        args["starts_at"] = "2026-06-01T09:00:00Z"
    args[field] = value
    return args


@pytest.mark.parametrize(("tool", "base", "field"), CASES)
def test_times_at_the_ends_of_the_calendar_are_invalid_input_through_every_tool(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    before = snapshot(tool_target)
    for value in EDGES:
        result = tools.call(tool, _arguments(base, field, value), db=tool_target)
        assert not result.ok and result.error_code in REFUSALS, (value, result.text)
        assert field in (result.error or ""), (value, result.error)
    assert snapshot(tool_target) == before


@pytest.mark.parametrize(("tool", "base", "field"), CASES)
def test_an_offset_no_place_uses_is_invalid_input_through_every_tool(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    # -12:00 .. +14:00 are the offsets places use; +15:00 is a typo for +05:00, not a place.
    before = snapshot(tool_target)
    for offset in ("+15:00", "-13:00", "+14:01", "-12:30", "+23:59", "+25:00", "-24:00"):
        value = f"2027-06-01T09:00:00{offset}"
        result = tools.call(tool, _arguments(base, field, value), db=tool_target)
        assert not result.ok and result.error_code == "invalid_input", (value, result.text)
        assert f"{field}: UTC offset {offset} is not one any place uses" in (result.error or "")
    for offset in ("+05:75", "-0399", "+05:30:60"):  # Python's reader carried them over
        value = f"2027-06-01T09:00:00{offset}"
        result = tools.call(tool, _arguments(base, field, value), db=tool_target)
        assert not result.ok and result.error_code == "invalid_input", (value, result.text)
        assert f"{field}: {value!r} has UTC offset {offset}, whose minutes" in (result.error or "")
    assert snapshot(tool_target) == before
    for offset in ("+14:00", "-12:00", "+12:45"):
        value = f"2027-06-01T09:00:00{offset}"
        result = tools.call(tool, _arguments(base, field, value), db=tool_target)
        assert result.ok or "offset" not in (result.error or ""), (value, result.text)


@pytest.mark.parametrize(("tool", "base", "field"), CASES)
def test_time_text_python_would_guess_at_is_invalid_input_through_every_tool(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    # Python's reader took these as 2027-06-01 09:00 (what follows a NUL ignored, any
    # character between date and time); a leap second was "not an ISO-8601 time".
    before = snapshot(tool_target)
    for value in (
        "2027-06-01T09:00Z\x00 or a week later",
        "2027-06-01x09:00",
        "2027-06-30T23:59:60Z",
    ):
        result = tools.call(tool, _arguments(base, field, value), db=tool_target)
        assert not result.ok and result.error_code == "invalid_input", (value, result.text)
        assert (result.error or "").startswith(f"{field}: "), result.error
    assert snapshot(tool_target) == before


FORMS_NOT_TAKEN = [
    ("2026-w14", "invalid_input", "'2026-w14' names a week, not a day"),
    ("2026-123t09:00z", "invalid_input", "is an ordinal date (day 123 of 2026)"),
    (" 2026-12-31t24:00z ", "invalid_input", "write 00:00 of the next day, 2027-01-01T00:00z"),
    ("9999-12-31T24:00", "time_out_of_range", "00:00 of 10000-01-01) is outside the supported"),
    ("9999-W52-6", "time_out_of_range", "'9999-W52-6' (10000-01-01) is outside the supported"),
    ("2027-06-01T09:00+02:00[Europe/Berlin]", "invalid_input", "names a zone in the text"),
    ("2027-06-01T09:00 UTC+2", "invalid_input", "offset in the time (2027-06-01T09:00+02:00)"),
    ("2027-6-1T9:00Z", "invalid_input", "with one digit; ISO-8601 writes two"),
    ("+12027-06-01", "time_out_of_range", "(the year 12027) is outside the supported times"),
]


@pytest.mark.parametrize(("tool", "base", "field"), CASES)
def test_iso_forms_not_taken_are_refused_by_name_through_every_tool(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    # The one parser names the form in every tool, in any case of its letters, at the end of
    # the calendar too (9999-12-31T24:00 was "not an ISO-8601 time: hour must be in 0..23").
    before = snapshot(tool_target)
    for value, code, named in FORMS_NOT_TAKEN:
        result = tools.call(tool, _arguments(base, field, value), db=tool_target)
        assert not result.ok and result.error_code == code, (value, result.text)
        assert (result.error or "").startswith(f"{field}: "), result.error
        assert named in (result.error or ""), result.error
    assert snapshot(tool_target) == before


SKIPPED_DAYS = [  # days a zone skipped whole: its clocks went from the day before to the day after
    ("Pacific/Apia", "2011-12-30"),
    ("Pacific/Fakaofo", "2011-12-30"),
    ("Pacific/Kiritimati", "1994-12-31"),
    ("Pacific/Kwajalein", "1993-08-21"),
    ("Asia/Manila", "1844-12-31"),
]
DAY_CASES = [  # a reminder's at takes no date; an all-day event's days are its own rule
    c for c in CASES if c[0] != "schedule_reminder" and c[2] != "ends_at"
]


@pytest.mark.parametrize(("tool", "base", "field"), DAY_CASES)
def test_a_day_the_zone_skipped_is_refused_by_name_through_every_tool(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    """As an all-day event's day always was. Before, read as a start it was the next day
    (a fact's validity began a day late, without a word) and as a window's end the instant
    before it (since and until that day: "the recall window ends before it starts")."""
    before = snapshot(tool_target)
    for zone, day in SKIPPED_DAYS:
        args = {**_arguments(base, field, day), "timezone": zone}
        if field in ("since", "until"):
            args = {**args, "since": day, "until": day}
        result = tools.call(tool, args, db=tool_target)
        assert not result.ok and result.error_code == "invalid_input", (zone, day, result.text)
        assert f"{day} is not a day in {zone}" in (result.error or ""), (zone, day, result.error)
    assert snapshot(tool_target) == before


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    zone=st.sampled_from(sorted({*ZONES, *(z for z, _ in SKIPPED_DAYS), "America/Santiago"})),
    day=st.dates(min_value=date(1800, 1, 1), max_value=date(2100, 12, 31))
    | st.sampled_from([date.fromisoformat(d) for _, d in SKIPPED_DAYS]),
)
def test_a_day_alone_is_a_whole_day_or_refused_as_none(zone: str, day: date) -> None:
    """A date alone as both ends of a window is that day, from its first instant to its last,
    in any zone: or, where the zone skipped it, refused as no day of the zone."""
    try:
        since = parse_time(day.isoformat(), field="since", tz=zone)
        until = parse_time(day.isoformat(), field="until", tz=zone, end_of_day=True)
    except InvalidInputError as exc:
        assert exc.message.endswith(f"{day.isoformat()} is not a day in {zone}"), exc.message
        return
    assert since is not None and until is not None and since < until


@pytest.mark.parametrize(("tool", "base"), [(t, b) for t, b, _ in TIME_TOOLS])
def test_one_zone_policy_holds_for_every_tool_even_without_a_time(
    tool: str, base: dict[str, Any], tool_target: DbTarget
) -> None:
    before = snapshot(tool_target)
    for zone in (z for z in NOT_ZONES if z):
        args = dict(base) | {"timezone": zone}
        if tool == "create_calendar_event":
            args["starts_at"] = "2026-06-01T09:00:00Z"
        if tool == "schedule_reminder":
            args["interval_ms"] = 60_000
        result = tools.call(tool, args, db=tool_target)
        # Refused by the argument types or by the service: the same rule either way.
        assert result.error_code in ("invalid_arguments", "invalid_input"), (zone, result.text)
        assert "IANA" in (result.error or "")
    assert snapshot(tool_target) == before


@pytest.mark.parametrize(
    "arguments",
    [
        {"interval_ms": 10**18},
        {"interval_ms": 2**63},
        {"cron": "0 0 31 2 *"},
        {"at": "9999-12-30T23:59:59.999Z", "interval_ms": 60_000},
    ],
)
def test_huge_intervals_and_impossible_schedules_are_invalid_input(
    arguments: dict[str, Any], tool_target: DbTarget
) -> None:
    result = tools.call(
        "schedule_reminder", {"name": "r", "message": "m"} | arguments, db=tool_target
    )
    assert not result.ok and result.error_code in REFUSALS, result.text


def test_the_last_supported_moment_is_a_valid_reminder_and_lists_fine(
    tool_target: DbTarget,
) -> None:
    result = tools.call(
        "schedule_reminder",
        {"name": "far", "message": "m", "at": "9999-12-30T23:59:59.999Z"},
        db=tool_target,
    )
    assert result.ok, result.text
    assert tools.call("list_upcoming", {"window_days": 90}, db=tool_target).ok


@pytest.mark.parametrize("field", ["since", "until", "around"])
@pytest.mark.parametrize("at", ["0001-01-02T00:00:00Z", "9999-12-30T23:59:59.999Z"])
def test_the_first_and_last_supported_moments_bound_a_recall(
    field: str, at: str, tool_target: DbTarget
) -> None:
    # a query naming a day near the end too: the search stretches periods by days
    query = {"query": "flat on 30 December 9999 or 2 January 1"}
    result = tools.call("recall_sessions", query | {field: at}, db=tool_target)
    assert result.ok, result.text


# --- generated values through every tool ---------------------------------------------------------


def _any_time_and_zone_is_a_result_or_a_refusal(
    tool: str, base: dict[str, Any], field: str, value: object, zone: str, target: DbTarget
) -> None:
    args = _arguments(base, field, value) | {"timezone": zone}
    if tool == "schedule_reminder":
        args["name"] = f"r{abs(hash((str(value), zone))) % 1000}"
    result = tools.call(tool, args, db=target)
    if not result.ok:
        assert result.error_code in REFUSALS, result.text
        return
    listed = tools.call("list_upcoming", {"window_days": 90}, db=target)
    assert listed.ok, listed.text


tool_cases = st.sampled_from(CASES)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=tool_cases, value=time_values, zone=zone_names)
def test_any_time_and_zone_through_any_tool_is_a_result_or_a_refusal(
    case: tuple[str, dict[str, Any], str], value: object, zone: str, tool_target: DbTarget
) -> None:
    _any_time_and_zone_is_a_result_or_a_refusal(*case, value, zone, tool_target)


@pytest.mark.reliability
@settings(
    max_examples=1000 if HEAVY else 150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=tool_cases, value=time_values, zone=zone_names)
def test_heavy_any_time_and_zone_through_any_tool_is_a_result_or_a_refusal(
    case: tuple[str, dict[str, Any], str], value: object, zone: str, tool_target: DbTarget
) -> None:
    _any_time_and_zone_is_a_result_or_a_refusal(*case, value, zone, tool_target)


# --- list_upcoming stays small -----------------------------------------------------------------


def test_list_upcoming_shows_fifty_lines_and_counts_the_rest(tool_target: DbTarget) -> None:
    now = datetime.now(UTC)
    with Memory.open(tool_target) as mem:
        calendar = mem.calendar
        for n in range(60):
            calendar.create(
                "x" * 290 + str(n), now - timedelta(days=1), timezone="UTC", rrule="FREQ=MINUTELY"
            )

    result = tools.call("list_upcoming", {"window_days": 90}, db=tool_target)

    assert result.ok
    lines = result.text.splitlines()
    # 50 lines, which series were cut short (each shows 5 occurrences), and the count
    assert len(lines) == 52 and "more not shown" in lines[-1] and "first 5" in lines[-2]
    assert len(result.text.encode()) <= 52 * 300  # titles are cut to 200 characters
    data = result.data
    assert (data["shown"], len(data["events"])) == (50, 50)
    assert data["more"] == data["total"] - 50 and data["total"] >= 10_000
    assert data["total_is_exact"] is False and lines[-1].startswith(f"… {data['more']}+ more")
    assert data["work_steps"] <= 200_000


def test_list_upcoming_reports_rows_it_cannot_read_and_lists_the_rest(
    tool_target: DbTarget,
) -> None:
    now = datetime.now(UTC)
    epoch_ms = int(now.timestamp() * 1000)
    with Memory.open(tool_target) as mem:
        mem.calendar.create("Yoga", now + timedelta(hours=1), timezone="UTC")
        mem.session.execute(
            text(
                "INSERT INTO memory_calendar (id, title, starts_at, rrule, timezone, created_at)"
                " VALUES ('poison', 'Broken', :s, 'FREQ=DAILY', 'UTC', :c)"
            ),
            {"s": epoch_ms, "c": 2**62},
        )

    result = tools.call("list_upcoming", {"window_days": 7}, db=tool_target)

    assert result.ok, result.text
    assert "[event] Yoga" in result.text
    assert "1 stored item(s) could not be read and were skipped: poison" in result.text
    assert result.data["skipped_bad_rows"] == 1 and result.data["skipped"][0]["id"] == "poison"
