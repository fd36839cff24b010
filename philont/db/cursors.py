"""No statement outlives its unit of work on a SQLite connection.

A result left half-read when its unit of work ends (an exception raised inside a loop over
rows and kept, a result a caller holds on to) keeps its statement active on the pooled
connection. Python's ``sqlite3`` does not reset statements on COMMIT or ROLLBACK (3.11), so
the connection goes back to the pool still holding the read snapshot of that statement:

* the next unit of work on that connection reads that old snapshot (a stale read: another
  connection's commit is not seen), and a writing one fails with "database is locked" at once,
  whatever the busy timeout, until the statement is freed;
* a statement that failed busy and is kept by a traceback stays active too, and is freed
  whenever the garbage collector gets to it, in whichever thread runs it: ``sqlite3_reset``
  then waits for the connection's mutex, which another thread may hold while it waits for a
  lock the collecting thread holds (the stall :class:`philont.db.backend.Raw` closes its own
  cursors against).

So every SQLite connection :func:`philont.db.engine.create_engine` makes is a
:class:`TrackedConnection` that knows its cursors, and the pool of a file's engine closes
those still open when it takes the connection back (the unit of work has ended, committed or
rolled back): their statements are reset by the thread that used them. (An in-memory
database has one connection, shared, and is not closed behind its users.) The async engine's
connections are :class:`TrackedConnection` too, under aiosqlite: a ``yield_per`` (server-side)
result left half-read held its statement there alike. Being a Python class, a
:class:`TrackedConnection` also carries attributes (``philont.db.vectors`` marks on it whether
sqlite-vec loaded). A result read after its unit of work ended fails with "Cannot operate on
a closed cursor" instead of reading a snapshot of the past.
"""

from __future__ import annotations

import sqlite3
import weakref
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["TrackedConnection", "close_leftovers", "install"]


class TrackedConnection(sqlite3.Connection):
    """A ``sqlite3`` connection that remembers its cursors (weakly: a cursor freed is
    forgotten), those of its ``execute`` and ``executemany`` shortcuts too (in C they make
    theirs without calling :meth:`cursor`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursors: weakref.WeakSet[sqlite3.Cursor] = weakref.WeakSet()

    def cursor(self, *args: Any, **kwargs: Any) -> Any:
        cur = super().cursor(*args, **kwargs)
        self.cursors.add(cur)
        return cur

    def execute(self, *args: Any) -> Any:
        return _run(self.cursor(), "execute", args)

    def executemany(self, *args: Any) -> Any:
        return _run(self.cursor(), "executemany", args)


def _run(cur: sqlite3.Cursor, method: str, args: tuple[Any, ...]) -> Any:
    """``cur.<method>(*args)``; a cursor whose statement failed is closed at once (a traceback
    that keeps it would keep a busy statement active)."""
    try:
        return getattr(cur, method)(*args)
    except BaseException:
        cur.close()
        raise


def close_leftovers(dbapi: object) -> None:
    """Close the cursors of ``dbapi`` (a :class:`TrackedConnection`, or SQLAlchemy's aiosqlite
    adapter around one) still open, resetting their statements."""
    cursors = getattr(_tracked(dbapi), "cursors", None)
    if not cursors:
        return
    left = list(cursors)
    cursors.clear()
    for cur in left:
        cur.close()


def _tracked(dbapi: object) -> object:
    """The ``sqlite3`` connection of ``dbapi``: itself, or the one under an async driver's
    adapter (aiosqlite keeps it as ``_conn`` and uses it from its own thread; the async engine
    makes it with ``check_same_thread=False``, so that its cursors can be closed at checkin,
    when that thread has nothing of it left to run)."""
    if isinstance(dbapi, TrackedConnection):
        return dbapi
    driver = getattr(dbapi, "driver_connection", None)
    try:
        return getattr(driver, "_conn", None)
    except ValueError:  # aiosqlite: closed already
        return None


def install(engine: Engine) -> None:
    """Close a connection's leftover cursors whenever ``engine``'s pool takes it back."""

    def checked_in(dbapi: Any, _record: Any) -> None:
        close_leftovers(dbapi)

    event.listen(engine, "checkin", checked_in)
