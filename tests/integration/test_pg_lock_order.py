"""PostgreSQL: a write of an agent during its import or delete waits for it.

An INSERT into a table numbered per agent (``philont_next_id``) locked the agent's counter row
and only at the end of the statement, by its foreign key, the agent's registry row. An import
holds the registry row (``FOR UPDATE``) and moves the counters at its end: a write of the
agent meanwhile held a counter and waited for the registry row, a deadlock, which PostgreSQL
ended by rolling back the import (or the write). An agent's delete removes its rows table by
table, then its counters and its registry row: a write that came in between and committed
first left a row of the agent, and the delete failed on it. Now every id is taken under the
agent's advisory lock, shared (revision v038), which an import and a delete take alone first:
the write waits for them, holding nothing they need."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import event, select, text

from philont import agents, transfer
from philont.db.models import RawMessage
from philont.errors import SessionNotFoundError
from philont.store import Store
from philont.transfer import postgres as pg_transfer
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_layout: Layout) -> Iterator[Store]:
    with Store.open(pg_layout.url, upgrade=False) as s:
        yield s


class Writer:
    """A unit of work of ``agent`` appending ``text`` from a thread of its own, once started;
    :meth:`blocked` says when it waits for a lock."""

    def __init__(self, store: Store, agent: str, words: str) -> None:
        self.store, self.agent, self.words = store, agent, words
        self.pid: int | None = None
        self.started = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with self.store.begin(agent=self.agent) as mem:
                self.pid = int(mem.session.scalar(text("SELECT pg_backend_pid()")) or 0)
                self.started.set()
                mem.timeline.append(self.words, role="user")
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)
        finally:
            self.started.set()

    def start_and_wait_until_blocked(self, watcher: Store) -> None:
        """Start it and return once it waits for a lock (its insert: a counter or the
        registry row), or has ended."""
        self.thread.start()
        assert self.started.wait(30)
        with watcher.engine.connect() as conn:
            for _ in range(3000):
                if not self.thread.is_alive():
                    return
                waiting = conn.execute(
                    text("SELECT 1 FROM pg_locks WHERE pid = :pid AND NOT granted"),
                    {"pid": self.pid},
                ).first()
                if waiting is not None:
                    return
                conn.rollback()
                self.thread.join(0.01)
        raise AssertionError("the write neither waited nor ended")

    def join(self) -> None:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the write hung"


def messages(store: Store, agent: str) -> list[str]:
    with store.begin(agent=agent, write=False) as mem:
        return list(mem.session.scalars(select(RawMessage.content).order_by(RawMessage.id)))


def test_a_write_during_an_import_of_its_agent_waits_for_it_and_both_succeed(
    store: Store, pg_agent_name: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = pg_agent_name()
    with store.begin(agent=agent) as mem:
        for n in range(3):
            mem.timeline.append(f"before {n}", role="user")
    out = io.StringIO()
    transfer.export(store.url, out, agent=agent)
    writer = Writer(store, agent, "during the import")
    raise_counters = pg_transfer._raise_counters

    def raised_while_written(*args: Any) -> None:
        # the import holds the registry row; the write waits for it (the old function: holding
        # the counter of messages, for longer than deadlock_timeout) before the counters move
        writer.start_and_wait_until_blocked(store)
        writer.thread.join(1.5)  # past deadlock_timeout (1 s): its own check found no cycle
        raise_counters(*args)

    monkeypatch.setattr(pg_transfer, "_raise_counters", raised_while_written)
    out.seek(0)
    report = transfer.import_(store.url, out, agent=agent, mode="merge")
    writer.join()
    assert writer.errors == []
    assert report is not None
    assert messages(store, agent) == [*(f"before {n}" for n in range(3)), "during the import"]


def test_a_write_during_the_delete_of_its_agent_waits_for_it_and_the_delete_succeeds(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    agent = pg_agent_name()
    with store.begin(agent=agent) as mem:
        mem.timeline.append("before", role="user")
    writer = Writer(store, agent, "during the delete")

    def before_the_counters_go(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("DELETE FROM philont_agent_ids") and writer.thread.ident is None:
            writer.start_and_wait_until_blocked(store)

    event.listen(store.engine, "before_cursor_execute", before_the_counters_go)
    try:
        deleted = agents.delete(store, agent)
    finally:
        event.remove(store.engine, "before_cursor_execute", before_the_counters_go)
    writer.join()
    assert deleted.get("memory_raw_messages") == 1
    # the write waited for the delete, then found its agent gone (its unit of work looks the
    # name up again and makes the agent anew, which holds no session "global" yet): it fails
    # as a write to a deleted agent does, never in a deadlock
    assert [type(e) for e in writer.errors] == [SessionNotFoundError], writer.errors
