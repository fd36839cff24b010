"""Tool calls under contention (the sync dispatcher): a call that only reads waits its turn
behind another writer instead of being refused, and many concurrent calls through one Store
leave what the same calls leave one after another."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from philont import tools
from philont.store import Store
from philont.tools import REGISTRY
from tests.tools.test_schemas import CALLS
from tests.tools.workload import Call, final_state, outcome, seed, workload

BOTH_BACKENDS = True

READS: list[Call] = [(name, args) for name, args in CALLS if not REGISTRY[name].writes] + [
    ("no_such_tool", {}),  # refused before it ran: it only logs itself
    ("get_fact", {"namespace": 5, "key": "k"}),
]
"""Every tool that only reads (their one write is the action log, at the end), and calls
refused before they ran."""

HELD_S = 1.0
"""How long another connection holds the write lock: longer than the dispatcher's whole
backoff between its five attempts (at most 0.05 + 0.1 + 0.2 + 0.4 s)."""


@pytest.fixture
def holder(tool_db: Path) -> Iterator[sqlite3.Connection]:
    """A raw connection (usable from a timer thread) that will hold the write lock."""
    conn = sqlite3.connect(str(tool_db), isolation_level=None, check_same_thread=False)
    yield conn
    if conn.in_transaction:
        conn.execute("ROLLBACK")
    conn.close()


def test_every_call_that_only_reads_waits_its_turn_behind_a_writer(
    tool_db: Path, holder: sqlite3.Connection
) -> None:
    # SQLite never waits to turn a deferred transaction that has read into a writing one: it
    # refuses at once while another connection writes. A read-only tool logs its call at the
    # end, so it was refused on every attempt (database_busy) while any writer was busy.
    with Store.open(tool_db) as store:
        expected = [outcome(tools.call(name, args, db=store)) for name, args in READS]
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(HELD_S, holder.execute, ("COMMIT",))
        release.start()
        try:
            with ThreadPoolExecutor(len(READS)) as pool:
                got = list(pool.map(lambda c: outcome(tools.call(*c, db=store)), READS))
        finally:
            release.join()
    assert got == expected


@pytest.fixture
def fresh_store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Store]]:
    """Factory of Stores on new empty memories: files, or new agents of this run's layout."""
    opened: list[Store] = []

    def make() -> Store:
        if backend == "postgres":
            layout = request.getfixturevalue("pg_layout")
            store = Store.open(layout.app_url, agent=layout.new_agent(), upgrade=False)
        else:
            template: Path = request.getfixturevalue("tool_template")
            path = tmp_path / f"memory-{len(opened)}.sqlite"
            with sqlite3.connect(str(template)) as src, sqlite3.connect(str(path)) as dst:
                src.backup(dst)
            store = Store.open(path)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


def test_concurrent_calls_through_one_store_leave_what_a_sequential_run_leaves(
    fresh_store: Callable[[], Store],
) -> None:
    calls = workload(200)
    one_by_one, concurrent = fresh_store(), fresh_store()
    for store in (one_by_one, concurrent):
        assert all(tools.call(name, args, db=store).ok for name, args in seed())
    expected = [outcome(tools.call(name, args, db=one_by_one)) for name, args in calls]
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(lambda c: outcome(tools.call(*c, db=concurrent)), calls))
    assert {(True, None), (False, "invalid_arguments")} <= set(expected)
    assert got == expected
    assert final_state(concurrent) == final_state(one_by_one)


def test_concurrent_calls_of_one_name_or_reference_leave_one_as_one_by_one_would(
    fresh_store: Callable[[], Store],
) -> None:
    """A same-named schedule_reminder replaces the one before, and an external_ref makes
    create_calendar_event idempotent, however many calls come at once: on PostgreSQL two read
    committed transactions each disabled what they saw (found no event with the reference)
    and each inserted their own, leaving several enabled schedules of one name (each one
    firing) and several events of one reference."""
    store = fresh_store()
    calls: list[Call] = []
    for n in range(8):
        calls.append(
            ("schedule_reminder", {"name": "water", "message": f"m{n}", "interval_ms": 60_000})
        )
        calls.append(
            (
                "create_calendar_event",
                {
                    "title": f"t{n}",
                    "starts_at": "2030-01-01T09:00:00Z",
                    "timezone": "UTC",
                    "external_ref": "ics-1",
                },
            )
        )
    for _ in range(3):
        start = threading.Barrier(len(calls))

        def run(call: Call, start: threading.Barrier = start) -> tuple[bool, str | None]:
            start.wait()
            return outcome(tools.call(*call, db=store))

        with ThreadPoolExecutor(len(calls)) as pool:
            assert set(pool.map(run, calls)) == {(True, None)}
        with store.begin(write=False) as mem:
            enabled = [s for s in mem.schedules.list() if s.enabled and s.name == "water"]
            events = [e for e in mem.calendar.list().events if e.external_ref == "ics-1"]
        assert len(enabled) == 1, enabled
        assert len(events) == 1, events
