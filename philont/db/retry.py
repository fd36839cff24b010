"""Typed errors for storage failures, and bounded retries of a whole unit of work.

SQLite: a lock held past the busy timeout, a full disk, a read-only file, an I/O error.
PostgreSQL: a transaction ended because of a concurrent one (a deadlock, a serialization
failure, a lock not granted within ``lock_timeout``), :class:`TransactionConflictError`. Both
a busy SQLite file and a PostgreSQL conflict rolled the unit of work back, so running it again
(:func:`run_with_retry`) cannot apply anything twice.

:class:`RetryPolicy` is the one place that decides whether a failed unit of work runs again.
It retries what a retry can cure: a PostgreSQL conflict, and an SQLite busy that came back
without SQLite waiting out its busy timeout (a deferred transaction that read and then wants
to write while another connection writes, or wrote meanwhile: SQLite refuses that at once,
without calling its busy handler). A busy after SQLite already waited the whole busy timeout
(another connection held the lock all along) is given up at once: a retry would wait as long
again, so a locked file costs one busy timeout, not one per attempt. SQLite's own codes cannot
tell the two apart (both are plain ``SQLITE_BUSY``; only a stale snapshot is
``SQLITE_BUSY_SNAPSHOT``), so the wait is measured: the engine's hooks record on the error how
long its BEGIN waited and the connection's busy timeout (:func:`mark_busy`), and otherwise the
attempt's own time bounds the wait.
"""

from __future__ import annotations

import os
import random
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from philont import filewrite, settings
from philont.arguments import sync_result
from philont.db import nesting
from philont.errors import (
    DatabaseBusyError,
    DatabaseCorruptError,
    DatabaseFullError,
    DatabasePathError,
    DatabaseReadOnlyError,
    NestedWriteError,
    PhilontError,
    PoolTimeoutError,
    StorageError,
    TransactionConflictError,
)
from philont.log import get_logger

__all__ = [
    "DEFAULT_ATTEMPTS",
    "NOT_SHOWN",
    "PG_CONFLICTS",
    "RetryPolicy",
    "SqliteWait",
    "backoff",
    "database_error_of",
    "database_failure",
    "database_reason",
    "edge_failure",
    "file_error",
    "for_the_log",
    "gave_up",
    "is_busy",
    "is_database_error",
    "is_driver_error",
    "is_duplicate",
    "mark_busy",
    "refusal",
    "refused_kind",
    "retryable",
    "run_unit",
    "run_with_retry",
    "shm_cannot_be_made",
    "translate",
    "typed_errors",
    "typed_from",
    "unlogged",
]

log = get_logger(__name__)

T = TypeVar("T")
U = TypeVar("U")

DEFAULT_ATTEMPTS = 5

# Primary result codes (the low byte of an extended code such as SQLITE_BUSY_SNAPSHOT = 517).
_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_SQLITE_READONLY = 8
_SQLITE_IOERR = 10
_SQLITE_FULL = 13
_SQLITE_BUSY_SNAPSHOT = 517  # a stale read snapshot wants to write: SQLite refuses at once

_WAITED_S = "philont_waited_s"
_TIMEOUT_S = "philont_busy_timeout_s"
WAITED_OUT = 0.9
"""A busy SQLite statement waited out the busy timeout when it waited this share of it (SQLite's
busy handler sleeps until the whole timeout has passed; the margin is the clock's)."""

_BUSY_MESSAGES = ("database is locked", "database table is locked", "database schema is locked")
_FULL_MESSAGES = ("database or disk is full",)
_READONLY_MESSAGES = ("attempt to write a readonly database", "readonly database")
_IOERR_MESSAGES = ("disk i/o error",)
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_SQLITE_CANTOPEN = 14
_CORRUPT_MESSAGES = (
    "database disk image is malformed",
    "file is not a database",
    "unsupported file format",  # a schema format number SQLite does not know (a bad header)
)

_UNNAMED = "the memory database"
NOT_SHOWN = "the database's message is logged, not shown: it can hold the statement's values"
"""Said in place of a database's message (SQLAlchemy's holds the statement and its bound
parameters, a driver's the values it refused)."""
_POOL = -1
"""The kind :func:`_first_known` gives SQLAlchemy's pool timeout (no connection came free)."""
_NESTED = -2
"""The kind it gives a statement the watcher of :mod:`philont.db.nesting` cancelled: it waited
for a lock of its own thread's other open unit of work."""

