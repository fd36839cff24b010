"""The arguments of the entry points that open a database or begin a unit of work
(``Store.open`` / ``from_engine`` / ``begin`` / ``run`` / ``join``, ``AsyncStore``'s,
``create_async_engine``, ``Memory.open``, ``shared()``, ``philont.migrate``, ``philont.agents``,
``Learner``, ``Consolidator``, ``philont.embed.backfill``), checked on entry as a service
checks its own (:class:`philont.services.base.Service`): a value of the wrong kind is an
:class:`~philont.errors.InvalidInputError` whose message starts with the argument's name and
whose ``details["argument"]`` is that name, before anything is opened or begun. Without these
checks ``Store.open(5)`` made a file named ``5``, ``busy_timeout_ms=-1`` switched SQLite's
busy handler off, ``write="no"`` began a writing unit (truthy) and ``store.run(5)`` failed
with ``TypeError: 'int' object is not callable``."""

from __future__ import annotations

import os
from typing import NoReturn

from sqlalchemy.engine import URL

from philont.errors import InvalidInputError

__all__ = [
    "MAX_BUSY_TIMEOUT_MS",
    "check_attempts",
    "check_busy_timeout",
    "check_embedder",
    "check_flag",
    "check_function",
    "check_instance",
    "check_target",
    "check_text",
]

MAX_BUSY_TIMEOUT_MS = 2**31 - 1
"""The longest busy timeout SQLite takes (its ``sqlite3_busy_timeout`` is a C ``int``)."""

MAX_ATTEMPTS = 100
"""The most attempts ``run`` makes of a unit of work."""


def _refuse(name: str, what: str) -> NoReturn:
    raise InvalidInputError(f"{name}: {what}", argument=name)


def _kind(value: object) -> str:
    return type(value).__name__


def check_target(value: object, name: str = "target") -> None:
    """A database: a path (text or ``os.PathLike``), a SQLAlchemy ``URL``, or None (the
    default database). What the text says is :func:`philont.db.engine.resolve_url`'s to
    check."""
    if value is None or isinstance(value, str | URL):
        return
    if isinstance(value, os.PathLike) and isinstance(os.fspath(value), str):
        return
    _refuse(name, f"must be a path (text or pathlib.Path), a URL or None, got {_kind(value)}")


def check_flag(value: object, name: str) -> None:
    """True or False, never a truthy stand-in (``"no"`` is not False)."""
    if not isinstance(value, bool):
        _refuse(name, f"must be True or False, got {value!r}")


def check_text(value: object, name: str) -> None:
    """Text or None (a name such as ``agent``; its rule is the caller's)."""
    if value is not None and not isinstance(value, str):
        _refuse(name, f"must be text or None, got {_kind(value)}")


def _whole(value: object, name: str, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        _refuse(name, f"must be a whole number, got {value!r}")
    if not low <= value <= high:
        _refuse(name, f"must be {low}..{high}, got {value}")


def check_busy_timeout(value: object, name: str = "busy_timeout_ms") -> None:
    """None (the default, 5 s) or milliseconds 0..2**31-1."""
    if value is not None:
        _whole(value, name, 0, MAX_BUSY_TIMEOUT_MS)


def check_attempts(value: object, name: str = "attempts") -> None:
    """How many times a unit of work may run: 1..:data:`MAX_ATTEMPTS`."""
    _whole(value, name, 1, MAX_ATTEMPTS)


def check_function(value: object, name: str, *, optional: bool = False) -> None:
    """Something to call (``work(mem)``, a clock); None too where ``optional``."""
    if value is None and optional:
        return
    if not callable(value):
        _refuse(name, f"must be callable, got {_kind(value)}")


def check_instance(value: object, kinds: type | tuple[type, ...], name: str) -> None:
    """An instance of ``kinds`` (an engine, a Session or Connection)."""
    if not isinstance(value, kinds):
        wanted = kinds if isinstance(kinds, tuple) else (kinds,)
        _refuse(name, f"must be {' or '.join(k.__name__ for k in wanted)}, got {_kind(value)}")


def check_embedder(value: object, name: str = "embedder", *, optional: bool = True) -> None:
    """An :class:`philont.embed.base.Embedder`; None too where ``optional`` (keyword
    search)."""
    if value is None and optional:
        return
    from philont.embed.base import Embedder

    if not isinstance(value, Embedder):
        what = "an Embedder (philont.embed) or None" if optional else "an Embedder (philont.embed)"
        _refuse(name, f"must be {what}, got {_kind(value)}")
