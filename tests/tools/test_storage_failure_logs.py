"""A statement the database refuses for a reason philont does not map (here a trigger's
``RAISE(ABORT)``, as a constraint or a host's trigger would) is reported to the model as
``storage_error`` and logged in one line, a warning with its code and the kind of failure; the
traceback (whose driver message and frames hold the statement's parameters: users' text) only
at debug. It was logged at error level with the whole traceback.

What a caller is told (a tool's text and ``error``, an AsyncStore's, the MCP server's answer,
the command line's) names the kind of failure and the database, never the database's text:
a failure outside the tool (the action log's row) gave SQLAlchemy's text as the result's
``error``, the statement and its parameters (the call's arguments) included."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
import sqlalchemy as sa
from structlog.testing import capture_logs
from typer.testing import CliRunner

from philont import Store, tools
from philont.aio import AsyncStore
from philont.cli import app
from philont.db.engine import database_name, resolve_url
from philont.mcp.server import _call as mcp_call
from tests.tools.helpers import DbTarget

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

SECRET = "my bank pin is 4312"

PG_TRIGGER = """
CREATE FUNCTION refuse_rows() RETURNS trigger LANGUAGE plpgsql AS
  $$ BEGIN RAISE EXCEPTION 'rows are frozen'; END $$;
CREATE TRIGGER refuse_rows BEFORE INSERT ON {table}
  FOR EACH ROW EXECUTE FUNCTION refuse_rows();