# PostgreSQL's SQLSTATEs of a transaction ended for a concurrent one's sake (retryable).
PG_CONFLICTS = {
    "40P01": "deadlock detected (two transactions waited for each other's locks)",
    "40001": "serialization failure (a concurrent transaction changed what this one read)",
    "55P03": "lock not available (not granted within lock_timeout)",
}


def _driver_error(exc: BaseException) -> BaseException:
    """The DB-API exception behind a SQLAlchemy wrapper (or ``exc`` itself)."""
    if isinstance(exc, DBAPIError) and isinstance(exc.orig, BaseException):
        return exc.orig
    return exc


def _kind(err: BaseException) -> int | None:
    """The primary SQLite result code of ``err``, from its error code or else its message."""
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (
        _SQLITE_BUSY,
        _SQLITE_LOCKED,
        _SQLITE_READONLY,
        _SQLITE_IOERR,
        _SQLITE_FULL,
    ):
        return code & 0xFF
    text = str(err).lower()
    for messages, kind in (
        (_BUSY_MESSAGES, _SQLITE_BUSY),
        (_FULL_MESSAGES, _SQLITE_FULL),
        (_READONLY_MESSAGES, _SQLITE_READONLY),
        (_IOERR_MESSAGES, _SQLITE_IOERR),
    ):
        if any(m in text for m in messages):
            return kind
    return None


def _pg_conflict(err: BaseException) -> str | None:
    """The SQLSTATE of a PostgreSQL driver error that is a conflict we map (psycopg's
    ``sqlstate``, psycopg2's ``pgcode``), else None."""
    for attribute in ("sqlstate", "pgcode"):
        code = getattr(err, attribute, None)
        if isinstance(code, str) and code in PG_CONFLICTS:
            return code
    return None


def _first_known(exc: BaseException) -> tuple[BaseException, int | str] | None:
    """The first storage error we map in ``exc`` and the errors it was raised from, with its
    kind: SQLite's primary result code (an int) or a PostgreSQL SQLSTATE of
    :data:`PG_CONFLICTS` (a str).

    Looking behind ``exc`` matters: after SQLITE_FULL or an I/O error SQLite rolls the whole
    transaction back, so the error that surfaces may be the follow-up ``no such savepoint``
    whose ``__context__`` is the real cause; after a deadlock PostgreSQL's next statement in
    the transaction fails with "current transaction is aborted", raised while handling it.
    """
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 16:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, PoolTimeout):
            return current, _POOL
        err = _driver_error(current)
        if isinstance(err, sqlite3.Error):
            kind = _kind(err)
            if kind is not None:
                return err, kind
        sqlstate = _pg_conflict(err)
        if sqlstate is not None:
            return err, sqlstate
        if getattr(err, "sqlstate", None) == nesting.QUERY_CANCELED and nesting.cancelled(err):
            return err, _NESTED
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def _conflict(sqlstate: str, where: str) -> TransactionConflictError:
    """Named by its SQLSTATE, never by the driver's text (a host's trigger that raised it may
    have put the row's values there; the log has it at debug)."""
    reason = PG_CONFLICTS[sqlstate]
    return TransactionConflictError(
        f"{where}: {reason}, SQLSTATE {sqlstate}; the transaction was rolled back and nothing"
        " of it was kept: run the unit of work again",
        sqlstate=sqlstate,
        reason=reason,
    )


