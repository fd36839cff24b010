"""What a caller is told of a statement the database refused names the kind of refusal and the
schema's names (a constraint, a table, a column), never the database's message: SQLAlchemy's
holds the statement's bound parameters, PostgreSQL's DETAIL the refused row ("Failing row
contains (...)", "Key (name)=(...) already exists"), its "invalid input syntax" the value.
Each kind of refusal on both backends, through the driver and through SQLAlchemy; and a failed
upgrade (its message carried the database's whole text)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError

from philont import migrate
from philont.db.engine import create_engine
from philont.db.retry import NOT_SHOWN, database_reason, refusal
from philont.errors import MigrationError
from tests.pg_support import _admin, in_schema, server_url

SECRET = "my-secret-pin-4711"

_TABLES = [
    "CREATE TABLE parent (id INTEGER PRIMARY KEY)",
    "CREATE TABLE child (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
    " word TEXT CONSTRAINT short_word CHECK (length(word) < 5),"
    " parent_id INTEGER REFERENCES parent (id), small SMALLINT, n INTEGER, note TEXT)",
]

# each: the statement (its one parameter is SECRET) and the words its refusal is named by
KINDS = {
    "unique": ("INSERT INTO child (id, name) VALUES (2, :v)", ["unique", "name"]),
    "not_null": ("INSERT INTO child (id, name, note) VALUES (3, NULL, :v)", ["not null", "name"]),
    "check": ("INSERT INTO child (id, name, word) VALUES (4, 'b', :v)", ["check", "short_word"]),
    "foreign_key": (
        "INSERT INTO child (id, name, note, parent_id) VALUES (5, 'e', :v, 77)",
        ["foreign key"],
    ),
}
PG_ONLY = {  # SQLite stores any value in any column
    "out_of_range": (
        "INSERT INTO child (id, name, note, small) VALUES (6, 'f', :v, 99999)",
        ["NumericValueOutOfRange", "22003"],
    ),
    "not_a_number": (
        "INSERT INTO child (id, name, n) VALUES (7, 'c', CAST(:v AS INTEGER))",
        ["InvalidTextRepresentation", "22P02"],
    ),
}


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def scratch(
    request: pytest.FixtureRequest, tmp_path: Path, worker_tag: str
) -> Iterator[Connection]:
    """A connection to a database holding ``child`` (one row, named SECRET) and ``parent``."""
    if request.param == "sqlite":
        url: URL = make_url(f"sqlite+pysqlite:///{tmp_path / 'scratch.sqlite'}")
    else:
        schema = f"refusals_{worker_tag}"
        _admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; CREATE SCHEMA "{schema}"')
        request.addfinalizer(lambda: _admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        url = in_schema(server_url(), schema)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            if request.param == "sqlite":
                conn.exec_driver_sql("PRAGMA foreign_keys = ON")
            for ddl in _TABLES:
                conn.exec_driver_sql(ddl)
            conn.execute(text("INSERT INTO child (id, name) VALUES (1, :v)"), {"v": SECRET})
            conn.commit()
            yield conn
    finally:
        engine.dispose()


def _refused(conn: Connection, sql: str) -> DBAPIError:
    with pytest.raises(DBAPIError) as caught:
        conn.execute(text(sql), {"v": SECRET})
    conn.rollback()
    return caught.value


@pytest.mark.parametrize("kind", [*KINDS, *PG_ONLY])
def test_a_refusal_is_named_by_its_kind_never_by_the_refused_values(
    scratch: Connection, kind: str
) -> None:
    postgres = scratch.dialect.name == "postgresql"
    if kind in PG_ONLY and not postgres:
        pytest.skip("SQLite stores any value in any column")
    sql, words = {**KINDS, **PG_ONLY}[kind]
    exc = _refused(scratch, sql)
    assert SECRET in str(exc)  # what was shown: the statement's parameters

    for seen in (exc, exc.orig):  # through SQLAlchemy (an upgrade) and the driver (an import)
        said = refusal(seen)
        assert said is not None, seen
        assert SECRET not in said, said
        for word in words:
            assert word in said, (word, said)

    reason = database_reason(exc)
    assert reason is not None and SECRET not in reason, reason
    assert reason == f"{type(exc).__name__} ({said}; {NOT_SHOWN})", reason


def test_what_is_no_refusal_is_not_named_as_one() -> None:
    assert refusal(ValueError(SECRET)) is None
    assert database_reason(ValueError(SECRET)) is None
    with closing(sqlite3.connect(":memory:")) as conn, pytest.raises(sqlite3.Error) as caught:
        conn.execute("SELECT * FROM no_such_table WHERE x = ?", (SECRET,))
    assert refusal(caught.value) is None


# --- a failed upgrade ------------------------------------------------------------------------


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def fresh(request: pytest.FixtureRequest, tmp_path: Path, worker_tag: str) -> Iterator[URL]:
    """The URL of a database not yet upgraded."""
    if request.param == "sqlite":
        yield make_url(f"sqlite+pysqlite:///{tmp_path / 'fresh.sqlite'}")
        return
    schema = f"fresh_{worker_tag}"
    _admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; CREATE SCHEMA "{schema}"')
    yield in_schema(server_url(), schema)
    _admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_a_failed_upgrade_names_the_database_error_by_kind_never_by_its_values(
    fresh: URL,
) -> None:
    """A step of the upgrade (a host's revision copying rows, here the progress callback) runs
    a statement the database refuses: the error says so by kind; the statement's values, which
    SQLAlchemy's message holds, are in the log only."""
    engine = create_engine(fresh)
    try:
        with engine.connect() as conn:

            def step(revision: str) -> None:
                conn.execute(text("INSERT INTO no_such_table VALUES (:v)"), {"v": SECRET})

            with pytest.raises(MigrationError) as caught:
                migrate.upgrade(conn, on_step=step)
    finally:
        engine.dispose()
    said = f"{caught.value} {caught.value.details}"
    assert SECRET not in said, said
    assert "failed (" in said and NOT_SHOWN in said, said
    assert SECRET in str(caught.value.__cause__)  # kept as the cause, for the log
