"""A revision that changes nothing on a backend does not make that backend's databases out of
date: a SQLite file made before PostgreSQL-only revisions (v038, v039) has the head's schema
and is read as it is (read-only, by the CLI, with ``upgrade=False``); it was refused with
``schema_out_of_date`` and had to be upgraded (written) to be read.

Since v040 (SQLite only) a SQLite file at v037 to v039 is out of date and a PostgreSQL database
at v039 is at head; the tests of a SQLite file below PostgreSQL-only revisions read v040 as
one (``v040_changes_postgresql_only``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont import Store, migrate
from philont.cli import app
from philont.errors import SchemaOutOfDateError
from philont.migrate.scripts import BACKENDS, heads_for, script_directory
from philont.testing.schema import normalized_schema
from tests.migrations.test_revision_shapes import VERSION_TABLE, upgrade


def revision_of(path: Path) -> str:
    with closing(sqlite3.connect(path)) as conn:
        row = conn.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchone()
    return str(row[0])


@pytest.fixture(scope="module")
def at_head(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("head") / "head.sqlite"
    upgrade(path, "head")
    return path


def test_every_revision_names_only_known_backends() -> None:
    for script in script_directory().walk_revisions():
        named = getattr(script.module, "backends", BACKENDS)
        assert named and set(named) <= set(BACKENDS), script.revision


def test_the_head_revisions_of_each_backend_now() -> None:
    # v038 and v039 change PostgreSQL only, v040 SQLite only
    assert migrate.head_revision() == "v040"
    assert heads_for("sqlite") == {"v040"}
    assert heads_for("postgresql") == {"v039", "v040"}


@pytest.fixture
def v040_changes_postgresql_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[frozenset[str]]:
    """The revisions SQLite counts as head from were v040 a PostgreSQL-only revision (as v038
    and v039 are): what a SQLite file below PostgreSQL-only revisions is read as."""
    module = script_directory().get_revision("v040").module
    monkeypatch.setattr(module, "backends", ("postgresql",))
    heads_for.cache_clear()
    heads = heads_for("sqlite")
    assert heads == {"v037", "v038", "v039", "v040"}
    yield heads
    monkeypatch.undo()
    heads_for.cache_clear()


@pytest.mark.parametrize("revision", sorted(heads_for("sqlite")))
def test_a_revision_that_counts_as_head_on_sqlite_has_the_heads_schema(
    revision: str, at_head: Path, tmp_path: Path
) -> None:
    """The marks are true: a file upgraded only to that revision has every table, index,
    trigger and FTS table of one upgraded to head."""
    path = tmp_path / "older.sqlite"
    upgrade(path, revision)
    assert revision_of(path) == revision
    ignore = {VERSION_TABLE}
    assert normalized_schema(path, ignore_tables=ignore) == normalized_schema(
        at_head, ignore_tables=ignore
    )


@pytest.mark.parametrize("revision", ["v037", "v038", "v039"])
@pytest.mark.usefixtures("v040_changes_postgresql_only")
def test_a_file_below_only_postgresql_revisions_is_read_as_it_is(
    revision: str, tmp_path: Path
) -> None:
    path = tmp_path / "older.sqlite"
    upgrade(path, revision)
    with Store.open(path) as store, store.begin() as mem:  # stays at its revision: nothing to do
        mem.facts.store("user", "city", "Berlin")
    before = path.read_bytes()
    path.chmod(0o444)

    assert migrate.check(path).at_head
    with Store.open(path, read_only=True) as store, store.begin() as mem:
        got = mem.facts.get("user", "city", include_expired=True)
        assert got is not None and got.value == "Berlin"
    result = CliRunner().invoke(app, ["facts", "list", "user", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert "Berlin" in result.output
    assert path.read_bytes() == before and revision_of(path) == revision

    path.chmod(0o644)
    report = migrate.upgrade(path)  # an upgrade still records the head
    assert revision_of(path) == migrate.head_revision() == report.to_revision


def test_a_file_below_a_revision_that_changes_sqlite_is_still_out_of_date(
    tmp_path: Path,
) -> None:
    lowest = min(heads_for("sqlite"))
    below = script_directory().get_revision(lowest).down_revision
    assert isinstance(below, str)
    path = tmp_path / "old.sqlite"
    upgrade(path, below)

    with pytest.raises(SchemaOutOfDateError):
        migrate.check(path)
    with pytest.raises(SchemaOutOfDateError):
        Store.open(path, read_only=True)
    assert revision_of(path) == below  # the refusals wrote nothing


def test_restoring_a_backup_below_only_postgresql_revisions_asks_for_no_upgrade(
    tmp_path: Path, v040_changes_postgresql_only: frozenset[str]
) -> None:
    older = max(v040_changes_postgresql_only - {migrate.head_revision()})
    backup = tmp_path / "backup.sqlite"
    upgrade(backup, older)
    db = tmp_path / "live.sqlite"
    migrate.upgrade(db)

    result = CliRunner().invoke(app, ["restore", str(backup), "--db", str(db), "--json"])

    assert result.exit_code == 0, result.output
    assert '"at_head": true' in result.output
    plain = CliRunner().invoke(app, ["restore", str(backup), "--db", str(db)])
    assert plain.exit_code == 0 and "philont db upgrade" not in plain.output, plain.output
