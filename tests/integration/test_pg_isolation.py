"""Agents in one PostgreSQL database: what one writes through the eleven tools and every service
never shows up for another, under the owner (explicit agent filters only: a superuser bypasses
row-level security) and under the application role (filters and row-level security); a query
without any filter sees only the transaction's agent under the application role."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection, Select, func, select, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from philont import Memory, agents, tools
from philont.db import agents as registry
from philont.db.base import Base
from philont.db.engine import create_engine
from philont.db.schema import metadata
from philont.domain.kinds import AccessTarget
from philont.errors import NotFoundError, StorageError, UnitOfWorkError
from philont.store import Store
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

ELEVEN = {
    "store_fact",
    "get_fact",
    "list_facts",
    "search_notes",
    "search_skills",
    "use_skill",
    "recall_sessions",
    "create_calendar_event",
    "list_upcoming",
    "schedule_reminder",
    "cancel_schedule",
}


@dataclass
class Agent:
    name: str  # a label in its facts' and skills' names (the registry name is the store's)
    store: Store  # a view of the test's one Store (one pool) whose default agent this is
    marker: str  # a word only this agent's memory contains
    calls: list[str] = field(default_factory=list)
    ids: dict[str, str] = field(default_factory=dict)

    @property
    def note(self) -> str:
        return f"{self.marker} deposit for the flat is three months of rent"

    @property
    def message(self) -> str:
        return f"We chose the {self.marker} apartment on Kastanienallee"

    @property
    def skill(self) -> str:
        return f"{self.name}-unzip"

    def call(self, tool: str, **arguments: Any) -> tools.ToolResult:
        self.calls.append(tool)
        return tools.call(tool, arguments, db=self.store)

    def open(self) -> Memory:
        return self.store.begin()


def _counts(agent: Agent) -> dict[str, int]:
    """Rows of every table the agent sees, counted twice: by the ORM (loader criteria) and by
    lean SQL (``Raw.where``); both must agree."""
    with agent.open() as mem:
        raw = mem.raw()
        counts = {}
        for table in metadata.sorted_tables:
            lean = int(raw.rows(f"SELECT count(*) FROM {table.name}{raw.where()}")[0][0])
            model = MODELS[table.name]
            orm = mem.session.scalar(select(func.count()).select_from(model))
            assert orm == lean, table.name
            counts[table.name] = lean
        return counts


MODELS = {m.class_.__table__.name: m.class_ for m in Base.registry.mappers}


def _changed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    assert set(before) == set(after)
    return {t: after[t] - before[t] for t in after if after[t] != before[t]}


def _seed(agent: Agent) -> None:
    """What no tool writes: a note, a skill and a timeline message."""
    with agent.open() as mem:
        mem.notes.add(agent.note, importance=0.8)
        mem.skills.create(
            agent.skill, f"Unpack {agent.marker} zip archives", "zip unzip", "1. unzip f.zip"
        )
        mem.timeline.append(agent.message, role="user")


def _write_everything(agent: Agent) -> None:
    """Every one of the eleven tools, as this agent; each must succeed on its own memory."""
    start = datetime.now(UTC) + timedelta(days=1)
    results = [
        agent.call("store_fact", namespace="user", key="colour", value=agent.marker),
        agent.call("store_fact", namespace=f"user.{agent.name}", key="secret", value=agent.name),
        agent.call("get_fact", namespace="user", key="colour"),
        agent.call("list_facts", namespace="user.*"),
        agent.call("search_notes", query=f"{agent.marker} deposit"),
        agent.call("search_skills", query="unzip zip"),
        agent.call("use_skill", name=agent.skill),
        agent.call("recall_sessions", query=f"{agent.marker} apartment"),
        agent.call(
            "create_calendar_event",
            title=f"{agent.marker} yoga",
            starts_at=start.isoformat(),
            timezone="UTC",
            external_ref="shared-ref",
        ),
        agent.call("schedule_reminder", name="water", message=agent.marker, interval_ms=3_600_000),
        agent.call("schedule_reminder", name=f"{agent.name}-keep", message="k", interval_ms=60_000),
        agent.call("schedule_reminder", name=f"{agent.name}-gone", message="g", interval_ms=60_000),
        agent.call("cancel_schedule", name=f"{agent.name}-gone"),
        agent.call("list_upcoming", window_days=7),
    ]
    for r in results:
        assert r.ok, (r.name, r.text)
    assert {r.name for r in results} == ELEVEN
    # Nothing of the other agent was there to replace or supersede.
    assert "replaced" not in results[0].text and "replaced" not in results[9].text
    assert agent.marker in results[2].text
    assert agent.note in results[4].text
    assert agent.skill in results[5].text
    assert agent.message in results[7].text
    upcoming = results[13].text
    assert f"[event] {agent.marker} yoga" in upcoming and upcoming.count("[task] water") == 1
    with agent.open() as mem:
        fact = mem.facts.get(f"user.{agent.name}", "secret")
        assert fact is not None
        agent.ids["fact"] = fact.id
    agent.ids["event"] = results[8].data["id"]
    agent.ids["keep"] = results[10].data["id"]


def _sees_nothing_of(me: Agent, other: Agent) -> None:
    """Every tool, as ``me``, aimed at what ``other`` wrote: none of it is found or touched."""
    seen: list[tools.ToolResult] = []

    def call(tool: str, **arguments: Any) -> tools.ToolResult:
        result = me.call(tool, **arguments)
        seen.append(result)
        return result

    assert call("get_fact", namespace=f"user.{other.name}", key="secret").error_code == (
        "fact_not_found"
    )
    colour = call("get_fact", namespace="user", key="colour")
    assert colour.ok and me.marker in colour.text
    listed = call("list_facts", namespace="user.*")
    assert f"user.{me.name}.secret" in listed.text
    assert f"user.{other.name}" not in listed.text
    for query in (other.marker, f"{other.marker} deposit", "deposit flat rent"):
        assert other.note not in call("search_notes", query=query).text
        assert other.skill not in call("search_skills", query=f"{query} zip unzip").text
        assert other.message not in call("recall_sessions", query=query).text
    assert call("use_skill", name=other.skill).error_code == "skill_not_found"
    upcoming = call("list_upcoming", window_days=7)
    assert f"{other.marker} yoga" not in upcoming.text
    assert f"{other.name}-keep" not in upcoming.text
    assert upcoming.text.count("[task] water") == 1
    # Same external ref: my own event is updated in place, the other's is not touched.
    start = datetime.now(UTC) + timedelta(days=2)
    moved = call(
        "create_calendar_event",
        title=f"{me.marker} yoga",
        starts_at=start.isoformat(),
        timezone="UTC",
        external_ref="shared-ref",
    )
    assert moved.ok and moved.data["id"] == me.ids["event"]
    missing = call("cancel_schedule", name=f"{other.name}-keep")
    assert missing.error_code == "schedule_not_found"
    enabled = missing.text.split("Currently enabled:")[1]  # the names I may cancel: only mine
    assert sorted(enabled.strip().split(", ")) == [f"{me.name}-keep", "water"]
    assert call("cancel_schedule", id=other.ids["keep"]).error_code == "schedule_not_found"
    renamed = call("schedule_reminder", name=f"{other.name}-keep", message="mine", cron="0 9 * * *")
    assert renamed.ok and "replaced" not in renamed.text
    assert call("cancel_schedule", name=f"{other.name}-keep").ok  # only my own new one
    stored = call("store_fact", namespace=f"user.{other.name}", key="secret", value="mine")
    assert stored.ok and "replaced" not in stored.text
    # Nothing the other agent stored in any answer (the text may echo a query, the data not).
    theirs = (other.note, other.message, f"{other.marker} yoga", f"{other.marker} zip")
    for r in seen:
        assert not [x for x in theirs if x in r.text], (r.name, r.text)
        assert other.marker not in json.dumps(r.data), r.name
    assert {r.name for r in seen} == ELEVEN


@pytest.fixture(params=["owner", "application role"])
def role_url(request: pytest.FixtureRequest, pg_layout: Layout) -> URL:
    """The owner is a superuser here: row-level security does not apply to it, so only the
    explicit agent filters keep the agents apart. The application role has both guards."""
    return pg_layout.url if request.param == "owner" else pg_layout.app_url


@pytest.fixture(name="agents")
def two_agents(role_url: URL, pg_agent_name: Callable[[], str]) -> Iterator[tuple[Agent, Agent]]:
    store = Store.open(role_url, upgrade=False)
    alice = Agent("alice", store.for_agent(pg_agent_name()), "Aquamarine")
    bob = Agent("bob", store.for_agent(pg_agent_name()), "Burgundy")
    yield alice, bob
    store.close()


def test_two_agents_in_one_database_never_see_each_others_memory(
    agents: tuple[Agent, Agent],
) -> None:
    alice, bob = agents
    empty_alice, empty_bob = _counts(alice), _counts(bob)
    assert empty_alice == empty_bob  # the rows every new agent starts with

    _seed(alice)
    _write_everything(alice)
    after_alice = _counts(alice)
    assert _counts(bob) == empty_bob  # nothing of alice's landed in bob's schema
    grown = _changed(empty_alice, after_alice)
    assert grown["memory_actions"] == len(alice.calls)
    assert grown["memory_facts"] == 2
    assert grown["memory_notes"] == 1
    assert grown["memory_skills"] == 1
    assert grown["memory_raw_messages"] == 1
    assert grown["memory_calendar"] == 1
    assert grown["memory_schedules"] == 3

    _seed(bob)
    _write_everything(bob)
    after_bob = _counts(bob)
    assert _counts(alice) == after_alice  # nothing of bob's landed in alice's schema
    assert _changed(empty_bob, after_bob) == grown  # the same work, the same rows

    _sees_nothing_of(bob, alice)
    assert _counts(alice) == after_alice  # bob's probes did not touch alice's memory
    _sees_nothing_of(alice, bob)
    final_alice, final_bob = _counts(alice), _counts(bob)
    assert final_alice["memory_actions"] == len(alice.calls)
    assert final_bob["memory_actions"] == len(bob.calls)
    assert final_alice == final_bob  # symmetrical work, symmetrical rows

    # The other agent's things are still there, as they were, for their owner.
    for me in (alice, bob):
        with me.open() as mem:
            secret = mem.facts.get(f"user.{me.name}", "secret")
            assert secret is not None and secret.value == me.name and secret.id == me.ids["fact"]
            skill = mem.skills.get(me.skill)
            assert skill is not None and skill.use_count == 1
        names = me.call("list_upcoming", window_days=7).text
        assert f"[task] {me.name}-keep" in names


# --- every service ------------------------------------------------------------------------------


def _write_through_every_service(agent: Agent) -> dict[str, str]:
    """As ``agent``: something through every service that writes; returns the ids made."""
    now = datetime.now(UTC)
    marker = agent.marker
    with agent.open() as mem:
        fact = mem.facts.store("user", "colour", marker)
        mem.facts.store("diary", "lunch", f"{marker} soup", fact_kind="event", occurred_at=now)
        note = mem.notes.add(f"{marker} note about the flat", importance=0.9)
        session = mem.timeline.start_session()
        message = mem.timeline.append(f"{marker} message", session_id=session.id)
        mem.timeline.append(f"{marker} answer", role="assistant", session_id=session.id)
        skill = mem.skills.create(f"{agent.name}-pack", f"Pack {marker} boxes", ["pack"], "1. pack")
        mem.skills.set_recipe(skill.name, steps=["pack"], verification="ok", tool_policy=["tape"])
        mem.skills.revise_recipe(skill.name, steps=["pack", "tape"], verification=marker)
        mem.skills.use(skill.name)
        action = mem.actions.record(
            "use_skill", params={"name": skill.name}, success=True, session_id=session.id
        )
        mem.actions.link_skill([action.id], skill.name)
        mem.skills.record_outcome(skill.name, success=True)
        mem.access.record(AccessTarget.NOTE, note.id, context=marker)
        event = mem.calendar.create(
            f"{marker} yoga", now + timedelta(days=1), timezone="UTC", external_ref=marker
        )
        schedule = mem.schedules.create(f"{agent.name}-water", message=marker, at=now)
        claimed = mem.schedules.claim_due(now + timedelta(minutes=1))
        assert [c.schedule.id for c in claimed] == [schedule.id]
        mem.schedules.record_outcome(
            schedule.id, ok=True, fired_at=now, duration_ms=5, summary=f"{marker} watered"
        )
        mem.reflector.run()
    return {
        "fact": fact.id,
        "note": note.id,
        "session": session.id,
        "message": str(message.id),
        "skill": skill.name,
        "event": event.id,
        "schedule": schedule.id,
    }


def _reads_nothing_of(me: Agent, other: Agent, theirs: dict[str, str]) -> None:
    """Every reading service, as ``me``, finds nothing ``other`` wrote; every write aimed at
    ``other``'s ids finds nothing to change."""
    now = datetime.now(UTC)
    week = timedelta(days=7)
    with me.open() as mem:
        answers: list[object] = [
            mem.facts.get("user", "colour"),
            mem.facts.get_by_id(theirs["fact"], include_forgotten=True),
            mem.facts.list(None),
            mem.facts.history("user", "colour"),
            mem.facts.events(),
            mem.facts.as_of("user", "colour", now),
            mem.facts.count(),
            mem.notes.get(theirs["note"]),
            mem.notes.list(include_forgotten=True),
            mem.notes.search(other.marker),
            mem.notes.count(include_forgotten=True),
            mem.notes.latest_session_summary(),
            mem.timeline.get_session(theirs["session"]),
            mem.timeline.list_sessions(),
            mem.timeline.query(),
            mem.timeline.last_message("user"),
            mem.timeline.count(),
            mem.actions.query(),
            mem.actions.recent_failures(),
            mem.actions.count(),
            mem.access.count_for(AccessTarget.NOTE, theirs["note"]),
            mem.access.recent_for(AccessTarget.NOTE, theirs["note"]),
            mem.skills.get(theirs["skill"]),
            mem.skills.list(),
            mem.calendar.get(theirs["event"]),
            mem.calendar.find_by_external_ref(other.marker),
            mem.calendar.between(now - week, now + week),
            mem.calendar.upcoming(week, now),
            mem.calendar.count(),
            mem.schedules.get(theirs["schedule"]),
            mem.schedules.list(),
            mem.schedules.due_between(now - week, now + week),
            mem.schedules.outcomes(theirs["schedule"]),
            mem.search.messages(other.marker),
            mem.search.notes(other.marker, include_forgotten=True),
            mem.search.skills(f"{other.marker} pack"),
            mem.retriever.retrieve(f"{other.marker} message"),
            mem.prefix.build(),
            mem.recall_trigger.recall(f"remember when we talked about {other.marker}?"),
            mem.reflector.run(),
        ]
        for answer in answers:
            assert other.marker not in repr(answer), answer
        assert mem.facts.count() == 0 and mem.notes.count(include_forgotten=True) == 0
        assert mem.timeline.count() == 0 and mem.actions.count() == 0
        assert mem.calendar.count() == 0 and mem.skills.list() == []
        # Writes aimed at the other agent's ids find nothing.
        with pytest.raises(NotFoundError):
            mem.facts.forget(theirs["fact"])
        with pytest.raises(NotFoundError):
            mem.notes.forget(theirs["note"])
        assert not mem.calendar.delete(theirs["event"])
        assert not mem.skills.delete(theirs["skill"])
        with pytest.raises(NotFoundError):
            mem.schedules.cancel(id=theirs["schedule"])
        with pytest.raises(NotFoundError):
            mem.timeline.messages(theirs["session"])
        with pytest.raises(NotFoundError):
            mem.timeline.end_session(theirs["session"])
        with pytest.raises(NotFoundError):
            mem.timeline.append("x", session_id=theirs["session"])