def translate(exc: BaseException, *, path: str | None = None) -> PhilontError | None:
    """The typed philont error for a storage failure, or None when ``exc`` is not one we map.

    Accepts SQLAlchemy ``DBAPIError``s (``OperationalError`` and friends), raw ``sqlite3``
    errors and PostgreSQL driver errors, also when they are the cause or context of ``exc``.
    Locked/busy -> :class:`DatabaseBusyError`; a PostgreSQL deadlock, serialization failure or
    lock timeout -> :class:`TransactionConflictError` (a ``DatabaseBusyError``); full disk or
    page limit -> :class:`DatabaseFullError`; read-only -> :class:`DatabaseReadOnlyError`
    (naming ``path``); disk I/O error -> :class:`StorageError`. A ``PhilontError`` is returned
    unchanged. The caller raises the result ``from exc`` so the original stays attached as the
    cause.
    """
    if isinstance(exc, PhilontError):
        return exc
    found = _first_known(exc)
    if found is None:
        return None
    err, kind = found
    detail = str(err)
    where = path or _UNNAMED
    if isinstance(kind, str):
        return _conflict(kind, where)
    if kind == _NESTED:
        return NestedWriteError()  # it waited for a lock of this thread's own open unit
    if kind == _POOL:
        return PoolTimeoutError(
            f"{where}: every connection of the Store's pool stayed in use by other units of "
            f"work of this process for the pool's whole timeout ({detail}); run fewer units of "
            "work at once or hold each for less time, or try again later",
            path=path,
            pool=detail,
        )
    if kind in (_SQLITE_BUSY, _SQLITE_LOCKED):
        from philont.db.write_gate import held_here  # it imports this module

        if path is not None and held_here(path):
            return NestedWriteError()  # the lock is this thread's own, in an open unit of work
        return DatabaseBusyError(
            f"{where} is locked by another connection ({detail}); try again later",
            path=path,
            sqlite_error=detail,
        )
    if kind == _SQLITE_FULL:
        return DatabaseFullError(
            f"{where} is full (the disk or its page limit): {detail}; nothing of this write "
            "was kept",
            path=path,
            sqlite_error=detail,
        )
    if kind == _SQLITE_READONLY:
        return DatabaseReadOnlyError(where, f"SQLite refused the write ({detail})")
    if kind == _SQLITE_IOERR:
        return StorageError(
            f"{where} could not be read or written ({detail})", path=path, sqlite_error=detail
        )
    return None


def is_database_error(exc: BaseException) -> bool:
    """Whether ``exc`` is an error of SQLAlchemy or of a database driver (sqlite3, psycopg,
    aiosqlite), whose text can hold a statement and its bound parameters (users' text)."""
    if isinstance(exc, sqlite3.Error):
        return True
    module = type(exc).__module__
    return module.startswith(("sqlalchemy.", "psycopg", "aiosqlite")) and not isinstance(
        exc, PhilontError
    )


def database_failure(exc: BaseException, *, where: str | None = None) -> PhilontError | None:
    """What a caller (a tool's result, the MCP server, the command line, a report) is told of
    the database error ``exc``: :func:`translate`'s typed error, else a :class:`StorageError`
    naming the kind of failure, what the database refused (:func:`refusal`: a constraint by
    its name) and the database (``where``, as :func:`philont.db.engine.database_name` names
    it) — never ``exc``'s text: SQLAlchemy's
    holds the statement and its bound parameters, a driver's the values it refused (users'
    facts and messages). The full error is for the log only. None when ``exc`` is no database
    error (:func:`is_database_error`)."""
    typed = translate(exc, path=where)
    if typed is not None or not is_database_error(exc):
        return typed
    return StorageError(f"{where or _UNNAMED} failed: {_unshown(exc)}", kind=type(exc).__name__)


def _unshown(exc: BaseException) -> str:
    """A database error by its kind and what it refused (:func:`refusal`), not its text."""
    refused = refusal(exc)
    return f"{type(exc).__name__} ({f'{refused}; ' if refused else ''}{NOT_SHOWN})"


def database_reason(exc: BaseException) -> str | None:
    """What a message says of the database error ``exc`` in place of its text (a failed
    upgrade's): :func:`translate`'s typed message (a lock, a full disk: no values), else its
    kind and what the database refused (:func:`refusal`), and that its message is logged, not
    shown. None when ``exc`` is no database error (:func:`is_database_error`)."""
    typed = translate(exc)
    if typed is not None:
        return typed.message
    return _unshown(exc) if is_database_error(exc) else None


