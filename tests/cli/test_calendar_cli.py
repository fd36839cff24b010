"""`philont calendar list | remove` on a real file holding a row no layer can read, and time
options at the edges of the calendar: a message and an exit code, never a traceback."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont import Memory
from philont.cli import app

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


@pytest.fixture
def with_bad_row(tool_db: Path) -> Path:
    from datetime import UTC, datetime

    with Memory.open(tool_db) as mem:
        mem.calendar.create(
            "Dentist", datetime(2026, 6, 1, 9, tzinfo=UTC), timezone="Europe/Berlin"
        )
    with closing(sqlite3.connect(tool_db)) as conn, conn:
        conn.execute(
            "INSERT INTO memory_calendar (id, title, starts_at, timezone, created_at, rrule)"
            " VALUES ('bad-1', 'Broken', 'yesterday', 'UTC', 0, 'FREQ=DAILY')"
        )
    return tool_db


def test_calendar_list_shows_readable_events_and_names_the_unreadable_row(
    with_bad_row: Path,
) -> None:
    code, output = run("calendar", "list", "--db", str(with_bad_row), "--json")
    assert code == 0, output
    page = json.loads(output)
    assert [e["title"] for e in page["events"]] == ["Dentist"]
    assert page["skipped"] == [
        {
            "id": "bad-1",
            "reason": "starts_at: epoch milliseconds must be an integer, got 'yesterday'",
        }
    ]
    code, output = run("calendar", "list", "--db", str(with_bad_row))
    assert code == 0 and "Dentist" in output and "philont calendar remove ID" in output


def test_calendar_remove_deletes_an_unreadable_row_and_reports_an_unknown_id(
    with_bad_row: Path,
) -> None:
    assert run("calendar", "remove", "bad-1", "--db", str(with_bad_row)) == (
        0,
        "removed calendar event bad-1\n",
    )
    code, output = run("calendar", "remove", "bad-1", "--db", str(with_bad_row))
    assert code == 4 and "no calendar event with id 'bad-1'" in output
    code, output = run("calendar", "list", "--db", str(with_bad_row), "--json")
    assert json.loads(output)["skipped"] == []


@pytest.mark.parametrize(
    "since", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00", "9999-12-31"]
)
def test_timeline_since_at_the_edge_of_the_calendar_is_a_usage_error(
    since: str, tool_db: Path
) -> None:
    code, output = run("timeline", "--since", since, "--db", str(tool_db))
    assert code == 2 and "outside the supported times" in " ".join(output.split())


@pytest.mark.parametrize(
    ("since", "named"),
    [
        ("2026-123", "ordinal date (day 123 of 2026), which is not taken: write the calendar"),
        ("2026-W14", "names a week, not a day"),
        ("9999-12-31T24:00", "(the end of 9999-12-31, 00:00 of 10000-01-01) is outside"),
        ("2026-06-01T09:00+05:75", "has UTC offset +05:75, whose minutes and seconds"),
        ("2026-06-01T09:00 UTC+2", "offset in the time (2026-06-01T09:00+02:00)"),
        ("2026-6-1", "write 2026-06-01"),
        ("2026123", "ordinal date (day 123 of 2026)"),  # digits, but a date's, not epoch ms
    ],
)
def test_timeline_since_says_what_the_tools_parser_says(
    since: str, named: str, tool_db: Path
) -> None:
    # The one parser, and its reason shown: under typer 0.28 click's function type showed the
    # value itself instead of a refusal raised as a ValueError.
    code, output = run("timeline", "--since", since, "--db", str(tool_db))
    assert code == 2 and named in " ".join(output.split()), output


@pytest.mark.parametrize("title", ["x", "Dentist appointment with a rather long title " * 2])
@pytest.mark.parametrize("zone", ["UTC", "America/Argentina/Buenos_Aires"])
def test_calendar_list_shows_every_id_whole_for_remove(
    with_bad_row: Path, title: str, zone: str
) -> None:
    # At the default 80 columns the id was cut to "54874b3c-…": `remove ID` could not be fed.
    from datetime import UTC, datetime

    with Memory.open(with_bad_row) as mem:
        event = mem.calendar.create(
            title, datetime(2027, 1, 2, 9, tzinfo=UTC), timezone=zone, rrule="FREQ=DAILY"
        )
    code, output = run("calendar", "list", "--db", str(with_bad_row))
    assert code == 0, output
    assert event.id in output and "bad-1" in output


@pytest.mark.parametrize("blank", ["", " ", "\t"])
def test_calendar_remove_of_a_blank_id_says_why(with_bad_row: Path, blank: str) -> None:
    code, output = run("calendar", "remove", blank, "--db", str(with_bad_row))
    assert code == 2, output  # it exited 2 without a word, then named no rule
    assert output.startswith("error (usage): Invalid value for 'ID': ")


def test_calendar_list_shows_an_all_day_event_by_its_days(tool_db: Path) -> None:
    from datetime import date

    with Memory.open(tool_db) as mem:
        mem.calendar.create_all_day(
            "Trip", date(2026, 12, 4), last_day=date(2026, 12, 6), timezone="America/New_York"
        )
    code, output = run("calendar", "list", "--db", str(tool_db))
    assert code == 0, output
    assert "2026-12-04 to 2026-12-06 (all day" in " ".join(output.split())
    code, output = run("calendar", "list", "--db", str(tool_db), "--json")
    assert json.loads(output)["events"][0]["all_day"] is True
