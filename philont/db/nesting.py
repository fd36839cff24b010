"""PostgreSQL: the units of work one thread holds open at once, and the wait none of them ends.

A thread that begins a unit of work while its own is still open (a nested ``store.begin()``,
``store.run``, ``Memory.open``, ``tools.call(..., db=store)`` inside a ``with store.begin()``
block) has two transactions on two server processes. When one waits for a lock the other holds
(a fact's key, a note id, the learning lock, a row, the agent's lock), the holder gives it back
only when the thread goes on, and the thread waits for the waiter: forever. PostgreSQL's
deadlock detector sees one waiter and a holder idle in its transaction, no cycle. SQLite
refuses such a unit as it begins (its write gate knows the thread that holds it); on
PostgreSQL a nested unit that does not conflict works, so what is watched is the wait:

* every unit of work records its server process (:func:`opened`) from the statement that sets
  its agent (:func:`philont.db.agents.set_local`, two more columns: no round trip of its own)
  and is listed among its thread's open units while its block runs (Python only);
* while a thread has two or more open on one server, a watcher thread of its own asks that
  server now and then (one statement, ``pg_blocking_pids``, on a connection of the watcher's
  own, outside the pool: the thread's units may hold every pooled one) whether one of them
  waits for another. If so the waiting statement is cancelled (the driver's cancel request,
  which PgBouncer passes on) and :func:`philont.db.retry.translate` types that cancellation,
  and only that one, as :class:`~philont.errors.NestedWriteError` in that thread
  (:func:`cancelled`). A unit that waits for another thread's or process's transaction is
  left waiting, as before.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.pool import PoolProxiedConnection

from philont.db import fork
from philont.log import get_logger

__all__ = [
    "BACKEND",
    "QUERY_CANCELED",
    "Open",
    "cancelled",
    "closed",
    "opened",
    "watched",
]

log = get_logger(__name__)

BACKEND = "philont_backend"
"""Key of a pooled connection's ``info``: ``(server, pid)`` of the transaction that last set its
agent (``pg_postmaster_start_time()``, ``pg_backend_pid()``; through PgBouncer the server
process changes with the transaction, so it is read in every one)."""

QUERY_CANCELED = "57014"

FIRST_LOOK_S = 0.05
"""How long two units of one thread are open together before the watcher first looks (and
after each unit the thread begins)."""
LONGEST_LOOK_S = 0.5
"""The longest pause between two looks (each pause doubles up to it)."""

_BLOCKED = (
    "SELECT pid FROM unnest(CAST(%(pids)s AS int[])) AS pid"
    " WHERE pg_blocking_pids(pid) && CAST(%(pids)s AS int[])"
)
_TYPED = "philont_nested_write"
"""Key of a driver error's ``__dict__``: the cancellation :func:`cancelled` took for the
watcher's (asked again for the same error: the same answer)."""


@dataclass(eq=False)
class Open:
    """One open unit of work of a thread: its server, its server process, its DB-API
    connection (to cancel the statement that waits) and its engine (to ask the server)."""

    server: object
    pid: int
    dbapi: Any
    engine: Engine


@dataclass(eq=False)
class _Thread:
    """One thread's open units, its watcher, and the unit whose wait the watcher cancelled
    (until its cancellation is typed, or the unit ends)."""

    units: list[Open] = field(default_factory=list)
    watcher: threading.Thread | None = None
    cancelled: Open | None = None
    new: bool = False
    """A unit was listed since the watcher last looked: it looks again soon."""
    lock: fork.Lock = field(default_factory=fork.Lock)


_local = threading.local()


def _forget() -> None:
    """A forked child: the units its parent's thread had open are the parent's (their
    connections too), and it has no watcher."""
    global _local
    _local = threading.local()


os.register_at_fork(after_in_child=_forget)


def _here() -> _Thread:
    state: _Thread | None = getattr(_local, "state", None)
    if state is None:
        state = _local.state = _Thread()
    return state


def opened(info: dict[Any, Any], dbapi: Any, engine: Engine) -> Open | None:
    """List a unit of work whose agent was just set on the connection of ``info`` among the
    calling thread's open ones (None: the server process is not known, nothing listed); watch
    the thread while two or more are open on one server."""
    backend = info.pop(BACKEND, None)
    if backend is None:
        return None
    unit = Open(backend[0], int(backend[1]), dbapi, engine)
    state = _here()
    with state.lock:
        state.cancelled = None  # a new unit: the cancelled statement's error was met by now
        state.units.append(unit)
        state.new = True
        if _watched(state.units) and (state.watcher is None or not state.watcher.is_alive()):
            state.watcher = threading.Thread(
                target=_watch, args=(state,), name="philont-nested-watch", daemon=True
            )
            state.watcher.start()
    return unit


@contextmanager
def watched(conn: Connection) -> Iterator[None]:
    """A transaction of philont's own on ``conn`` that may wait for a lock before it sets an
    agent (an agent's delete, an import: the agent's lock, taken alone) among the calling
    thread's open units while the block runs, when the thread has one open already: one
    statement then (its server process), none otherwise."""
    state: _Thread | None = getattr(_local, "state", None)
    if state is None or not state.units:
        yield
        return
    row = conn.exec_driver_sql("SELECT pg_postmaster_start_time(), pg_backend_pid()").one()
    conn.info[BACKEND] = (row[0], row[1])
    unit = opened(conn.info, conn.connection.dbapi_connection, conn.engine)
    try:
        yield
    except BaseException as exc:
        closed(unit, exc)
        raise
    closed(unit)


