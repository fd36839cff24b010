"""A pooled connection is used only by the process that opened it.

A process that forks (``multiprocessing``'s default on Linux, a pre-forking server such as
gunicorn ``--preload``, celery's prefork pool) hands its children copies of every pooled
connection. A child that used one shared the parent's PostgreSQL socket: both sides' messages
interleaved, and parent and children failed with "the connection is lost" or a transaction in a
state nobody began. SQLite's documentation forbids carrying a connection across ``fork()`` as
well (its locks are per process).

So after a fork, in the child, every pool of an engine philont made gets a new, empty pool
(the same settings and listeners, as ``Engine.dispose(close=False)`` does): the child opens
connections of its own on first use. The parent's connections are kept, never closed or
used, for the life of the child: closing a copy could end the parent's session (a
PostgreSQL driver may say goodbye on the socket). A Store opened before the fork goes on
working in both processes. An in-memory SQLite database is the child's own copy and keeps its
connection. An engine a host made and gave to ``Store.from_engine`` is the host's to reset
(SQLAlchemy's recipe: ``engine.dispose(close=False)`` in the child).

Every thread lock philont holds is a :class:`Lock` of this module, for the same reason: a child
has only the thread that forked, so a lock another thread held at that moment would stay held
in the child for ever, and the child's first use of it (opening a Store, a schema check, a
checkpoint) would hang. A child gets each of them unlocked.
"""

from __future__ import annotations

import os
import threading
import weakref
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy import Engine

__all__ = ["Lock", "renew_after_fork"]

_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()
_KEPT: list[Any] = []
"""The parent's pools, in a child: referenced so their connections are never closed here."""


def renew_after_fork(engine: Engine) -> None:
    """Give ``engine`` a new pool in every child forked from now on."""
    _ENGINES.add(engine)


class Lock:
    """A ``threading.Lock`` (``RLock`` with ``reentrant=True``) that a forked child gets
    unlocked, whichever thread of the parent held it."""

    def __init__(self, *, reentrant: bool = False) -> None:
        self._reentrant = reentrant
        self._lock = self._new()
        _LOCKS.add(self)

    def _new(self) -> Any:
        return threading.RLock() if self._reentrant else threading.Lock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        return bool(self._lock.acquire(blocking, timeout))

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()


_LOCKS: weakref.WeakSet[Lock] = weakref.WeakSet()


def _after_fork() -> None:
    for lock in list(_LOCKS):
        lock._lock = lock._new()
    for engine in list(_ENGINES):
        old = engine.pool
        _KEPT.append(old)
        engine.pool = old.recreate()


os.register_at_fork(after_in_child=_after_fork)
