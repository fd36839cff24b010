"""Upgrading a file another process is writing: the upgrade waits for the lock, and a lock that
outlasts the wait is ``DatabaseBusyError`` with the file unchanged, never "damaged" and never a
raw driver error. The original's files are in rollback-journal mode until philont switches them
to WAL, and SQLite does not wait for a lock when it switches."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from philont import migrate
from philont import settings as philont_settings
from philont.db.engine import create_engine
from philont.errors import DatabaseBusyError

CopyFixture = Callable[[str], Path]

# A writer in another process: it takes the lock, says so, and holds it for argv[3] seconds
# (or until killed) without committing.
_HOLDER = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN " + sys.argv[2])
conn.execute("INSERT INTO memory_meta (key, value) VALUES ('holder', 'x')")
print("locked", flush=True)
time.sleep(float(sys.argv[3]))
conn.execute("ROLLBACK")
"""

# IMMEDIATE: a writer with a RESERVED lock (readers may go on); EXCLUSIVE: one committing (no
# reader gets in). Both on the rollback-journal file the original leaves behind.
LOCKS = ["IMMEDIATE", "EXCLUSIVE"]


@contextmanager
def _held(db: Path, lock: str, seconds: float) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db), lock, str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _backups(db: Path) -> list[Path]:
    directory = philont_settings.backup_dir_for(db)
    return sorted(directory.glob("*")) if directory.is_dir() else []


@pytest.mark.parametrize("lock", LOCKS)
def test_an_upgrade_waits_for_a_writer_in_another_process_and_then_runs(
    lock: str, copy_fixture: CopyFixture
) -> None:
    db = copy_fixture("v27")
    with _held(db, lock, 2.0) as holder, capture_logs() as logs:
        report = migrate.upgrade(db)
        assert holder.wait(timeout=30) == 0  # it let go by itself: the upgrade waited for it
    # it said so (it waited up to 15 minutes without a word)
    waiting = [e for e in logs if e["event"] == "migrate.waiting"]
    assert len(waiting) == 1 and waiting[0]["log_level"] == "warning"
    assert waiting[0]["path"] == str(db)

    assert report.applied and report.backup is not None
    st = migrate.status(db)
    assert st.at_head and st.schema_version == "31"


@pytest.mark.parametrize("lock", LOCKS)
def test_a_lock_held_past_the_wait_is_busy_and_nothing_changes(
    lock: str, copy_fixture: CopyFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(philont_settings, "MIGRATION_BUSY_TIMEOUT_MS", 300)
    db = copy_fixture("v27")
    before = _sha(db)
    with _held(db, lock, 60.0):
        with pytest.raises(DatabaseBusyError, match="locked by another connection"):
            migrate.upgrade(db)
        assert _sha(db) == before
    assert _sha(db) == before
    assert _backups(db) == []
    assert not Path(f"{db}-wal").exists()


def test_a_store_opening_a_file_another_process_writes_waits_for_the_wal_switch(
    copy_fixture: CopyFixture,
) -> None:
    # The same switch for every philont connection, not only an upgrade's.
    db = copy_fixture("v31")
    with _held(db, "IMMEDIATE", 1.0):
        engine = create_engine(db, create=False)
        try:
            with engine.connect() as conn:
                mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar()
        finally:
            engine.dispose()
    assert mode == "wal"


def test_an_upgrade_nobody_holds_up_says_nothing_of_waiting(copy_fixture: CopyFixture) -> None:
    db = copy_fixture("v27")
    with capture_logs() as logs:
        migrate.upgrade(db)
        migrate.upgrade(db)  # at head: nothing to wait for either
    assert [e for e in logs if e["event"] == "migrate.waiting"] == []
