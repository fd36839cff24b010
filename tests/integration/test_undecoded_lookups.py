"""A key read with U+FFFD in one call and given back in a later one.

SQLite text that another program stored as bytes that are not UTF-8 is read with U+FFFD in
place of the bad bytes (docs/stored-values.md), so a key read so finds no row when given back
later (``calendar list``, then ``calendar remove`` of the id it showed): that was a bare "not
found" for a row that is there. Every not-found error (:class:`~philont.errors.NotFoundError`,
wherever raised) whose key holds U+FFFD now says so and how to reach the row; its type and code
stay. On PostgreSQL U+FFFD is a character like any other: a key holding it is stored, found,
changed and removed as any other."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.engine import URL
from typer.testing import CliRunner

from philont import Memory, Store, tools
from philont.cli import app
from philont.errors import (
    NoteNotFoundError,
    NotFoundError,
    SessionNotFoundError,
    SkillNotFoundError,
)
from philont.services.skill_base import RecipeNotFoundError

BOTH_BACKENDS = True

WHEN = datetime(2026, 6, 1, 9, tzinfo=UTC)


def _spoil(path: Path, table: str, column: str) -> None:
    """Append a stray byte 0xff to ``column`` of every row of ``table``."""
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            f'UPDATE "{table}" SET "{column}" = CAST(CAST("{column}" AS BLOB) || x\'ff\' AS TEXT)'
        )


def _stored(path: Path, table: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as conn:
        conn.text_factory = bytes
        return conn.execute(f'SELECT * FROM "{table}" ORDER BY rowid').fetchall()


@given(st.text(max_size=20), st.booleans(), st.sampled_from([NotFoundError, NoteNotFoundError]))
def test_a_not_found_key_holding_u_fffd_says_how_such_a_key_is_read_on_sqlite(
    key: str, replaced: bool, kind: type[NotFoundError]
) -> None:
    """Only as an error from SQLite (the unit of work it leaves says so); with no table to
    name, no SQL with a hole in it ("FROM its table")."""
    if replaced:
        key += "\ufffd"
    error = kind(f"no thing {key!r}", id=key)
    assert "U+FFFD" not in error.message and "hint" not in error.details  # PostgreSQL's
    error.from_sqlite()
    error.from_sqlite()  # once
    assert error.message.count("U+FFFD") == ("\ufffd" in key)
    assert ("hint" in error.details) is ("\ufffd" in key)
    assert error.message.startswith(f"no thing {key!r}") and error.code == kind.code
    assert str(error) == error.message
    if "\ufffd" in key:
        assert ("SELECT rowid" in error.message) is (kind.table is not None)
        assert "its table" not in error.message


def test_calendar_remove_of_an_id_read_with_u_fffd_says_the_stored_id_is_not_utf8(
    tool_db: Path,
) -> None:
    with Memory.open(tool_db) as mem:
        mem.calendar.create("Dentist", WHEN, timezone="UTC")
    _spoil(tool_db, "memory_calendar", "id")
    before = _stored(tool_db, "memory_calendar")
    runner = CliRunner()
    listed = runner.invoke(app, ["calendar", "list", "--db", str(tool_db), "--json"])
    (event,) = json.loads(listed.stdout)["events"]
    assert event["id"].endswith("\ufffd")
    result = runner.invoke(app, ["calendar", "remove", event["id"], "--db", str(tool_db)])
    assert result.exit_code == 4, result.output
    output = " ".join(result.output.split())
    assert f"no calendar event with id {event['id']!r}" in output
    assert "U+FFFD" in output and "not UTF-8" in output
    assert "SELECT rowid, hex(CAST(id AS BLOB)) FROM memory_calendar" in output
    assert _stored(tool_db, "memory_calendar") == before


def test_lookups_by_keys_read_with_u_fffd_say_so_in_services_and_tools(
    tool_db: Path,
) -> None:
    with Memory.open(tool_db) as mem:
        mem.skills.create("brew-tea", "brew tea", ["tea"], "boil; steep")
        mem.notes.add("the quokka note")
    _spoil(tool_db, "memory_skills", "name")
    _spoil(tool_db, "memory_notes", "id")
    with Memory.open(tool_db) as mem:  # one call reads them
        (name,) = [s.name for s in mem.skills.list()]
        (note,) = [n.id for n in mem.notes.list()]
    assert name.endswith("\ufffd") and note.endswith("\ufffd")
    with Memory.open(tool_db) as mem:  # a later one gives them back
        with pytest.raises(SkillNotFoundError, match=r"U\+FFFD") as skill:
            mem.skills.record_usage(name)
        assert "FROM memory_skills" in skill.value.details["hint"]
        assert "hex(CAST(name AS BLOB))" in skill.value.details["hint"]
        with pytest.raises(NoteNotFoundError, match="FROM memory_notes"):
            mem.notes.forget(note)
    result = tools.call("use_skill", {"name": name}, db=tool_db)
    assert not result.ok and result.error_code == "skill_not_found"
    assert "U+FFFD" in result.text


def test_a_key_holding_u_fffd_is_a_key_like_any_other(tool_target: Path | URL) -> None:
    """Stored with U+FFFD as a character (valid UTF-8 on SQLite, any text on PostgreSQL): found,
    changed, removed, never refused; one that names nothing is the usual not-found error."""
    session, ref = "s-\ufffd", "ref-\ufffd"
    with Memory.open(tool_target) as mem:
        mem.timeline.start_session(session)
        event = mem.calendar.create("Dentist \ufffd", WHEN, timezone="UTC", external_ref=ref)
    with Memory.open(tool_target) as mem:
        assert mem.timeline.append("hello", session_id=session).session_id == session
        assert mem.timeline.end_session(session) is not None
        found = mem.calendar.find_by_external_ref(ref)
        assert found is not None and found.id == event.id
        updated = mem.calendar.create("Concert", WHEN, timezone="UTC", external_ref=ref)
        assert updated.id == event.id and updated.title == "Concert"
        assert mem.calendar.delete(event.id)
        with pytest.raises(SessionNotFoundError) as missing:
            mem.timeline.end_session("other-\ufffd")
        assert missing.value.code == "session_not_found"


@pytest.mark.postgres
def test_on_postgresql_a_key_holding_u_fffd_not_found_says_nothing_of_bytes(
    pg_agent: Callable[[], URL],
) -> None:
    """No text there is read from bytes that are not UTF-8: the SQLite hint would mislead."""
    with Store.open(pg_agent()) as store:
        with pytest.raises(SessionNotFoundError) as missing, store.begin() as mem:
            mem.timeline.end_session("other-\ufffd")
        assert "hint" not in missing.value.details and "U+FFFD" not in missing.value.message
        result = tools.call("use_skill", {"name": "tea-\ufffd"}, db=store)
    assert result.error_code == "skill_not_found" and "U+FFFD" not in result.text


def test_a_recipe_missing_from_a_skill_found_gives_no_such_hint() -> None:
    assert "hint" not in RecipeNotFoundError("tea-\ufffd").details


def _hinted(error: NotFoundError) -> bool:
    return "hint" in error.details and "U+FFFD" in error.message


@pytest.mark.postgres
@pytest.mark.parametrize("sqlite_first", [True, False], ids=["sqlite-first", "postgres-first"])
def test_the_hint_follows_the_database_that_raised_not_the_unit_last_begun(
    tool_db: Path, pg_agent: Callable[[], URL], sqlite_first: bool
) -> None:
    """Units of work on both databases open at once (a host copying between them): each
    not-found error says what its own database means by U+FFFD. The hint followed a flag the
    unit last begun had set: the other database's errors got (or lost) it."""
    with Store.open(tool_db) as lite, Store.open(pg_agent()) as pg:
        first, second = (lite, pg) if sqlite_first else (pg, lite)
        with first.begin() as one, second.begin() as two:
            on_sqlite, on_pg = (one, two) if sqlite_first else (two, one)
            with pytest.raises(NoteNotFoundError) as lite_error:
                on_sqlite.notes.forget("n-\ufffd")
            with pytest.raises(NoteNotFoundError) as pg_error:
                on_pg.notes.forget("n-\ufffd")
            lite_tool = tools.call("use_skill", {"name": "tea-\ufffd"}, db=on_sqlite)
            pg_tool = tools.call("use_skill", {"name": "tea-\ufffd"}, db=on_pg)
    assert _hinted(lite_error.value) and not _hinted(pg_error.value)
    assert lite_tool.error_code == pg_tool.error_code == "skill_not_found"
    assert "U+FFFD" in lite_tool.text and "U+FFFD" not in pg_tool.text


