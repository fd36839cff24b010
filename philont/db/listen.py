"""Install an event listener on an engine once, however often it is handed to philont, and
find the engine a copy with other execution options was made from."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.engine.base import OptionEngine

_INSTALLED: weakref.WeakKeyDictionary[Engine, set[tuple[str, Callable[..., Any]]]] = (
    weakref.WeakKeyDictionary()
)


def listen_once(
    engine: Engine, identifier: str, fn: Callable[..., Any], *, pool: bool = False, **kw: Any
) -> None:
    """``event.listen(engine or engine.pool, identifier, fn, **kw)`` unless this engine has it.

    Not ``event.contains``: SQLAlchemy keys it by ``id(target)``, and a disposed engine's old
    pool leaves its key behind (the new pool shares the listeners) while its address is free. A
    new engine's pool made there was taken for guarded and got no UTF8 check (a CI failure).
    Remembered per engine, not per pool: ``dispose()`` makes a pool that keeps the listeners."""
    engine = made_from(engine)
    installed = _INSTALLED.setdefault(engine, set())
    if (identifier, fn) not in installed:
        event.listen(engine.pool if pool else engine, identifier, fn, **kw)
        installed.add((identifier, fn))


def made_from(engine: Engine) -> Engine:
    """The engine ``engine.execution_options(...)`` copied (``engine`` itself if not a copy).
    A copy shares that engine's pool, dialect and listeners, so what philont set up on one is
    set up on the other: per-engine records are kept for, and looked up by, this engine. Before,
    a host's copy of a set-up SQLite engine was refused by ``Store.from_engine`` as lacking it."""
    while isinstance(engine, OptionEngine):
        engine = engine._proxied
    return engine
