"""Every database error that reaches a caller of the Python API is one of philont's
(:mod:`philont.errors`), never SQLAlchemy's or a driver's, and it names the failure by kind,
never by the database's text (which holds the refused row's values). Generated: each public
entry point (a host's unit of work, ``Store.run``, an import) meets each kind of error a host's
trigger can raise (PostgreSQL: a plain ``RAISE EXCEPTION``, SQLSTATE P0001, and the SQLSTATEs
of a check, a unique key, a bad value, a serialization failure and a lock timeout; SQLite:
``RAISE(ABORT)``, ``RAISE(FAIL)`` and ``RAISE(ROLLBACK)``). A PostgreSQL trigger's
``RAISE EXCEPTION`` reached ``transfer.import_``'s and a unit of work's caller as a raw
``sqlalchemy.exc.InternalError`` / ``psycopg.errors.RaiseException`` holding the row."""

from __future__ import annotations

import io
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont import Store, agents, transfer
from philont.errors import PhilontError, TransactionConflictError
from tests.pg_support import Layout, _admin

SECRET = "refused-secret-4711"

PG_KINDS = {
    "raise": "P0001",
    "check": "23514",
    "unique": "23505",
    "bad_value": "22P02",
    "serialization": "40001",
    "lock_timeout": "55P03",
}
SQLITE_KINDS = {"raise": "ABORT", "fail": "FAIL", "rollback": "ROLLBACK"}
CONFLICTS = {"serialization", "lock_timeout"}
CASES = [pytest.param("sqlite", kind, id=f"sqlite-{kind}") for kind in SQLITE_KINDS] + [
    pytest.param("postgres", kind, id=f"postgres-{kind}", marks=pytest.mark.postgres)
    for kind in PG_KINDS
]


def _refuse(target: Path | URL, kind: str, request: pytest.FixtureRequest) -> None:
    """A host's trigger on ``target`` refusing every note holding SECRET with ``kind`` (its
    message holding the note's text, on PostgreSQL)."""
    if isinstance(target, Path):
        with closing(sqlite3.connect(str(target))) as conn, conn:
            conn.execute(
                "CREATE TRIGGER host_raises BEFORE INSERT ON memory_notes"
                f" WHEN instr(NEW.content, '{SECRET}')"
                f" BEGIN SELECT RAISE({SQLITE_KINDS[kind]}, 'refused'); END"
            )
        return
    schema = request.getfixturevalue("pg_layout").schema
    _pg_trigger(schema, "INSERT", "memory_notes", "content", kind, request)


def _pg_trigger(
    schema: str,
    event: str,
    table: str,
    column: str,
    kind: str,
    request: pytest.FixtureRequest,
    *,
    sqlstate: str | None = None,
    secret: str = SECRET,
) -> None:
    """A host's trigger BEFORE ``event`` on ``schema``'s ``table`` raising ``kind`` (or
    ``sqlstate``) with the row's ``column`` in its message when that holds ``secret``;
    dropped after the test (the layout is this run's, shared by the tests that follow)."""
    function = f'"{schema}".host_raises'
    request.addfinalizer(lambda: _admin(f"DROP FUNCTION IF EXISTS {function}() CASCADE"))
    _admin(
        f"CREATE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
        f" IF strpos(NEW.{column}::text, '{secret}') > 0 THEN"
        f" RAISE EXCEPTION 'refused %', NEW.{column}"
        f" USING ERRCODE = '{sqlstate or PG_KINDS[kind]}';"
        f" END IF; RETURN NEW; END $$; CREATE TRIGGER host_raises BEFORE {event}"
        f' ON "{schema}".{table} FOR EACH ROW EXECUTE FUNCTION {function}()'
    )


def _in_a_unit(store: Store, fresh: Path | URL, exported: str) -> None:
    with store.begin() as mem:
        mem.notes.add(f"my pin: {SECRET}")


def _in_run(store: Store, fresh: Path | URL, exported: str) -> None:
    store.run(lambda mem: mem.notes.add(f"my pin: {SECRET}"), attempts=2)


def _in_an_import(store: Store, fresh: Path | URL, exported: str) -> None:
    if isinstance(fresh, Path):
        transfer.import_(fresh, io.StringIO(exported))
    else:
        transfer.import_(store.url, io.StringIO(exported), agent=store.agent)


ENTRY_POINTS: dict[str, Callable[[Store, Path | URL, str], None]] = {
    "unit": _in_a_unit,
    "run": _in_run,
    "import": _in_an_import,
}


@pytest.fixture
def exported(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """An export holding a note of SECRET (from another database of the same backend)."""
    postgres = backend == "postgres"
    source = request.getfixturevalue("pg_layout").url if postgres else tmp_path / "source.sqlite"
    agent = request.getfixturevalue("pg_layout").new_agent() if postgres else None
    with Store.open(source, agent=agent) as store, store.begin() as mem:
        mem.notes.add(f"my pin: {SECRET}")
    out = io.StringIO()
    transfer.export(source, out, agent=agent)
    return out.getvalue()


@pytest.fixture
def fresh_store(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[Store, Path | URL]]:
    """A Store on a new database (a new agent on PostgreSQL) holding nothing of SECRET."""
    if backend == "sqlite":
        path = tmp_path / "fresh.sqlite"
        with Store.open(path) as store:
            yield store, path
        return
    layout = request.getfixturevalue("pg_layout")
    with Store.open(layout.url, agent=layout.new_agent()) as store:
        yield store, layout.url


@pytest.mark.parametrize("entry", list(ENTRY_POINTS))
@pytest.mark.parametrize(("backend", "kind"), CASES)
def test_a_database_error_reaches_the_caller_typed_and_without_the_row(
    entry: str,
    kind: str,
    exported: str,
    fresh_store: tuple[Store, Path | URL],
    request: pytest.FixtureRequest,
) -> None:
    store, fresh = fresh_store
    _refuse(fresh, kind, request)
    with pytest.raises(Exception) as caught:  # any error: its type is the test
        ENTRY_POINTS[entry](store, fresh, exported)
    error = caught.value
    assert isinstance(error, PhilontError), repr(error)
    said = f"{error} {error.details}"
    assert SECRET not in said, said
    if kind in CONFLICTS:
        assert isinstance(error, TransactionConflictError), repr(error)
    assert error.__cause__ is not None  # the database's own error, for the log
    with store.begin() as mem:  # nothing of it was written
        assert [n for n in mem.notes.list(limit=100) if SECRET in n.content] == []


@pytest.mark.postgres
@pytest.mark.parametrize("kind", list(PG_KINDS))
def test_an_agents_error_reaches_the_caller_typed_and_without_the_name(
    kind: str, pg_layout: Layout, request: pytest.FixtureRequest
) -> None:
    """``philont.agents`` runs its own statements on the Store's engine (no unit of work): a
    host's trigger on the registry refusing a rename reached the caller as SQLAlchemy's error
    holding the new name."""
    _pg_trigger(pg_layout.schema, "UPDATE", "philont_agents", "name", kind, request)
    name = pg_layout.new_agent()
    with Store.open(pg_layout.url) as store:
        agents.create(store, name)
        with pytest.raises(Exception) as caught:  # any error: its type is the test
            agents.rename(store, name, f"{name}-{SECRET}")
        error = caught.value
        assert isinstance(error, PhilontError), repr(error)
        assert SECRET not in f"{error} {error.details}", error
        if kind in CONFLICTS:
            assert isinstance(error, TransactionConflictError), repr(error)
        assert agents.require(store, name).name == name  # nothing of it was kept
