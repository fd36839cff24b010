"""Revisions v001..v031 reproduce Philont's schema versions 1..31, checked on real databases."""

from __future__ import annotations

import ast
import os
import re
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory

from philont import charter
from philont.migrate import alembic_config, script_location
from philont.testing.schema import normalized_schema, schema_diff

PHILONT_REVISIONS = [f"v{n:03d}" for n in range(1, 32)]
VERSION_TABLE = "philont_alembic_version"
VERSIONS_DIR = script_location() / "versions"


def fixtures_dir() -> Path:
    """The real Philont databases: ``$PHILONT_FIXTURES`` or ``<repo>/../shared/fixtures/philont``.

    Missing fixtures skip the test, unless ``PHILONT_REQUIRE_FIXTURES=1`` (CI) makes it fail.
    """
    env = os.environ.get("PHILONT_FIXTURES", "").strip()
    path = (
        Path(env)
        if env
        else Path(__file__).resolve().parents[2].parent / "shared" / "fixtures" / "philont"
    )
    if not path.is_dir():
        reason = f"Philont fixtures not found at {path} (set PHILONT_FIXTURES)"
        if os.environ.get("PHILONT_REQUIRE_FIXTURES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def fixture(name: str) -> Path:
    path = fixtures_dir() / name
    if not path.is_file():
        reason = f"Philont fixture {path} is missing"
        if os.environ.get("PHILONT_REQUIRE_FIXTURES") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    return path


def upgrade(db_path: Path, revision: str) -> None:
    """``alembic upgrade <revision>`` on ``db_path`` through the command API.

    Local workaround: ``philont.migrate.run_env`` only treats a run as an upgrade when it comes
    from the CLI or from ``philont.migrate.upgrade`` (it looks at ``config.cmd_opts``), so a
    ``command.upgrade`` call on a file that does not exist yet is refused with "no such file".
    Creating the empty file first sidesteps that.
    """
    db_path.touch(exist_ok=True)
    command.upgrade(alembic_config(db_path), revision)


def schema_of_upgraded(db_path: Path) -> dict[str, object]:
    return normalized_schema(db_path, ignore_tables={VERSION_TABLE})


def read_schema_version(db_path: Path) -> str | None:
    with closing(sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)) as conn:
        row = conn.execute("SELECT value FROM memory_meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else str(row[0])


def script_directory() -> tuple[Config, ScriptDirectory]:
    cfg = alembic_config(":memory:")
    return cfg, ScriptDirectory.from_config(cfg)


# --- the chain -------------------------------------------------------------------------------


def test_the_chain_runs_v001_to_v031_contiguously_with_a_single_head() -> None:
    _cfg, script = script_directory()
    assert len(script.get_heads()) == 1
    for number, rev_id in enumerate(PHILONT_REVISIONS, start=1):
        rev = script.get_revision(rev_id)
        assert rev is not None, f"{rev_id} is missing"
        expected_down = None if number == 1 else f"v{number - 1:03d}"
        assert rev.down_revision == expected_down, rev_id
        assert Path(rev.path).name.startswith(f"{rev_id}_"), rev.path


def test_each_philont_version_has_exactly_one_revision_file() -> None:
    files = sorted(p.name for p in VERSIONS_DIR.glob("v0[0-3][0-9]_*.py"))
    numbers = [int(name[1:4]) for name in files if int(name[1:4]) <= 31]
    assert numbers == list(range(1, 32))


def _imported_modules(source: str) -> set[str]:
    modules: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            modules.add(node.module)
            modules.update(f"{node.module}.{alias.name}" for alias in node.names)
    return modules


def test_no_revision_imports_philont_db() -> None:
    files = sorted(VERSIONS_DIR.glob("*.py"))
    assert files
    for path in files:
        source = path.read_text(encoding="utf-8")
        offenders = {
            m for m in _imported_modules(source) if m == "philont.db" or m.startswith("philont.db.")
        }
        assert not offenders, f"{path.name} imports {sorted(offenders)}"
        assert not re.search(r"^\s*(from|import)\s+philont\.db\b", source, flags=re.MULTILINE)
        assert "importlib" not in source, f"{path.name} imports dynamically"


def test_every_philont_revision_is_forward_only() -> None:
    _cfg, script = script_directory()
    for rev_id in PHILONT_REVISIONS:
        module = script.get_revision(rev_id).module
        with pytest.raises(NotImplementedError, match="forward-only"):
            module.downgrade()


# --- schema_version --------------------------------------------------------------------------


@pytest.mark.parametrize("revision", PHILONT_REVISIONS)
def test_upgrading_to_a_revision_records_its_philont_schema_version(
    tmp_path: Path, revision: str
) -> None:
    db = tmp_path / "memory.sqlite"
    upgrade(db, revision)
    assert read_schema_version(db) == str(int(revision[1:]))


# --- shapes against the real databases -------------------------------------------------------


@pytest.mark.parametrize(
    ("revision", "fixture_name"),
    [
        ("v002", "v2.sqlite"),
        ("v027", "v27.sqlite"),
        ("v031", "empty-v31.sqlite"),
    ],
)
def test_a_fresh_upgrade_has_exactly_the_shape_of_the_real_philont_database(
    tmp_path: Path, revision: str, fixture_name: str
) -> None:
    reference = fixture(fixture_name)
    db = tmp_path / "memory.sqlite"
    upgrade(db, revision)
    assert schema_diff(schema_of_upgraded(db), normalized_schema(reference)) == []


def test_fts_objects_are_stored_with_philonts_exact_sql(tmp_path: Path) -> None:
    reference = fixture("empty-v31.sqlite")
    db = tmp_path / "memory.sqlite"
    upgrade(db, "v031")
    query = (
        "SELECT name, sql FROM sqlite_master"
        " WHERE type = 'trigger' OR sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name"
    )
    with (
        closing(sqlite3.connect(db)) as ours,
        closing(sqlite3.connect(f"file:{reference}?mode=ro", uri=True)) as theirs,
    ):
        assert ours.execute(query).fetchall() == theirs.execute(query).fetchall()


def test_the_revisions_hold_the_same_fts_sql_as_the_models() -> None:
    from philont.db import fts  # the test may import models; the revisions may not

    _cfg, script = script_directory()
    v003 = script.get_revision("v003").module
    v006 = script.get_revision("v006").module
    assert fts.NOTES_FTS.create == v003.NOTES_FTS_CREATE
    assert fts.NOTES_FTS.triggers == v003.NOTES_FTS_TRIGGERS
    assert fts.SKILLS_FTS.create == v003.SKILLS_FTS_CREATE
    assert fts.SKILLS_FTS.triggers == v003.SKILLS_FTS_TRIGGERS
    assert fts.RAW_MESSAGES_FTS.create == v006.RAW_MESSAGES_FTS_CREATE
    assert fts.RAW_MESSAGES_FTS.triggers == v006.RAW_MESSAGES_FTS_TRIGGERS


# --- bootstrap rows and data steps -----------------------------------------------------------


def test_a_fresh_database_gets_the_charter_root_and_the_global_session(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    upgrade(db, "v031")
    with closing(sqlite3.connect(db)) as conn:
        conn.row_factory = sqlite3.Row
        roots = conn.execute(
            "SELECT * FROM memory_pursuits WHERE parent_pursuit_id IS NULL"
        ).fetchall()
        sessions = conn.execute("SELECT id, ended_at FROM memory_raw_sessions").fetchall()
    assert len(roots) == 1
    root = roots[0]
    assert (root["id"], root["root_pursuit_id"]) == (charter.ROOT_PURSUIT_ID,) * 2
    assert (root["title"], root["intent"]) == (charter.ROOT_TITLE, charter.ROOT_INTENT)
    assert root["constitution_values"] == charter.ROOT_CHARTER_VALUES
    assert root["constitution_red_lines"] == charter.ROOT_CHARTER_RED_LINES
    assert (root["status"], root["is_evergreen"], root["stake"], root["origin"]) == (
        "active",
        1,
        "medium",
        "system",
    )
    assert root["constitution_drive_bounds"] is None
    assert root["constitution_governance"] is None
    assert root["created_at"] == root["updated_at"] == root["last_touched_ts"]
    assert (root["stake_weight"], root["is_active_research"], root["research_iterations"]) == (
        5,
        0,
        0,
    )
    assert [tuple(s) for s in sessions] == [("global", None)]


def _adopt(tmp_path: Path, fixture_name: str, stamp: str) -> Path:
    db = tmp_path / "memory.sqlite"
    shutil.copyfile(fixture(fixture_name), db)  # copyfile: the copy is writable
    cfg = alembic_config(db)
    command.stamp(cfg, stamp)
    command.upgrade(cfg, "v031")
    return db


@pytest.mark.parametrize(
    ("fixture_name", "stamp", "reference_name"),
    [
        ("v2.sqlite", "v002", "v2-upgraded-by-v31.sqlite"),
        ("v27.sqlite", "v027", "v27-upgraded-by-v31.sqlite"),
    ],
)
def test_a_real_database_stamped_at_its_version_upgrades_to_what_philont_made_of_it(
    tmp_path: Path, fixture_name: str, stamp: str, reference_name: str
) -> None:
    reference = fixture(reference_name)
    db = _adopt(tmp_path, fixture_name, stamp)
    assert schema_diff(schema_of_upgraded(db), normalized_schema(reference)) == []
    with closing(sqlite3.connect(db)) as conn:
        for table in ("memory_raw_messages_fts", "memory_notes_fts", "memory_skills_fts"):
            conn.execute(f"INSERT INTO {table}({table}, rank) VALUES('integrity-check', 1)")
    assert read_schema_version(db) == "31"


def test_upgrading_v2_fills_in_what_philonts_own_upgrade_filled_in(tmp_path: Path) -> None:
    reference = fixture("v2-upgraded-by-v31.sqlite")
    db = _adopt(tmp_path, "v2.sqlite", "v002")
    # Everything except the migration-time clock and the charter texts, which are ours.
    checks = {
        "memory_facts": "SELECT * FROM memory_facts ORDER BY id",
        "memory_notes": "SELECT * FROM memory_notes ORDER BY id",
        "memory_skills": (
            "SELECT id, name, use_count, last_used_at, success_count, failure_count, kind,"
            " source, root_pursuit_id, maturity, last_success_at, consecutive_failures,"
            " when_to_use FROM memory_skills ORDER BY id"
        ),
        "memory_actions": "SELECT * FROM memory_actions ORDER BY id",
        "memory_raw_messages": "SELECT * FROM memory_raw_messages ORDER BY id",
        "memory_raw_sessions": "SELECT id, ended_at FROM memory_raw_sessions ORDER BY id",
        "memory_pursuits": (
            "SELECT id, parent_pursuit_id, root_pursuit_id, title, status, is_evergreen, stake,"
            " origin, stake_weight, last_touched_ts = updated_at FROM memory_pursuits"
        ),
        "notes_fts": (
            "SELECT rowid FROM memory_notes_fts WHERE memory_notes_fts MATCH 'the' ORDER BY rowid"
        ),
    }
    with (
        closing(sqlite3.connect(db)) as ours,
        closing(sqlite3.connect(f"file:{reference}?mode=ro", uri=True)) as theirs,
    ):
        for name, sql in checks.items():
            # facts/notes/skills/actions columns may be in a different order: compare by name
            ours.row_factory = theirs.row_factory = sqlite3.Row
            mine = [dict(r) for r in ours.execute(sql)]
            expected = [dict(r) for r in theirs.execute(sql)]
            assert mine == expected, name
