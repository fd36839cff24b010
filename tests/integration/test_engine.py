"""Opening a database: paths, modes, PRAGMAs and transactional DDL."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from philont import migrate, settings
from philont.db.engine import check_file, create_engine, resolve_url, sqlite_path
from philont.errors import DatabasePathError, NotADatabaseError


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def test_a_new_database_gets_a_private_directory_and_file(tmp_path: Path) -> None:
    db = tmp_path / "home" / ".philont" / "memory" / "memory.sqlite"
    old = os.umask(0o022)
    try:
        migrate.upgrade(db)
    finally:
        os.umask(old)
    assert _mode(db.parent) == 0o700
    assert _mode(db.parent.parent) == 0o700
    assert _mode(db.parent / "backups") == 0o700
    assert _mode(db) == 0o600


def test_the_default_path_follows_memory_db_path_then_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_DB_PATH", str(tmp_path / "x.sqlite"))
    assert sqlite_path(resolve_url(None)) == (tmp_path / "x.sqlite").resolve()
    monkeypatch.delenv("MEMORY_DB_PATH")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert settings.default_db_path() == tmp_path / ".philont" / "memory" / "memory.sqlite"


def test_connections_use_wal_busy_timeout_and_foreign_keys(db_path: Path) -> None:
    engine = create_engine(db_path)
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() == settings.BUSY_TIMEOUT_MS
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1
    engine.dispose()


def test_ddl_inside_a_rolled_back_transaction_is_undone(db_path: Path) -> None:
    engine = create_engine(db_path)
    with engine.connect() as conn:
        with conn.begin() as tx:
            conn.execute(text("CREATE TABLE scratch (x INTEGER)"))
            tx.rollback()
        names = conn.execute(text("SELECT name FROM sqlite_master WHERE name = 'scratch'"))
        assert names.fetchall() == []
    engine.dispose()


def test_a_rolled_back_savepoint_undoes_only_its_own_writes(db_path: Path) -> None:
    engine = create_engine(db_path)
    with engine.connect() as conn, conn.begin():
        conn.execute(text("INSERT INTO memory_meta VALUES ('a', '1')"))
        sp = conn.begin_nested()
        conn.execute(text("INSERT INTO memory_meta VALUES ('b', '2')"))
        sp.rollback()
        keys = {r[0] for r in conn.execute(text("SELECT key FROM memory_meta"))}
        assert "a" in keys and "b" not in keys
    engine.dispose()


def test_foreign_keys_are_enforced_for_normal_connections(db_path: Path) -> None:
    from sqlalchemy.exc import IntegrityError

    engine = create_engine(db_path)
    with pytest.raises(IntegrityError), engine.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO memory_raw_messages (session_id, role, content, timestamp) "
                "VALUES ('nope', 'user', 'hi', 1)"
            )
        )
    engine.dispose()


def test_opening_a_non_database_or_a_directory_fails_clearly(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"\x00" * 100)
    with pytest.raises(NotADatabaseError):
        create_engine(junk)
    with pytest.raises(DatabasePathError):
        create_engine(tmp_path)


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_a_directory_another_process_makes_meanwhile_does_not_stop_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depth: int
) -> None:
    """Two processes creating one new path at once: both see a directory missing, one makes it
    first. The other's mkdir failed with FileExistsError, which ended check_file before the
    file was created (an import then failed on a file that was not there)."""
    db = tmp_path / "a" / "b" / "c" / "memory.sqlite"
    raced = [db.parent, db.parent.parent, db.parent.parent.parent][depth]
    original = Path.mkdir

    def mkdir_after_the_other(self: Path, *args: Any, **kwargs: Any) -> None:
        if self == raced and not self.exists():
            os.mkdir(self, 0o755)  # the other process got there first
        original(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir_after_the_other)
    assert check_file(db, create=True) is True
    monkeypatch.undo()
    assert db.is_file() and _mode(db) == 0o600
    assert (db.parent / "backups").is_dir()
    assert _mode(raced) == 0o755  # the other process's directory keeps its mode
    assert check_file(db, create=True) is False  # created once
