"""A file shared with a host application: philont checks only its own tables, names a host table
that takes one of its names, and its side effects (backup, file mode, WAL) are switchable or
said out loud."""

from __future__ import annotations

import sqlite3
import stat
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import migrate
from philont import settings as philont_settings
from philont.errors import MigrationError, TableNameConflictError
from philont.migrate.checks import is_wal
from philont.migrate.plan import MEMORY_TABLE
from tests.migrations.helpers import logical_dump

CopyFixture = Callable[[str], Path]

RUNTIME_TABLES = [
    "push_subscriptions",
    "config_rules",
    "routing_rules",
    "autonomous_budget",
    "reasoning_sessions",
    "reasoning_nodes",
    "schedule_outcomes",
    "memory_plans",
    "memory_calendar",
    "memory_pursuits",
    "philont_skill_recipes",
]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _backups(db: Path) -> list[Path]:
    directory = philont_settings.backup_dir_for(db)
    return sorted(directory.glob("*.sqlite")) if directory.is_dir() else []


def _host_file(path: Path, *, orphan: bool = False) -> Path:
    """A host's own file: customers and orders (with a foreign key), optionally one orphan."""
    with closing(sqlite3.connect(str(path))) as conn, conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, "
            "customer_id INTEGER NOT NULL REFERENCES customers(id), item TEXT)"
        )
        conn.execute("INSERT INTO customers (id, name) VALUES (1, 'Ada')")
        conn.execute("INSERT INTO orders (customer_id, item) VALUES (1, 'tea')")
        if orphan:  # foreign keys are off by default in sqlite3: the host wrote an orphan
            conn.execute("INSERT INTO orders (customer_id, item) VALUES (99, 'lost')")
    return path


def _add_host_tables(db: Path, *, orphan: bool) -> None:
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        conn.execute(
            "CREATE TABLE orders (id INTEGER PRIMARY KEY, "
            "customer_id INTEGER NOT NULL REFERENCES customers(id), item TEXT)"
        )
        if orphan:
            conn.execute("INSERT INTO orders (customer_id, item) VALUES (99, 'lost')")


# --- checks scoped to philont's tables -------------------------------------------------------


def test_an_orphan_row_in_a_host_table_does_not_fail_a_new_philont_schema(tmp_path: Path) -> None:
    db = _host_file(tmp_path / "app.sqlite", orphan=True)
    report = migrate.upgrade(db)
    assert report.applied[-1] == migrate.head_revision()
    with closing(sqlite3.connect(str(db))) as conn:
        assert conn.execute("PRAGMA foreign_key_check(orders)").fetchall() != []
        assert conn.execute("SELECT count(*) FROM orders").fetchone() == (2,)


def test_an_orphan_row_in_a_host_table_does_not_fail_an_adoption(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v27")
    _add_host_tables(db, orphan=True)
    report = migrate.upgrade(db)
    assert report.stamped == "v027" and migrate.status(db).at_head
    assert len(_backups(db)) == 1


def test_an_orphan_row_in_philonts_own_tables_still_fails_the_upgrade_without_a_backup(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v27")
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute(
            "INSERT INTO memory_raw_messages (session_id, role, content, timestamp) "
            "VALUES ('no-such-session', 'user', 'orphan', 1)"
        )
    before = logical_dump(db)
    for _ in range(2):
        with pytest.raises(MigrationError, match="memory_raw_messages"):
            migrate.upgrade(db)
    assert _backups(db) == []
    assert logical_dump(db) == before


# --- a host table under one of philont's names -----------------------------------------------


@given(name=st.sampled_from(RUNTIME_TABLES), orphan=st.booleans())
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_a_host_table_named_like_a_philont_table_is_named_in_the_refusal(
    name: str, orphan: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db = _host_file(tmp_path_factory.mktemp("host") / "app.sqlite", orphan=orphan)
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute(f"CREATE TABLE {name} (host_id INTEGER PRIMARY KEY, payload TEXT)")
    before = db.read_bytes()

    with pytest.raises(TableNameConflictError) as err:
        migrate.upgrade(db)

    assert name in str(err.value) and err.value.tables == [name]
    assert db.read_bytes() == before
    assert _backups(db) == []


def test_every_table_philont_creates_is_recognised_as_philonts(tmp_path: Path) -> None:
    db = tmp_path / "m.sqlite"
    migrate.upgrade(db)
    with closing(sqlite3.connect(str(db))) as conn:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    mine = [n for n in names if n != "sqlite_sequence"]
    assert mine and all(
        MEMORY_TABLE.match(n) or n == philont_settings.VERSION_TABLE for n in mine
    ), [n for n in mine if not MEMORY_TABLE.match(n)]
    assert set(RUNTIME_TABLES) <= set(names)


# --- side effects: backups, file modes, WAL --------------------------------------------------


def test_backup_false_takes_no_backup(copy_fixture: CopyFixture) -> None:
    db = copy_fixture("v27")
    report = migrate.upgrade(db, backup=False)
    assert report.applied and report.backup is None
    assert _backups(db) == []


def test_a_host_files_mode_is_left_alone(tmp_path: Path) -> None:
    db = _host_file(tmp_path / "app.sqlite")
    db.chmod(0o644)
    migrate.upgrade(db)
    assert _mode(db) == 0o644
    assert is_wal(db)  # the switch to WAL is documented (README), and persistent


def test_philonts_own_files_are_made_private(tmp_path: Path, copy_fixture: CopyFixture) -> None:
    new = tmp_path / "fresh" / "memory.sqlite"
    migrate.upgrade(new)
    assert _mode(new) == 0o600

    old = copy_fixture("v27")
    old.chmod(0o644)
    migrate.upgrade(old)
    assert _mode(old) == 0o600


def test_a_host_file_gets_a_backup_unless_told_not_to(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    first = _host_file(tmp_path / "a" / "app.sqlite")
    report = migrate.upgrade(first)
    assert report.backup is not None and _backups(first) == [report.backup]

    (tmp_path / "b").mkdir()
    second = _host_file(tmp_path / "b" / "app.sqlite")
    assert migrate.upgrade(second, backup=False).backup is None
    assert _backups(second) == []
