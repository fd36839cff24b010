"""Upgrades and restores at the edges: two upgrades at once, damaged files, records that lie."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import migrate
from philont import settings as philont_settings
from philont.backup import restore
from philont.errors import (
    DatabaseCorruptError,
    SchemaError,
    SchemaOutOfDateError,
    UnknownSchemaVersionError,
    UnrecognizedSchemaError,
)
from philont.store import Store

CopyFixture = Callable[[str], Path]
REPO = Path(__file__).resolve().parents[2]


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _backups(db: Path) -> list[Path]:
    directory = philont_settings.backup_dir_for(db)
    return sorted(directory.glob("*.sqlite")) if directory.is_dir() else []


def _philont(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "philont", *args],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


# --- two upgrades at once --------------------------------------------------------------------


def test_two_upgrades_of_one_file_at_once_both_end_at_head_with_one_backup(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v27")
    # Hold the write lock while both start, so they meet at it: one wins and migrates, the
    # other waits for it and then finds the file at head.
    holder = sqlite3.connect(str(db), isolation_level=None)
    holder.execute("PRAGMA journal_mode = WAL")
    holder.execute("BEGIN IMMEDIATE")
    procs = [_philont("db", "upgrade", "--db", str(db), "--json") for _ in range(2)]
    time.sleep(3)
    holder.execute("ROLLBACK")
    holder.close()
    results = [p.communicate(timeout=300) for p in procs]

    for proc, (_out, err) in zip(procs, results, strict=True):
        assert proc.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err
    reports = [json.loads(out) for out, _ in results]
    assert sorted(len(r["applied"]) for r in reports)[0] == 0  # the loser applied nothing
    assert sorted(len(r["applied"]) for r in reports)[1] > 0
    assert [r["backup"] is not None for r in reports].count(True) == 1
    assert len(_backups(db)) == 1
    assert migrate.status(db).at_head


# --- damaged files ---------------------------------------------------------------------------


def _damage(db: Path, table: str) -> None:
    """Overwrite the cell pointers of ``table``'s root page: its b-tree no longer parses."""
    with closing(sqlite3.connect(str(db))) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = ?", (table,)
        ).fetchone()
    with db.open("r+b") as fh:
        fh.seek((root - 1) * page_size + 8)
        fh.write(b"\x00\x01" * 20)


@pytest.mark.parametrize(
    "table", ["memory_raw_messages", "memory_facts", "memory_notes", "memory_skills"]
)
def test_a_damaged_file_is_refused_by_name_before_any_backup_or_write(
    table: str, copy_fixture: CopyFixture
) -> None:
    db = copy_fixture("v27")
    _damage(db, table)
    before = _sha(db)

    with pytest.raises(DatabaseCorruptError, match=table) as err:
        migrate.upgrade(db)

    assert "damaged" in str(err.value)
    assert _sha(db) == before
    assert _backups(db) == []
    assert not Path(f"{db}-wal").exists()