@pytest.mark.parametrize("inner_ends", ["released", "with a database error"])
@pytest.mark.parametrize("host", ["Session", "Connection"])
@pytest.mark.parametrize("inner_is", ["alice", "bob"])
def test_a_unit_joined_inside_anothers_transaction_gives_it_back_its_agent(
    agents: tuple[Agent, Agent], host: str, inner_is: str, inner_ends: str
) -> None:
    """A unit of work joined inside another's on one host transaction (a turn of one agent
    that writes to another's memory, or to its own again) forgot the outer unit's agent as it
    left: the outer unit's later reads were no agent's (as the owner, every agent's rows) and
    its writes went to the inner agent, whose SET LOCAL the SAVEPOINT's release kept. Serving
    it again in a transaction an error had aborted failed untyped (psycopg's
    InFailedSqlTransaction) and left the host's transaction aborted (H112's review)."""
    alice, bob = agents
    inner_agent = alice if inner_is == "alice" else bob
    with bob.open() as mem:
        mem.notes.add(bob.note)
    store = alice.store
    with store.engine.connect() as conn, conn.begin():
        bind: Session | Connection = Session(conn) if host == "Session" else conn
        with store.join(bind) as outer:
            with contextlib.suppress(StorageError), inner_agent.store.join(bind) as inner:
                inner.notes.list()
                if inner_ends == "with a database error":
                    inner.session.execute(text("SELECT 1/0"))
            assert [n.content for n in outer.notes.list()] == []  # not bob's note
            outer.notes.add(alice.note)
        if isinstance(bind, Session):
            bind.commit()
    with alice.open() as mem:
        assert [n.content for n in mem.notes.list()] == [alice.note]
    with bob.open() as mem:
        assert [n.content for n in mem.notes.list()] == [bob.note]


