"""A PostgreSQL database not encoded UTF8, or a connection with another client encoding, is
refused with a typed error that says what to change, by every way in (Store.open, a host's
engine new or used, AsyncStore, migrate by URL or on a host's connection, the CLI), and
nothing is written to it. Before, a SQL_ASCII database failed its upgrade with a
TypeError (text came back as bytes) and a LATIN1 one stored facts but failed on the first text
outside Latin-1 with a UnicodeEncodeError."""

from __future__ import annotations

import asyncio
import functools
import gc
import uuid
import weakref
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import make_url
from sqlalchemy.pool import QueuePool
from typer.testing import CliRunner

from philont import Store, migrate
from philont.cli import app
from philont.db.engine import create_engine as philont_engine
from philont.db.engine import guard_pg, refuse_non_utf8
from philont.errors import BackendError
from tests.pg_support import admin_autocommit, server_url

pytestmark = pytest.mark.postgres
pytest.importorskip("psycopg")

CASES = {  # the database's encoding, the client's (None: psycopg's default, the server's)
    "SQL_ASCII database": ("SQL_ASCII", None),
    "LATIN1 database": ("LATIN1", None),
    "LATIN1 client": ("UTF8", "latin1"),
    "SQL_ASCII client": ("UTF8", "sql_ascii"),
}
ENCODINGS = {"SQL_ASCII", "LATIN1"}


@pytest.fixture(params=CASES)
def not_utf8(request: pytest.FixtureRequest) -> Iterator[str]:
    """The URL of a new database encoded otherwise, or of a UTF8 one with another client
    encoding (dropped after)."""
    encoding, client = CASES[request.param]
    name = f"philont_enc_{uuid.uuid4().hex[:8]}"
    try:
        admin_autocommit(
            f"CREATE DATABASE {name} ENCODING '{encoding}' LC_COLLATE 'C' LC_CTYPE 'C'"
            " TEMPLATE template0"
        )
    except Exception as exc:  # a server where this role may not create databases
        pytest.skip(f"cannot create a {encoding} database here: {exc}")
    url = make_url(server_url()).set(database=name)
    if client is not None:
        url = url.update_query_dict({"client_encoding": client})
    yield url.render_as_string(hide_password=False)
    admin_autocommit(f"DROP DATABASE {name} WITH (FORCE)")


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
    return Store.from_engine(_host_engine(url), agent="someone")


def _host_engine(url: str) -> Engine:
    """A host's engine that has connected already (its pool holds a connection philont's
    guard never saw). SQLAlchemy itself cannot connect where text comes back as bytes."""
    engine = create_engine(url)
    try:
        with engine.connect():
            pass
    except TypeError:
        pytest.skip("SQLAlchemy cannot connect there: text comes back as bytes")
    return engine


def _upgrade_on_connection(url: str) -> object:
    with _host_engine(url).connect() as conn:
        return migrate.upgrade(conn)  # as alembic's op.get_bind() is passed


def _async_from_engine(url: str) -> object:
    from sqlalchemy.ext.asyncio import create_async_engine

    from philont.aio import AsyncStore

    async def run() -> object:
        engine = create_async_engine(url)
        try:
            async with engine.connect():
                pass
        except TypeError:
            pytest.skip("SQLAlchemy cannot connect there: text comes back as bytes")
        try:
            return await AsyncStore.from_engine(engine, agent="someone")
        finally:
            await engine.dispose()

    return asyncio.run(run())


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
    "AsyncStore.from_engine, used before": _async_from_engine,
    "migrate.upgrade": migrate.upgrade,
    "migrate.upgrade(a host's connection)": _upgrade_on_connection,
}


@pytest.mark.parametrize("way", WAYS_IN)
def test_a_database_or_client_not_in_utf8_is_refused(not_utf8: str, way: str) -> None:
    with pytest.raises(BackendError, match=r"philont needs (a )?UTF8") as caught:
        WAYS_IN[way](not_utf8)

    assert caught.value.details["encoding"].upper() in ENCODINGS
    assert _tables(not_utf8) == 0  # nothing written


def test_the_cli_says_so_in_one_typed_line(not_utf8: str) -> None:
    result = CliRunner().invoke(app, ["db", "upgrade", "--db", not_utf8])

    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error (backend_unavailable): the "), result.stderr
    assert "philont needs" in result.stderr and "UTF8" in result.stderr
    assert _tables(not_utf8) == 0


