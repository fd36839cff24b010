"""Locked databases: SQLite errors become typed errors, writers wait up to the busy timeout, whole
units of work are retried with backoff, and an exhausted retry says so clearly."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from structlog.testing import capture_logs

from philont import tools
from philont.db.engine import create_engine
from philont.db.retry import run_with_retry, translate
from philont.errors import (
    DatabaseBusyError,
    DatabaseFullError,
    DatabaseReadOnlyError,
    PhilontError,
    StorageError,
)
from philont.memory import Memory
from philont.store import Store
from tests.tools.helpers import actions, snapshot

SHORT_MS = 150


def _sqlite_error(message: str, code: int | None = None) -> sqlite3.OperationalError:
    err = sqlite3.OperationalError(message)
    if code is not None:
        err.sqlite_errorcode = code
    return err


def _wrapped(err: sqlite3.Error) -> OperationalError:
    return OperationalError("INSERT INTO t VALUES (?)", (1,), err)


@pytest.fixture
def holder(tool_db: Path) -> Iterator[sqlite3.Connection]:
    """A raw connection (usable from a timer thread) that will hold the write lock."""
    conn = sqlite3.connect(str(tool_db), isolation_level=None, check_same_thread=False)
    yield conn
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    conn.close()


@pytest.fixture
def short_engine(tool_db: Path) -> Iterator[Engine]:
    """An engine whose connections wait only SHORT_MS for a lock."""
    engine = create_engine(tool_db, busy_timeout_ms=SHORT_MS)
    yield engine
    engine.dispose()


def _release_later(conn: sqlite3.Connection, seconds: float) -> threading.Timer:
    timer = threading.Timer(seconds, conn.execute, ("COMMIT",))
    timer.start()
    return timer


def _messages(path: Path) -> list[str]:
    with sqlite3.connect(str(path)) as conn:
        return [r[0] for r in conn.execute("SELECT content FROM memory_raw_messages")]


# --- translate -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (_sqlite_error("database is locked"), DatabaseBusyError),
        (_sqlite_error("database table is locked"), DatabaseBusyError),
        (_sqlite_error("database is locked", code=517), DatabaseBusyError),  # BUSY_SNAPSHOT
        (_sqlite_error("some other text", code=5), DatabaseBusyError),  # SQLITE_BUSY
        (_sqlite_error("database or disk is full"), DatabaseFullError),
        (_sqlite_error("whatever", code=13), DatabaseFullError),  # SQLITE_FULL
        (_sqlite_error("attempt to write a readonly database"), DatabaseReadOnlyError),
        (_sqlite_error("whatever", code=8), DatabaseReadOnlyError),  # SQLITE_READONLY
        (_sqlite_error("disk I/O error"), StorageError),
        (_sqlite_error("whatever", code=10 | (3 << 8)), StorageError),  # SQLITE_IOERR_WRITE
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, type) else str(v),
)
def test_sqlite_failures_translate_to_typed_errors_raw_or_wrapped(
    error: sqlite3.Error, expected: type[PhilontError]
) -> None:
    for exc in (error, _wrapped(error)):
        typed = translate(exc, path="/tmp/m.sqlite")
        assert type(typed) is expected
        assert typed is not None and typed.message


@pytest.mark.parametrize(
    "exc",
    [
        _sqlite_error("no such table: memory_facts"),
        _wrapped(_sqlite_error('near "x": syntax error')),
        ValueError("database is locked"),  # not an SQLite error, whatever its text
        RuntimeError("boom"),
    ],
    ids=str,
)
def test_other_errors_are_not_translated(exc: BaseException) -> None:
    assert translate(exc) is None


def test_a_follow_up_error_is_translated_by_the_failure_that_caused_it() -> None:
    full = _wrapped(_sqlite_error("database or disk is full"))
    follow_up = _wrapped(_sqlite_error("no such savepoint: sa_savepoint_1"))
    follow_up.__context__ = full
    assert isinstance(translate(follow_up), DatabaseFullError)


def test_a_read_only_error_names_the_file() -> None:
    typed = translate(_sqlite_error("attempt to write a readonly database"), path="/x/m.sqlite")
    assert isinstance(typed, DatabaseReadOnlyError) and typed.path == "/x/m.sqlite"


# --- Memory and the busy timeout -------------------------------------------------------------


def test_a_write_waits_for_the_busy_timeout_then_raises_database_busy(
    holder: sqlite3.Connection, short_engine: Engine, tool_db: Path
) -> None:
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(DatabaseBusyError) as raised, Store(short_engine).begin() as mem:
        mem.timeline.append("never written")
    elapsed = time.monotonic() - started
    assert SHORT_MS / 1000 * 0.9 <= elapsed < 3
    assert isinstance(raised.value.__cause__, OperationalError)
    assert "locked" in raised.value.message
    holder.execute("ROLLBACK")
    assert "never written" not in _messages(tool_db)


def test_a_write_succeeds_when_the_holder_releases_within_the_busy_timeout(
    holder: sqlite3.Connection, tool_db: Path
) -> None:
    engine = create_engine(tool_db, busy_timeout_ms=5_000)
    holder.execute("BEGIN IMMEDIATE")
    timer = _release_later(holder, 0.3)
    started = time.monotonic()
    try:
        with Store(engine).begin() as mem:
            mem.timeline.append("written after the wait")
    finally:
        timer.join()
        engine.dispose()
    assert time.monotonic() - started >= 0.25
    assert "written after the wait" in _messages(tool_db)


def test_a_writing_unit_of_work_holds_the_write_lock_from_its_first_statement(
    short_engine: Engine, tool_db: Path
) -> None:
    probe = sqlite3.connect(str(tool_db), isolation_level=None, timeout=0)
    try:
        with Store(short_engine).begin() as mem:
            mem.timeline.count()  # a read, yet BEGIN IMMEDIATE already took the lock
            with pytest.raises(sqlite3.OperationalError, match="locked"):
                probe.execute("BEGIN IMMEDIATE")
        with Store(short_engine).begin(write=False) as mem:
            mem.timeline.count()
            probe.execute("BEGIN IMMEDIATE")  # a reader leaves the lock free
            probe.execute("ROLLBACK")
    finally:
        probe.close()


def test_a_deferred_read_then_write_after_another_commit_is_busy_at_once_and_a_retry_fixes_it(
    tool_db: Path,
) -> None:
    engine = create_engine(tool_db, busy_timeout_ms=5_000)
    calls = 0

    def read_then_write() -> int:
        nonlocal calls
        calls += 1
        with Store(engine).begin(write=False) as mem:
            mem.timeline.count()  # the read snapshot starts here
            if calls == 1:
                with Store(engine).begin() as other:  # another writer commits meanwhile
                    other.timeline.append("the other writer")
            return mem.timeline.append("late writer").id

    try:
        started = time.monotonic()
        with pytest.raises(DatabaseBusyError):
            read_then_write()
        # SQLITE_BUSY_SNAPSHOT: waiting cannot help, so SQLite does not wait
        assert time.monotonic() - started < 2
        calls = 0
        run_with_retry(read_then_write, attempts=3, base_delay=0.01)
        assert calls == 2
    finally:
        engine.dispose()
    assert _messages(tool_db).count("late writer") == 1


# --- run_with_retry --------------------------------------------------------------------------


def test_a_lock_held_past_the_busy_timeout_is_given_up_after_one_wait_naming_it(
    holder: sqlite3.Connection, short_engine: Engine, tool_db: Path
) -> None:
    # SQLite already waited the whole busy timeout: a retry would only wait as long again
    # (philont.db.retry.RetryPolicy; tests/reliability/test_busy_policy.py for every caller)
    holder.execute("BEGIN IMMEDIATE")
    calls = 0

    def unit() -> None:
        nonlocal calls
        calls += 1
        with Store(short_engine).begin() as mem:
            mem.timeline.append("never written")

    started = time.monotonic()
    with pytest.raises(DatabaseBusyError) as raised:
        run_with_retry(unit, attempts=3, base_delay=0.01)
    elapsed = time.monotonic() - started
    assert calls == 1  # one wait: not run again (a bound of 0.8 s said so too, by the clock)
    assert SHORT_MS / 1000 * 0.9 <= elapsed < 3
    assert "gave up after 1 attempt" in raised.value.message
    assert f"its whole busy timeout ({SHORT_MS / 1000:.1f} s)" in raised.value.message
    assert "database is locked" in raised.value.message
    assert raised.value.details["attempts"] == 1
    assert isinstance(raised.value.__cause__, DatabaseBusyError)
    holder.execute("ROLLBACK")
    assert "never written" not in _messages(tool_db)


@pytest.mark.parametrize(
    "error",
    [ValueError("bad input"), _wrapped(_sqlite_error("no such table: x")), DatabaseFullError("f")],
    ids=["value-error", "other-sqlite-error", "database-full"],
)
def test_a_retry_passes_other_errors_through_at_once(error: Exception) -> None:
    calls = 0

    def unit() -> None:
        nonlocal calls
        calls += 1
        raise error

    with pytest.raises(type(error)) as raised:
        run_with_retry(unit, attempts=5, base_delay=0.01)
    assert raised.value is error
    assert calls == 1


def test_a_retry_needs_at_least_one_attempt() -> None:
    with pytest.raises(ValueError, match="attempts"):
        run_with_retry(lambda: None, attempts=0)


# --- the tool dispatcher ---------------------------------------------------------------------


def test_a_tool_call_on_a_locked_database_fails_as_database_busy_and_writes_nothing(
    holder: sqlite3.Connection, short_engine: Engine, tool_db: Path
) -> None:
    before, log_before = snapshot(tool_db), actions(tool_db)
    holder.execute("BEGIN IMMEDIATE")
    result = tools.call(
        "store_fact", {"namespace": "user", "key": "k", "value": "v"}, db=Store(short_engine)
    )
    holder.execute("ROLLBACK")
    assert not result.ok
    assert result.error_code == "database_busy"
    assert result.error and "gave up after 1 attempt" in result.error
    assert "its whole busy timeout" in result.error
    assert snapshot(tool_db) == before and actions(tool_db) == log_before


def test_a_tool_call_succeeds_when_the_lock_is_released_within_its_busy_timeout(
    holder: sqlite3.Connection, tool_db: Path
) -> None:
    log_before = actions(tool_db)
    engine = create_engine(tool_db, busy_timeout_ms=2_000)
    holder.execute("BEGIN IMMEDIATE")
    timer = _release_later(holder, 0.3)
    try:
        result = tools.call(
            "store_fact", {"namespace": "user", "key": "k", "value": "v"}, db=Store(engine)
        )
    finally:
        timer.join()
        engine.dispose()
    assert result.ok, result.text
    assert len(actions(tool_db)) == len(log_before) + 1


def test_a_tool_call_inside_the_callers_unit_of_work_is_not_retried(
    holder: sqlite3.Connection, short_engine: Engine
) -> None:
    holder.execute("BEGIN IMMEDIATE")
    with capture_logs() as logs, Store(short_engine).begin() as mem:
        result = tools.call("store_fact", {"namespace": "u", "key": "k", "value": 1}, db=mem)
    # not run again: no retry logged (told by the time taken before, under 3 busy timeouts of
    # 150 ms, which a loaded machine's stall of 0.3 s broke)
    assert [entry for entry in logs if entry["event"] == "db.retry"] == []
    assert result.error_code == "database_busy"
    assert "gave up" not in (result.error or "")


# --- options ---------------------------------------------------------------------------------


def test_memory_open_passes_its_busy_timeout_to_every_connection(tool_db: Path) -> None:
    with Memory.open(tool_db, busy_timeout_ms=1_234, write=False) as mem:
        timeout = mem.session.connection().exec_driver_sql("PRAGMA busy_timeout").scalar()
    assert timeout == 1_234


def test_an_unknown_begin_mode_is_refused(short_engine: Engine) -> None:
    with (
        pytest.raises(ValueError, match="philont_begin"),
        short_engine.execution_options(philont_begin="EVENTUALLY").connect() as conn,
    ):
        conn.exec_driver_sql("SELECT 1")
