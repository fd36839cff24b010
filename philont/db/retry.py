"""Typed errors for SQLite failures, and bounded retries of a whole unit of work when busy."""

from __future__ import annotations

import random
import sqlite3
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.exc import DBAPIError

from philont.errors import (
    DatabaseBusyError,
    DatabaseCorruptError,
    DatabaseFullError,
    DatabaseReadOnlyError,
    PhilontError,
    StorageError,
)
from philont.log import get_logger

__all__ = ["DEFAULT_ATTEMPTS", "file_error", "run_with_retry", "translate"]

log = get_logger(__name__)

T = TypeVar("T")

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


def _first_known(exc: BaseException) -> tuple[BaseException, int] | None:
    """The first SQLite error we map in ``exc`` and the errors it was raised from.

    Looking behind ``exc`` matters: after SQLITE_FULL or an I/O error SQLite rolls the whole
    transaction back, so the error that surfaces may be the follow-up ``no such savepoint``
    whose ``__context__`` is the real cause.
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
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def translate(exc: BaseException, *, path: str | None = None) -> PhilontError | None:
    """The typed philont error for a storage failure, or None when ``exc`` is not one we map.

    Accepts SQLAlchemy ``DBAPIError``s (``OperationalError`` and friends) and raw ``sqlite3``
    errors, also when they are the cause or context of ``exc``. Locked/busy ->
    :class:`DatabaseBusyError`; full disk or page limit -> :class:`DatabaseFullError`;
    read-only -> :class:`DatabaseReadOnlyError` (naming ``path``); disk I/O error ->
    :class:`StorageError`. A ``PhilontError`` is returned unchanged. The caller raises the
    result ``from exc`` so the original stays attached as the cause.
    """
    if isinstance(exc, PhilontError):
        return exc
    found = _first_known(exc)
    if found is None:
        return None
    err, kind = found
    detail = str(err)
    where = path or _UNNAMED
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
    """The SQLite message behind ``exc`` (looking through a typed error to its cause)."""
    if isinstance(exc, PhilontError) and exc.__cause__ is not None:
        exc = exc.__cause__
    return str(_driver_error(exc))


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` means another connection holds the lock (worth retrying)."""
    return isinstance(translate(exc), DatabaseBusyError)


def run_with_retry(
    fn: Callable[[], T],
    *,
    attempts: int = DEFAULT_ATTEMPTS,
    base_delay: float = 0.05,
    max_delay: float = 1.0,
) -> T:
    """Call ``fn`` and return its result, calling it again when the database was busy.

    ``fn`` must be a whole unit of work that opens (and commits or rolls back) its own
    transaction, e.g. ``with Memory(engine) as mem: ...``: a busy failure rolled it back, so
    running it again cannot apply anything twice. Between attempts it sleeps a jittered
    exponential backoff (``base_delay * 2**n``, capped at ``max_delay``, times 0.5..1), on top
    of the ``busy_timeout`` SQLite already waited. Other exceptions propagate unchanged at
    once. After ``attempts`` busy failures it raises :class:`DatabaseBusyError` naming the
    attempts and the time spent, with the last failure as its cause.
    """
    if attempts < 1:
        raise ValueError(f"attempts must be at least 1, got {attempts}")
    started = time.monotonic()
    for attempt in range(1, attempts + 1):
        try:
            return fn()
        except Exception as exc:
            if not is_busy(exc):
                raise
            if attempt == attempts:
                elapsed = time.monotonic() - started
                raise DatabaseBusyError(
                    f"the memory database stayed locked by another connection: gave up after "
                    f"{attempts} attempt{'s' if attempts != 1 else ''} in {elapsed:.1f} s "
                    f"({_root_detail(exc)})",
                    attempts=attempts,
                    elapsed_s=round(elapsed, 3),
                ) from exc
            delay = min(max_delay, base_delay * 2 ** (attempt - 1)) * random.uniform(0.5, 1.0)
            log.info("db.busy_retry", attempt=attempt, of=attempts, delay_s=round(delay, 3))
            time.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover
