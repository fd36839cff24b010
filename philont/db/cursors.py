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

Their cursors (:class:`Cursor`) also read stored TEXT that is not UTF-8 (a hand edit, another
program: ``CAST(x'ff' AS TEXT)``), on which ``sqlite3`` fails ("Could not decode to UTF-8
column ..."), every read of the statement's rows lost: such a row is read again, the bad
bytes as U+FFFD, and reported (docs/stored-values.md). The statement stays on the row it could
not decode, so it is converted again, with a decoding that replaces, and the fetch goes on
with sqlite3's own; nothing is run twice. Every read of an SQLite engine made here (the ORM's,
the lean reads', the async engine's through aiosqlite) fetches through these methods; rows
that decode cost what they did (the C fetch, one Python call per fetch). What was read so is
kept on the connection for its unit of work: a row whose key it is cannot be written (sqlite3
cannot send the stored bytes back as text), and :func:`refuse_undecoded_keys` refuses an
UPDATE or DELETE keyed by it, the ORM's and Core's alike, before it runs, naming the row and
its column (:func:`refuse_unmatched_undecoded`, one written as text, after it ran).
"""

from __future__ import annotations

import re
import sqlite3
import weakref
from collections.abc import Callable
from itertools import islice
from typing import Any, Final

from sqlalchemy import Column, Connection, Engine, event
from sqlalchemy.sql import operators, visitors
from sqlalchemy.sql.elements import BinaryExpression, BindParameter

from philont.db import connections, stored_values
from philont.errors import UnreadableRowError

__all__ = [
    "NOT_UTF8",
    "Cursor",
    "TrackedConnection",
    "close_leftovers",
    "install",
    "mark_refused",
    "read_undecoded",
    "refuse_undecoded_keys",
    "refuse_unmatched_undecoded",
    "refused_read_only",
]

NOT_UTF8: Final = "Could not decode to UTF-8"
"""How ``sqlite3`` says a stored TEXT value is not UTF-8 (it has no error code of its own)."""


class Cursor(connections.Cursor):
    """A ``sqlite3`` cursor whose fetches read a row with text that is not UTF-8 with U+FFFD
    in place of the bad bytes (see the module's docstring), and whose statements mark their
    connection when SQLite refuses a write as read-only (:func:`refused_read_only`); a message
    of SQLite's that is not UTF-8 is a ``DatabaseError`` (:mod:`philont.db.connections`)."""

    def execute(self, *args: Any) -> Any:
        return self._run(sqlite3.Cursor.execute, args)

    def executemany(self, *args: Any) -> Any:
        return self._run(sqlite3.Cursor.executemany, args)

    def executescript(self, *args: Any) -> Any:
        return self._run(sqlite3.Cursor.executescript, args)

    # sqlite3's methods called directly, the conversion of connections.Cursor in their own
    # ``except``: the hot path's statements and fetches cost what they did (no extra call)
    def _run(self, method: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        try:
            return method(self, *args)
        except UnicodeDecodeError as exc:
            raise connections.undecodable(exc) from exc
        except sqlite3.Error as exc:
            if not _is_read_only(exc):
                raise
            mark_refused(self.connection)
            typed = self.refused(exc)
            if typed is None:
                raise
            raise typed from exc

    def refused(self, exc: sqlite3.Error) -> BaseException | None:
        """What a statement SQLite refused as read-only raises instead of ``exc`` (None:
        ``exc`` itself; a read-only Store's cursor types it here)."""
        return None

    def fetchone(self) -> Any:
        try:
            return sqlite3.Cursor.fetchone(self)
        except sqlite3.OperationalError as exc:
            if not _undecodable(self, exc):
                raise
        except UnicodeDecodeError as exc:
            raise connections.undecodable(exc) from exc
        return _replaced(self)

    def fetchmany(self, size: int | None = None) -> list[Any]:
        wanted = self.arraysize if size is None else size
        rows: list[Any] = []
        while True:
            try:
                rows.extend(islice(self, wanted - len(rows)))  # kept when a row fails
                return rows
            except sqlite3.OperationalError as exc:
                if not _undecodable(self, exc):
                    raise
            except UnicodeDecodeError as exc:  # sqlite3's own loop
                raise connections.undecodable(exc) from exc
            rows.append(_replaced(self))

    def fetchall(self) -> list[Any]:
        rows: list[Any] = []
        while True:
            try:
                rows.extend(self)  # the C loop of fetchall; the rows before a failure are kept
                return rows
            except sqlite3.OperationalError as exc:
                if not _undecodable(self, exc):
                    raise
            except UnicodeDecodeError as exc:  # sqlite3's own loop
                raise connections.undecodable(exc) from exc
            rows.append(_replaced(self))


def _undecodable(cur: sqlite3.Cursor, exc: sqlite3.OperationalError) -> bool:
    """Whether ``exc`` is sqlite3's failure to decode a stored text with its own decoding."""
    return str(exc).startswith(NOT_UTF8) and cur.connection.text_factory is str


def _replaced(cur: sqlite3.Cursor) -> Any:
    """The row ``cur`` failed to decode (its statement is still on it), converted again with
    the bad bytes of its text read as U+FFFD, each such value reported; the connection's
    decoding is sqlite3's own again afterwards."""
    bad: list[tuple[bytes, str]] = []
    conn = cur.connection
    conn.text_factory = _replacing(bad)
    try:
        row = sqlite3.Cursor.fetchone(cur)
    finally:
        conn.text_factory = str
    names = [d[0] for d in cur.description or ()]
    for name, value in zip(names, row or (), strict=False):
        for stored, read in bad:
            if value is read:
                stored_values.report(_tables_with(name), name, None, stored, read)
    undecoded = getattr(conn, "undecoded", None)
    if undecoded is not None:
        undecoded.update((read, stored) for stored, read in bad)
    return row


def _replacing(bad: list[tuple[bytes, str]]) -> Callable[[bytes], str]:
    def decode(raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            read = raw.decode("utf-8", "replace")
            bad.append((raw, read))
            return read

    return decode


def _tables_with(column: str) -> str:
    """The tables of ours with a column ``column`` (a statement's result names no table),
    ``|``-joined; ``?`` for a result column no table or more than three tables have (an
    expression, a label, ``id``)."""
    from philont.db.schema import metadata  # the failure path only

    names = sorted(t.name for t in metadata.tables.values() if column in t.c)
    return "|".join(names) if 0 < len(names) <= 3 else "?"


class TrackedConnection(connections.Connection):
    """A ``sqlite3`` connection that remembers its cursors (weakly: a cursor freed is
    forgotten), those of its ``execute``, ``executemany`` and ``executescript`` shortcuts too
    (:class:`~philont.db.connections.Connection`'s make theirs with :meth:`cursor`)."""

    refused_write = False
    """Whether SQLite refused a write on it as read-only (:func:`refused_read_only`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.cursors: weakref.WeakSet[sqlite3.Cursor] = weakref.WeakSet()
        self.undecoded: dict[str, bytes] = {}
        """The text its cursors read with U+FFFD in this unit of work, and the bytes stored
        (:func:`refuse_unmatched_undecoded`)."""

    def cursor(self, factory: Any = Cursor) -> Any:
        cur = super().cursor(factory)
        self.cursors.add(cur)
        return cur


_SQLITE_READONLY = 8


def _is_read_only(exc: sqlite3.Error) -> bool:
    """Whether ``exc`` is SQLite's refusal of a write as read-only (``SQLITE_READONLY`` and
    its extended codes)."""
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF == _SQLITE_READONLY


def mark_refused(dbapi: object) -> None:
    """Note on ``dbapi`` (a :class:`TrackedConnection` or the async adapter around one) that
    SQLite refused a write on it as read-only (:func:`refused_read_only`)."""
    tracked = _tracked(dbapi)
    if isinstance(tracked, TrackedConnection):
        tracked.refused_write = True


def refused_read_only(dbapi: object) -> sqlite3.Connection | None:
    """The ``sqlite3`` connection of ``dbapi`` if SQLite refused a write on it as read-only
    since it was last asked, else None. Every statement of its cursors says so where it fails
    (the ORM's, Core's, the lean writes', a host's on the DB-API connection,
    ``executescript``), whoever types the error later: the engine drops such a connection
    when the pool takes it back (``engine.install_sqlite_hooks``)."""
    tracked = _tracked(dbapi)
    if not isinstance(tracked, TrackedConnection) or not tracked.refused_write:
        return None
    tracked.refused_write = False
    return tracked


def close_leftovers(dbapi: object) -> None:
    """Close the cursors of ``dbapi`` (a :class:`TrackedConnection`, or SQLAlchemy's aiosqlite
    adapter around one) still open, resetting their statements; forget what they read with
    U+FFFD (the unit of work that read it has ended)."""
    tracked = _tracked(dbapi)
    undecoded = getattr(tracked, "undecoded", None)
    if undecoded:
        undecoded.clear()
    cursors = getattr(tracked, "cursors", None)
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


def read_undecoded(conn: Connection, value: str) -> bool:
    """Whether a cursor of ``conn``'s unit of work read ``value`` with U+FFFD (a key stored as
    text that is not UTF-8, which names no row when written back); never on PostgreSQL."""
    undecoded: dict[str, bytes] = (
        getattr(_tracked(conn.connection.dbapi_connection), "undecoded", None) or {}
    )
    return value in undecoded


_WRITE_TARGET = re.compile(
    r'^(?:\s|/\*.*?\*/|--[^\n]*\n)*(?:UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+(?:"?main"?\.)?"?(\w+)',
    re.IGNORECASE | re.DOTALL,
)
"""The table a text UPDATE or DELETE writes (after comments; ``UPDATE OR IGNORE``; ``main.``)."""


def refuse_undecoded_keys(
    conn: Connection, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
) -> None:
    """Before an UPDATE or DELETE compiled from a construct (the ORM's flush, a Core
    ``update()``/``delete()``, with or without RETURNING, run once or with ``executemany``)
    whose WHERE clause compares a column to (or looks it up in a list holding) text a cursor
    of this unit of work read with U+FFFD, where no row stores that text: the text was read
    from a value stored as bytes that are not UTF-8, which the statement cannot match (sqlite3
    cannot send them back as text). Refused with :class:`~philont.errors.UnreadableRowError`
    naming the row and its column (:func:`_keyed_by`) before the statement runs, so nothing of
    it is changed, whatever the host does next; rather than SQLAlchemy's untyped
    ``StaleDataError`` (an ORM update), a warning and nothing deleted (an ORM delete), "not
    found" for a row that exists and an update that never happened (a Core statement), or the
    other keys' rows written alone (``IN (bad, good)``, a flush of several rows). Each key is
    judged alone, whatever the statement's row count. Text a row does store (U+FFFD written
    as such) is a key like any other. The usual statement costs the test of its kind, and of
    the unit of work's undecoded text (empty) for a write."""
    if not (context.isupdate or context.isdelete):
        return
    tracked = getattr(cursor, "connection", None)  # sqlite3's cursor; aiosqlite's adapter's not
    if not isinstance(tracked, TrackedConnection):
        tracked = _tracked(conn.connection.dbapi_connection)
    undecoded = getattr(tracked, "undecoded", None)
    if not undecoded:
        return  # the usual case: nothing read in this unit of work needed U+FFFD
    found = _keyed_by(context, undecoded, tracked)
    if found is not None:
        raise _refusal(found, "the statement was not run: nothing of it was changed")