def test_a_host_ending_its_transaction_in_an_inner_unit_leaves_no_agent_set_after(
    agents: tuple[Agent, Agent],
) -> None:
    """The host's commit inside an inner joined unit of another agent: serving the outer
    agent again there began a transaction SQLAlchemy did not know of, and the host's next
    transaction ran as the outer agent without its lock (H112's review)."""
    alice, bob = agents
    with alice.store.engine.connect() as conn:
        conn.begin()
        with pytest.raises(UnitOfWorkError), alice.store.join(conn) as outer:
            outer.notes.list()
            with pytest.raises(UnitOfWorkError), bob.store.join(conn) as inner:
                inner.notes.list()
                conn.commit()
        assert not conn.in_transaction()
        assert conn.connection.dbapi_connection.info.transaction_status == 0  # idle
        with conn.begin():
            setting = conn.execute(text("SELECT current_setting('philont.agent_id', true)"))
            assert setting.scalar_one() in (None, "")


def test_every_service_finds_nothing_another_agent_wrote(agents: tuple[Agent, Agent]) -> None:
    alice, bob = agents
    empty = _counts(bob)
    theirs = _write_through_every_service(alice)
    written = _counts(alice)
    assert _counts(bob) == empty
    _reads_nothing_of(bob, alice, theirs)
    assert _counts(alice) == written  # bob's attempts changed nothing of alice's
    assert _counts(bob) == empty
    with alice.open() as mem:  # and alice still has all of it
        assert mem.facts.get("user", "colour") is not None
        assert mem.notes.get(theirs["note"]) is not None
        assert mem.calendar.get(theirs["event"]) is not None
        assert mem.skills.get(theirs["skill"]) is not None
        assert mem.timeline.count() == 2


