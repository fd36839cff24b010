"""Every message about a database names it by :func:`philont.db.engine.database_name` (the
file of an SQLite URL, a PostgreSQL URL without password or driver): a failed upgrade read
"upgrade of sqlite+pysqlite:////tmp/... failed", a schema not at head and ``stats`` on
PostgreSQL printed the driver URL, each from its own copy of the rule."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy.engine import URL, make_url

from philont import migrate
from philont.db.engine import create_engine, database_name
from philont.errors import MigrationError, PhilontError, SchemaOutOfDateError
from philont.store import Store, ensure_schema, ensure_schema_on
from tests.pg_support import _admin, in_schema, server_url


def assert_named(message: str, url: URL) -> None:
    assert database_name(url) in message, message
    assert "+pysqlite" not in message and "+psycopg" not in message, message
    if url.password:
        assert f":{url.password}@" not in message, message


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def empty(
    request: pytest.FixtureRequest, tmp_path: Path, worker_tag: str
) -> Iterator[Callable[[], URL]]:
    """Factory of URLs (with their driver named) of databases not yet upgraded."""
    made: list[str] = []

    def new() -> URL:
        if request.param == "sqlite":
            return make_url(f"sqlite+pysqlite:///{tmp_path / f'm{len(made)}.sqlite'}")
        name = f"named{len(made)}_{worker_tag}"
        made.append(name)
        _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE; CREATE SCHEMA "{name}"')
        return in_schema(server_url(), name)

    if request.param == "sqlite":
        made.append("sqlite")
    yield new
    for name in made[request.param == "sqlite" :]:
        _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _explode(revision: str) -> None:
    raise RuntimeError("injected failure")


def _failed_upgrade(url: URL) -> PhilontError:
    with pytest.raises(MigrationError) as err:
        migrate.upgrade(url, on_step=_explode)
    return err.value


def _failed_upgrade_on_connection(url: URL) -> PhilontError:
    engine = create_engine(url)
    try:
        with engine.connect() as conn, pytest.raises(MigrationError) as err:
            migrate.upgrade(conn, on_step=_explode)
        return err.value
    finally:
        engine.dispose()


def _not_at_head(url: URL) -> PhilontError:
    if url.get_backend_name() == "sqlite":  # a file of a host's, not yet upgraded
        with closing(sqlite3.connect(str(url.database))) as conn:
            conn.execute("CREATE TABLE host_table (x)")
    with pytest.raises(SchemaOutOfDateError) as err:
        migrate.check(url)
    return err.value


FAILURES = [_failed_upgrade, _failed_upgrade_on_connection, _not_at_head]


@pytest.mark.parametrize("fail", FAILURES, ids=lambda f: f.__name__)
def test_a_failure_names_the_database_as_database_name_does(
    empty: Callable[[], URL], fail: Callable[[URL], PhilontError]
) -> None:
    url = empty()
    assert_named(str(fail(url)), url)


@pytest.mark.parametrize("through_connection", [False, True])
def test_a_database_not_at_head_is_named_as_database_name_does(
    empty: Callable[[], URL],
    copy_fixture: Callable[[str], Path],
    monkeypatch: pytest.MonkeyPatch,
    through_connection: bool,
) -> None:
    """The fallback after ``migrate.check`` (which names the command to run) found nothing."""
    url = empty()
    if url.get_backend_name() == "sqlite":  # an old file (an empty one is not a database)
        url = url.set(database=str(copy_fixture("v2")))
    monkeypatch.setattr(migrate, "check", lambda target: None)
    with pytest.raises(SchemaOutOfDateError) as err:
        if through_connection:
            engine = create_engine(url)
            try:
                with engine.connect() as conn:
                    ensure_schema_on(conn, upgrade=False)
            finally:
                engine.dispose()
        else:
            ensure_schema(url, upgrade=False)
    assert_named(str(err.value), url)


@pytest.mark.postgres
def test_stats_on_postgresql_names_the_database_as_database_name_does(
    pg_agent: Callable[[], URL],
) -> None:
    from typer.testing import CliRunner

    from philont.cli import app

    url = pg_agent()
    with Store.open(url) as store, store.begin() as mem:  # writing makes the agent
        mem.facts.store("user", "city", "Lyon")
    assert url.password and "+psycopg" in url.drivername
    result = CliRunner().invoke(app, ["stats", "--db", url.render_as_string(hide_password=False)])
    assert result.exit_code == 0, result.output
    assert_named(result.output.replace("\n", ""), url)
