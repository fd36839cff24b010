"""The alembic command line from a checkout, as the README runs it: a refusal is alembic's own
``FAILED: error (<code>): ...`` line (no traceback) and the file is left byte for byte as it
was; a downgrade and offline ``--sql`` are refused before the file is opened (opening switches
it to WAL)."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from alembic import command

from philont import migrate
from philont.errors import UnsupportedMigrationError

CopyFixture = Callable[[str], Path]
REPO = Path(__file__).resolve().parents[2]


def _alembic(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url={db}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def upgraded(copy_fixture: CopyFixture) -> Path:
    """The v27 fixture at our head, back in rollback-journal mode (one file, as a user may
    keep it), without the upgrade's backup."""
    db = copy_fixture("v27")
    migrate.upgrade(db, backup=False)
    with closing(sqlite3.connect(str(db))) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")
    return db


def _assert_refused(proc: subprocess.CompletedProcess[str], code: str) -> None:
    shown = proc.stdout + proc.stderr
    assert proc.returncode != 0, shown
    assert "Traceback" not in shown, shown
    assert f"FAILED: error ({code}):" in shown, shown


@pytest.mark.parametrize(
    "args",
    [
        ("downgrade", "v036"),
        ("downgrade", "-1"),
        ("downgrade", "base"),
        ("upgrade", "head", "--sql"),
        ("upgrade", "v036:head", "--sql"),
    ],
    ids=" ".join,
)
def test_a_downgrade_or_offline_sql_is_refused_and_the_file_is_untouched(
    upgraded: Path, args: tuple[str, ...]
) -> None:
    before = _sha(upgraded)
    proc = _alembic(upgraded, *args)
    _assert_refused(proc, "migration_unsupported")
    assert _sha(upgraded) == before
    assert not Path(f"{upgraded}-wal").exists()
    assert migrate.status(upgraded).at_head


def test_a_downgrade_from_code_is_refused_by_type(upgraded: Path) -> None:
    before = _sha(upgraded)
    with migrate.isolated(), pytest.raises(UnsupportedMigrationError, match="forward-only"):
        command.downgrade(migrate.alembic_config(upgraded), "v036")
    assert _sha(upgraded) == before


def _newer(db: Path) -> None:
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute("UPDATE memory_meta SET value = '32' WHERE key = 'schema_version'")


def _truncated(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])


def _read_only(db: Path) -> None:
    db.chmod(0o400)


@pytest.mark.parametrize(
    ("spoil", "code"),
    [
        (_newer, "unknown_schema_version"),
        (_truncated, "database_corrupt"),
        (_read_only, "database_read_only"),
    ],
    ids=["newer", "truncated", "read-only"],
)
def test_a_refused_upgrade_is_one_line_and_changes_nothing(
    copy_fixture: CopyFixture, spoil: Callable[[Path], None], code: str, tmp_path: Path
) -> None:
    db = copy_fixture("v27")
    spoil(db)
    before = _sha(db)
    proc = _alembic(db, "upgrade", "head")
    _assert_refused(proc, code)
    assert _sha(db) == before
    assert not Path(f"{db}-wal").exists()
    backups = db.parent / "backups"
    assert not backups.is_dir() or not any(backups.iterdir())
    shutil.rmtree(backups, ignore_errors=True)


@pytest.mark.parametrize("ini", ["alembic.ini", "alembic/alembic.ini"], ids=["checkout", "wheel"])
def test_the_command_line_says_each_revision_and_the_backup_it_took(
    copy_fixture: CopyFixture, ini: str
) -> None:
    db = copy_fixture("v27")
    proc = _alembic(db, "-c", str(REPO / ini), "upgrade", "head")
    # -x comes before -c here: alembic takes its global options in any order
    assert proc.returncode == 0, proc.stderr
    for rev in range(27, 37):
        assert f"Running upgrade v{rev:03d} -> v{rev + 1:03d}" in proc.stderr, proc.stderr
    (backup,) = (db.parent / "backups").glob("v27-*-pre-upgrade.sqlite")
    assert f"migrate.backup path='{backup}'" in proc.stderr
    assert "migrate.adopted stamped='v027'" in proc.stderr


def test_an_upgrade_from_code_configures_no_logging(copy_fixture: CopyFixture) -> None:
    import logging

    root = logging.getLogger()
    before = (list(root.handlers), root.level, logging.getLogger("alembic").level)
    migrate.upgrade(copy_fixture("v27"))
    assert (list(root.handlers), root.level, logging.getLogger("alembic").level) == before