def test_the_hint_is_given_in_whatever_thread_calls_the_service(tool_db: Path) -> None:
    """A unit of work begun in one thread and used in another (a host's worker pool): the
    hint was a flag of the thread that began the unit, so the worker's errors lost it."""
    with Store.open(tool_db) as store, store.begin() as mem:

        def forget() -> BaseException | None:
            try:
                mem.notes.forget("n-\ufffd")
            except NoteNotFoundError as exc:
                return exc
            return None

        with ThreadPoolExecutor(1) as pool:
            error = pool.submit(forget).result()
    assert isinstance(error, NoteNotFoundError) and _hinted(error)
    assert "FROM memory_notes" in error.details["hint"]


def test_a_not_found_error_the_host_raises_in_a_unit_on_sqlite_gets_the_hint(
    tool_db: Path,
) -> None:
    """Raised by the host's own code in the block (as the command line does): the unit of
    work it leaves knows the database."""
    with pytest.raises(SkillNotFoundError) as raised, Memory.open(tool_db) as mem:
        if mem.skills.get("tea-\ufffd") is None:
            raise SkillNotFoundError("no skill named 'tea-\ufffd'", name="tea-\ufffd")
    assert _hinted(raised.value) and raised.value.message.count("U+FFFD") == 1


def _forget_by_service(mem: Memory) -> None:
    mem.notes.forget("n-\ufffd")


def _forget_by_host(mem: Memory) -> None:
    if not mem.notes.list():  # the host's own lookup, and its own error
        raise NoteNotFoundError("no note 'n-\ufffd'", id="n-\ufffd")
    raise AssertionError("the fresh database holds a note")


@pytest.mark.postgres
@pytest.mark.parametrize("raiser", [_forget_by_service, _forget_by_host], ids=["service", "host"])
@pytest.mark.parametrize("inner", ["sqlite", "postgres"], ids=["sqlite-inner", "postgres-inner"])
def test_an_error_leaving_nested_units_says_what_the_innermost_database_means(
    tool_db: Path, pg_agent: Callable[[], URL], inner: str, raiser: Callable[[Memory], None]
) -> None:
    """A unit of work on one database nested in one on the other (a host copying between
    them), the not-found error raised in the inner one and leaving both: the database it was
    raised on decides. A PostgreSQL error got SQLite's hint from the outer SQLite unit."""
    with Store.open(tool_db) as lite, Store.open(pg_agent()) as pg:
        outer, nested = (pg, lite) if inner == "sqlite" else (lite, pg)
        with pytest.raises(NoteNotFoundError) as raised, outer.begin(), nested.begin() as mem:
            raiser(mem)
    assert _hinted(raised.value) is (inner == "sqlite")
    assert raised.value.message.count("U+FFFD") == (inner == "sqlite")
