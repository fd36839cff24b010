"""Install an event listener on an engine once, however often it is handed to philont."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event

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
    installed = _INSTALLED.setdefault(engine, set())
    if (identifier, fn) not in installed:
        event.listen(engine.pool if pool else engine, identifier, fn, **kw)
        installed.add((identifier, fn))
