"""Helpers the suites share: units of work joined to a test's own Session."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy.orm import Session

from philont.clock import Clock, utc_now
from philont.memory import Memory
from philont.store import Store


def joined(session: Session, clock: Clock | None = None) -> Memory:
    """An active unit of work inside ``session``'s transaction (the test owns and rolls back
    that transaction), with ``clock``: what a host does with ``store.join(session)``."""
    store = Store(session.get_bind().engine, clock=clock or utc_now)
    mem = store.join(session)
    mem.__enter__()
    return mem


def write_lock_is_free(path: str | Path) -> bool:
    """Whether another connection could take SQLite's write lock right now (no waiting)."""
    probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        probe.close()