# What a database's refusal of a row violated, by kind: SQLite's extended result codes and
# PostgreSQL's SQLSTATEs (class 23, integrity constraint violation).
_SQLITE_REFUSALS = {
    "SQLITE_CONSTRAINT_UNIQUE": "unique",
    "SQLITE_CONSTRAINT_PRIMARYKEY": "primary key",
    "SQLITE_CONSTRAINT_NOTNULL": "not null",
    "SQLITE_CONSTRAINT_CHECK": "check",
    "SQLITE_CONSTRAINT_FOREIGNKEY": "foreign key",
    "SQLITE_CONSTRAINT_TRIGGER": "trigger",
}
_PG_REFUSALS = {
    "23505": "unique",
    "23502": "not null",
    "23514": "check",
    "23503": "foreign key",
    "23P01": "exclusion",
    "23001": "restrict",
}
_SCHEMA_NAMES = re.compile(r"[\w.]+(, [\w.]+)*")
"""What SQLite names after "constraint failed:" that is shown: ``table.column`` lists and
constraint names (a CHECK without a name is its expression, which is not shown)."""


def refusal(exc: BaseException) -> str | None:
    """What the database's refusal ``exc`` of a statement violated, in the schema's names only:
    the kind of constraint (unique, not null, check, foreign key, ...) and its name or columns,
    or the kind of value a column's type refused — never the database's message, which holds
    the refused values (PostgreSQL's DETAIL "Failing row contains (...)", "Key (name)=(...)",
    "invalid input syntax for type integer: ..."). None when ``exc`` is no such refusal (a
    driver's error that is no integrity or data error, or no database error at all)."""
    err = _driver_error(exc)
    if isinstance(err, sqlite3.Error):
        if not isinstance(err, sqlite3.IntegrityError | sqlite3.DataError):
            return None
        code = _sqlite_code(err)
        kind = _SQLITE_REFUSALS.get(code)
        if kind is None:
            what = "a constraint" if code.startswith("SQLITE_CONSTRAINT") else "a value"
            return f"{what} the table refuses ({code})"
        named = str(err).partition("constraint failed: ")[2]
        return f"{kind} constraint" + (f" ({named})" if _SCHEMA_NAMES.fullmatch(named) else "")
    if not type(err).__module__.startswith("psycopg") or not isinstance(err, Exception):
        return None
    sqlstate = getattr(err, "sqlstate", None)
    diag = getattr(err, "diag", None)
    kind = _PG_REFUSALS.get(sqlstate or "")
    if kind is not None:
        names = [
            f"{what} {name!r}"
            for what, name in (
                ("table", getattr(diag, "table_name", None)),
                ("constraint", getattr(diag, "constraint_name", None)),
                ("column", getattr(diag, "column_name", None)),
            )
            if name
        ]
        return f"{kind} constraint" + (f" ({', '.join(names)})" if names else "")
    code = f", SQLSTATE {sqlstate}" if sqlstate else ""
    if any(c.__name__ == "DataError" for c in type(err).__mro__):  # SQLSTATE class 22
        return f"a value the column's type refuses ({type(err).__name__}{code})"
    if isinstance(sqlstate, str) and sqlstate.startswith("P0"):  # a trigger's RAISE EXCEPTION
        return f"an error a trigger or function raised ({type(err).__name__}{code})"
    return None


def _sqlite_code(err: sqlite3.Error) -> str:
    return str(getattr(err, "sqlite_errorname", type(err).__name__))


def refused_kind(exc: BaseException) -> str | None:
    """The kind of constraint the database's refusal ``exc`` of a row violated, as
    :func:`refusal` names it first (``"unique"``, ``"primary key"``, ``"not null"``,
    ``"check"``, ``"foreign key"``, ``"trigger"``, ...), by SQLite's extended result code or
    PostgreSQL's SQLSTATE; None for anything else (a value a column's type refused, a
    trigger's own error, no database error)."""
    err = _driver_error(exc)
    if isinstance(err, sqlite3.IntegrityError):
        return _SQLITE_REFUSALS.get(_sqlite_code(err))
    if type(err).__module__.startswith("psycopg"):
        return _PG_REFUSALS.get(str(getattr(err, "sqlstate", None) or ""))
    return None


