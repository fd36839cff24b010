"""Every ``sqlite3`` connection philont opens is made here (:func:`connect`), as a
:class:`Connection` (or a subclass: the engines' :class:`philont.db.cursors.TrackedConnection`)
whose cursors are :class:`Cursor`.

A damaged file's SQLite message quotes its bytes (a table's name in ``malformed database
schema (...)``), and when they are not UTF-8 Python's ``sqlite3`` raises ``UnicodeDecodeError``
decoding the message instead of the ``DatabaseError`` (CPython 3.11-3.13). No ``except
sqlite3.DatabaseError`` saw it: a backup's verification, an upgrade's look at the file, the
integrity check, ``philont stats`` fell through to the caller's last resort ("failed:
UnicodeDecodeError") or a traceback. The methods that run SQLite here raise it as what SQLite
reported: :func:`undecodable`'s ``DatabaseError`` (``SQLITE_CORRUPT``, the bytes that are not
UTF-8 replaced), so every handler of ``sqlite3.DatabaseError`` gets it as it gets the same
damage with a name that is UTF-8. ``tests/integration/test_undecodable_messages.py`` checks
that no ``sqlite3.connect`` in philont bypasses :func:`connect`.

The conversion is an ``except`` clause of a method that is a Python call already (the engines'
cursors are Python subclasses for their own sake), free until it fires. What is not wrapped
cannot raise such a message:

* Iterating a cursor (``for row in cursor``, sqlite3's own C loop: a Python ``__next__`` would
  cost a call per row). SQLite reads the schema, and quotes its names, when it prepares a
  statement, or prepares it again at its first step (``execute``, wrapped) after another
  connection changed the schema; from then on the statement holds its read transaction (its
  snapshot in WAL, a shared lock that keeps writers out otherwise), so the schema cannot change
  under its later steps, whose failures (a damaged page, I/O, an interrupt) are SQLite's fixed
  texts. ``tests/integration/test_undecodable_messages.py`` damages the schema from another
  connection in the middle of an iteration.
* ``iterdump`` runs its statements through :meth:`Connection.cursor` (a :class:`Cursor`).
* ``deserialize`` reads no schema (a statement after it does, wrapped).
* ``serialize``, ``create_function``, ``create_aggregate``, ``create_window_function``,
  ``set_authorizer`` and ``enable_load_extension`` raise texts of sqlite3's own (``unable to
  serialize 'main'``), not SQLite's message; ``create_collation`` fails only with SQLite's
  fixed text about active statements; setting ``isolation_level`` runs SQLite (a ``COMMIT``)
  only inside a transaction, which philont never has open when it sets it (as a connection
  opens). ``load_extension`` may quote the loader's message: its one caller
  (:mod:`philont.db.vectors`) takes any error as the reason sqlite-vec is unavailable.

``blobopen`` raises SQLite's message (its table not found: ``SQLITE_ERROR``), and is wrapped.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from typing import Any

__all__ = ["Connection", "Cursor", "connect", "undecodable"]


_REPORTED = {
    sqlite3.SQLITE_CORRUPT: ("SQLITE_CORRUPT", sqlite3.DatabaseError),
    sqlite3.SQLITE_ERROR: ("SQLITE_ERROR", sqlite3.OperationalError),
}


def undecodable(
    exc: UnicodeDecodeError, code: int = sqlite3.SQLITE_CORRUPT
) -> sqlite3.DatabaseError:
    """The error SQLite reported that ``sqlite3`` failed to decode (``exc``), as ``sqlite3``
    raises that error ``code`` (``SQLITE_CORRUPT``: a statement on a file that holds bytes that
    are not UTF-8 where SQLite keeps names; ``SQLITE_ERROR``, a ``DatabaseError`` subclass:
    ``blobopen``'s) with its text, the bytes that are not UTF-8 replaced."""
    raw = exc.object
    text = bytes(raw).decode("utf-8", "replace") if isinstance(raw, bytes | bytearray) else str(exc)
    name, kind = _REPORTED[code]
    err = kind(text)
    err.sqlite_errorcode = code
    err.sqlite_errorname = name
    return err


def _decoded(method: Callable[..., Any], code: int = sqlite3.SQLITE_CORRUPT) -> Callable[..., Any]:
    """``method``, raising a ``UnicodeDecodeError`` of sqlite3's as :func:`undecodable`'s
    error ``code``."""

    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except UnicodeDecodeError as exc:
            raise undecodable(exc, code) from exc

    call.__name__ = method.__name__
    call.__doc__ = method.__doc__
    return call


class Cursor(sqlite3.Cursor):
    """A ``sqlite3`` cursor whose statements and fetches raise an SQLite message that is not
    UTF-8 as a ``DatabaseError`` (:func:`undecodable`)."""

    execute = _decoded(sqlite3.Cursor.execute)
    executemany = _decoded(sqlite3.Cursor.executemany)
    executescript = _decoded(sqlite3.Cursor.executescript)
    fetchone = _decoded(sqlite3.Cursor.fetchone)
    fetchmany = _decoded(sqlite3.Cursor.fetchmany)
    fetchall = _decoded(sqlite3.Cursor.fetchall)


class Connection(sqlite3.Connection):
    """A ``sqlite3`` connection whose cursors are :class:`Cursor` (those of its ``execute``
    shortcuts too: in C they run their cursor's C method, not its class's) and whose commit,
    rollback, backup, close and ``blobopen`` raise an SQLite message that is not UTF-8 as the
    error SQLite reported (:func:`undecodable`)."""

    def cursor(self, factory: Any = Cursor) -> Any:
        return super().cursor(factory)

    def execute(self, *args: Any) -> Any:
        return _run(self.cursor(), "execute", args)

    def executemany(self, *args: Any) -> Any:
        return _run(self.cursor(), "executemany", args)

    def executescript(self, *args: Any) -> Any:
        return _run(self.cursor(), "executescript", args)

    commit = _decoded(sqlite3.Connection.commit)
    rollback = _decoded(sqlite3.Connection.rollback)
    backup = _decoded(sqlite3.Connection.backup)
    close = _decoded(sqlite3.Connection.close)
    blobopen = _decoded(sqlite3.Connection.blobopen, sqlite3.SQLITE_ERROR)


def _run(cur: sqlite3.Cursor, method: str, args: tuple[Any, ...]) -> Any:
    """``cur.<method>(*args)``; a cursor whose statement failed is closed at once, as sqlite3's
    own shortcut drops it: a traceback that keeps it would keep its statement active (a busy
    one, or a lock the closed connection holds until the statement is freed)."""
    try:
        return getattr(cur, method)(*args)
    except BaseException:
        cur.close()
        raise


def connect(
    database: str | os.PathLike[str], *, factory: type[Connection] = Connection, **kwargs: Any
) -> Connection:
    """``sqlite3.connect(database, factory=factory, **kwargs)``: the one place philont opens
    an ``sqlite3`` connection (SQLAlchemy's pysqlite and aiosqlite open theirs with
    ``factory`` a :class:`Connection` too)."""
    try:
        conn = sqlite3.connect(database, factory=factory, **kwargs)
    except UnicodeDecodeError as exc:
        raise undecodable(exc) from exc
    assert isinstance(conn, Connection)
    return conn