def refuse_unmatched_undecoded(
    conn: Connection, cursor: Any, statement: str, parameters: Any, context: Any, many: bool
) -> None:
    """After an UPDATE or DELETE written as text (no compiled WHERE clause to name a column
    from: :func:`refuse_undecoded_keys` judges the others) that changed fewer rows than it
    was run for (none; with ``executemany``, fewer than its sets of parameters) while one of
    its parameters is text a cursor of this unit of work read with U+FFFD: refused with
    :class:`~philont.errors.UnreadableRowError` naming the table its text writes. It ran, so
    the message says only that the row keyed by that text was not changed (the rows of its
    other parameters may have been: the unit of work rolls back unless the host commits). A
    statement that returns rows (RETURNING) is not judged: its row count is not known until
    its rows are read, and they tell what it changed. The usual statement costs the test of
    its row count."""
    count = cursor.rowcount
    if count and (not many or count >= len(parameters)):
        return  # a SELECT's is -1; a write that matched what it was run for
    if context.isupdate or context.isdelete or cursor.description is not None:
        return  # compiled: judged before it ran; RETURNING: not known yet
    undecoded = getattr(_tracked(conn.connection.dbapi_connection), "undecoded", None)
    if not undecoded:
        return  # the usual case: nothing read in this unit of work needed U+FFFD
    target = _WRITE_TARGET.match(statement)
    if target is None:
        return
    found = _any_parameter(parameters, many, undecoded, target.group(1))
    if found is not None:
        raise _refusal(found, "that row was not changed")


