"""Every command on a database it cannot use -- damaged pages, a truncated file, a bad header,
a schema newer than ours -- says so as one typed line and an exit code, never a traceback, and
leaves the file as it was; `db check` never sends a newer file to an upgrade that refuses it."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont import migrate
from philont import settings as philont_settings
from philont.cli import app
from philont.errors import DatabaseCorruptError, UnknownSchemaVersionError
from tests.support import cli_command as _command
from tests.support import cli_paths

runner = CliRunner()
SKIP = {"demo", "mcp"}  # a scripted run of its own, a server on stdin


COMMANDS = [
    p
    for p in cli_paths()
    if p[0] not in SKIP and any("--db" in getattr(o, "opts", ()) for o in _command(p).params)
]


def _args(path: tuple[str, ...], db: Path, elsewhere: Path) -> list[str]:
    args = [*path, "--db", str(db)]
    for param in _command(path).params:
        if param.param_type_name == "argument" and param.required:
            args.append(str(elsewhere) if param.name == "file" else "x")
    return args


def _sha(path: Path) -> str:
    """The file's digest, but for the header fields SQLite rewrites when it switches the file
    to WAL (every philont connection does, README): versions, change counter, version number."""
    data = bytearray(path.read_bytes())
    for start, end in ((18, 20), (24, 28), (92, 100)):
        data[start:end] = bytes(end - start)
    return hashlib.sha256(bytes(data)).hexdigest()


def _single_file(db: Path) -> None:
    with closing(sqlite3.connect(str(db))) as conn:
        conn.execute("PRAGMA journal_mode = DELETE")


def _damage_page(db: Path) -> None:
    """The timeline's b-tree no longer parses (its root page's cell pointers overwritten)."""
    with closing(sqlite3.connect(str(db))) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        (root,) = conn.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'memory_raw_messages'"
        ).fetchone()
    with db.open("r+b") as fh:
        fh.seek((root - 1) * page_size + 8)
        fh.write(b"\x00\x01" * 20)


def _truncate(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2 + 123])


def _bad_header(db: Path) -> None:
    data = bytearray(db.read_bytes())
    data[16:18] = b"\x00\x07"  # a page size that is not a power of two
    db.write_bytes(bytes(data))


def _newer_version(db: Path) -> None:
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute("UPDATE memory_meta SET value = '32' WHERE key = 'schema_version'")


def _later_revision(db: Path) -> None:
    with closing(sqlite3.connect(str(db))) as conn, conn:
        conn.execute(f"UPDATE {philont_settings.VERSION_TABLE} SET version_num = 'v099'")


# name -> (start from an upgraded file?, what to do to it)
DAMAGE: dict[str, tuple[bool, Callable[[Path], None]]] = {
    "damaged-page": (True, _damage_page),
    "truncated": (True, _truncate),
    "bad-header": (True, _bad_header),
    "newer-schema-version": (False, _newer_version),
    "later-revision": (True, _later_revision),
}


NEWER = ("newer-schema-version", "later-revision")
REPORTS = {("db", "current"), ("backup",)}  # say what they see of a newer file


@pytest.fixture(scope="module")
def upgraded(philont_fixtures: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("upgraded") / "memory.sqlite"
    shutil.copyfile(philont_fixtures / "v31.sqlite", db)
    db.chmod(0o600)
    migrate.upgrade(db, backup=False)
    _single_file(db)
    return db


@pytest.fixture
def unusable(
    request: pytest.FixtureRequest, upgraded: Path, philont_fixtures: Path, tmp_path: Path
) -> Path:
    from_upgraded, damage = DAMAGE[request.param]
    db = tmp_path / "memory.sqlite"
    shutil.copyfile(upgraded if from_upgraded else philont_fixtures / "v31.sqlite", db)
    db.chmod(0o600)
    damage(db)
    return db


@pytest.mark.parametrize("unusable", list(DAMAGE), indirect=True)
@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_every_command_explains_a_database_it_cannot_use(
    path: tuple[str, ...], unusable: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    kind = request.node.callspec.params["unusable"]
    shutil.rmtree(philont_settings.backup_dir_for(unusable), ignore_errors=True)
    before = _sha(unusable)
    args = _args(path, unusable, tmp_path / "elsewhere.jsonl")
    result = runner.invoke(app, args)
    shown = f"{args}: {result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        shown,
        result.exception,
    )
    assert "Traceback" not in result.output, shown
    if result.exit_code != 0:
        assert result.exit_code in (1, 2, 3, 4, 5), shown
        words = ("error", "usage", "broken")  # `stats` names each broken index
        assert any(w in result.output.lower() for w in words), shown
    elif kind != "damaged-page":  # a command that never reads the damaged table may work
        # what the file records, its size, a byte copy (which `restore` refuses)
        assert path in REPORTS and kind in NEWER, shown
    assert _sha(unusable) == before, shown


@pytest.mark.parametrize("unusable", ["truncated", "bad-header"], indirect=True)
def test_status_and_check_name_a_damaged_file(unusable: Path) -> None:
    with pytest.raises(DatabaseCorruptError, match="damaged"):
        migrate.status(unusable)
    with pytest.raises(DatabaseCorruptError, match="damaged"):
        migrate.check(unusable)


@pytest.mark.parametrize("unusable", NEWER, indirect=True)
def test_check_refuses_a_newer_database_instead_of_asking_for_an_upgrade(unusable: Path) -> None:
    with pytest.raises(UnknownSchemaVersionError):
        migrate.upgrade(unusable)
    with pytest.raises(UnknownSchemaVersionError):
        migrate.check(unusable)
    result = runner.invoke(app, ["db", "check", "--db", str(unusable)])
    assert result.exit_code == 1, result.output
    assert "unknown_schema_version" in result.output
    assert "upgrade head" not in result.output