def test_a_session_overview_joins_only_its_agents_summary(agents: tuple[Agent, Agent]) -> None:
    # Every agent has a session "global" and may have a note "session-summary-global": the
    # outer join of TimelineService.overviews must take the agent's own (the owner role
    # bypasses row-level security, so only the statement's agent condition keeps them apart).
    for agent in agents:
        with agent.open() as mem:
            mem.notes.upsert("session-summary-global", f"{agent.marker} summary")
    for agent in agents:
        with agent.open() as mem:
            seen = mem.timeline.overviews(["global", "nobody"])
        assert list(seen) == ["global"], seen
        assert seen["global"].summary == f"{agent.marker} summary"


# --- row-level security -----------------------------------------------------------------------


def _unfiltered(conn: Any, agent_id: int | None) -> dict[str, set[int]]:
    """``SELECT DISTINCT agent_id`` of every table, without any filter, in a transaction whose
    agent is ``agent_id`` (None: no agent set)."""
    driver = conn.connection.driver_connection
    with conn.begin():
        if agent_id is not None:
            registry.set_local(conn, agent_id)
        return {
            t.name: {r[0] for r in driver.execute(f"SELECT DISTINCT agent_id FROM {t.name}")}
            for t in metadata.sorted_tables
        }


def test_a_query_without_agent_filter_sees_only_the_transactions_agent(
    pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> None:
    store = Store.open(pg_layout.url, upgrade=False)
    alice, bob = (
        Agent("alice", store.for_agent(pg_agent_name()), "Aquamarine"),
        Agent("bob", store.for_agent(pg_agent_name()), "Burgundy"),
    )
    for agent in (alice, bob):
        _write_through_every_service(agent)
    ids = {agents.agent_id(store, a.store.agent or "") for a in (alice, bob)}
    app = create_engine(pg_layout.app_url)
    owner = create_engine(pg_layout.url)
    try:
        with app.connect() as conn:
            for agent_id in ids:
                seen = _unfiltered(conn, agent_id)
                assert all(found <= {agent_id} for found in seen.values()), seen
                assert seen["memory_notes"] == seen["memory_raw_messages"] == {agent_id}
            assert all(found == set() for found in _unfiltered(conn, None).values())
            with conn.begin(), pytest.raises(DBAPIError, match="no agent is set"):
                conn.exec_driver_sql(
                    "INSERT INTO memory_notes (id, content, created_at) VALUES ('x', 'y', 0)"
                )
            other = max(ids)
            with conn.begin(), pytest.raises(DBAPIError, match="row-level security"):
                registry.set_local(conn, min(ids))
                conn.exec_driver_sql(
                    "INSERT INTO memory_notes (agent_id, id, content, created_at)"
                    f" VALUES ({other}, 'x', 'y', 0)"
                )
        # The owner here is a superuser: row-level security does not hold it, the explicit
        # filters are what keeps its units of work apart (the tests above run as it too).
        with owner.connect() as conn:
            assert ids <= _unfiltered(conn, min(ids))["memory_notes"]
    finally:
        app.dispose()
        owner.dispose()
        store.close()


def test_a_pooled_connection_never_carries_an_agent_into_the_next_transaction(
    pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> None:
    engine = create_engine(pg_layout.app_url)
    engine.pool.dispose()
    try:
        store = Store(engine, agent=pg_agent_name())
        with store.begin() as mem:
            mem.notes.add("kept to its agent")
            pid = mem.raw().rows("SELECT pg_backend_pid()")[0][0]
        with engine.connect() as conn:
            driver = conn.connection.driver_connection
            assert driver.execute("SELECT pg_backend_pid()").fetchone()[0] == pid  # same one
            setting = driver.execute("SELECT current_setting('philont.agent_id', true)")
            assert setting.fetchone()[0] in ("", None)
            assert driver.execute("SELECT count(*) FROM memory_notes").fetchone()[0] == 0
    finally:
        engine.dispose()


def test_writes_to_rows_whose_keys_other_agents_share_change_only_mine(
    agents: tuple[Agent, Agent],
) -> None:
    """Fixed ids ('global' session, the root pursuit) and per-agent unique names (a skill's)
    repeat across agents: an UPDATE by that key, from a flush or a bulk statement, must carry
    the agent too (as the owner nothing else would stop it)."""
    alice, bob = agents
    for agent in (alice, bob):
        with agent.open() as mem:
            mem.skills.create("deploy", "Deploy the site", ["deploy"], "1. deploy")
            mem.timeline.append("hello")  # on the 'global' session every agent has
    with bob.open() as mem:
        for _ in range(3):
            mem.skills.record_usage("deploy")  # a bulk UPDATE ... WHERE name = 'deploy'
        mem.skills.record_outcome("deploy", success=True)
        mem.timeline.end_session("global")  # a flush: UPDATE ... WHERE id = 'global'
        mem.actions.record("t", params={}, success=True)
    with alice.open() as mem:
        skill = mem.skills.get("deploy", record_access=False)
        assert skill is not None and skill.use_count == 0 and skill.success_count == 0
        session = mem.timeline.get_session("global")
        assert session is not None and session.ended_at is None
    with bob.open() as mem:
        skill = mem.skills.get("deploy", record_access=False)
        assert skill is not None and skill.use_count == 3 and skill.success_count == 1
        session = mem.timeline.get_session("global")
        assert session is not None and session.ended_at is not None


def test_one_async_store_serves_many_agents_each_unit_of_work_its_own(
    pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> None:
    import asyncio

    from philont.aio import AsyncStore

    names = [pg_agent_name() for _ in range(3)]

    async def main() -> list[list[str]]:
        astore = await AsyncStore.open(pg_layout.app_url)  # the application role: RLS too
        try:
            for name in names:
                await astore.run(lambda mem, name=name: mem.notes.add(f"{name} note"), agent=name)
            return [
                await astore.run(
                    lambda mem: [n.content for n in mem.notes.list()], write=False, agent=name
                )
                for name in names
            ]
        finally:
            await astore.close()

    seen = asyncio.run(main())
    assert seen == [[f"{name} note"] for name in names]


def test_a_statement_compiled_for_one_agent_is_never_reused_for_another(
    agents: tuple[Agent, Agent],
) -> None:
    """SQLAlchemy caches compiled statements: the agent must be a parameter of every cached
    statement, never a value baked into it. Each agent runs the same reads and claims in turn;
    each must find exactly its own rows, whichever agent compiled the statement first."""
    alice, bob = agents
    due = datetime.now(UTC) + timedelta(seconds=1)
    for agent in (alice, bob):
        with agent.open() as mem:
            mem.schedules.create(f"job-{agent.name}", message=agent.marker, at=due)
            mem.calendar.create(agent.marker, due, timezone="UTC")
    later = due + timedelta(minutes=1)
    for agent in (bob, alice):  # bob compiles first; alice then reuses the cache
        with agent.open() as mem:
            claimed = mem.schedules.claim_due(later, limit=5)
            assert [c.schedule.name for c in claimed] == [f"job-{agent.name}"]
            listed = mem.schedules.list()
            assert [s.name for s in listed] == [f"job-{agent.name}"]
            events = mem.calendar.between(due - timedelta(days=1), later + timedelta(days=1))
            assert [o.event.title for o in events.occurrences] == [agent.marker]


def test_a_selects_agent_filter_compiles_its_from_once_per_shape_and_keeps_each_agent_apart(
    agents: tuple[Agent, Agent], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent filter of a SELECT of plain table columns needs the tables it reads from
    (``Select.get_final_froms``, which compiles the statement: about 4 ms of an ORM one on a
    busy machine, on every SELECT, half of a fact's ``get``). They are kept per statement
    shape; each agent still counts only its own rows, ORM and Core alike, and a read with an
    alias (new objects each time) is still filtered."""
    from sqlalchemy.orm import aliased

    from philont.db.models import Fact

    compiled: list[int] = []
    final_froms = Select.get_final_froms

    def counted(statement: Select[Any]) -> Any:
        compiled.append(1)
        return final_froms(statement)

    monkeypatch.setattr(Select, "get_final_froms", counted)
    facts = Fact.__table__
    for agent in agents:
        with agent.open() as mem:
            mem.facts.store("user", "city", agent.marker)
    rounds = []
    for _ in range(2):
        compiled.clear()
        for agent in agents:
            with agent.open() as mem:
                fact = mem.facts.get("user", "city")
                assert fact is not None and fact.value == agent.marker
                core = select(func.count()).select_from(facts)
                assert mem.session.scalar(core) == 1
                other = aliased(Fact)
                assert mem.session.scalar(select(func.count()).select_from(other)) == 1
        rounds.append(len(compiled))
    assert rounds[1] == 2, rounds  # the alias's read, once per agent
