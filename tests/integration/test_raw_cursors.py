"""The lean statement layer (:class:`philont.db.backend.Raw`) closes every cursor it opens,
whatever the statement's outcome.

Why it matters: a cursor whose statement failed (busy) or was not read to the end keeps that
statement active. Freeing it resets the statement, which takes its connection's mutex. When
an exception's traceback keeps the cursor alive in a reference cycle, the garbage collector
frees it later in whichever thread collects. That thread may hold the write lock while the
cursor's connection is in another thread's busy wait for that lock, holding the mutex: both
then wait the whole busy timeout. The MCP server met this under 200 concurrent calls (stalls
of seconds, then ``database_busy``)."""

from __future__ import annotations

import gc
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from sqlalchemy.exc import DBAPIError

from philont.db.backend import Raw


class Row(NamedTuple):
    x: int


class Tracking:
    """A real sqlite3 connection that remembers every cursor handed out."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.opened: list[sqlite3.Cursor] = []

    def cursor(self) -> sqlite3.Cursor:
        cursor = self.conn.cursor()
        self.opened.append(cursor)
        return cursor


def connect(path: Path, timeout: float = 0.0) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=timeout)
    conn.execute("PRAGMA journal_mode = WAL")
    return conn


@pytest.fixture
def path(tmp_path: Path) -> Iterator[Path]:
    db = tmp_path / "m.sqlite"
    with connect(db) as conn:
        conn.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)")
        conn.execute("INSERT INTO t VALUES (1), (2), (3)")
    yield db


# Each method with a statement that succeeds, one that breaks a constraint, one that does not
# compile, and (writes) one that meets another connection's write lock.
CALLS: dict[str, Callable[[Raw, str], Any]] = {
    "rows": lambda raw, sql: raw.rows(sql),
    "named": lambda raw, sql: raw.named(Row, sql),
    "run": lambda raw, sql: raw.run(sql),
    "many": lambda raw, sql: raw.many(sql, [()]),
    "insert": lambda raw, sql: raw.insert(sql, ()),
}
READ = {"ok": "SELECT x FROM t", "syntax": "SELEC x FROM t"}
WRITE = {
    "ok": "INSERT INTO t VALUES (NULL)",
    "constraint": "INSERT INTO t VALUES (1)",
    "syntax": "INSERT INTO nowhere VALUES (1)",
    "busy": "INSERT INTO t VALUES (NULL)",
}
CASES = [
    (method, outcome, sql)
    for method in CALLS
    for outcome, sql in (READ if method in ("rows", "named") else WRITE).items()
]


@pytest.mark.parametrize(("method", "outcome", "sql"), CASES)
def test_every_cursor_is_closed_whatever_the_outcome(
    path: Path, method: str, outcome: str, sql: str
) -> None:
    holder = connect(path)
    if outcome == "busy":
        holder.execute("BEGIN IMMEDIATE")
    tracking = Tracking(connect(path))
    raw = Raw(tracking, postgres=False)
    try:
        if outcome == "ok":
            CALLS[method](raw, sql)
        else:
            with pytest.raises((sqlite3.Error, DBAPIError)):
                CALLS[method](raw, sql)
        assert tracking.opened
        for cursor in tracking.opened:
            with pytest.raises(sqlite3.ProgrammingError, match="closed cursor"):
                cursor.fetchone()
    finally:
        if holder.in_transaction:
            holder.execute("ROLLBACK")
        holder.close()
        tracking.conn.close()


def test_a_failed_statement_freed_later_does_not_wait_for_its_connections_busy_wait(
    path: Path,
) -> None:
    holder = connect(path)
    holder.execute("BEGIN IMMEDIATE")  # this thread holds the write lock
    conn = connect(path)
    kept: list[BaseException] = []
    try:
        Raw(conn, postgres=False).run("INSERT INTO t VALUES (NULL)")
    except sqlite3.OperationalError as exc:
        kept.append(exc)  # its traceback holds the frames that ran the statement
    assert kept, "the insert should have met the holder's lock"

    conn.execute("PRAGMA busy_timeout = 5000")
    waited: list[float] = []

    def wait_for_the_lock() -> None:
        started = time.monotonic()
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        except sqlite3.OperationalError:
            pass
        waited.append(time.monotonic() - started)

    waiter = threading.Thread(target=wait_for_the_lock)
    waiter.start()
    time.sleep(0.3)  # the waiter is in SQLite's busy wait, holding its connection's mutex
    kept.clear()
    gc.collect()
    still_waiting = waiter.is_alive()
    holder.execute("ROLLBACK")  # now the waiter gets the lock
    waiter.join()
    holder.close()
    conn.close()
    # Before: freeing the failed statement's cursor waited for the mutex until the waiter's
    # busy timeout ran out (the waiter, in turn, waited for this thread's lock).
    assert still_waiting, f"freeing the failed statement waited {waited[0]:.1f} s"