def test_the_cli_says_a_damaged_file_is_damaged_without_a_traceback(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v27")
    _damage(db, "memory_raw_messages")
    proc = _philont("db", "upgrade", "--db", str(db))
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1
    assert "database_corrupt" in err and "damaged" in err and "Traceback" not in err


def test_a_damaged_host_table_in_a_shared_file_does_not_stop_the_upgrade(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v27")
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute("CREATE TABLE host_orders (id INTEGER PRIMARY KEY, item TEXT)")
        conn.executemany(
            "INSERT INTO host_orders (item) VALUES (?)", [(f"item {i}" * 20,) for i in range(300)]
        )
    _damage(db, "host_orders")
    report = migrate.upgrade(db)
    assert report.applied and migrate.status(db).at_head


# --- records that lie ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def head_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("head") / "memory.sqlite"
    migrate.upgrade(path)
    return path


def _head_copy(template: Path, directory: Path, name: str = "memory.sqlite") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / name
    shutil.copyfile(template, target)
    target.chmod(0o600)
    return target


def _set_version(db: Path, value: str) -> None:
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute("UPDATE memory_meta SET value = ? WHERE key = 'schema_version'", (value,))


_EXAMPLES = itertools.count()


@given(
    value=st.one_of(
        st.integers(min_value=-(10**7), max_value=10**7).map(str),
        st.text(max_size=12),
        st.sampled_from(["99", "abc", "0", "31 ", "031", "30", "3.1e1"]),
    )
)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_an_upgrade_reports_success_only_when_the_recorded_version_is_heads(
    value: str, head_template: Path, tmp_path: Path
) -> None:
    db = _head_copy(head_template, tmp_path / f"v{next(_EXAMPLES)}")
    _set_version(db, value)
    if re.fullmatch("[0-9]{1,6}", value.strip()) and int(value.strip()) == 31:
        assert migrate.upgrade(db).applied == []
        return
    before = _sha(db)
    with pytest.raises(SchemaError) as err:
        migrate.upgrade(db)
    assert "memory_meta.schema_version" in str(err.value)
    assert _sha(db) == before
    with pytest.raises(SchemaError):
        migrate.check(db)
    assert not migrate.status(db).at_head


@pytest.mark.parametrize("value", ["99", "abc", "0", "-1", "27", ""])
def test_restore_refuses_a_database_whose_schema_version_is_not_heads(
    value: str, head_template: Path, tmp_path: Path
) -> None:
    live = _head_copy(head_template, tmp_path / "live")
    bad = _head_copy(head_template, tmp_path / "elsewhere", "bad.sqlite")
    _set_version(bad, value)
    before = _sha(live)

    with pytest.raises(SchemaError) as err:
        restore(bad, live)

    assert f"memory_meta.schema_version is {value!r}" in str(err.value)
    expected = UnrecognizedSchemaError if value == "27" else UnknownSchemaVersionError
    assert isinstance(err.value, expected)
    assert _sha(live) == before


def test_an_unknown_revision_is_named_in_the_version_table_column(
    head_template: Path, tmp_path: Path
) -> None:
    live = _head_copy(head_template, tmp_path / "live")
    bad = _head_copy(head_template, tmp_path / "elsewhere", "bad.sqlite")
    with closing(sqlite3.connect(str(bad))) as conn, conn:
        conn.execute("UPDATE philont_alembic_version SET version_num = 'v099'")

    for attempt in (lambda: restore(bad, live), lambda: migrate.upgrade(bad)):
        with pytest.raises(UnknownSchemaVersionError) as err:
            attempt()
        assert err.value.column == "philont_alembic_version.version_num"
        assert "philont_alembic_version.version_num is 'v099'" in str(err.value)
        assert "memory_meta" not in str(err.value)


def test_a_store_never_opens_a_database_whose_records_disagree(
    head_template: Path, tmp_path: Path
) -> None:
    db = _head_copy(head_template, tmp_path / "d")
    _set_version(db, "99")
    with pytest.raises(UnknownSchemaVersionError):
        Store.open(db)
    with pytest.raises((UnknownSchemaVersionError, SchemaOutOfDateError)):
        Store.open(db, upgrade=False)


def test_a_failed_upgrade_leaves_no_backup_behind(copy_fixture: CopyFixture) -> None:
    db = copy_fixture("v27")

    def explode(revision: str) -> None:
        raise RuntimeError("injected failure")

    for _ in range(3):
        with pytest.raises(SchemaError, match="injected failure"):
            migrate.upgrade(db, on_step=explode)
    assert _backups(db) == []
    assert os.path.exists(db) and migrate.status(db).revision is None


def test_a_missing_schema_version_beside_our_version_table_is_refused(
    head_template: Path, tmp_path: Path
) -> None:
    db = _head_copy(head_template, tmp_path / "d")
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute("DELETE FROM memory_meta WHERE key = 'schema_version'")
    for attempt in (migrate.upgrade, migrate.check):
        with pytest.raises(UnrecognizedSchemaError, match="schema_version is missing"):
            attempt(db)
    with pytest.raises(UnrecognizedSchemaError):
        restore(db, _head_copy(head_template, tmp_path / "live"))
