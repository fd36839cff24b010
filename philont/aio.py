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
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from philont.arguments import checked, sync_result
from philont.clock import Clock, utc_now
from philont.db import cursors, write_gate
from philont.db.engine import (
    BEGIN_OPTION,
    Target,
    busy_timeout_s,
    check_file,
    ensure_fts5,
    guard_pg,
    install_sqlite_hooks,
    is_postgres,
    read_only_connector,
    require_file,
    require_sqlite_hooks,
    resolve_url,
    set_up_read_only,
    sqlite_path,
)
from philont.db.fork import renew_after_fork
from philont.db.retry import RetryPolicy, translate
from philont.errors import (
    BackendError,
    DatabaseBusyError,
    EventLoopError,
    InvalidDatabaseError,
    PhilontError,
    StoreClosedError,
)
from philont.log import alembic_at_debug, get_logger
from philont.memory import Joined, Memory
from philont.schemas.inputs import BusyTimeoutMs
from philont.store import Store, check_read_only, ensure_schema, ensure_schema_on

if TYPE_CHECKING:
    from philont.tools.dispatch import ToolResult

__all__ = ["AsyncStore", "create_async_engine"]

T = TypeVar("T")

log = get_logger(__name__)


@checked
def create_async_engine(
    target: Target | None = None,
    *,
    agent: str | None = None,
    busy_timeout_ms: BusyTimeoutMs | None = None,
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
        guard_pg(engine.sync_engine)
        renew_after_fork(engine.sync_engine)
        return engine
    if url.get_backend_name() != "sqlite":
        raise InvalidDatabaseError(
            f"unsupported database {url.drivername}: use SQLite or PostgreSQL"
        )
    require_file(url, "an async memory")
    path = sqlite_path(url)
    assert path is not None  # require_file
    ensure_fts5()
    check_file(path, create=True)
    return _sqlite_async_engine(url, busy_timeout_ms)


def _sqlite_async_engine(url: URL, busy_timeout_ms: int | None) -> AsyncEngine:
    """:func:`create_async_engine`'s engine on the SQLite file of ``url``, which the caller has
    just checked (``check_file``; ``AsyncStore.open``'s schema check does)."""
    try:
        from sqlalchemy.ext.asyncio import create_async_engine as sa_create_async_engine
    except ImportError as exc:  # pragma: no cover - greenlet is missing
        raise BackendError("async needs pip install 'philont[async]'") from exc
    ensure_fts5()
    try:
        engine = sa_create_async_engine(  # aiosqlite passes connect_args to sqlite3.connect
            url.set(drivername="sqlite+aiosqlite"),
            connect_args={"factory": cursors.TrackedConnection, "check_same_thread": False},
        )
    except ModuleNotFoundError as exc:
        raise BackendError("async SQLite needs aiosqlite: pip install 'philont[async]'") from exc
    install_sqlite_hooks(engine.sync_engine, foreign_keys=True, busy_timeout_ms=busy_timeout_ms)
    renew_after_fork(engine.sync_engine)
    return engine


def _sqlite_async_read_only_engine(url: URL, busy_timeout_ms: int | None) -> AsyncEngine:
    """The async face of :func:`~philont.db.engine.sqlite_read_only_engine`: aiosqlite over
    the read-only Store's connections (``mode=ro``; writes refused where SQLite refuses them),
    made and set up by the same helpers."""
    try:
        import aiosqlite
        from sqlalchemy.ext.asyncio import create_async_engine as sa_create_async_engine
    except ImportError as exc:  # pragma: no cover - aiosqlite or greenlet is missing
        raise BackendError("async SQLite needs aiosqlite: pip install 'philont[async]'") from exc
    connector, timeout = read_only_connector(url, busy_timeout_ms)

    async def connect() -> Any:
        # aiosqlite.connect() takes a database name for sqlite3.connect, not a function that
        # opens the connection: the read-only one is made by ours (connector, run in
        # aiosqlite's thread) through aiosqlite.Connection(connector, iter_chunk_size), the
        # constructor aiosqlite.connect itself calls (aiosqlite/core.py; not documented,
        # 64 is connect's default chunk size). A change there fails every test of an async
        # read-only Store (tests/integration/test_read_only_store.py).
        return await aiosqlite.Connection(connector, 64)

    engine = sa_create_async_engine(url.set(drivername="sqlite+aiosqlite"), async_creator=connect)
    set_up_read_only(engine.sync_engine, timeout)
    return engine


class AsyncStore:
    """The async face of a :class:`~philont.store.Store`: one async engine per database per
    event loop, units of work run with :meth:`run`, tools with :meth:`call`.

    An AsyncStore belongs to the event loop it is opened in (its pool and connections are that
    loop's): using it from another loop, or another thread's loop, is refused with
    :class:`~philont.errors.EventLoopError`; open one per loop. A unit of work whose caller is
    cancelled (a timeout, a client that went away) ends before the cancellation reaches the
    caller: rolled back, or committed when the cancellation came as it committed, so no
    transaction or lock outlives it. :meth:`close` waits for the units of work in flight (from
    another thread's loop too: it closes on its own loop).
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        agent: str | None = None,
        clock: Clock = utc_now,
        owns_engine: bool = False,
        read_only: bool = False,
    ) -> None:
        """Prefer :meth:`open` / :meth:`from_engine`, which check the schema first."""
        self.engine = engine
        self._write_engine = (
            engine if read_only else engine.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
        )
        self._owns_engine = owns_engine
        # The services run on the sync face of the async engine, inside run_sync.
        self.store = Store(engine.sync_engine, agent=agent, clock=clock, read_only=read_only)
        """The sync Store the units of work run on (its ``label``, ``path``, ``url``,
        ``backend``, ``agent``); its own units of work (``begin``, ``run``) are refused with
        :class:`~philont.errors.InvalidDatabaseError`: use :meth:`run` and :meth:`call`."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._in_flight: set[asyncio.Task[Any]] = set()
        self._closing = False
        sqlite = self.store.backend.name == "sqlite" and not read_only
        path = self.store.path
        file_gate = None if path is None else write_gate.gate_for(path)
        self._write_gate = write_gate.AsyncWriteGate(file_gate) if sqlite else None
        """This AsyncStore's writing units of work take SQLite's lock in the order they came
        (philont.db.write_gate.queued), instead of polling it from many connections."""

    @classmethod
    @checked
    async def open(
        cls,
        target: Target | None = None,
        *,
        agent: str | None = None,
        upgrade: bool = True,
        clock: Clock = utc_now,
        busy_timeout_ms: BusyTimeoutMs | None = None,
        read_only: bool = False,
    ) -> AsyncStore:
        """As :meth:`Store.open` (``read_only`` too: SQLite only, never created or upgraded,
        every write refused); the schema check (and upgrade) runs in a worker thread."""
        url = resolve_url(target)
        if read_only:
            await asyncio.to_thread(check_read_only, url)
            engine = _sqlite_async_read_only_engine(url, busy_timeout_ms)
            return cls(engine, agent=agent, clock=clock, owns_engine=True, read_only=True)._bound()
        await asyncio.to_thread(ensure_schema, url, upgrade=upgrade)  # checks an SQLite file
        if is_postgres(url):
            engine = create_async_engine(url, busy_timeout_ms=busy_timeout_ms)
        else:
            engine = _sqlite_async_engine(url, busy_timeout_ms)
        return cls(engine, agent=agent, clock=clock, owns_engine=True)._bound()

    @classmethod
    @checked
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
            guard_pg(engine.sync_engine)  # its connections made before: ensure_schema_on
            async with engine.connect() as conn:
                await conn.run_sync(lambda sync: ensure_schema_on(sync, upgrade=upgrade))
            return cls(engine, agent=agent, clock=clock)._bound()
        sync_url = engine.url.set(drivername=_sync_driver(engine.url))
        await asyncio.to_thread(ensure_schema, sync_url, upgrade=upgrade)
        return cls(engine, agent=agent, clock=clock)._bound()

    @checked
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
        is a transaction of its own (committed, or rolled back on an exception; run again a
        few times when SQLite was busy without waiting out its busy timeout, from the first
        retry on holding the write lock from its first statement, or when a PostgreSQL
        transaction conflicted with a concurrent one,
        :class:`~philont.errors.TransactionConflictError`, as
        :class:`philont.db.retry.RetryPolicy` decides); with the host's ``AsyncSession``
        it runs inside the host's transaction, which the host commits. ``agent``
        (PostgreSQL): the agent it serves, else the AsyncStore's default."""
        self._bound()
        if session is not None:
            return await session.run_sync(
                lambda s: _in(
                    self.store._join(s, clock=clock, agent=agent, joined=_HOST_SESSION), work
                )
            )

        async def attempt(write_now: bool) -> T:
            return await self._own(work, write=write_now, clock=clock, agent=agent)

        return await _retrying(attempt, write=write)

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | str | bytes | None = None,
        *,
        session_id: str = "global",
        session: AsyncSession | None = None,
    ) -> ToolResult:
        """A model tool call (:func:`philont.tools.call`) in a unit of work of its own, or
        inside the host's ``AsyncSession``; never raises (a closed AsyncStore, a busy
        database, another event loop are results with their codes, as ``tools.call`` reports
        them). A unit of work of its own begins as ``tools.call``'s does: deferred for a tool
        that only reads, and retried when busy, holding the write lock from the first retry."""
        from philont.tools import dispatch

        tool_name = name if isinstance(name, str) else repr(name)
        try:
            if session is not None:
                return await self.run(
                    lambda mem: dispatch.call(name, arguments, db=mem, session_id=session_id),
                    session=session,
                )
            self._bound()
            prepared = dispatch.prepare(tool_name, arguments)

            async def attempt(write: bool) -> ToolResult:
                return await self._own(
                    lambda mem: dispatch.run_prepared(prepared, mem, session_id, joined=True),
                    write=write,
                    clock=None,
                    agent=None,
                )

            return await _retrying(attempt, write=prepared.writes)
        except (PhilontError, SQLAlchemyError) as exc:
            return dispatch.refused(tool_name, exc, where=self.store.label)

    async def close(self) -> None:
        """Refuse new units of work, wait for those in flight, then release the connections
        (if this AsyncStore made the engine). Twice is harmless. From another thread's event
        loop it closes on its own loop (while that one runs) and waits for it there; from a
        loop that is not running, with units of work in flight on it, it is refused
        (:class:`~philont.errors.EventLoopError`): it would close them mid-unit."""
        bound, loop = self._loop, asyncio.get_running_loop()
        if bound is not None and bound is not loop and not bound.is_closed():
            if bound.is_running():  # another thread's: its units end there, then it closes
                await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self.close(), bound))
                return
            if self._in_flight:  # suspended with their loop: they cannot end before we close
                raise EventLoopError(
                    f"the AsyncStore of {self.store.label} has units of work in flight on the "
                    "event loop it was opened in, which is not running: close it there"
                )
        # New units of work are refused from here on (_bound); those in flight, queued at the
        # write gate included, go on (their retries too) before the Store closes.
        self._closing = True
        while self._in_flight and self._loop is loop:
            await asyncio.wait(set(self._in_flight))
        self.store.close()
        if self._owns_engine:
            await self.engine.dispose()

    def _bound(self) -> AsyncStore:
        """Bind this AsyncStore to the running event loop (the first one it is used in), or
        refuse another loop: its pool's queue and connections belong to the first. Refuse a
        new unit of work once :meth:`close` began (:class:`~philont.errors.StoreClosedError`)."""
        if self._closing:
            raise StoreClosedError(f"the Store of {self.store.label} is closed")
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
        elif self._loop is not loop:
            raise EventLoopError(
                f"the AsyncStore of {self.store.label} belongs to the event loop it was "
                "opened in (its pool and connections are that loop's); open one AsyncStore "
                "per event loop (per thread)"
            )
        return self

    async def _own(
        self, work: Callable[[Memory], T], *, write: bool, clock: Clock | None, agent: str | None
    ) -> T:
        """One attempt of a unit of work of its own, in a task of its own that the caller's
        cancellation reaches once (see :func:`_settled`)."""
        ending = asyncio.Event()
        unit = asyncio.ensure_future(self._unit(work, write, clock, agent, ending))
        self._in_flight.add(unit)
        unit.add_done_callback(self._in_flight.discard)
        return await _settled(unit, ending)

    async def _unit(
        self,
        work: Callable[[Memory], T],
        write: bool,
        clock: Clock | None,
        agent: str | None,
        ending: asyncio.Event,
    ) -> T:
        """The unit of work; ``ending`` is set once ``work`` has returned (it commits now)."""
        from sqlalchemy.ext.asyncio import AsyncSession

        bind = self._write_engine if write else self.engine
        gate = self._write_gate if write else None
        timeout_s = busy_timeout_s(self.engine.sync_engine)
        try:
            async with (
                write_gate.queued(gate, timeout_s),
                AsyncSession(bind, expire_on_commit=False) as s,
                s.begin(),
            ):
                result = await s.run_sync(
                    lambda sync: _in(
                        self.store._join(sync, clock=clock, agent=agent, joined=_OWN_SESSION),
                        work,
                    )
                )
                ending.set()
                return result
        except SQLAlchemyError as exc:
            typed = translate(exc, path=None if self.store.path is None else str(self.store.path))
            if typed is None:
                raise
            raise typed from exc


