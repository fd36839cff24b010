"""WAL checkpoints run in a background thread, not inside the committing caller's commit."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import text
from structlog.testing import capture_logs

from philont.db import checkpoint
from philont.db.engine import checkpointer_of, connect_read_only
from philont.store import Store


def _threads(path: Path) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == f"philont-checkpoint:{path.name}"]


def _rows_in_file(path: Path) -> int:
    """Notes in the database file itself (``immutable``: the WAL is not read)."""
    with closing(connect_read_only(path, immutable=True)) as conn:
        return int(conn.execute("SELECT count(*) FROM memory_notes").fetchone()[0])


def _live_rows(path: Path) -> int:
    """Notes as a reader sees them (the WAL included)."""
    with closing(connect_read_only(path)) as conn:
        return int(conn.execute("SELECT count(*) FROM memory_notes").fetchone()[0])


def _all_in_file(path: Path) -> bool:
    return _rows_in_file(path) == _live_rows(path)


def _eventually(check: Callable[[], bool], seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.02)
    return check()


def _write_notes(store: Store, n: int) -> None:
    for i in range(n):
        with store.begin() as mem:
            mem.notes.add(f"note {i}")


def test_commits_reach_the_database_file_without_an_inline_checkpoint(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.sqlite"
    store = Store.open(db_path)
    try:
        with store.engine.connect() as conn:
            # the writers' own checkpoint is only the last resort (SQLite's default is 1,000)
            pages = conn.execute(text("PRAGMA wal_autocheckpoint")).scalar()
        assert pages == checkpoint.SAFETY_PAGES
        _write_notes(store, 30)  # far below SAFETY_PAGES: no writer checkpoints inline
        assert _live_rows(db_path) == 30
        # the background thread copies all of it into the file once the commits stop
        assert _eventually(lambda: _all_in_file(db_path))
        cp = checkpointer_of(store.engine)
        assert cp is not None
        assert _eventually(lambda: cp.runs >= 1)  # counted once its PRAGMA has returned
    finally:
        store.close()


def test_a_unit_of_work_that_changed_no_row_wakes_no_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A host builds its context (a read unit of work) on every turn: each commit woke the
    # thread, which then ran a checkpoint of nothing every GATHER_S beside the turns.
    monkeypatch.setattr(checkpoint, "IDLE_S", 0.2)
    db_path = tmp_path / "memory.sqlite"
    Store.open(db_path).close()  # created, and written
    store = Store.open(db_path)
    try:
        for write in (False, True, False):  # a writing unit that happened to write nothing too
            with store.begin(write=write) as mem:
                mem.prefix.build()
                mem.search.notes("anything")
        cp = checkpointer_of(store.engine)
        assert cp is not None
        time.sleep(checkpoint.GATHER_S * 4)
        assert not _threads(db_path)
        assert cp.runs == 0
        _write_notes(store, 1)  # a commit that changed rows wakes it
        # (made, not alive: idle 0.2 s after its checkpoint, it may be gone already when this
        # thread runs late on a loaded machine)
        assert cp._thread is not None
        assert _eventually(lambda: cp.runs == 1 and _all_in_file(db_path))
        assert _eventually(lambda: not _threads(db_path))  # idle again
        with store.begin(write=False) as mem:  # the same pooled connection, reading again
            mem.notes.list()
        time.sleep(checkpoint.GATHER_S * 4)
        assert not _threads(db_path)
        assert cp.runs == 1
    finally:
        store.close()


def test_the_thread_ends_with_the_store_and_when_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "IDLE_S", 0.2)
    db_path = tmp_path / "memory.sqlite"
    store = Store.open(db_path)
    try:
        cp = checkpointer_of(store.engine)
        assert cp is not None
        _write_notes(store, 1)
        # the thread the commit made (alive or not: idle 0.2 s after its checkpoint, it may be
        # gone already when this thread runs late on a loaded machine)
        first = cp._thread
        assert first is not None and first.name == f"philont-checkpoint:{db_path.name}"
        assert _eventually(lambda: not _threads(db_path))  # idle: ended, connection closed
        _write_notes(store, 1)  # the next commit starts it again: another thread
        assert cp._thread is not None and cp._thread is not first
    finally:
        store.close()
    assert not _threads(db_path)  # close() joined it


def test_a_disposed_engine_starts_a_new_thread_on_its_next_commit(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.sqlite"
    store = Store.open(db_path)
    try:
        _write_notes(store, 1)
        store.engine.dispose()
        assert not _threads(db_path)
        _write_notes(store, 2)
        assert _eventually(lambda: _all_in_file(db_path))
    finally:
        store.close()


def test_a_removed_file_is_never_created_again_by_the_thread(tmp_path: Path) -> None:
    cp = checkpoint.Checkpointer(tmp_path / "gone.sqlite")
    with capture_logs() as logs:
        cp.committed()
        thread = cp._thread
        assert thread is not None
        thread.join(5)  # the thread tried, failed and ended
    assert not thread.is_alive()
    assert not (tmp_path / "gone.sqlite").exists()
    # No warning: the writers report a deleted file themselves (database_gone); a server's
    # stderr carried "checkpoint.failed" whenever the thread started after the deletion.
    assert [e for e in logs if e["log_level"] == "warning"] == []


def test_a_forked_child_checkpoints_its_own_commits(tmp_path: Path) -> None:
    db_path = tmp_path / "memory.sqlite"
    store = Store.open(db_path)
    try:
        _write_notes(store, 1)
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child reports by its exit code
            code = 1
            try:
                store.engine.dispose(close=False)  # the parent's connections are not the child's
                _write_notes(store, 3)
                code = 0 if _eventually(lambda: _all_in_file(db_path)) else 2
            finally:
                os._exit(code)
        _pid, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        store.close()


def test_closing_the_store_does_not_wait_for_the_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checkpoint, "GATHER_S", 60.0)  # the thread now waits a minute
    monkeypatch.setattr(checkpoint, "IDLE_S", 60.0)
    store = Store.open(tmp_path / "memory.sqlite")
    _write_notes(store, 1)
    started = time.monotonic()
    store.close()
    assert time.monotonic() - started < 30  # not the minute: close() cut the waits short
    assert not _threads(tmp_path / "memory.sqlite")


def test_a_lock_another_connection_holds_is_waited_out_quietly(tmp_path: Path) -> None:
    """A checkpoint that met another connection's lock (here: a file another process upgrades,
    still in rollback-journal mode, its write lock held) printed a `checkpoint.failed` warning on
    the user's terminal and ended the thread. It is normal: the thread waits for the next
    commit, whose checkpoint goes through."""
    db_path = tmp_path / "memory.sqlite"
    with closing(sqlite3.connect(db_path, isolation_level=None)) as conn:
        conn.execute("CREATE TABLE t (x)")
    checkpointer = checkpoint.Checkpointer(db_path)
    holder = sqlite3.connect(db_path, isolation_level=None)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with capture_logs() as logs:
            checkpointer.committed()
            assert _eventually(lambda: any(e["event"] == "checkpoint.busy" for e in logs))
            holder.execute("COMMIT")
            assert _threads(db_path), "the thread goes on waiting for commits"
            assert checkpointer.runs == 0
            checkpointer.committed()
            assert _eventually(lambda: checkpointer.runs == 1)
        assert [e for e in logs if e["log_level"] == "warning"] == []
    finally:
        holder.close()
        checkpointer.stop()
