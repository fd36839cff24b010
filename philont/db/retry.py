"""Typed errors for storage failures, and bounded retries of a whole unit of work.

SQLite: a lock held past the busy timeout, a full disk, a read-only file, an I/O error.
PostgreSQL: a transaction ended because of a concurrent one (a deadlock, a serialization
failure, a lock not granted within ``lock_timeout``), :class:`TransactionConflictError`. Both
a busy SQLite file and a PostgreSQL conflict rolled the unit of work back, so running it again
(:func:`run_with_retry`) cannot apply anything twice.
"""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TypeVar

from sqlalchemy.exc import DBAPIError

from philont.errors import (
    DatabaseBusyError,
    DatabaseCorruptError,
    DatabaseFullError,
    DatabaseReadOnlyError,
    PhilontError,
    StorageError,
    TransactionConflictError,
)
from philont.log import get_logger

__all__ = [
    "DEFAULT_ATTEMPTS",
    "PG_CONFLICTS",
    "backoff",
    "file_error",
    "gave_up",
    "is_busy",
    "retryable",
    "run_unit",
    "run_with_retry",
    "translate",
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

_BUSY_MESSAGES = ("database is locked", "database table is locked", "database schema is locked")
_FULL_MESSAGES = ("database or disk is full",)
_READONLY_MESSAGES = ("attempt to write a readonly database", "readonly database")
_IOERR_MESSAGES = ("disk i/o error",)
_SQLITE_CORRUPT = 11
_SQLITE_NOTADB = 26
_CORRUPT_MESSAGES = (
    "database disk image is malformed",
    "file is not a database",
    "unsupported file format",  # a schema format number SQLite does not know (a bad header)
)

_UNNAMED = "the memory database"

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
        err = _driver_error(current)
        if isinstance(err, sqlite3.Error):
            kind = _kind(err)
            if kind is not None:
                return err, kind
        sqlstate = _pg_conflict(err)
        if sqlstate is not None:
            return err, sqlstate
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def _conflict(err: BaseException, sqlstate: str, where: str) -> TransactionConflictError:
    reason = PG_CONFLICTS[sqlstate]
    first_line = str(err).strip().splitlines()[0] if str(err).strip() else reason
    return TransactionConflictError(
        f"{where}: {reason}, SQLSTATE {sqlstate} ({first_line}); the transaction was rolled"
        " back and nothing of it was kept: run the unit of work again",
        sqlstate=sqlstate,
        reason=first_line,
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
        return _conflict(err, kind, where)
    if kind in (_SQLITE_BUSY, _SQLITE_LOCKED):
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
    damaged = isinstance(code, int) and code & 0xFF in (_SQLITE_CORRUPT, _SQLITE_NOTADB)
    if damaged or any(m in str(err).lower() for m in _CORRUPT_MESSAGES):
        return DatabaseCorruptError(path, str(err))
    return None


def _root_detail(exc: BaseException) -> str:
    """The driver's message behind ``exc`` (looking through a typed error to its cause), its
    first line (PostgreSQL's go on with the processes of a deadlock)."""
    if isinstance(exc, PhilontError) and exc.__cause__ is not None:
        exc = exc.__cause__
    text = str(_driver_error(exc)).strip()
    return text.splitlines()[0] if text else type(exc).__name__


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


def gave_up(
    last: DatabaseBusyError, exc: BaseException, attempts: int, elapsed: float
) -> Exception:
    """The error :func:`run_with_retry` raises after ``attempts`` retryable failures, of the
    last one's kind (raise it ``from exc``, the last failure)."""
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
    return DatabaseBusyError(
        f"the memory database stayed locked by another connection: {tries} ({_root_detail(exc)})",
        **spent,
    )


def run_with_retry(
    fn: Callable[[], T],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = 0.05,
    max_delay: float = 1.0,
) -> T:
    """Call ``fn`` and return its result, calling it again when the database was busy (SQLite)
    or its transaction conflicted with a concurrent one (PostgreSQL: a deadlock, a
    serialization failure, a lock timeout).

    ``fn`` must be a whole unit of work that opens (and commits or rolls back) its own
    transaction, e.g. ``with store.begin() as mem: ...``: such a failure rolled it back, so
    running it again cannot apply anything twice (what ``fn`` does besides the database, a
    model call, is done again). Between attempts it sleeps a jittered exponential backoff
    (:func:`backoff`), on top of the ``busy_timeout`` SQLite already waited, and logs the retry
    (``db.retry``: the error's code, the attempt, the delay). Other exceptions propagate
    unchanged at once. After ``attempts`` such failures it raises the last one's kind,
    :class:`DatabaseBusyError` or :class:`TransactionConflictError`, naming the attempts and
    the time spent, with the last failure as its cause.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:
            typed = retryable(exc)
            if typed is None:
                raise
            if attempt == attempts:
                raise gave_up(typed, exc, attempts, time.monotonic() - started) from exc
            delay = backoff(attempt, base_delay=base_delay, max_delay=max_delay)
            log.info(
                "db.retry",
                code=typed.code,
                attempt=attempt,
                of=attempts,
                delay_s=round(delay, 3),
                reason=_root_detail(exc)[:200],
            )
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


def run_unit(
    begin: Callable[..., AbstractContextManager[U]],
    work: Callable[[U], T],
    *,
    write: bool = True,
    attempts: int = DEFAULT_ATTEMPTS,
) -> T:
    """``work(mem)`` in the unit of work ``begin(write=write)`` begins (``store.begin``, a
    consolidator's ``units``), and its result, under :func:`run_with_retry`: a unit that was
    busy or conflicted is rolled back and ``work`` runs again in a new one."""

    def once() -> T:
        with begin(write=write) as mem:
            return work(mem)

    return run_with_retry(once, attempts=attempts)