def _refusal(found: _Found, done: str) -> UnreadableRowError:
    table, column, value, stored = found
    named = f"its stored {column}" if column else "its stored key"
    return UnreadableRowError(
        f"{table} row {value!r}: {named} is not UTF-8 text ({stored!r}, stored by another "
        f"program), so the row cannot be written by it: {done}",
        table=table,
        column=column,
        id=value,
        stored=repr(stored),
    )


_Found = tuple[str, str | None, str, bytes]
"""What a refused write was keyed by: table, column (None: not known), the text read with
U+FFFD, the bytes stored."""

_KEYING: Final = (operators.eq, operators.in_op)
"""The comparisons that key a write by a value: ``=``, ``IN``."""


def _keyed_by(context: Any, undecoded: dict[str, bytes], dbapi: Any) -> _Found | None:
    """The first column of a compiled UPDATE or DELETE whose WHERE clause compares it to (or
    looks it up in a list holding) text read with U+FFFD that no row stores (:func:`_stores`),
    or None. A column that references another table's key (a revision's ``skill_id``: the
    revisions of a skill are deleted before it) is named, and looked up, as that key
    (:func:`_referenced`): the row the write is about, which the caller asked to write."""
    compiled: Any = getattr(context, "compiled", None)
    where = getattr(getattr(compiled, "statement", None), "whereclause", None)
    if where is None:
        return None
    names = compiled.bind_names
    escaped = compiled.escaped_bind_names
    keyed: dict[str, tuple[Column[Any], bool]] = {}
    for element in visitors.iterate(where):
        if not isinstance(element, BinaryExpression) or element.operator not in _KEYING:
            continue
        for column, bind in ((element.left, element.right), (element.right, element.left)):
            if isinstance(column, Column) and isinstance(bind, BindParameter) and bind in names:
                keyed[escaped.get(names[bind], names[bind])] = (column, bind.expanding)
    for params in context.compiled_parameters:
        for name, (column, expanding) in keyed.items():
            for value in _values(params, name) if expanding else (params.get(name),):
                stored = undecoded.get(value) if isinstance(value, str) else None
                if stored is None:
                    continue
                named = _referenced(column)
                if not _stores(dbapi, named, value):
                    return named.table.name, named.name, value, stored
    return None


