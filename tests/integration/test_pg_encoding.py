"""A PostgreSQL database not encoded UTF8 is refused on connecting, with a typed error that
says how to make one, by every way in (Store.open, a host's engine, AsyncStore, migrate, the
CLI), and nothing is written to it. Before, a SQL_ASCII database failed its upgrade with a
TypeError (text came back as bytes) and a LATIN1 one stored facts but failed on the first text
outside Latin-1 with a UnicodeEncodeError."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from philont import Store, migrate
from philont.cli import app
from philont.errors import BackendError
from tests.pg_support import server_url

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg")

ENCODINGS = ["SQL_ASCII", "LATIN1"]


def _admin(sql: str) -> None:
    engine = create_engine(server_url(), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(sql))
    finally:
        engine.dispose()


@pytest.fixture(params=ENCODINGS)
def other_encoding(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a new database encoded otherwise (dropped after)."""
    name = f"philont_enc_{uuid.uuid4().hex[:8]}"
    try:
        _admin(
            f"CREATE DATABASE {name} ENCODING '{request.param}' LC_COLLATE 'C' LC_CTYPE 'C'"
            " TEMPLATE template0"
        )
    except Exception as exc:  # a server where this role may not create databases
        pytest.skip(f"cannot create a {request.param} database here: {exc}")
    yield make_url(server_url()).set(database=name).render_as_string(hide_password=False)
    _admin(f"DROP DATABASE {name} WITH (FORCE)")


def _tables(url: str) -> int:
    """Tables in the database, read by psycopg alone (SQLAlchemy's dialect cannot read a
    SQL_ASCII database's version string: it comes back as bytes)."""
    import psycopg

    u = make_url(url)
    with psycopg.connect(
        host=u.host, port=u.port, user=u.username, password=u.password, dbname=u.database
    ) as conn:
        row = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchone()
        assert row is not None
        return int(row[0])


def _store_open(url: str) -> object:
    return Store.open(url, agent="someone")


def _from_engine(url: str) -> object:
    return Store.from_engine(create_engine(url), agent="someone")


def _from_used_engine(url: str) -> object:
    """A host's engine that has connected already (its pool holds a connection the guard
    never saw; on SQL_ASCII SQLAlchemy's own first connect fails)."""
    engine = create_engine(url)
    with contextlib.suppress(TypeError), engine.connect():
        pass
    return Store.from_engine(engine, agent="someone")


def _async_open(url: str) -> object:
    from philont.aio import AsyncStore

    async def run() -> object:
        store = await AsyncStore.open(url, agent="someone")
        await store.close()
        return store

    return asyncio.run(run())


WAYS_IN: dict[str, Callable[[str], object]] = {
    "Store.open": _store_open,
    "Store.from_engine": _from_engine,
    "Store.from_engine, used before": _from_used_engine,
    "AsyncStore.open": _async_open,
    "migrate.upgrade": migrate.upgrade,
}


@pytest.mark.parametrize("way", WAYS_IN)
def test_a_database_not_encoded_utf8_is_refused_on_connecting(
    other_encoding: str, way: str
) -> None:
    with pytest.raises(BackendError, match=r"needs a UTF8 database") as caught:
        WAYS_IN[way](other_encoding)

    assert caught.value.details["encoding"] in ENCODINGS
    assert _tables(other_encoding) == 0  # nothing written


def test_the_cli_says_so_in_one_typed_line(other_encoding: str) -> None:
    result = CliRunner().invoke(app, ["db", "upgrade", "--db", other_encoding])

    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error (backend_unavailable): the database"), result.stderr
    assert "needs a UTF8 database" in result.stderr
    assert _tables(other_encoding) == 0
