"""Adopting real Philont databases: every row survives, FTS stays consistent, failures roll back."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from philont import migrate, settings
from philont.errors import (
    DatabasePathError,
    DatabaseReadOnlyError,
    MigrationError,
    NotADatabaseError,
    UnknownSchemaVersionError,
    UnrecognizedSchemaError,
)
from tests.migrations.helpers import (
    FTS_TABLES,
    connect_ro,
    fts_integrity,
    logical_dump,
    manifest,
    row_counts,
    table_digest,
)

POPULATED = ("v2", "v27", "v31", "empty-v31")
# Rows the upgrade itself adds (documented bootstrap rows), per fixture.
BOOTSTRAP_ADDED = {
    "v2": {"memory_raw_sessions": ("global",), "memory_pursuits": ("default",)},
}
SKIPPED_ROW_TABLES = {"sqlite_sequence", "memory_meta"}  # sequence churn; version rewritten

CopyFixture = Callable[[str], Path]


def _key(table: str, row: dict[str, Any]) -> tuple[str, Any]:
    if "id" in row:
        return "id", row["id"]
    raise AssertionError(f"manifest row of {table} without id: {row}")


@pytest.mark.parametrize("name", POPULATED)
def test_a_real_philont_database_is_adopted_and_reaches_head(
    name: str, copy_fixture: CopyFixture
) -> None:
    db = copy_fixture(name)
    report = migrate.upgrade(db)
    st = migrate.status(db)
    assert st.at_head and st.schema_version == "31"
    expected_stamp = {"v2": "v002", "v27": "v027"}.get(name, "v031")
    assert report.stamped == report.adopted == expected_stamp


@pytest.mark.parametrize("name", POPULATED)
def test_every_manifest_row_survives_the_upgrade_with_the_same_values(
    name: str, copy_fixture: CopyFixture, philont_fixtures: Path
) -> None:
    db = copy_fixture(name)
    migrate.upgrade(db)
    rows = manifest(philont_fixtures, name)["rows"]
    with closing(connect_ro(db)) as conn:
        conn.row_factory = sqlite3.Row
        checked = 0
        for table, entries in rows.items():
            if table in SKIPPED_ROW_TABLES:
                continue
            for entry in entries:
                col, ident = _key(table, entry)
                found = conn.execute(f"SELECT * FROM {table} WHERE {col} = ?", (ident,)).fetchone()
                assert found is not None, f"{table} row {ident} lost"
                for key, value in entry.items():
                    if key.startswith("_"):
                        continue
                    if key.endswith("_sha256"):
                        column = key.removesuffix("_sha256")
                        if name == "v2":
                            continue
                        stored = found[column]
                        digest = (
                            None
                            if stored is None
                            else hashlib.sha256(stored.encode("utf-8")).hexdigest()
                        )
                        # the root pursuit was written by the original; adoption keeps it
                        assert digest == value, f"{table}.{column} changed"
                        continue
                    assert found[key] == value, f"{table}.{key} of {ident} changed"
                checked += 1
    assert checked > 0


@pytest.mark.parametrize("name", POPULATED)
def test_table_digests_and_row_counts_are_unchanged_by_the_upgrade(
    name: str, copy_fixture: CopyFixture, philont_fixtures: Path
) -> None:
    db = copy_fixture(name)
    migrate.upgrade(db)
    m = manifest(philont_fixtures, name)
    added = BOOTSTRAP_ADDED.get(name, {})
    with closing(connect_ro(db)) as conn:
        for table, spec in m["table_digests"]["tables"].items():
            digest = table_digest(conn, table, spec["columns"], added.get(table, ()))
            assert digest == spec["sha256"], table
        counts = row_counts(conn)
    for table, before in m["row_counts"].items():
        if table == "sqlite_sequence":
            continue
        assert counts[table] == before + len(added.get(table, ())), table


@pytest.mark.parametrize("name", POPULATED)
def test_integrity_and_fts_checks_pass_after_the_upgrade(
    name: str, copy_fixture: CopyFixture
) -> None:
    db = copy_fixture(name)
    migrate.upgrade(db)
    with closing(sqlite3.connect(str(db))) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
        for table in FTS_TABLES:
            fts_integrity(conn, table)


def test_the_bulk_index_build_leaves_no_setting_behind(copy_fixture: CopyFixture) -> None:
    # v006 and v033 fill their FTS5 tables with a large pending-terms buffer (hashsize), a
    # setting FTS5 stores in the table: the upgraded tables must hold the configuration of a
    # freshly created one, so the original program sees the index it would have built.
    db = copy_fixture("v2")
    migrate.upgrade(db)
    with closing(connect_ro(db)) as conn:
        for table in ("memory_raw_messages_fts", "philont_raw_messages_words_fts"):
            config = conn.execute(f"SELECT k, v FROM {table}_config ORDER BY k").fetchall()
            assert config == [("version", 4)], (table, config)


@pytest.mark.parametrize("name", ["v2", "v27", "v31"])
def test_fts_match_finds_the_seeded_messages_after_the_upgrade(
    name: str, copy_fixture: CopyFixture
) -> None:
    db = copy_fixture(name)
    migrate.upgrade(db)
    with closing(connect_ro(db)) as conn:
        probes = conn.execute(
            "SELECT id, content FROM memory_raw_messages ORDER BY id LIMIT 5"
        ).fetchall()
        assert probes
        for msg_id, content in probes:
            word = max(content.split(), key=len).strip(".,!?\"'()")
            hits = {
                r[0]
                for r in conn.execute(
                    "SELECT rowid FROM memory_raw_messages_fts WHERE memory_raw_messages_fts "
                    "MATCH ?",
                    ('"' + word.replace('"', '""') + '"',),
                )
            }
            assert msg_id in hits, (word, msg_id)
        notes = conn.execute("SELECT count(*) FROM memory_notes_fts_docsize").fetchone()[0]
        assert notes == conn.execute("SELECT count(*) FROM memory_notes").fetchone()[0]


def test_the_v2_upgrade_fills_in_what_the_original_fills_in(copy_fixture: CopyFixture) -> None:
    db = copy_fixture("v2")
    migrate.upgrade(db)
    with closing(connect_ro(db)) as conn:
        assert {r[0] for r in conn.execute("SELECT DISTINCT fact_kind FROM memory_facts")} == {
            "state"
        }
        skills = conn.execute(
            "SELECT maturity, kind, success_count, last_success_at IS last_used_at "
            "FROM memory_skills"
        ).fetchall()
        assert skills and all(s == ("stable", "positive", 0, 1) for s in skills)
        roots = {
            r[0]
            for t in ("memory_facts", "memory_notes", "memory_skills")
            for r in conn.execute(f"SELECT DISTINCT root_pursuit_id FROM {t}")
        }
        assert roots == {"default"}
        assert conn.execute(
            "SELECT count(*) FROM memory_raw_sessions WHERE id = 'global'"
        ).fetchone() == (1,)


def test_a_second_upgrade_changes_nothing(copy_fixture: CopyFixture) -> None:
    db = copy_fixture("v27")
    migrate.upgrade(db)
    before = logical_dump(db)
    backups = sorted(settings.backup_dir_for(db).glob("*.sqlite"))
    report = migrate.upgrade(db)
    assert report.applied == [] and report.backup is None and report.bootstrap_rows == []
    assert logical_dump(db) == before
    assert sorted(settings.backup_dir_for(db).glob("*.sqlite")) == backups


def test_a_backup_is_taken_before_a_non_empty_database_is_touched(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v2")
    original = logical_dump(db)
    report = migrate.upgrade(db)
    assert report.backup is not None and report.backup.parent == db.parent / "backups"
    assert report.backup.stat().st_mode & 0o777 == 0o600
    assert logical_dump(report.backup) == original


def test_a_failure_mid_chain_leaves_the_database_exactly_as_it_was(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v2")
    before = logical_dump(db)

    def explode(revision: str) -> None:
        if revision == "v015":
            raise RuntimeError("injected failure")

    with pytest.raises(MigrationError, match="injected failure"):
        migrate.upgrade(db, on_step=explode)
    assert logical_dump(db) == before
    # and a clean retry still works
    assert migrate.upgrade(db).stamped == "v002"


def test_a_failure_while_building_a_new_database_leaves_it_empty(tmp_path: Path) -> None:
    db = tmp_path / "new" / "memory.sqlite"

    def explode(revision: str) -> None:
        if revision == "v030":
            raise RuntimeError("boom")

    with pytest.raises(MigrationError):
        migrate.upgrade(db, on_step=explode)
    with closing(connect_ro(db)) as conn:
        assert conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)


@pytest.mark.parametrize("raw", ["32", "999", "abc", "-1", "2.5", "", " "])
def test_an_unknown_schema_version_is_refused_before_anything_is_written(
    raw: str, copy_fixture: CopyFixture
) -> None:
    db = copy_fixture("v27")
    with closing(sqlite3.connect(str(db))) as conn:
        conn.execute("UPDATE memory_meta SET value = ? WHERE key = 'schema_version'", (raw,))
        conn.commit()
    before = db.read_bytes()
    with pytest.raises(UnknownSchemaVersionError) as err:
        migrate.upgrade(db)
    assert repr(raw) in str(err.value)
    assert db.read_bytes() == before
    assert not (db.parent / "backups").exists() or not any((db.parent / "backups").iterdir())


def test_a_file_that_is_not_a_database_is_refused_unchanged(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    db.write_text("this is a text file, not SQLite\n")
    before = db.read_bytes()
    with pytest.raises(NotADatabaseError):
        migrate.upgrade(db)
    assert db.read_bytes() == before


def test_a_read_only_file_is_refused_unchanged(copy_fixture: CopyFixture) -> None:
    db = copy_fixture("v2")
    db.chmod(0o444)
    before = db.read_bytes()
    with pytest.raises(DatabaseReadOnlyError):
        migrate.upgrade(db)
    assert db.read_bytes() == before


def test_a_directory_path_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DatabasePathError, match="directory"):
        migrate.upgrade(tmp_path)


def test_memory_tables_without_version_are_adopted_as_v2_only_with_the_v2_shape(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v2")
    with closing(sqlite3.connect(str(db))) as conn:
        conn.execute("DROP TABLE memory_meta")
        conn.commit()
    assert migrate.upgrade(db).stamped == "v002"

    odd = copy_fixture("v27")
    with closing(sqlite3.connect(str(odd))) as conn:
        conn.execute("DROP TABLE memory_meta")
        conn.commit()
    before = odd.read_bytes()
    with pytest.raises(UnrecognizedSchemaError, match="version-2 shape"):
        migrate.upgrade(odd)
    assert odd.read_bytes() == before


def test_another_applications_tables_are_left_untouched(tmp_path: Path) -> None:
    db = tmp_path / "shared.sqlite"
    with closing(sqlite3.connect(str(db))) as conn:
        conn.execute("CREATE TABLE app_users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO app_users (name) VALUES ('ada')")
        conn.execute("CREATE TABLE alembic_version (version_num TEXT)")
        conn.execute("INSERT INTO alembic_version VALUES ('host123')")
        conn.commit()
    report = migrate.upgrade(db)
    assert report.stamped is None and report.adopted is None and report.applied[0] == "v001"
    with closing(connect_ro(db)) as conn:
        assert conn.execute("SELECT name FROM app_users").fetchall() == [("ada",)]
        assert conn.execute("SELECT version_num FROM alembic_version").fetchall() == [("host123",)]
        assert conn.execute(
            "SELECT value FROM memory_meta WHERE key = 'schema_version'"
        ).fetchone() == ("31",)


def test_alembic_upgrade_head_from_a_checkout_adopts_a_philont_database(
    copy_fixture: CopyFixture,
) -> None:
    db = copy_fixture("v27")
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url={db}", "upgrade", "head"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    st = migrate.status(db)
    assert st.at_head and st.schema_version == "31"
    assert any((db.parent / "backups").glob("v27-*.sqlite"))


def test_check_names_the_command_that_fixes_an_old_database(copy_fixture: CopyFixture) -> None:
    from philont.errors import SchemaOutOfDateError

    db = copy_fixture("v27")
    with pytest.raises(SchemaOutOfDateError, match="upgrade head"):
        migrate.check(db)
