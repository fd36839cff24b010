"""The write gate: one process's writers of one SQLite file queue in Python, first come first
served, instead of polling SQLite's lock.

SQLite's busy handler sleeps with growing intervals (1 ms up to 100 ms) and retries the lock:
whoever happens to retry just after the holder commits gets it, so under a crowd of writers a
thread can lose again and again until its busy timeout is spent (``database_busy``), while
others go through. philont's writing units of work (``BEGIN IMMEDIATE`` on a sync engine made
by :func:`philont.db.engine.create_engine`) first take the gate of their file (one per file,
process-wide); they take SQLite's lock only when it is their turn, so it is free unless another
process (or a deferred transaction upgrading) holds it. The gate is waited on for at most the
busy timeout; the time queued is taken off what SQLite's own wait may add, so a unit of work
still waits one busy timeout in all (:func:`philont.db.engine.install_sqlite_hooks`).

The gate belongs to the pooled DB-API connection that took it (its pool record's ``info``)
and is given back when the connection goes back to the pool, after its COMMIT or ROLLBACK
(or when the pool invalidates or closes it): a unit of work cannot leave the block without
giving it back, whatever ended it. A forked child starts with every gate open.

Async engines (aiosqlite) do not use it (waiting on a thread lock would block their event
loop): an :class:`~philont.aio.AsyncStore`'s writing units of work queue at an ``asyncio.Lock``
of their own (FIFO, and given back when a unit is cancelled), :func:`queued`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError

from philont.db.retry import mark_busy

__all__ = ["WriteGate", "gate_for", "give_back", "install", "queued", "take", "too_long"]

_HELD = "philont_write_gate"
"""The key of the gate a pooled connection holds, in its pool record's ``info``."""


class WriteGate:
    """A lock handed to its waiters in the order they came (``threading.Lock`` is not fair)."""

    def __init__(self) -> None:
        self._reset()
        _GATES.add(self)

    def _reset(self) -> None:
        self._mutex = threading.Lock()
        self._held = False
        self._waiters: collections.deque[threading.Event] = collections.deque()

    def acquire(self, timeout: float) -> bool:
        """Take the gate, waiting up to ``timeout`` seconds behind those who came first;
        whether it was taken."""
        with self._mutex:
            if not self._held and not self._waiters:
                self._held = True
                return True
            turn = threading.Event()
            self._waiters.append(turn)
        if turn.wait(max(timeout, 0.0)):
            return True
        with self._mutex:
            if turn.is_set():  # handed over as the wait ended
                return True
            self._waiters.remove(turn)
            return False

    def release(self) -> None:
        """Hand the gate to the first waiter, or open it."""
        with self._mutex:
            if self._waiters:
                self._waiters.popleft().set()  # still held: it is the waiter's now
            else:
                self._held = False


_GATES: weakref.WeakSet[WriteGate] = weakref.WeakSet()
_BY_FILE: dict[str, WriteGate] = {}
_REGISTRY = threading.Lock()


def gate_for(path: Path) -> WriteGate:
    """The process-wide gate of the SQLite file ``path``."""
    key = os.path.realpath(path)
    with _REGISTRY:
        gate = _BY_FILE.get(key)
        if gate is None:
            gate = _BY_FILE[key] = WriteGate()
        return gate


def _after_fork() -> None:
    """A child has only the forking thread: gates held or waited on by others are open."""
    global _REGISTRY
    _REGISTRY = threading.Lock()
    for gate in list(_GATES):
        gate._reset()


os.register_at_fork(after_in_child=_after_fork)


def take(info: dict[Any, Any], gate: WriteGate, timeout_s: float) -> float | None:
    """Take ``gate`` for the pooled connection whose record ``info`` this is (unless it holds
    it already, a second transaction before it went back to the pool): the seconds it waited,
    or None when it was not its turn within ``timeout_s``."""
    if info.get(_HELD) is gate:
        return 0.0
    started = time.monotonic()
    if not gate.acquire(timeout_s):
        return None
    info[_HELD] = gate
    return time.monotonic() - started


def give_back(info: dict[Any, Any]) -> None:
    """Release the gate the connection of ``info`` holds, if any (twice is harmless)."""
    gate = info.pop(_HELD, None)
    if gate is not None:
        gate.release()


def install(engine: Engine) -> None:
    """Give the gate back whenever ``engine``'s pool takes a connection back, after its
    transaction ended (checkin), or invalidates or closes one."""

    def released(_dbapi: Any, record: Any, *_: Any) -> None:
        give_back(record.info)

    for name in ("checkin", "invalidate", "close"):
        event.listen(engine, name, released)


def too_long(timeout_s: float) -> sqlite3.OperationalError:
    """The busy error of a unit of work whose turn at the gate did not come within the busy
    timeout (marked as having waited it all: it is not retried, philont.db.retry)."""
    err = sqlite3.OperationalError(
        "database is locked (this process's other writers of the file held it for the whole "
        "busy timeout)"
    )
    mark_busy(err, timeout_s=timeout_s, waited_s=timeout_s)
    return err


@contextlib.asynccontextmanager
async def queued(gate: asyncio.Lock | None, timeout_s: float) -> AsyncIterator[None]:
    """Hold ``gate`` (an AsyncStore's writing units, first come first served) for the block,
    waiting up to ``timeout_s`` for it; None: no gate. Not its turn in time: the busy error
    SQLite would raise, as SQLAlchemy wraps it."""
    if gate is None:
        yield
        return
    try:
        async with asyncio.timeout(timeout_s):
            await gate.acquire()
    except TimeoutError:
        err = too_long(timeout_s)
        raise DBAPIError.instance("BEGIN IMMEDIATE", (), err, sqlite3.Error) from err
    try:
        yield
    finally:
        gate.release()
