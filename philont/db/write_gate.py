"""The write gate: one process's writers of one SQLite file queue in Python, first come first
served, instead of polling SQLite's lock.

SQLite's busy handler sleeps with growing intervals (1 ms up to 100 ms) and retries the lock:
whoever happens to retry just after the holder commits gets it, so under a crowd of writers a
thread can lose again and again until its busy timeout is spent (``database_busy``), while
others go through. philont's writing units of work (``BEGIN IMMEDIATE`` on a sync engine made
by :func:`philont.db.engine.create_engine`) first take the gate of their file (one per file,
process-wide); they take SQLite's lock only when it is their turn, so it is free unless another
process (or a deferred transaction upgrading) holds it. The gate is waited on for as long as
the queue moves (its holders finish transactions); once nothing finished for the busy timeout
it is given up, and a BEGIN's own wait in SQLite is what is left of the busy timeout since the
queue last moved: so a file another process keeps locked still fails after about one busy
timeout, behind the gate or not (:func:`philont.db.engine.install_sqlite_hooks`).

The gate belongs to the pooled DB-API connection that took it (its pool record's ``info``)
and is given back when the connection goes back to the pool, after its COMMIT or ROLLBACK
(or when the pool invalidates or closes it): a unit of work cannot leave the block without
giving it back, whatever ended it. A forked child starts with every gate open, and what the
parent's connections held is not the child's to hold or give back (:data:`_HELD`).

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
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.exc import DBAPIError

from philont.db import fork
from philont.db.retry import is_busy, mark_busy
from philont.errors import NestedWriteError

__all__ = [
    "AsyncWriteGate",
    "WriteGate",
    "gate_for",
    "give_back",
    "held_here",
    "install",
    "queued",
    "take",
    "too_long",
]

_HELD = "philont_write_gate"
"""The key of the gate a pooled connection holds, in its pool record's ``info``, with the process
that took it: a forked child has copies of the parent's records (a unit of work the forking
thread was inside), and a copy neither holds the child's gate (it waits its turn like any
other) nor gives it back when its connection goes back to the pool (the child's gate may be
another holder's by then: it would be open twice)."""


class WriteGate:
    """A lock handed to its waiters in the order they came (``threading.Lock`` is not fair)."""

    def __init__(self) -> None:
        self._mutex = fork.Lock()
        """Guards the holder, the queue and ``moved_at``; a forked child gets it unlocked
        (:mod:`philont.db.fork`)."""
        self._open()
        _GATES.add(self)

    def _open(self) -> None:
        """Nobody holds the gate, nobody waits: a new gate, or a forked child's (run where only
        the forking thread is left, outside every method of the gate: no mutex to take)."""
        self._held = False
        self._holder: int | None = None
        """The thread that took the gate (:func:`threading.get_ident`), while it is held."""
        self._waiters: collections.deque[tuple[threading.Event, int]] = collections.deque()
        self._on_loop: collections.Counter[int] = collections.Counter()
        """Per thread, the AsyncStore writing units of work open on the file in its event loop
        (:func:`queued`): their connections hold SQLite's lock, which only that loop, blocked
        by a sync writer waiting for it, can give back."""
        self.moved_at = time.monotonic()
        """When a holder last gave the gate back after a transaction (not after a failed
        BEGIN): while that keeps happening the queue moves, and its waiters wait on."""

    def acquire(self, timeout: float) -> bool:
        """Take the gate, waiting behind those who came first for as long as the queue moves:
        whether it was taken; False once no holder finished a transaction for ``timeout``
        seconds since this waiter came (its holder is waiting out another process's lock)."""
        me = threading.get_ident()
        with self._mutex:
            if not self._held and not self._waiters:
                self._held, self._holder = True, me
                return True
            turn = threading.Event()
            self._waiters.append((turn, me))
        came = time.monotonic()
        while True:
            with self._mutex:
                left = max(self.moved_at, came) + timeout - time.monotonic()
            if turn.wait(max(left, 0.0)):
                return True
            with self._mutex:
                if turn.is_set():  # handed over as the wait ended
                    return True
                if max(self.moved_at, came) + timeout > time.monotonic():
                    continue  # the queue moved meanwhile
                self._waiters.remove((turn, me))
                return False

    def held_here(self, *, loop: bool = True) -> bool:
        """Whether the calling thread took the gate (or was handed it) and holds it still, or
        (``loop``) runs the event loop of an AsyncStore's writing unit of work open on the file."""
        me = threading.get_ident()
        with self._mutex:
            return (self._held and self._holder == me) or (loop and self._on_loop[me] > 0)

    @contextlib.contextmanager
    def on_loop(self) -> Iterator[None]:
        """Mark the calling thread (an event loop's) as having an AsyncStore's writing unit of
        work open on the file for the block."""
        me = threading.get_ident()
        with self._mutex:
            self._on_loop[me] += 1
        try:
            yield
        finally:
            with self._mutex:
                self._on_loop[me] -= 1
                if self._on_loop[me] <= 0:
                    del self._on_loop[me]

    def release(self, *, moved: bool = True) -> None:
        """Hand the gate to the first waiter, or open it; ``moved``: after a transaction (the
        queue moves), not after a BEGIN that failed."""
        with self._mutex:
            if moved:
                self.moved_at = time.monotonic()
            if self._waiters:
                turn, self._holder = self._waiters.popleft()
                turn.set()  # still held: it is the waiter's now
            else:
                self._held, self._holder = False, None


_GATES: weakref.WeakSet[WriteGate] = weakref.WeakSet()
_BY_FILE: dict[str, WriteGate] = {}
_REGISTRY = fork.Lock()


def gate_for(path: Path) -> WriteGate:
    """The process-wide gate of the SQLite file ``path``."""
    key = os.path.realpath(path)
    with _REGISTRY:
        gate = _BY_FILE.get(key)
        if gate is None:
            gate = _BY_FILE[key] = WriteGate()
        return gate


def held_here(path: str | os.PathLike[str]) -> bool:
    """Whether the calling thread holds the gate of the SQLite file ``path`` (the write lock of
    an open writing unit of work of its own)."""
    with _REGISTRY:
        gate = _BY_FILE.get(os.path.realpath(path))
    return gate is not None and gate.held_here(loop=False)


def _after_fork() -> None:
    """A child has only the forking thread: gates held or waited on by others are open."""
    for gate in list(_GATES):
        gate._open()


os.register_at_fork(after_in_child=_after_fork)


def take(info: dict[Any, Any], gate: WriteGate, timeout_s: float) -> float | None:
    """Take ``gate`` for the pooled connection whose record ``info`` this is (unless it holds
    it already, a second transaction before it went back to the pool): the seconds since the
    queue last moved (what SQLite's own wait may add is the rest of the busy timeout), or None
    when the queue did not move for ``timeout_s``. :class:`~philont.errors.NestedWriteError`
    at once when another connection of this thread holds it (a writing unit of work begun inside
    this thread's own): that holder could never give it back while this thread waited."""
    came = time.monotonic()
    if info.get(_HELD) != (gate, os.getpid()):
        if gate.held_here():
            raise NestedWriteError()
        if not gate.acquire(timeout_s):
            return None
        info[_HELD] = (gate, os.getpid())
    return time.monotonic() - max(gate.moved_at, came)


def give_back(info: dict[Any, Any], *, moved: bool = True) -> None:
    """Release the gate the connection of ``info`` holds, if any (twice is harmless);
    ``moved``: after a transaction, not after a BEGIN that failed."""
    held = info.pop(_HELD, None)
    if held is not None and held[1] == os.getpid():
        held[0].release(moved=moved)


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


class AsyncWriteGate:
    """An AsyncStore's gate: ``asyncio.Lock`` (first come, first served) and when a holder
    last finished a transaction (:attr:`WriteGate.moved_at`); ``file``: the file's sync gate,
    told while a holder's unit of work is open (a sync writer begun then in the loop's thread
    is refused with :class:`~philont.errors.NestedWriteError`, :meth:`WriteGate.on_loop`)."""

    def __init__(self, file: WriteGate | None = None) -> None:
        self.lock = asyncio.Lock()
        self.moved_at = time.monotonic()
        self.file = file


async def _acquire(gate: AsyncWriteGate, timeout_s: float) -> bool:
    """Take ``gate`` keeping this waiter's place in the queue, for as long as the queue moves
    (as :meth:`WriteGate.acquire`). Cancelled, or given up: the place is given back, and the
    gate too if it came meanwhile."""
    came = time.monotonic()
    turn = asyncio.ensure_future(gate.lock.acquire())
    try:
        while True:
            left = max(gate.moved_at, came) + timeout_s - time.monotonic()
            done, _ = await asyncio.wait({turn}, timeout=max(left, 0.0))
            if done:
                return True
            if max(gate.moved_at, came) + timeout_s <= time.monotonic():
                break
    except BaseException:
        _abandon(gate, turn)
        raise
    _abandon(gate, turn)
    return False


def _abandon(gate: AsyncWriteGate, turn: asyncio.Future[Any]) -> None:
    if turn.done() and not turn.cancelled() and turn.exception() is None:
        gate.lock.release()
    else:
        turn.cancel()


@contextlib.asynccontextmanager
async def queued(gate: AsyncWriteGate | None, timeout_s: float) -> AsyncIterator[None]:
    """Hold ``gate`` (an AsyncStore's writing units, first come first served) for the block,
    waiting while the queue moves; None: no gate. Nothing finished for ``timeout_s``: the busy
    error SQLite would raise, as SQLAlchemy wraps it."""
    if gate is None:
        yield
        return
    if not await _acquire(gate, timeout_s):
        err = too_long(timeout_s)
        raise DBAPIError.instance("BEGIN IMMEDIATE", (), err, sqlite3.Error) from err
    moved = False
    try:
        with contextlib.nullcontext() if gate.file is None else gate.file.on_loop():
            yield
        moved = True
    except BaseException as exc:
        moved = not is_busy(exc)  # a unit that could not begin did not move the queue
        raise
    finally:
        if moved:
            gate.moved_at = time.monotonic()
        gate.lock.release()
