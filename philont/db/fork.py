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
"""

from __future__ import annotations

import os
import weakref
from typing import Any

from sqlalchemy import Engine

__all__ = ["renew_after_fork"]

_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()
_KEPT: list[Any] = []
"""The parent's pools, in a child: referenced so their connections are never closed here."""


def renew_after_fork(engine: Engine) -> None:
    """Give ``engine`` a new pool in every child forked from now on."""
    _ENGINES.add(engine)


def _after_fork() -> None:
    for engine in list(_ENGINES):
        old = engine.pool
        _KEPT.append(old)
        engine.pool = old.recreate()


os.register_at_fork(after_in_child=_after_fork)
