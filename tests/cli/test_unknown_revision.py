"""A database at a revision this release does not ship (a later release's, or any other text
in our version table), on both backends: `db current` reports what the database records and
says the revision is not one this release ships, never a schema version it cannot know (on
PostgreSQL the schema version is the layout's, known only from a revision we ship: 'v999' and
'zzz' sort after 'v035' as text, and were reported as schema version 31); `db check` and
`stats` refuse it as the upgrade does (`unknown_schema_version`, exit 1; `stats` counted an
SQLite file's rows with this release's table names and judged its FTS indexes, but refused
the same database on PostgreSQL), and nothing is written."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL
from typer.testing import CliRunner

from philont import migrate, settings
from philont.cli import app
from philont.db.engine import create_engine
from tests.pg_support import _admin, in_schema, server_url

runner = CliRunner()

# a later release's revision, ones past any we ship, text that is no revision of ours at all
UNKNOWN = ["v999", "v041", "v1000", "zzz", "v036x", "V999", "w001", " v040", ""]


@pytest.fixture(scope="module")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("unknown") / "memory.sqlite"
    migrate.upgrade(path, backup=False)
    return path


@pytest.fixture(scope="module")
def pg_schema(worker_tag: str) -> Iterator[URL]:
    name = f"unknown_rev_{worker_tag}"
    _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE; CREATE SCHEMA "{name}"')
    url = in_schema(server_url(), name)
    migrate.upgrade(url)
    yield url
    _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _on_sqlite(template: Path, tmp_path: Path) -> Callable[[str], tuple[str, Callable[[], str]]]:
    def at(revision: str) -> tuple[str, Callable[[], str]]:
        path = tmp_path / "memory.sqlite"
        shutil.copyfile(template, path)
        path.chmod(0o600)
        with closing(sqlite3.connect(path)) as conn, conn:
            conn.execute(f"UPDATE {settings.VERSION_TABLE} SET version_num = ?", (revision,))
        return str(path), lambda: hashlib.sha256(path.read_bytes()).hexdigest()

    return at


def _on_pg(url: URL) -> Callable[[str], tuple[str, Callable[[], str]]]:
    def at(revision: str) -> tuple[str, Callable[[], str]]:
        engine = create_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(
                    text(f"UPDATE {settings.VERSION_TABLE} SET version_num = :r"), {"r": revision}
                )
        finally:
            engine.dispose()

        def state() -> str:
            engine = create_engine(url)
            try:
                with engine.connect() as conn:
                    version = conn.execute(
                        text(f"SELECT version_num FROM {settings.VERSION_TABLE}")
                    ).scalar_one()
                    agents = conn.execute(text("SELECT count(*) FROM philont_agents")).scalar()
            finally:
                engine.dispose()
            return repr((version, agents))

        return url.render_as_string(hide_password=False), state

    return at


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def at_revision(
    request: pytest.FixtureRequest,
    sqlite_template: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Callable[[str], tuple[str, Callable[[], str]]]:
    monkeypatch.setenv(settings.AGENT_ENV, "someone")
    if request.param == "sqlite":
        return _on_sqlite(sqlite_template, tmp_path)
    return _on_pg(request.getfixturevalue("pg_schema"))


@pytest.mark.parametrize("revision", UNKNOWN, ids=repr)
def test_a_revision_we_do_not_ship_is_said_so_and_refused_alike(
    revision: str, at_revision: Callable[[str], tuple[str, Callable[[], str]]]
) -> None:
    db, state = at_revision(revision)
    before = state()

    current = runner.invoke(app, ["db", "current", "--db", db, "--json"])
    assert current.exit_code == 0, current.output
    data = json.loads(current.stdout)
    assert (data["revision"], data["at_head"], data["shipped"]) == (revision, False, False)
    # what the database records: SQLite's memory_meta says 31; PostgreSQL records no version
    # beside the revision, and one we do not ship tells none
    assert data["schema_version"] == ("31" if db.endswith(".sqlite") else None), data

    said = runner.invoke(app, ["db", "current", "--db", db])
    assert said.exit_code == 0, said.output
    assert "not one this release ships" in said.stdout, said.stdout
    assert db.endswith(".sqlite") or "schema_version (unknown)" in said.stdout, said.stdout

    for command in (["db", "check"], ["stats"], ["stats", "--json"]):
        result = runner.invoke(app, [*command, "--db", db])
        assert result.exit_code == 1, (command, result.output)
        assert "error (unknown_schema_version)" in result.output, (command, result.output)
    assert state() == before


@pytest.mark.parametrize("revision", ["v036", "v039", "v040"])
def test_a_revision_we_ship_is_reported_as_ours(
    revision: str, at_revision: Callable[[str], tuple[str, Callable[[], str]]]
) -> None:
    db, _state = at_revision(revision)
    current = runner.invoke(app, ["db", "current", "--db", db, "--json"])
    assert current.exit_code == 0, current.output
    data = json.loads(current.stdout)
    assert (data["revision"], data["schema_version"], data["shipped"]) == (revision, "31", True)