def closed(unit: Open | None, exc: BaseException | None = None) -> None:
    """The unit of work ``unit`` (:func:`opened`) ended, with ``exc`` when an error ends it.
    When the watcher cancelled a statement of it that nothing has typed yet, its cancellation
    in ``exc`` (or none: the host caught it) is :func:`cancelled`'s, and no later one is."""
    if unit is None:
        return
    state = _here()
    with state.lock:
        if unit in state.units:
            state.units.remove(unit)
        if state.cancelled is not unit:
            return
        state.cancelled = None
    seen: set[int] = set()
    todo = [] if exc is None else [exc]
    while todo and len(seen) < 16:  # the driver's error, behind SQLAlchemy's or raised from
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if getattr(current, "sqlstate", None) == QUERY_CANCELED:
            current.__dict__[_TYPED] = True
            return
        todo.extend(
            e
            for e in (getattr(current, "orig", None), current.__cause__, current.__context__)
            if isinstance(e, BaseException)
        )


def cancelled(err: BaseException) -> bool:
    """Whether the cancellation ``err`` (a driver's error, SQLSTATE 57014) the calling thread
    met is the watcher's: of a statement that waited for a lock of the thread's own open unit
    of work. The first one the thread meets after the watcher cancelled is (the thread waited
    in that statement until then); it is marked, so that asked again (a service types it,
    then the unit's end) it still is, and any later one (a ``statement_timeout``, a
    ``pg_cancel_backend``) is not."""
    if err.__dict__.get(_TYPED):
        return True
    state: _Thread | None = getattr(_local, "state", None)
    if state is None:
        return False
    with state.lock:
        if state.cancelled is None:
            return False
        state.cancelled = None
    err.__dict__[_TYPED] = True
    return True


def _watched(units: list[Open]) -> list[list[Open]]:
    """The groups of ``units`` on one server that have two or more."""
    groups: dict[object, list[Open]] = {}
    for unit in units:
        groups.setdefault(unit.server, []).append(unit)
    return [group for group in groups.values() if len(group) > 1]


class _Asker:
    """The watcher's own connections, one per server, each made once (by a copy of the
    engine's pool: its way of connecting, outside its connections) and kept until the watcher
    ends: the units it watches may hold every pooled connection."""

    def __init__(self) -> None:
        self._conns: dict[object, PoolProxiedConnection] = {}
        self._warned = False

    def blocked(self, group: list[Open]) -> set[int] | None:
        """The server processes of ``group`` that wait for another of it (None: the server
        could not be asked)."""
        server = group[0].server
        try:
            conn = self._conns.get(server)
            if conn is None:
                conn = self._conns[server] = group[0].engine.pool.recreate().connect()
                conn.dbapi_connection.autocommit = True  # type: ignore[union-attr]
            cursor = conn.cursor()
            try:
                cursor.execute(_BLOCKED, {"pids": [unit.pid for unit in group]})
                return {int(row[0]) for row in cursor.fetchall()}
            finally:
                cursor.close()
        except Exception as exc:  # the server is away: the thread's statement fails on its own
            self._close(server)
            # once per watcher: it asks again every half second at most
            report = log.debug if self._warned else log.warning
            self._warned = True
            report("db.nested_watch_failed", error=type(exc).__name__)
            return None

    def _close(self, server: object) -> None:
        conn = self._conns.pop(server, None)
        if conn is not None:
            try:
                conn.invalidate()  # closed, not kept by the pool's copy
            except Exception as exc:  # pragma: no cover - closing a broken connection
                log.debug("db.nested_watch_close_failed", error=type(exc).__name__)

    def close(self) -> None:
        for server in list(self._conns):
            self._close(server)


def _watch(state: _Thread) -> None:
    """The watcher of one thread (see the module): ends once no two of its units share a
    server."""
    asker = _Asker()
    try:
        pause = FIRST_LOOK_S
        while True:
            time.sleep(pause)
            with state.lock:
                groups = _watched(state.units)
                if not groups:
                    state.watcher = None
                    return
                new, state.new = state.new, False
            pause = FIRST_LOOK_S if new else min(pause * 2, LONGEST_LOOK_S)
            for group in groups:
                _look(state, group, asker)
    finally:
        asker.close()


def _look(state: _Thread, group: list[Open], asker: _Asker) -> None:
    """Cancel the statement of a unit of ``group`` that waits for another unit of it."""
    blocked = asker.blocked(group)
    if not blocked:
        return
    with state.lock:  # still the same units (a server process may serve another one after)
        waiting = [u for u in group if u.pid in blocked and u in state.units]
        if not waiting or not all(u in state.units for u in group):
            return
        state.cancelled = waiting[0]  # before the cancel: its error may be typed at once
    log.warning("db.nested_write", pid=waiting[0].pid)
    try:
        waiting[0].dbapi.cancel_safe()
    except Exception as exc:  # pragma: no cover - the connection went away meanwhile
        log.warning("db.nested_cancel_failed", error=type(exc).__name__)
        with state.lock:  # nothing was cancelled: no cancellation is the watcher's
            if state.cancelled is waiting[0]:
                state.cancelled = None