"""


def freeze(target: DbTarget, table: str, request: pytest.FixtureRequest) -> Iterator[DbTarget]:
    """``target`` where every new row of ``table`` is refused by a trigger (removed afterwards:
    on PostgreSQL the layout is this run's, shared by the tests that follow)."""
    if isinstance(target, Path):
        with closing(sqlite3.connect(str(target))) as conn, conn:
            conn.execute(
                f"CREATE TRIGGER refuse_rows BEFORE INSERT ON {table}"
                " BEGIN SELECT RAISE(ABORT, 'rows are frozen'); END"
            )
        yield target
        return
    owner = sa.create_engine(request.getfixturevalue("pg_layout").url)
    try:
        with owner.begin() as conn:
            conn.exec_driver_sql(PG_TRIGGER.format(table=table))
        yield target
    finally:
        with owner.begin() as conn:
            conn.exec_driver_sql("DROP FUNCTION IF EXISTS refuse_rows() CASCADE")
        owner.dispose()


@pytest.fixture
def frozen(tool_target: DbTarget, request: pytest.FixtureRequest) -> Iterator[DbTarget]:
    """``tool_target`` where every new fact is refused."""
    yield from freeze(tool_target, "memory_facts", request)


@pytest.fixture(params=["memory_facts", "memory_actions"])
def refusing(tool_target: DbTarget, request: pytest.FixtureRequest) -> Iterator[DbTarget]:
    """``tool_target`` where the tool's own write (a fact) or the action log's row (after the
    tool, outside it) is refused."""
    yield from freeze(tool_target, request.param, request)


def test_an_unmapped_database_refusal_is_logged_in_one_line(frozen: DbTarget) -> None:
    with Store.open(frozen) as store, capture_logs() as logs:
        result = tools.call("store_fact", {"namespace": "n", "key": "k", "value": SECRET}, db=store)
    assert result.error_code == "storage_error", result.text
    failures = [e for e in logs if e["event"].startswith("tool.storage_error")]
    assert [(e["event"], e["log_level"]) for e in failures] == [
        ("tool.storage_error", "warning"),
        ("tool.storage_error.traceback", "debug"),
    ]
    failed, trace = failures
    assert failed["error"] == "storage_error" and failed["tool"] == "store_fact"
    kind = (
        "IntegrityError (trigger constraint)"
        if isinstance(frozen, Path)
        else "ProgrammingError (an error a trigger or function raised (RaiseException, SQLSTATE"
        " P0001))"
    )
    assert failed["reason"] == f"the memory database failed: {kind}"  # not the trigger's text
    assert "exc_info" not in failed and isinstance(trace["exc_info"], BaseException)
    assert "rows are frozen" in str(trace["exc_info"].__cause__ or trace["exc_info"])
    assert SECRET not in repr(failed)


def _told(store: Store, arguments: dict[str, object]) -> list[tuple[str, str, str | None]]:
    """(surface, code, what it says) of one failed call on every way a caller makes it."""
    told: list[tuple[str, str, str | None]] = []
    for surface, db in (("store", store), ("url", store.url)):
        result = tools.call("store_fact", arguments, db=db)
        told.append((f"{surface}.text", str(result.error_code), result.text))
        told.append((f"{surface}.error", str(result.error_code), result.error))

    async def from_async() -> tools.ToolResult:
        astore = await AsyncStore.open(store.url)
        try:
            return await astore.call("store_fact", arguments)
        finally:
            await astore.close()

    result = asyncio.run(from_async())
    told += [("async.text", str(result.error_code), result.text)]
    told += [("async.error", str(result.error_code), result.error)]
    answer = asyncio.run(mcp_call(store, "store_fact", arguments)).root
    told.append(("mcp", "storage_error", answer.model_dump_json()))
    return told


def test_no_caller_is_told_the_database_text_only_its_kind(refusing: DbTarget) -> None:
    arguments = {"namespace": "n", "key": "k", "value": SECRET}
    with Store.open(refusing) as store:
        where = store.label
        told = _told(store, arguments)
    assert where == database_name(resolve_url(refusing))
    kind = (  # SQLite's RAISE(ABORT) in a trigger; PostgreSQL's RAISE EXCEPTION is no constraint
        "IntegrityError (trigger constraint;"
        if isinstance(refusing, Path)
        else "ProgrammingError ("
    )
    shown = [(surface, text) for surface, _, text in told if SECRET in str(text)]
    assert shown == []  # the result's error held SQLAlchemy's text: INSERT ... [parameters]
    for surface, code, text in told:
        assert code == "storage_error", (surface, text)
        assert f"{where} failed: {kind}" in str(text), surface
        assert "the database's message is logged" in str(text), surface


def test_the_command_line_says_the_kind_of_a_refused_statement(tool_db: Path) -> None:
    """An unmapped refusal of a command's statement was a traceback holding SQLAlchemy's text
    (the statement's parameters: here the id asked for)."""
    secret_id = "secret-4312"
    with closing(sqlite3.connect(str(tool_db))) as conn, conn:
        conn.execute(
            "INSERT INTO memory_calendar (id, title, starts_at, ends_at, timezone, created_at)"
            " VALUES (?, 't', 0, 1, 'UTC', 0)",
            (secret_id,),
        )
        conn.execute(
            "CREATE TRIGGER keep_events BEFORE DELETE ON memory_calendar"
            " BEGIN SELECT RAISE(ABORT, 'events are kept'); END"
        )
    result = CliRunner().invoke(app, ["calendar", "remove", secret_id, "--db", str(tool_db)])
    assert result.exit_code == 1, result.output
    said = f"error (storage_error): {tool_db} failed: IntegrityError (trigger constraint; the"
    assert said in result.output, result.output
    assert secret_id not in result.output and "Traceback" not in result.output


def test_a_driver_error_raised_bare_is_told_by_its_kind(tool_db: Path) -> None:
    """A lean statement's error is the driver's, not wrapped by SQLAlchemy (here a search on a
    file whose word indexes another program dropped): it was ``internal_error`` with the
    driver's message. (SQLite's: the path is the same for every driver.)"""
    with closing(sqlite3.connect(str(tool_db))) as conn, conn:
        for table in ("memory_notes_fts", "philont_notes_words_fts"):
            conn.execute(f"DROP TABLE {table}")
    with Store.open(tool_db) as store, capture_logs() as logs:
        result = tools.call("search_notes", {"query": SECRET}, db=store)
    assert result.error_code == "storage_error", result.text
    assert result.error == (
        f"{tool_db} failed: OperationalError (the database's message is logged, not shown: it "
        "can hold the statement's values)"
    )
    reasons = [e.get("reason") for e in logs if e["event"] == "tool.storage_error"]
    assert reasons == ["the memory database failed: OperationalError"]  # the text: at debug
    traces = [e["exc_info"] for e in logs if e["event"] == "tool.storage_error.traceback"]
    assert [str(t) for t in traces] == ["no such table: philont_notes_words_fts"]