class _Unreported:
    """A DB-API connection that keeps none of the server's settings (another driver, or a
    pooler that does not pass them on): they are asked with SHOW."""

    def __init__(self, url: str) -> None:
        import psycopg

        u = make_url(url)
        self.real = psycopg.connect(
            host=u.host,
            port=u.port,
            user=u.username,
            password=u.password,
            dbname=u.database,
            **(
                {"client_encoding": u.query["client_encoding"]}
                if "client_encoding" in u.query
                else {}
            ),
        )

    def cursor(self) -> object:
        return self.real.cursor()

    def rollback(self) -> None:
        self.real.rollback()


def test_settings_a_driver_does_not_keep_are_asked(not_utf8: str) -> None:
    unreported = _Unreported(not_utf8)
    try:
        with pytest.raises(BackendError, match=r"philont needs (a )?UTF8"):
            refuse_non_utf8(unreported)
        assert unreported.real.info.transaction_status == 0  # idle: SHOW's transaction ended
    finally:
        unreported.real.close()


def test_a_utf8_database_and_client_pass_when_asked() -> None:
    unreported = _Unreported(server_url())
    try:
        refuse_non_utf8(unreported)
    finally:
        unreported.real.close()


def _engine_at_a_freed_pools_address(url: str) -> Engine:
    """A host's new engine whose pool sits where a guarded engine's first pool was. That engine
    is still referenced and its old pool is freed the way ``dispose()`` frees it (the new pool
    keeps the listeners), so SQLAlchemy's event registry keeps the old pool's key: its address.

    The old pool is freed here, checked freed, and pool objects are then made bare (no other
    object is made between two tries) until one lands at its address. A first version made
    whole pools after ``dispose()`` and missed in CI: whatever else was made could take it."""
    keep = []
    for _ in range(20):
        engine = philont_engine(url)  # guarded, as every engine philont makes
        keep.append(engine)
        old = engine.pool
        engine.pool = old.recreate()  # as dispose() does: the listeners move to the new pool
        address, freed = id(old), weakref.ref(old)
        del old
        if freed() is not None:
            gc.collect()
        assert freed() is None, gc.get_referrers(freed())
        made = []
        for _ in range(200_000):
            pool = QueuePool.__new__(QueuePool)
            if id(pool) == address:
                cargs, cparams = engine.dialect.create_connect_args(engine.url)
                QueuePool.__init__(
                    pool, functools.partial(engine.dialect.connect, *cargs, **cparams)
                )
                return create_engine(url, pool=pool)
            made.append(pool)
    pytest.fail("no pool was made at a freed address")


def test_a_new_engine_where_a_disposed_engines_pool_was_is_guarded() -> None:
    """Before, ``guard_pg`` asked ``event.contains``, which found the old pool's key and left
    the new engine without its UTF8 check: Store.from_engine failed with a TypeError (CI)."""
    url = make_url(server_url()).update_query_dict({"client_encoding": "sql_ascii"})
    engine = _engine_at_a_freed_pools_address(url.render_as_string(hide_password=False))
    try:
        with pytest.raises(BackendError, match="philont needs UTF8"):
            Store.from_engine(engine, agent="someone")
    finally:
        engine.dispose()


def test_the_guard_runs_once_however_often_it_is_installed() -> None:
    engine = create_engine(server_url())
    try:
        for _ in range(3):
            guard_pg(engine)
            engine.dispose()  # a new pool, the same listeners
        assert list(engine.pool.dispatch.connect).count(refuse_non_utf8) == 1
    finally:
        engine.dispose()


def test_a_copy_with_other_execution_options_is_guarded_once_with_its_engine() -> None:
    """A host's ``engine.execution_options(...)`` copy shares the engine's pool and listeners:
    guarded through either, the check runs once a connection, and the copy is refused too."""
    url = make_url(server_url()).update_query_dict({"client_encoding": "sql_ascii"})
    engine = create_engine(url)
    copy = engine.execution_options(logging_token="host")
    try:
        guard_pg(engine)
        with pytest.raises(BackendError, match="philont needs UTF8"):
            Store.from_engine(copy, agent="someone")
        assert list(engine.pool.dispatch.connect).count(refuse_non_utf8) == 1
        assert len(engine.dispatch.before_cursor_execute) == 1  # refuse_nul, wrapped
    finally:
        engine.dispose()