async def _settled(unit: asyncio.Future[T], ending: asyncio.Event) -> T:
    """The result of ``unit``. When the caller is cancelled, ``unit`` is cancelled once if
    its work is still running (its statement is interrupted, its transaction rolled back) and
    left to commit if its work has returned, and waited for until it has ended; then the
    cancellation goes on. So no transaction, lock or connection outlives it: a host that
    delivers its cancellation again at every await (anyio, so Starlette and the MCP SDK)
    would otherwise interrupt the rollback or the connection's return to the pool too,
    leaving the connection to be torn down later and its lock held until then."""
    try:
        return await asyncio.shield(unit)
    except asyncio.CancelledError:
        if not ending.is_set():
            unit.cancel()
        while not unit.done():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.wait({unit})
        if not unit.cancelled():
            unit.exception()  # retrieved: the caller's cancellation is what goes on
        raise


async def _retrying(attempt: Callable[[bool], Awaitable[T]], *, write: bool) -> T:
    """``attempt(write)`` again as :class:`philont.db.retry.RetryPolicy` decides (a conflict,
    or a busy SQLite returned without waiting out its busy timeout; the rules of
    :func:`philont.db.retry.run_with_retry`), sleeping on the loop, never blocking it, and
    holding the write lock from the first retry on (see
    :func:`philont.tools.dispatch.retry_plan`)."""
    policy = RetryPolicy()
    started = time.monotonic()
    n = 0
    while True:
        n += 1
        began = time.monotonic()
        try:
            return await attempt(write)
        except DatabaseBusyError as exc:  # typed by _own (a conflict is one too)
            now = time.monotonic()
            verdict = policy.decide(exc, attempt=n, attempt_s=now - began, total_s=now - started)
            if verdict is None:
                raise
            if isinstance(verdict, Exception):
                raise verdict from exc
            write = True
            await asyncio.sleep(verdict)


_HOST_SESSION = Joined(
    "AsyncStore.run",
    "session",
    "the AsyncSession ended its transaction (commit, rollback or close) inside work; end it "
    "after AsyncStore.run returns",
    host="AsyncSession",
)
"""A unit of work in the host's AsyncSession (``AsyncStore.run(work, session=...)``, and
``AsyncStore.call``'s): its errors name the API the host called, not ``store.join``."""
_OWN_SESSION = Joined(
    "AsyncStore.run",
    "session",
    "work ended the unit of work's transaction (a commit, rollback or close of mem.session); "
    "AsyncStore.run commits it when work returns",
)
"""A unit of work of the AsyncStore's own (``AsyncStore.run(work)``, ``AsyncStore.call``)."""


def _in(mem: Memory, work: Callable[[Memory], T]) -> T:
    with mem:
        return sync_result("work", work(mem))


def _read_scripts() -> None:
    with alembic_at_debug():
        from philont.migrate.scripts import script_directory

        script_directory()


def _sync_driver(url: URL) -> str:
    """The sync driver of an async URL (Alembic runs synchronously)."""
    if url.get_backend_name() == "sqlite":
        return "sqlite+pysqlite"
    return "postgresql+psycopg"
