"""PostgreSQL: a unit of work of an agent during its import or delete waits for it, and the
import or delete waits for the units of work under way.

An INSERT into a table numbered per agent (``philont_next_id``) locked the agent's counter row
and only at the end of the statement, by its foreign key, the agent's registry row. An import
holds the registry row (``FOR UPDATE``) and moves the counters at its end: a write of the
agent meanwhile held a counter and waited for the registry row, a deadlock, which PostgreSQL
ended by rolling back the import (or the write). Taking the agent's advisory lock before each
id was not enough: a write that first inserted a row without an id (a fact: its foreign key
locks the registry row KEY SHARE) then waited for the lock that the import or delete held
while they waited for that registry row. Now a unit of work takes the agent's lock, shared, as
it enters the agent, before anything else of it; an import and a delete take it alone first.
A rename took no lock: an import or delete that waited for the agent's units of work acted on
the agent renamed meanwhile; now it takes the lock alone too, and each of them looks the name up
again once it holds it. A host's own SQL takes the lock with ``philont.agents.set_agent`` (or
docs/postgresql.md's statement); ``set_config`` alone deadlocked with an import.
"""

from __future__ import annotations

import io
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text

from philont import agents, transfer
from philont.db import agents as registry
from philont.db.models import RawMessage
from philont.errors import AgentNotFoundError
from philont.store import Store
from philont.transfer import postgres as pg_transfer
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres


@pytest.fixture
def store(pg_layout: Layout) -> Iterator[Store]:
    with Store.open(pg_layout.url, upgrade=False) as s:
        yield s


def wait_until_waited_for(
    watcher: Store, pid: int, thread: threading.Thread, waiters: int = 1
) -> None:
    """Return once ``waiters`` other transactions wait for a lock that backend ``pid`` holds
    (directly or queued behind one that does), or ``thread`` (the other one's) has ended."""
    with watcher.engine.connect() as conn:
        for _ in range(3000):
            if not thread.is_alive():
                return
            waiting = conn.execute(
                text(
                    "SELECT count(DISTINCT pid) FROM pg_locks"
                    " WHERE NOT granted AND :pid = ANY(pg_blocking_pids(pid))"
                ),
                {"pid": pid},
            ).scalar_one()
            if waiting >= waiters:
                return
            conn.rollback()
            thread.join(0.01)
    raise AssertionError(f"fewer than {waiters} waited for backend {pid}; the other side went on")


class Writer:
    """A unit of work of ``agent`` appending ``words`` from a thread of its own, once started."""

    def __init__(self, store: Store, agent: str, words: str) -> None:
        self.store, self.agent, self.words = store, agent, words
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            with self.store.begin(agent=self.agent) as mem:
                mem.timeline.append(self.words, role="user")
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)

    def start_and_wait_until_blocked_by(self, pid: int) -> None:
        """Start it and return once it (or anything) waits for backend ``pid``, or it ended."""
        self.thread.start()
        wait_until_waited_for(self.store, pid, self.thread)

    def join(self) -> None:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the write hung"


def agent_with_messages(store: Store, agent: str, *words: str) -> str:
    """``agent``, made with a message of each of ``words``."""
    with store.begin(agent=agent) as mem:
        for line in words:
            mem.timeline.append(line, role="user")
    return agent


def messages(store: Store, agent: str) -> list[str]:
    with store.begin(agent=agent, write=False) as mem:
        return list(mem.session.scalars(select(RawMessage.content).order_by(RawMessage.id)))