def is_duplicate(exc: BaseException, table: str, *columns: str) -> bool:
    """Whether ``exc`` is the database's refusal of a row of ``table`` because another row
    holds its key over ``columns`` (a unique or primary key violation of that very key,
    :func:`refused_kind`): the one integrity error that means "already exists". A host's
    trigger, a check, a not-null, a foreign key, or another unique key (a host's own table
    written by its trigger) is not. Told by SQLite's ``table.column`` list, or PostgreSQL's
    table and constraint name (the layout's ``UNIQUE (agent_id, ...)``, as PostgreSQL names
    it: :mod:`philont.db.pg_layout`)."""
    if refused_kind(exc) not in ("unique", "primary key"):
        return False
    err = _driver_error(exc)
    if isinstance(err, sqlite3.Error):
        named = str(err).partition("constraint failed: ")[2]
        return named.split(", ") == [f"{table}.{column}" for column in columns]
    from philont.db.pg_layout import AGENT_COLUMN  # (the PostgreSQL layout, when it is one)

    diag = getattr(err, "diag", None)
    key = "_".join((table, AGENT_COLUMN, *columns, "key"))[:63]  # NAMEDATALEN - 1
    return (
        getattr(diag, "table_name", None) == table and getattr(diag, "constraint_name", None) == key
    )


def is_driver_error(exc: BaseException) -> bool:
    """Whether ``exc`` is a statement's failure reported by a database driver (raised by it,
    or wrapped by SQLAlchemy as a ``DBAPIError``), not an error of SQLAlchemy itself."""
    if isinstance(exc, DBAPIError | sqlite3.Error):
        return True
    return type(exc).__module__.startswith("psycopg") and isinstance(exc, Exception)


def for_the_log(exc: BaseException) -> StorageError | None:
    """A statement the database refused (a driver's error) that :func:`translate` does not
    map, as a warning of the log reports it (:meth:`philont.log.Logger.failure`): its kind and
    what it refused (:func:`refusal`), never the driver's message (PostgreSQL's first line
    can hold the value: ``invalid input syntax for type integer: "..."``), which the same
    event's ``.traceback`` has at debug; None for an error of SQLAlchemy itself (a bug:
    logged with its traceback)."""
    if not is_driver_error(exc):
        return None
    refused = refusal(exc)
    return StorageError(
        f"the memory database failed: {type(exc).__name__}" + (f" ({refused})" if refused else "")
    )


def edge_failure(
    exc: BaseException, event: str | None, *, where: str | None = None
) -> PhilontError | None:
    """What a driver's error (:func:`is_driver_error`) leaves a public entry point as:
    :func:`translate`'s typed error, else a :class:`StorageError` naming its kind and what it
    refused (as :func:`database_failure`), never its text, logged first as ``event``
    (:meth:`philont.log.Logger.failure`); None for anything else (a typed error included).
    With no ``event`` it is left to whoever reports it to log (:func:`unlogged`): a service's
    method types its error for the caller, who may handle it, or report it (a tool's result,
    the unit of work's end)."""
    if isinstance(exc, PhilontError) or not is_driver_error(exc):
        return None
    typed = translate(exc, path=where)
    if typed is None:
        typed = StorageError(
            f"{where or _UNNAMED} failed: {_unshown(exc)}", kind=type(exc).__name__
        )
        if event is None:
            typed.__dict__[_UNLOGGED] = exc
        else:
            log.failure(event, exc)
    return typed


_UNLOGGED = "philont_unlogged"
_TYPED_FROM = "philont_typed_from"


def typed_from(typed: PhilontError, exc: BaseException) -> PhilontError:
    """``typed``, marked as the typed error a service's method raised for the database error
    ``exc`` (:func:`database_error_of`)."""
    typed.__dict__[_TYPED_FROM] = exc
    return typed


def database_error_of(exc: BaseException) -> BaseException | None:
    """The database error ``exc`` stands for: ``exc`` itself when it is one (SQLAlchemy's or
    a driver's, :func:`is_database_error`), the one a service's method typed as ``exc``
    (:func:`typed_from`), else None (a typed error of philont's own: a conflict, a refusal)."""
    if isinstance(exc, PhilontError):
        found = exc.__dict__.get(_TYPED_FROM)
        return found if isinstance(found, BaseException) else None
    return exc if is_database_error(exc) else None


