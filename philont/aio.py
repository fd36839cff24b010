"""Async hosts: ``AsyncStore`` runs units of work and tool calls on an async engine.

Every service is synchronous code; under an async engine (aiosqlite, async psycopg) a unit of
work runs inside ``AsyncSession.run_sync``: SQLAlchemy's greenlet bridge turns each statement
into an await on the event loop, so waiting for the database never blocks the loop (aiosqlite
itself runs SQLite in its own thread). What stays on the loop is our Python between statements
(ranking, formatting: fractions of a millisecond). The one blocking step that is not a
statement, the schema check and upgrade (Alembic), runs in a worker thread once, when the
AsyncStore opens.

    astore = await AsyncStore.open("memory.sqlite")
    city = await astore.run(lambda mem: mem.facts.get("user.home", "city"))
    result = await astore.call("get_fact", {"namespace": "user.home", "key": "city"})
    await astore.run(work, session=host_session)      # inside the host's AsyncSession
    await astore.close()
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError

from philont.clock import Clock, utc_now
from philont.db.engine import (
    BEGIN_OPTION,
    check_file,
    ensure_fts5,
    guard_nul,
    install_sqlite_hooks,
    is_postgres,
    require_file,
    require_sqlite_hooks,
    resolve_url,
    sqlite_path,
)
from philont.db.retry import DEFAULT_ATTEMPTS, backoff, gave_up, translate
from philont.errors import (
    BackendError,
    DatabaseBusyError,
    InvalidInputError,
    TransactionConflictError,
)
from philont.log import alembic_at_debug, get_logger
from philont.memory import Memory
from philont.store import Store, ensure_schema, ensure_schema_on

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

    from philont.tools.dispatch import ToolResult

__all__ = ["AsyncStore", "create_async_engine"]

T = TypeVar("T")

log = get_logger(__name__)


def create_async_engine(
    target: str | Path | URL | None = None,
    *,
    agent: str | None = None,
    busy_timeout_ms: int | None = None,
) -> AsyncEngine:
    """An async engine on a memory database, with the same connection set-up as the sync one
    (WAL, busy timeout, foreign keys, transactional BEGIN on SQLite via aiosqlite; psycopg's
    async mode on PostgreSQL)."""
    try:
        from sqlalchemy.ext.asyncio import create_async_engine as sa_create_async_engine
    except ImportError as exc:  # pragma: no cover - greenlet is missing
        raise BackendError("async needs pip install 'philont[async]'") from exc
    del agent  # PostgreSQL: the agent is chosen per unit of work (philont.store)
    url = resolve_url(target)
    if is_postgres(url):  # no server-side prepared statements: PgBouncer-safe (philont.db.engine)
        engine = sa_create_async_engine(
            url, pool_pre_ping=True, connect_args={"prepare_threshold": None}
        )
        guard_nul(engine.sync_engine)
        return engine
    if url.get_backend_name() != "sqlite":
        raise InvalidInputError(f"unsupported database {url.drivername}: use SQLite or PostgreSQL")
    require_file(url, "an async memory")
    path = sqlite_path(url)
    assert path is not None  # require_file
    ensure_fts5()
    check_file(path, create=True)
    try:
        engine = sa_create_async_engine(url.set(drivername="sqlite+aiosqlite"))
    except ModuleNotFoundError as exc:
        raise BackendError("async SQLite needs aiosqlite: pip install 'philont[async]'") from exc
    install_sqlite_hooks(engine.sync_engine, foreign_keys=True, busy_timeout_ms=busy_timeout_ms)
    return engine


class AsyncStore:
    """The async face of a :class:`~philont.store.Store`: one async engine per database per
    process, units of work run with :meth:`run`, tools with :meth:`call`."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        agent: str | None = None,
        clock: Clock = utc_now,
        owns_engine: bool = False,
    ) -> None:
        """Prefer :meth:`open` / :meth:`from_engine`, which check the schema first."""
        self.engine = engine
        self._owns_engine = owns_engine
        # The services run on the sync face of the async engine, inside run_sync.
        self.store = Store(engine.sync_engine, agent=agent, clock=clock)

    @classmethod
    async def open(
        cls,
        target: str | Path | URL | None = None,
        *,
        agent: str | None = None,
        upgrade: bool = True,
        clock: Clock = utc_now,
        busy_timeout_ms: int | None = None,
    ) -> AsyncStore:
        """As :meth:`Store.open`; the schema check (and upgrade) runs in a worker thread."""
        url = resolve_url(target)
        await asyncio.to_thread(ensure_schema, url, upgrade=upgrade)
        engine = create_async_engine(url, busy_timeout_ms=busy_timeout_ms)
        return cls(engine, agent=agent, clock=clock, owns_engine=True)

    @classmethod
    async def from_engine(
        cls,
        engine: AsyncEngine,
        *,
        agent: str | None = None,
        upgrade: bool = False,
        clock: Clock = utc_now,
    ) -> AsyncStore:
        """An AsyncStore over the host's async engine (kept open by ``close()``); a SQLite
        one must be philont's (:func:`create_async_engine`), as for ``Store.from_engine``."""
        require_sqlite_hooks(engine.sync_engine, "AsyncStore.from_engine")
        if is_postgres(engine.url):  # through the host's connections (search_path, credentials)
            await asyncio.to_thread(_read_scripts)  # the revision scripts, read off the loop
            async with engine.connect() as conn:
                await conn.run_sync(lambda sync: ensure_schema_on(sync, upgrade=upgrade))
            return cls(engine, agent=agent, clock=clock)
        sync_url = engine.url.set(drivername=_sync_driver(engine.url))
        await asyncio.to_thread(ensure_schema, sync_url, upgrade=upgrade)
        return cls(engine, agent=agent, clock=clock)

    async def run(
        self,
        work: Callable[[Memory], T],
        *,
        write: bool = True,
        clock: Clock | None = None,
        session: AsyncSession | None = None,
        agent: str | None = None,
    ) -> T:
        """Run ``work(mem)`` in one unit of work and return its result. Without ``session`` it
        is a transaction of its own (committed, or rolled back on an exception; retried a few
        times when SQLite is busy); with the host's ``AsyncSession`` it runs inside the host's
        transaction, which the host commits. ``agent`` (PostgreSQL): the agent it serves, else
        the AsyncStore's default."""
        if session is not None:
            return await session.run_sync(
                lambda s: _in(self.store.join(s, clock=clock, agent=agent), work)
            )
        result: T = await self._retrying(
            lambda: self._own(work, write=write, clock=clock, agent=agent)
        )
        return result

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | bytes | None = None,
        *,
        session_id: str = "global",
        session: AsyncSession | None = None,
    ) -> ToolResult:
        """A model tool call (:func:`philont.tools.call`) in a unit of work of its own, or
        inside the host's ``AsyncSession``. Never raises for bad arguments or tool failures.
        In a unit of work of its own, a busy database or a conflicted transaction runs the
        whole call again, as :meth:`run` does."""
        from philont.tools import call

        if session is not None:
            return await self.run(
                lambda mem: call(name, arguments, db=mem, session_id=session_id), session=session
            )
        return await self.run(
            lambda mem: _retried_if_busy(call(name, arguments, db=mem, session_id=session_id))
        )

    async def close(self) -> None:
        """Release the connections (if this AsyncStore made the engine)."""
        self.store.close()
        if self._owns_engine:
            await self.engine.dispose()

    async def _own(
        self, work: Callable[[Memory], T], *, write: bool, clock: Clock | None, agent: str | None
    ) -> T:
        from sqlalchemy.ext.asyncio import AsyncSession

        bind = self.engine
        if write:
            bind = bind.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
        try:
            async with AsyncSession(bind, expire_on_commit=False) as s, s.begin():
                return await s.run_sync(
                    lambda sync: _in(self.store.join(sync, clock=clock, agent=agent), work)
                )
        except SQLAlchemyError as exc:
            typed = translate(exc, path=None if self.store.path is None else str(self.store.path))
            if typed is None:
                raise
            raise typed from exc

    async def _retrying(self, attempt: Callable[[], Any]) -> Any:
        """``attempt()`` again (sleeping on the loop, never blocking it) while the database is
        busy or the transaction conflicted: the rules of
        :func:`philont.db.retry.run_with_retry`."""
        started = time.monotonic()
        for n in range(1, DEFAULT_ATTEMPTS + 1):
            try:
                return await attempt()
            except DatabaseBusyError as exc:  # typed by _own (a conflict is one too)
                if n == DEFAULT_ATTEMPTS:
                    raise gave_up(exc, exc, n, time.monotonic() - started) from exc
                delay = backoff(n)
                log.info("db.retry", code=exc.code, attempt=n, of=DEFAULT_ATTEMPTS, delay_s=delay)
                await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover


def _retried_if_busy(result: ToolResult) -> ToolResult:
    """A tool call's result in a unit of work of the AsyncStore's own; a busy database or a
    conflicted transaction is raised instead, so that the unit is rolled back and run again
    (the call wrote nothing, not even its action log row)."""
    for kind in (TransactionConflictError, DatabaseBusyError):
        if result.error_code == kind.code:
            raise kind(result.error or kind.code, tool=result.name)
    return result


def _in(mem: Memory, work: Callable[[Memory], T]) -> T:
    with mem:
        return work(mem)


def _read_scripts() -> None:
    with alembic_at_debug():
        from philont.migrate.scripts import script_directory

        script_directory()


def _sync_driver(url: URL) -> str:
    """The sync driver of an async URL (Alembic runs synchronously)."""
    if url.get_backend_name() == "sqlite":
        return "sqlite+pysqlite"
    return "postgresql+psycopg"
