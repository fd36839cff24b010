"""Two agents in one PostgreSQL database: what one writes through the eleven tools never shows up
through any tool of the other, and each agent's rows stay in its own schema."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL

from philont import Memory, migrate, tools
from philont.db.engine import create_engine, pg_schema

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
    name: str
    url: URL
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
        return tools.call(tool, arguments, db=self.url)


def _counts(url: URL) -> dict[str, int]:
    """Rows of every table of the URL's agent schema (counted by qualified name)."""
    schema = pg_schema(url)
    assert schema is not None
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                text(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = :s AND table_type = 'BASE TABLE' ORDER BY table_name"
                ),
                {"s": schema},
            ).scalars()
            return {
                t: int(conn.execute(text(f'SELECT count(*) FROM "{schema}"."{t}"')).scalar_one())
                for t in list(tables)
            }
    finally:
        engine.dispose()


def _changed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    assert set(before) == set(after)
    return {t: after[t] - before[t] for t in after if after[t] != before[t]}


def _seed(agent: Agent) -> None:
    """What no tool writes: a note, a skill and a timeline message."""
    with Memory.open(agent.url) as mem:
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
    with Memory.open(agent.url) as mem:
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


@pytest.fixture
def agents(pg_agent: Callable[[], URL]) -> tuple[Agent, Agent]:
    alice = Agent("alice", pg_agent(), "Aquamarine")
    bob = Agent("bob", pg_agent(), "Burgundy")
    for agent in (alice, bob):
        migrate.upgrade(agent.url)
    assert pg_schema(alice.url) != pg_schema(bob.url)
    return alice, bob


def test_two_agents_in_one_database_never_see_each_others_memory(
    agents: tuple[Agent, Agent],
) -> None:
    alice, bob = agents
    empty_alice, empty_bob = _counts(alice.url), _counts(bob.url)
    assert empty_alice == empty_bob  # the same schema, brought to head, in each

    _seed(alice)
    _write_everything(alice)
    after_alice = _counts(alice.url)
    assert _counts(bob.url) == empty_bob  # nothing of alice's landed in bob's schema
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
    after_bob = _counts(bob.url)
    assert _counts(alice.url) == after_alice  # nothing of bob's landed in alice's schema
    assert _changed(empty_bob, after_bob) == grown  # the same work, the same rows

    _sees_nothing_of(bob, alice)
    assert _counts(alice.url) == after_alice  # bob's probes did not touch alice's memory
    _sees_nothing_of(alice, bob)
    final_alice, final_bob = _counts(alice.url), _counts(bob.url)
    assert final_alice["memory_actions"] == len(alice.calls)
    assert final_bob["memory_actions"] == len(bob.calls)
    assert final_alice == final_bob  # symmetrical work, symmetrical rows

    # The other agent's things are still there, as they were, for their owner.
    for me in (alice, bob):
        with Memory.open(me.url) as mem:
            secret = mem.facts.get(f"user.{me.name}", "secret")
            assert secret is not None and secret.value == me.name and secret.id == me.ids["fact"]
            skill = mem.skills.get(me.skill)
            assert skill is not None and skill.use_count == 1
        names = me.call("list_upcoming", window_days=7).text
        assert f"[task] {me.name}-keep" in names
