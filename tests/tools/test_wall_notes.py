"""A local time the zone's clocks skip or show twice, given to create_calendar_event or
schedule_reminder without an offset, was placed (a skipped time one gap later, a repeated one
at its first instant) without a word: "remind me at 02:30 on 28 March" in Berlin fired at
03:30 and the model never knew. The tool's text now says where such a time was placed and,
for a repeated one, how to ask for the second."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont import tools
from philont.domain.timeparse import parse_time, wall_note
from philont.domain.timepolicy import zone
from tests.timegen import ZONES as ZONE_NAMES
from tests.tools.helpers import DbTarget

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

SKIPPED = ("2030-03-31T02:30:00", "2030-03-31T03:30:00+02:00")  # Berlin springs forward
REPEATED = ("2030-10-27T02:30:00", "2030-10-27T02:30:00+02:00", "2030-10-27T02:30:00+01:00")
CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("create_calendar_event", {"title": "t", "timezone": "Europe/Berlin"}, "starts_at"),
    ("schedule_reminder", {"name": "r", "message": "m", "timezone": "Europe/Berlin"}, "at"),
]


@pytest.mark.parametrize(("tool", "base", "field"), CALLS)
def test_a_skipped_or_repeated_local_time_is_named_in_the_tools_text(
    tool: str, base: dict[str, Any], field: str, tool_target: DbTarget
) -> None:
    gap = tools.call(tool, base | {field: SKIPPED[0]}, db=tool_target)
    assert gap.ok, gap.text
    assert f"Note: {field}: 2030-03-31 02:30 does not exist in Europe/Berlin" in gap.text
    assert f"taken as {SKIPPED[1]}" in gap.text, gap.text
    twice = tools.call(tool, base | {field: REPEATED[0], "name": "r2"} if field == "at"
                       else base | {field: REPEATED[0]}, db=tool_target)  # fmt: skip
    assert twice.ok, twice.text
    assert f"taken as the first, {REPEATED[1]}; give {REPEATED[2]} for the second" in twice.text
    second = tools.call(tool, base | {field: REPEATED[2], "name": "r3"} if field == "at"
                        else base | {field: REPEATED[2]}, db=tool_target)  # fmt: skip
    assert second.ok and "Note:" not in second.text, second.text
    plain = tools.call(tool, base | {field: "2030-06-01T09:00:00", "name": "r4"} if field == "at"
                       else base | {field: "2030-06-01T09:00:00"}, db=tool_target)  # fmt: skip
    assert plain.ok and "Note:" not in plain.text, plain.text


walls = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 12, 31)).map(
    lambda t: t.replace(second=0, microsecond=0)
)


@given(wall=walls, tz=st.sampled_from(ZONE_NAMES), near_change=st.booleans())
def test_a_note_is_given_exactly_when_the_wall_time_is_skipped_or_repeated(
    wall: datetime, tz: str, near_change: bool
) -> None:
    where = zone(tz)
    if near_change:  # move to the hour of this year's first offset change, if any
        year = datetime(wall.year, 1, 1, tzinfo=UTC)
        for hours in range(0, 366 * 24, 1):
            at = year + timedelta(hours=hours)
            if (
                at.astimezone(where).utcoffset()
                != (at + timedelta(hours=1)).astimezone(where).utcoffset()
            ):
                wall = (at + timedelta(hours=1)).astimezone(where).replace(
                    tzinfo=None, minute=wall.minute
                ) - timedelta(minutes=60 - 30)
                break
    text = wall.isoformat()
    note = wall_note(text, field="at", tz=tz)
    first = wall.replace(tzinfo=where, fold=0)
    skipped = first.astimezone(UTC).astimezone(where).replace(tzinfo=None) != wall
    repeated = not skipped and first.utcoffset() != wall.replace(tzinfo=where, fold=1).utcoffset()
    assert (note is not None) == (skipped or repeated), (text, tz, note)
    if note is not None:  # the time it names is where the tools put it
        named = re.search(r"taken as (?:the first, )?(\S+?);?(?: |$)", note)
        assert named is not None, note
        assert datetime.fromisoformat(named.group(1)) == parse_time(text, field="at", tz=tz)