def _values(params: dict[str, Any], name: str) -> list[Any]:
    """The values of an expanding parameter (``IN``): as the statement ran, ``name_1``,
    ``name_2``, ... (or, not yet expanded, the list itself)."""
    given = params.get(name)
    if isinstance(given, list | tuple):
        return list(given)
    prefix = f"{name}_"
    return [v for k, v in params.items() if k.startswith(prefix) and k[len(prefix) :].isdigit()]


def _stores(dbapi: Any, column: Column[Any], value: str) -> bool:
    """Whether a row of ``column``'s table stores ``value`` in it, as text (U+FFFD written as
    such), read on the unit of work's own connection."""
    cur = dbapi.execute(
        f'SELECT 1 FROM "{column.table.name}" WHERE "{column.name}" = ? LIMIT 1', (value,)
    )
    try:
        return cur.fetchone() is not None
    finally:
        cur.close()


def _referenced(column: Column[Any]) -> Column[Any]:
    """The column ``column`` references when it is a reference and not its own row's key (a
    revision's ``skill_id``: the skill's ``id``), else itself (a recipe's ``skill_id``, its
    key: the recipe's row)."""
    keys = list(column.foreign_keys)
    return keys[0].column if len(keys) == 1 and not column.primary_key else column


def _any_parameter(
    parameters: Any, many: bool, undecoded: dict[str, bytes], table: str
) -> _Found | None:
    """A text statement's: any of its parameters read with U+FFFD (its column not known)."""
    for params in parameters if many else [parameters]:
        for value in params.values() if isinstance(params, dict) else params or ():
            stored = undecoded.get(value) if isinstance(value, str) else None
            if stored is not None:
                return table, None, value, stored
    return None


def install(engine: Engine) -> None:
    """Close a connection's leftover cursors whenever ``engine``'s pool takes it back."""

    def checked_in(dbapi: Any, _record: Any) -> None:
        close_leftovers(dbapi)

    event.listen(engine, "checkin", checked_in)
