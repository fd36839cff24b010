"""Forcing PostgreSQL's lock conflicts in tests: one engine per side, each side's connections
named (``application_name``), and a probe that waits until a side is waiting for a lock.

Which of two deadlocked transactions PostgreSQL ends is decided by time: each waiter checks for a
cycle once, ``deadlock_timeout`` after it began to wait, and the one whose check finds the cycle
is ended (it is the victim). A test that let the first waiter be the victim needed the second
one to begin to wait within the first one's 1 s: a loaded machine made it late, the first one's
check found no cycle, and the second one was ended instead. So a deadlock test makes its victim
the second waiter, the one that closes the cycle: the first one waits with
``deadlock_timeout=WAITS_LONG`` (it never checks during the test), the victim begins to wait
only once :func:`wait_until_blocked` saw the first one wait (:func:`held_until_blocked` holds
a unit of work of philont's there), and its own check then finds the cycle, however late.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, event, text

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


WAITS_LONG = "10min"
"""The ``deadlock_timeout`` of a deadlock test's first waiter: longer than any test runs."""


def held_until_blocked(engine: Engine, *key: str, probe: Engine, name: str) -> threading.Event:
    """Once a connection of ``engine`` was first granted philont's lock of ``key``
    (:meth:`~philont.db.backend.Backend.serialize`: ``"learning"``, ``"fact", "user", "city"``):
    set the event returned, and let its unit of work go on only once a connection named
    ``name`` waits for a lock."""
    suffix = "\x1f".join(("", *key))
    granted = threading.Event()

    def after(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        lock = parameters.get("k") if isinstance(parameters, dict) else None
        first = not granted.is_set()
        if first and "pg_advisory_xact_lock" in statement and str(lock).endswith(suffix):
            granted.set()
            wait_until_blocked(probe, name)

    event.listen(engine, "after_cursor_execute", after)
    return granted


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