def test_a_write_during_an_import_of_its_agent_waits_for_it_and_both_succeed(
    store: Store, pg_agent_name: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = agent_with_messages(store, pg_agent_name(), *(f"before {n}" for n in range(3)))
    out = io.StringIO()
    transfer.export(store.url, out, agent=agent)
    writer = Writer(store, agent, "during the import")
    raise_counters = pg_transfer._raise_counters

    def raised_while_written(driver: Any, *args: Any) -> None:
        # the import holds the agent; the write waits for it (the old function: holding the
        # counter of messages, for longer than deadlock_timeout) before the counters move
        writer.start_and_wait_until_blocked_by(driver.info.backend_pid)
        writer.thread.join(1.5)  # past deadlock_timeout (1 s): its own check found no cycle
        raise_counters(driver, *args)

    monkeypatch.setattr(pg_transfer, "_raise_counters", raised_while_written)
    out.seek(0)
    report = transfer.import_(store.url, out, agent=agent, mode="merge")
    writer.join()
    assert writer.errors == []
    assert report is not None
    assert messages(store, agent) == [*(f"before {n}" for n in range(3)), "during the import"]


def test_a_write_during_the_delete_of_its_agent_waits_for_it_and_both_succeed(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    agent = agent_with_messages(store, pg_agent_name(), "before")
    writer = Writer(store, agent, "during the delete")

    def before_the_counters_go(_conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith("DELETE FROM philont_agent_ids") and writer.thread.ident is None:
            writer.start_and_wait_until_blocked_by(cursor.connection.info.backend_pid)

    event.listen(store.engine, "before_cursor_execute", before_the_counters_go)
    try:
        deleted = agents.delete(store, agent)
    finally:
        event.remove(store.engine, "before_cursor_execute", before_the_counters_go)
    writer.join()
    assert deleted.get("memory_raw_messages") == 1
    # the write waited for the delete, then found its agent gone: its unit of work looked the
    # name up again and made the agent anew
    assert writer.errors == []
    assert messages(store, agent) == ["during the delete"]


class FactThenMessage:
    """A unit of work of ``agent`` that stores a fact (a row without an id: its foreign key
    locks the agent's registry row KEY SHARE), waits until another transaction waits for it,
    then appends a message (an id: ``philont_next_id``), from a thread of its own."""

    def __init__(self, store: Store, agent: str) -> None:
        self.store, self.agent = store, agent
        self.pid = 0
        self.stored = threading.Event()
        self.errors: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        assert self.stored.wait(30)

    def _run(self) -> None:
        try:
            with self.store.begin(agent=self.agent) as mem:
                mem.facts.store("user", "city", "Porto")
                mem.session.flush()
                self.pid = int(mem.session.scalar(text("SELECT pg_backend_pid()")) or 0)
                self.stored.set()
                wait_until_waited_for(self.store, self.pid, threading.main_thread())
                mem.timeline.append("meanwhile", role="user")
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)
        finally:
            self.stored.set()

    def join(self) -> None:
        self.thread.join(60)
        assert not self.thread.is_alive(), "the write hung"


def test_a_write_holding_the_registry_row_and_an_import_both_succeed(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    # R4's review: with the agent's lock taken only before an id, the import held it and
    # waited FOR UPDATE on the registry row, the write held that row and waited for the lock
    agent = agent_with_messages(store, pg_agent_name(), "before")
    out = io.StringIO()
    transfer.export(store.url, out, agent=agent)
    out.seek(0)
    writer = FactThenMessage(store, agent)
    transfer.import_(store.url, out, agent=agent, mode="merge")
    writer.join()
    assert writer.errors == []
    assert messages(store, agent) == ["before", "meanwhile"]


def test_a_write_holding_the_registry_row_and_a_delete_both_succeed_at_once(
    store: Store, pg_agent_name: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same with an agent's delete (which deadlocked with it before the agent's lock too);
    # a delete that PostgreSQL ended in a deadlock runs again: it must have run once
    agent = agent_with_messages(store, pg_agent_name(), "before")
    runs: list[str] = []
    delete = registry.delete

    def counted(conn: Any, name: str) -> dict[str, int]:
        runs.append(name)
        return delete(conn, name)

    monkeypatch.setattr(registry, "delete", counted)
    writer = FactThenMessage(store, agent)
    deleted = agents.delete(store, agent)
    writer.join()
    assert (writer.errors, runs) == ([], [agent])
    assert (deleted.get("memory_facts"), deleted.get("memory_raw_messages")) == (1, 2)


# --- a rename: it holds the agent's lock alone, as an import and a delete do -----------------


def renamed_between_look_up_and_lock(
    monkeypatch: pytest.MonkeyPatch, store: Store, function: str, old: str, new: str
) -> list[str]:
    """Make ``registry.<function>`` (the look-up an import or delete makes of its agent before
    waiting for its lock) rename ``old`` to ``new`` on another connection right after its
    first call: what a rename that committed while the import or delete waited for the
    agent's units of work did. Returns the calls' names."""
    calls: list[str] = []
    looked_up = getattr(registry, function)

    def then_renamed(conn: Any, name: str) -> Any:
        found = looked_up(conn, name)
        calls.append(name)
        if calls == [old]:
            agents.rename(store, old, new)
        return found

    monkeypatch.setattr(registry, function, then_renamed)
    return calls


def test_a_delete_deletes_no_agent_renamed_while_it_waited(
    store: Store, pg_agent_name: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the delete of `old` looked its id up, waited for the agent's lock, and meanwhile a
    # rename (which took no lock) gave that agent the name `new`: the delete then deleted
    # `new`, and both said they had succeeded
    old, new = agent_with_messages(store, pg_agent_name(), "kept"), pg_agent_name()
    renamed_between_look_up_and_lock(monkeypatch, store, "require", old, new)
    with pytest.raises(AgentNotFoundError):
        agents.delete(store, old)
    assert messages(store, new) == ["kept"]


def test_an_import_goes_into_the_agent_of_its_name_after_a_rename_while_it_waited(
    store: Store, pg_agent_name: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the import of `old` went into the agent renamed `new` meanwhile, and `old` was missing
    # after an import of it that succeeded
    old, new = agent_with_messages(store, pg_agent_name(), "there"), pg_agent_name()
    source = agent_with_messages(store, pg_agent_name(), "imported")
    out = io.StringIO()
    transfer.export(store.url, out, agent=source)
    out.seek(0)
    renamed_between_look_up_and_lock(monkeypatch, store, "create", old, new)
    transfer.import_(store.url, out, agent=old, mode="merge")
    assert messages(store, new) == ["there"]
    assert messages(store, old) == ["imported"]


def test_a_rename_and_a_delete_waiting_for_the_agents_units_of_work_agree(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    # real concurrency: a unit of work of the agent is open; a delete waits for it, then a
    # rename comes. One of them acts first and the other sees its result: never a rename that
    # succeeded and a delete that deleted the agent under its new name.
    old, new = agent_with_messages(store, pg_agent_name(), "before"), pg_agent_name()
    outcomes: dict[str, object] = {}

    def run(what: str, work: Callable[[], object]) -> threading.Thread:
        def target() -> None:
            try:
                outcomes[what] = work()
            except BaseException as exc:  # judged below
                outcomes[what] = exc

        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        return thread

    with store.begin(agent=old, write=False) as mem:
        pid = int(mem.session.scalar(text("SELECT pg_backend_pid()")) or 0)
        deleting = run("delete", lambda: agents.delete(store, old))
        wait_until_waited_for(store, pid, deleting)
        renaming = run("rename", lambda: agents.rename(store, old, new))
        wait_until_waited_for(store, pid, renaming, waiters=2)
    for thread in (deleting, renaming):
        thread.join(60)
        assert not thread.is_alive(), "hung"
    exists = {name: registry_has(store, name) for name in (old, new)}
    if isinstance(outcomes["rename"], BaseException):  # the delete first
        assert isinstance(outcomes["rename"], AgentNotFoundError), outcomes
        assert isinstance(outcomes["delete"], dict) and exists == {old: False, new: False}
    else:  # the rename first: the delete found no agent of that name
        assert isinstance(outcomes["delete"], AgentNotFoundError), outcomes
        assert exists == {old: False, new: True}
        assert messages(store, new) == ["before"]


def test_a_rename_during_a_write_of_its_agent_waits_and_keeps_every_row(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    # the write holds the registry row (its fact's foreign key), then takes an id: the rename
    # waits for it (the agent's lock; before, the UPDATE of the row's unique name) and no
    # deadlock follows (this held before the agent's lock in rename too)
    old, new = agent_with_messages(store, pg_agent_name(), "before"), pg_agent_name()
    writer = FactThenMessage(store, old)
    renamed = agents.rename(store, old, new)
    writer.join()
    assert writer.errors == []
    assert renamed.name == new and not registry_has(store, old)
    assert messages(store, new) == ["before", "meanwhile"]
    with store.begin(agent=new, write=False) as mem:
        fact = mem.facts.get("user", "city")
        assert fact is not None and fact.value == "Porto"


def registry_has(store: Store, name: str) -> bool:
    with store.engine.connect() as conn:
        return registry.find(conn, name) is not None


# --- a host's own SQL: it sets the agent and takes the lock as philont's units of work do -----


def readme_host_sql() -> str:
    """The docs' statement for a host's own SQL (docs/postgresql.md, "A host's own Session and
    SQL", where README links to), for the agent ``:name``."""
    root = Path(__file__).resolve().parents[2]
    docs = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    blocks = [
        block
        for doc in docs
        for block in re.findall(r"```sql\n(.*?)```", doc.read_text("utf-8"), re.DOTALL)
    ]
    (block,) = [b for b in blocks if "philont.agent_id" in b]
    return " ".join(block.split()).rstrip(";").replace("'alice'", ":name")


HOST_SQL = readme_host_sql()
HOSTS = {
    "set_agent": lambda conn, agent: agents.set_agent(conn, agent),
    "sql": lambda conn, agent: conn.execute(text(HOST_SQL), {"name": agent}).one(),
}


class HostWriter(Writer):
    """A host's transaction of ``agent`` (its own connection and SQL) appending ``words``."""

    def __init__(self, store: Store, agent: str, words: str, how: str) -> None:
        super().__init__(store, agent, words)
        self.how = how

    def _run(self) -> None:
        try:
            with self.store.engine.connect() as conn, conn.begin():
                HOSTS[self.how](conn, self.agent)
                conn.execute(
                    text(
                        "INSERT INTO memory_raw_messages (session_id, role, content, timestamp)"
                        " VALUES ('global', 'user', :words, 0)"
                    ),
                    {"words": self.words},
                )
        except BaseException as exc:  # reported by the test
            self.errors.append(exc)


@pytest.mark.parametrize("how", list(HOSTS))
def test_a_hosts_write_during_an_import_of_its_agent_waits_for_it_and_both_succeed(
    how: str, store: Store, pg_agent_name: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # set_config('philont.agent_id', ...) alone took no lock: the host's INSERT held the
    # messages' counter and waited for the registry row the import held, the import then
    # waited for that counter: 40P01 after deadlock_timeout
    agent = agent_with_messages(store, pg_agent_name(), "before")
    out = io.StringIO()
    transfer.export(store.url, out, agent=agent)
    writer = HostWriter(store, agent, "the host's", how)
    raise_counters = pg_transfer._raise_counters

    def raised_while_written(driver: Any, *args: Any) -> None:
        writer.start_and_wait_until_blocked_by(driver.info.backend_pid)
        writer.thread.join(1.5)  # past deadlock_timeout (1 s)
        raise_counters(driver, *args)

    monkeypatch.setattr(pg_transfer, "_raise_counters", raised_while_written)
    out.seek(0)
    transfer.import_(store.url, out, agent=agent, mode="merge")
    writer.join()
    assert writer.errors == []
    assert messages(store, agent) == ["before", "the host's"]


def test_set_agent_refuses_an_agent_nobody_has_and_sets_nothing(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    with store.engine.connect() as conn, conn.begin():
        with pytest.raises(AgentNotFoundError):
            agents.set_agent(conn, pg_agent_name())
        assert conn.execute(text("SELECT philont_agent()")).scalar() is None