def unlogged(exc: BaseException) -> BaseException | None:
    """The database error behind ``exc`` when ``exc`` is a :class:`StorageError` for a refusal
    philont does not map that nobody has logged yet (:func:`edge_failure` with no event), for
    the caller that reports ``exc`` to log; asked once: then it counts as logged."""
    found = exc.__dict__.pop(_UNLOGGED, None) if isinstance(exc, PhilontError) else None
    return found if isinstance(found, BaseException) else None


@contextmanager
def typed_errors(event: str, *, where: str | None = None) -> Iterator[None]:
    """The edge of a public entry point: a driver's error raised in the block leaves it as
    :func:`edge_failure`'s, raised from it; anything else passes unchanged."""
    try:
        yield
    except Exception as exc:
        typed = edge_failure(exc, event, where=where)
        if typed is None:
            raise
        raise typed from exc


def file_error(exc: BaseException, *, path: str) -> PhilontError | None:
    """:func:`translate`, and a damaged file (``SQLITE_CORRUPT``, ``SQLITE_NOTADB``, a schema
    format SQLite cannot read) as :class:`DatabaseCorruptError` naming ``path``; None for
    anything else. A lock is never taken for damage: a file another connection holds is
    :class:`DatabaseBusyError`."""
    typed = translate(exc, path=path)
    if typed is not None:
        return typed
    err = _driver_error(exc)
    code = getattr(err, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF == _SQLITE_CANTOPEN and os.path.exists(path):
        return cannot_open(Path(path), str(err))
    damaged = isinstance(code, int) and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    if damaged or any(m in str(err).lower() for m in _CORRUPT_MESSAGES):
        return DatabaseCorruptError(path, str(err))
    return None


def cannot_open(path: Path, detail: str) -> PhilontError:
    """Why SQLite cannot open (``SQLITE_CANTOPEN``) the existing database file ``path``: what it
    needs beside it cannot be made. A WAL-mode file is read through its ``-shm`` file (and
    written through ``-wal``), which SQLite creates beside it when missing: in a directory
    that is not writable (a read-only mount, another user's folder) that is
    :class:`DatabaseReadOnlyError` saying so; anything else :class:`DatabasePathError` with
    SQLite's reason. Never a damaged database."""
    if shm_cannot_be_made(path):
        shm = f"{path.name}-shm"
        return DatabaseReadOnlyError(
            str(path),
            f"its directory is not writable, and SQLite must create {shm!r} there to "
            "open a database in WAL mode; make the directory writable, or copy the database "
            "(with its -wal file, if there is one) into a writable one",
        )
    return DatabasePathError(str(path), f"SQLite cannot open it or the files beside it ({detail})")


def shm_cannot_be_made(path: Path) -> bool:
    """Whether SQLite, to read the WAL-mode file ``path``, would have to create its ``-shm``
    file and cannot: there is none, and the directory is not writable (a read-only mount,
    another user's folder). The one answer :func:`cannot_open` and
    :func:`philont.db.engine.connect_read_only` act on."""
    return not Path(f"{path}-shm").exists() and not filewrite.may(path.parent, os.W_OK)


def _root_detail(exc: BaseException) -> str:
    """What made ``exc`` retryable, in words that hold no value: a PostgreSQL conflict by its
    SQLSTATE (:data:`PG_CONFLICTS`; its text may be a host trigger's, holding the row), an
    SQLite busy by SQLite's own fixed message ("database is locked")."""
    found = _first_known(exc)
    if found is None:
        return type(exc).__name__
    err, kind = found
    if isinstance(kind, str):
        return f"{PG_CONFLICTS[kind]}, SQLSTATE {kind}"
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def retryable(exc: BaseException) -> DatabaseBusyError | None:
    """The typed error of ``exc`` when running its unit of work again may succeed: a busy
    SQLite file (:class:`DatabaseBusyError`) or a PostgreSQL conflict
    (:class:`TransactionConflictError`); None for anything else."""
    typed = translate(exc)
    return typed if isinstance(typed, DatabaseBusyError) else None


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` means the unit of work may succeed when run again (:func:`retryable`)."""
    return retryable(exc) is not None


def backoff(attempt: int, *, base_delay: float = 0.05, max_delay: float = 1.0) -> float:
    """Seconds to wait after the ``attempt``-th failure: ``base_delay * 2**(attempt-1)``,
    capped at ``max_delay``, times a random 0.5..1 (so that two units that conflicted do not
    meet again at once)."""
    return min(max_delay, base_delay * 2.0 ** (attempt - 1)) * random.uniform(0.5, 1.0)


def mark_busy(err: BaseException, *, timeout_s: float, waited_s: float | None = None) -> None:
    """Record on an SQLite error its connection's busy timeout and, when it was measured, how
    long the failing statement waited (the engine's hooks do, philont.db.engine); what
    :class:`RetryPolicy` reads to tell a lock waited out from a busy returned at once."""
    setattr(err, _TIMEOUT_S, timeout_s)
    if waited_s is not None:
        setattr(err, _WAITED_S, waited_s)


class SqliteWait(NamedTuple):
    """An SQLite busy that came after SQLite waited out its busy timeout."""

    waited_s: float
    timeout_s: float


def sqlite_wait(exc: BaseException, attempt_s: float) -> SqliteWait | None:
    """How long SQLite waited for the lock before ``exc``, when that was its whole busy timeout;
    None when ``exc`` is no SQLite busy, or one that came back without waiting it out
    (``SQLITE_BUSY_SNAPSHOT``, or measured shorter): a retry can cure those. The wait is the
    one :func:`mark_busy` recorded, else ``attempt_s`` (the attempt's time bounds it); the
    timeout is the recorded one, else ``settings.BUSY_TIMEOUT_MS``."""
    found = _first_known(exc)
    if found is None or not isinstance(found[0], sqlite3.Error):
        return None
    err, kind = found
    if kind not in (_SQLITE_BUSY, _SQLITE_LOCKED):
        return None
    if getattr(err, "sqlite_errorcode", None) == _SQLITE_BUSY_SNAPSHOT:
        return None
    timeout = getattr(err, _TIMEOUT_S, None)
    timeout_s = settings.BUSY_TIMEOUT_MS / 1000 if not isinstance(timeout, int | float) else timeout
    waited = getattr(err, _WAITED_S, None)
    waited_s = attempt_s if not isinstance(waited, int | float) else waited
    return SqliteWait(waited_s, timeout_s) if waited_s >= timeout_s * WAITED_OUT else None


def gave_up(
    last: DatabaseBusyError,
    exc: BaseException,
    attempts: int,
    elapsed: float,
    waited: SqliteWait | None = None,
) -> Exception:
    """The error :func:`run_with_retry` raises after ``attempts`` retryable failures, of the
    last one's kind (raise it ``from exc``, the last failure); ``waited``: the last one was an
    SQLite busy after SQLite waited out its busy timeout, which is why it was not retried."""
    tries = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s"
    spent = {"attempts": attempts, "elapsed_s": round(elapsed, 3)}
    if isinstance(last, TransactionConflictError):
        return TransactionConflictError(
            f"the memory database: every attempt of the unit of work conflicted with a "
            f"concurrent transaction and was rolled back; {tries} ({_root_detail(exc)})",
            sqlstate=last.details.get("sqlstate"),
            reason=last.details.get("reason"),
            **spent,
        )
    if waited is not None:
        return DatabaseBusyError(
            f"the memory database stayed locked by another connection: SQLite waited "
            f"{waited.waited_s:.1f} s for the lock, its whole busy timeout "
            f"({waited.timeout_s:.1f} s), so a retry would only wait as long again; {tries} "
            f"({_root_detail(exc)})",
            waited_s=round(waited.waited_s, 3),
            busy_timeout_s=waited.timeout_s,
            **spent,
        )
    return DatabaseBusyError(
        f"the memory database stayed locked by another connection: {tries} ({_root_detail(exc)})",
        **spent,
    )


@dataclass(frozen=True)
class RetryPolicy:
    """Whether and when a failed unit of work runs again: the one place that decides, for
    every caller (``tools.call``, the MCP server, ``Store.run``, the consolidator, the command
    line, ``AsyncStore``).

    Retried, at most ``attempts`` times in all, after a jittered exponential backoff
    (:func:`backoff`): a PostgreSQL conflict, and an SQLite busy that came back without SQLite
    waiting out its busy timeout (:func:`sqlite_wait`). Given up at once: an SQLite busy after
    SQLite waited its whole busy timeout (running the unit again would wait as long again).
    Anything else is not a database's to retry."""

    attempts: int = DEFAULT_ATTEMPTS
    base_delay: float = 0.05
    max_delay: float = 1.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")

    def decide(
        self, exc: BaseException, *, attempt: int, attempt_s: float, total_s: float
    ) -> float | Exception | None:
        """After the ``attempt``-th attempt failed with ``exc`` (that attempt took
        ``attempt_s``, all of them ``total_s``): the seconds to sleep before the next attempt;
        or the error to give up with (raise it ``from exc``); or None when ``exc`` is not
        retryable at all (re-raise it unchanged). Logs the retry (``db.retry``)."""
        typed = retryable(exc)
        if typed is None:
            return None
        if isinstance(typed, PoolTimeoutError):
            return typed  # it waited the pool's whole timeout: a retry would wait as long
        waited = (
            None if isinstance(typed, TransactionConflictError) else sqlite_wait(exc, attempt_s)
        )
        if waited is not None or attempt >= self.attempts:
            return gave_up(typed, exc, attempt, total_s, waited)
        delay = backoff(attempt, base_delay=self.base_delay, max_delay=self.max_delay)
        log.info(
            "db.retry",
            code=typed.code,
            attempt=attempt,
            of=self.attempts,
            delay_s=round(delay, 3),
            reason=_root_detail(exc)[:200],
        )
        return delay


def run_with_retry(
    fn: Callable[[], T],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = 0.05,
    max_delay: float = 1.0,
) -> T:
    """Call ``fn`` and return its result, calling it again as :class:`RetryPolicy` decides:
    when its transaction conflicted with a concurrent one (PostgreSQL: a deadlock, a
    serialization failure, a lock timeout) or SQLite reported busy without waiting out its
    busy timeout (a deferred transaction that read and then wrote while another connection
    wrote); a busy after SQLite waited its whole busy timeout is given up at once.

    ``fn`` must be a whole unit of work that opens (and commits or rolls back) its own
    transaction, e.g. ``with store.begin() as mem: ...``: such a failure rolled it back, so
    running it again cannot apply anything twice (what ``fn`` does besides the database, a
    model call, is done again). Between attempts it sleeps a jittered exponential backoff
    (:func:`backoff`) and logs the retry (``db.retry``). Other exceptions propagate unchanged
    at once. Giving up raises the last failure's kind, :class:`DatabaseBusyError` (naming how
    long SQLite waited) or :class:`TransactionConflictError`, naming the attempts and the time
    spent, with the last failure as its cause.
    """
    policy = RetryPolicy(attempts, base_delay, max_delay)
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        began = time.monotonic()
        try:
            return fn()
        except Exception as exc:
            now = time.monotonic()
            verdict = policy.decide(
                exc, attempt=attempt, attempt_s=now - began, total_s=now - started
            )
            if verdict is None:
                raise
            if isinstance(verdict, Exception):
                raise verdict from exc
            time.sleep(verdict)


def run_unit(
    begin: Callable[..., AbstractContextManager[U]],
    work: Callable[[U], T],
    *,
    write: bool = True,
    attempts: int = DEFAULT_ATTEMPTS,
) -> T:
    """``work(mem)`` in the unit of work ``begin(write=write)`` begins (``store.begin``, a
    consolidator's ``units``), and its result, under :func:`run_with_retry`: a unit that was
    busy or conflicted is rolled back and ``work`` runs again in a new one. From the first
    busy on it begins with ``write=True``: SQLite refuses at once, without waiting, to turn a
    deferred transaction that has read into a writing one while another connection writes, so
    the next attempt takes the lock up front and waits its turn like every writer."""
    write_now = [write]

    def once() -> T:
        try:
            with begin(write=write_now[0]) as mem:
                return sync_result("work", work(mem))
        except Exception as exc:
            if is_busy(exc):
                write_now[0] = True
            raise

    return run_with_retry(once, attempts=attempts)
