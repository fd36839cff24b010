"""Forcing PostgreSQL's lock conflicts in tests: one engine per side, each side's connections
named (``application_name``), and a probe that waits until a side is waiting for a lock.

Which of two deadlocked transactions PostgreSQL ends is decided by time: each waiter checks for a
cycle once, ``deadlock_timeout`` (1 s) after it began to wait. When the second one begins to wait
before the first one's check, the first one finds the cycle and is ended (it is the victim).
:func:`wait_until_blocked` lets a test begin the second wait right after the first began.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, text

from philont.db.engine import create_engine
from tests.pg_support import Layout


def side_engine(layout: Layout, side: str, **settings: str) -> tuple[Engine, str]:
    """An engine on this run's layout (the owner's role: it may set any setting) whose
    connections are named after ``side``, with PostgreSQL ``settings`` (``lock_timeout="150ms"``);
    and the name."""
    name = f"philont-{side}-{uuid.uuid4().hex[:8]}"
    options = str(layout.url.query["options"])
    options += "".join(f" -c{key}={value}" for key, value in settings.items())
    url = layout.url.update_query_dict({"options": options, "application_name": name})
    return create_engine(url), name


def wait_until_blocked(probe: Engine, name: str, timeout: float = 30.0) -> None:
    """Return once a connection named ``name`` waits for a lock."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with probe.connect() as conn:
            waiting = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE application_name = :name AND wait_event_type = 'Lock'"
                ),
                {"name": name},
            ).scalar_one()
        if waiting:
            return
        time.sleep(0.01)
    raise AssertionError(f"{name} never waited for a lock")


class Sides:
    """Callables run at once in threads; each one's result or exception kept by name."""

    def __init__(self) -> None:
        self.results: dict[str, Any] = {}
        self.errors: dict[str, BaseException] = {}
        self._threads: list[threading.Thread] = []

    def start(self, name: str, work: Callable[[], Any]) -> None:
        def body() -> None:
            try:
                self.results[name] = work()
            except BaseException as exc:  # the test looks at it
                self.errors[name] = exc

        thread = threading.Thread(target=body, name=name)
        self._threads.append(thread)
        thread.start()

    def join(self, timeout: float = 60.0) -> None:
        for thread in self._threads:
            thread.join(timeout)
        assert not any(t.is_alive() for t in self._threads), "a side hung"
