"""Stored vectors in PostgreSQL's shared layout: what one agent embeds never shows up for
another (as the owner, whom only the explicit agent filters hold, and as the application role,
held by row-level security too), each agent has its own model record, one Store's caches keep
agents apart, and every statement of the vector store is answered from the agent's partition
by a key that leads with ``agent_id``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any

import pytest
from sqlalchemy.engine import URL

from philont import agents
from philont.db import agents as registry
from philont.db.backend import Raw
from philont.db.engine import create_engine
from philont.db.queries import vectors as q
from philont.embed import FusionWeights, HashEmbedder, backfill
from philont.embed.search import POOL, state
from philont.memory import Memory
from philont.schemas.timeline import MessageIn
from philont.services.search.scoring import Filter, Kind
from philont.store import Store
from tests.embed.helpers import fill
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

VECTOR_TABLES = (q.INDEX, q.MESSAGE_VECTORS, q.MESSAGE_CODES, q.NOTES.vectors, q.SKILLS.vectors)


@pytest.fixture(params=["owner", "application role"])
def role_url(request: pytest.FixtureRequest, pg_layout: Layout) -> URL:
    """The owner is a superuser here (row-level security does not hold it); the application
    role is held by both guards."""
    return pg_layout.url if request.param == "owner" else pg_layout.app_url


@pytest.fixture
def store(role_url: URL) -> Iterator[Store]:
    with Store.open(role_url, upgrade=False, embedder=HashEmbedder(64)) as s:
        yield s


def _units(store: Store, agent: str) -> Callable[..., AbstractContextManager[Memory]]:
    def units(*, write: bool = True) -> AbstractContextManager[Memory]:
        return store.begin(write=write, agent=agent)

    return units


def _rows(store: Store, agent: str) -> dict[str, int]:
    with store.begin(write=False, agent=agent) as mem:
        raw = mem.raw()
        return {
            t: int(raw.rows(f"SELECT count(*) FROM {t}{raw.where()}")[0][0]) for t in VECTOR_TABLES
        }


def test_what_one_agent_embeds_another_never_finds(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    alice, bob = pg_agent_name(), pg_agent_name()
    with store.begin(agent=alice) as mem:
        fill(mem, messages=80)
    with store.begin(agent=bob) as mem:
        mem.timeline.append("the weather was grey all week")
    report = backfill(_units(store, alice), HashEmbedder(64))
    assert report.complete and report.messages == 80 and report.notes == 12
    written = _rows(store, alice)
    assert written[q.MESSAGE_CODES] == 80 and written[q.INDEX] == 1
    assert _rows(store, bob) == dict.fromkeys(VECTOR_TABLES, 0)
    with store.begin(write=False, agent=bob) as mem:
        status = mem.embeddings.status()
        assert status.model_id is None and status.embedded_messages == 0
        assert status.pending_messages == 1 and status.pending_notes == 0
        hits = mem.search.messages("kubernetes cluster deploy", limit=10)
        assert hits == [] and "no vectors yet" in str(mem.search.reports[Kind.MESSAGES].note)
    # bob's own index: another model is his to choose (the record is per agent) ...
    mine = backfill(_units(store, bob), HashEmbedder(32))
    assert (mine.messages, mine.notes, mine.skills) == (1, 0, 0)
    # ... and rebuilding it touches nothing of alice's
    backfill(_units(store, bob), HashEmbedder(48), rebuild=True)
    assert _rows(store, alice) == written
    with store.begin(write=False, agent=alice) as mem:
        assert mem.embeddings.status().model_id == HashEmbedder(64).model_id


def test_one_store_keeps_each_agents_vector_search_to_its_own_messages(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    """Both agents number their messages from 1, and each has more than the coarse pass keeps
    (POOL, so the pass must read the agent's own codes): alice's first 260 are about the query,
    bob's last 3 only. One Store serves both (one code cache, filled by alice's search first)."""
    alice, bob = pg_agent_name(), pg_agent_name()
    emb = HashEmbedder(64)
    topic, other = "kubernetes cluster deploy failed again", "we baked a cake for the party"
    layout = {alice: [topic] * 260 + [other] * 40, bob: [other] * 297 + [topic] * 3}
    for agent, texts in layout.items():
        with store.begin(agent=agent) as mem:
            mem.timeline.append_many(
                [MessageIn(content=f"{t} {i}", role="user") for i, t in enumerate(texts)]
            )
        backfill(_units(store, agent), emb)
    assert len(layout[bob]) > POOL
    state(store).weights = FusionWeights(1.0, 1.0, 1.0)  # vector evidence alone
    for agent in (alice, bob):
        with store.begin(write=False, agent=agent) as mem:
            hits = mem.search.messages("kubernetes cluster deploy", limit=3)
            assert [h.content.rsplit(" ", 1)[0] for h in hits] == [topic] * 3
    with store.begin(write=False, agent=bob) as mem:
        found = mem.search.messages("kubernetes cluster deploy", limit=3)
        assert {h.id for h in found} == {298, 299, 300}


def test_deleting_an_agent_removes_its_vectors_and_a_query_without_filter_sees_only_mine(
    pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> None:
    store = Store.open(pg_layout.url, upgrade=False)
    alice, bob = pg_agent_name(), pg_agent_name()
    try:
        for agent in (alice, bob):
            with store.begin(agent=agent) as mem:
                fill(mem, messages=20, notes=2, skills=1)
            backfill(_units(store, agent), HashEmbedder(16))
        alice_id, bob_id = agents.agent_id(store, alice), agents.agent_id(store, bob)
        app = create_engine(pg_layout.app_url)
        try:
            with app.connect() as conn, conn.begin():
                registry.set_local(conn, bob_id)
                driver = conn.connection.driver_connection
                for table in VECTOR_TABLES:  # no filter of ours: row-level security alone
                    seen = {r[0] for r in driver.execute(f"SELECT DISTINCT agent_id FROM {table}")}
                    assert seen == {bob_id}, table
        finally:
            app.dispose()
        deleted = agents.delete(store, alice)
        assert deleted[q.MESSAGE_CODES] == 20 and deleted[q.INDEX] == 1
        assert _rows(store, bob)[q.MESSAGE_CODES] == 20
        owner = create_engine(pg_layout.url)
        try:
            with owner.connect() as conn:  # a superuser: no row-level security, no filter
                driver = conn.connection.driver_connection
                left = {
                    t: driver.execute(
                        f"SELECT count(*) FROM {t} WHERE agent_id = %s", (alice_id,)
                    ).fetchone()[0]
                    for t in VECTOR_TABLES
                }
                assert left == dict.fromkeys(VECTOR_TABLES, 0)
        finally:
            owner.dispose()
    finally:
        store.close()


# --- every statement is the agent's, by an index that leads with agent_id ---------------------


class _Recorder:
    """A DB-API connection that remembers every statement run through it."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.statements: list[tuple[str, tuple[Any, ...]]] = []

    def cursor(self) -> Any:
        recorder = self
        cursor = self.conn.cursor()

        class _Cursor:
            def execute(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
                recorder.statements.append((sql, tuple(params)))
                return cursor.execute(sql, params)

            def __getattr__(self, name: str) -> Any:
                return getattr(cursor, name)

        return _Cursor()


def _scans(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _scans(child)


def _read_statements(raw: Raw) -> list[tuple[str, tuple[Any, ...]]]:
    """Every read of the vector store's search, status and backfill, recorded."""
    recorder = _Recorder(raw.connection)
    rec = Raw(recorder, postgres=True, agent=raw.agent)
    session_only = Filter("b.session_id = %s", ("s1",))
    q.record(rec)
    q.high_water(rec)
    q.pending_messages(rec, 0)
    q.messages_after(rec, 0, 10)
    q.missing_messages(rec, 0, 10, 10)
    q.previous_in_session(rec, "s1", 5)
    q.codes_after(rec, 0)
    q.codes_where(rec, session_only)
    q.message_vectors(rec, [1, 2, 3])
    q.count_messages(rec)
    for table in (q.NOTES, q.SKILLS):
        q.texts(rec, table)
        q.pending_keyed(rec, table)
        q.keyed_vectors(rec, table, "id", Filter())
    return recorder.statements


def test_every_read_of_the_vector_store_is_bounded_by_an_index_led_by_agent_id(
    pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> None:
    """As the owner (no row-level security): the agent condition is the statements' own. With
    sequential scans priced out, each vector table (or its one partition) is read through an
    index whose condition names agent_id; a partitioned table shows one partition only."""
    ours = set(VECTOR_TABLES) | {q.MESSAGES, q.NOTES.base, q.SKILLS.base}
    with Store.open(pg_layout.url, upgrade=False) as store:
        agent = pg_agent_name()
        with store.begin(agent=agent) as mem:
            fill(mem, messages=10, notes=2, skills=1)
        backfill(_units(store, agent), HashEmbedder(16))
        with store.begin(write=False, agent=agent) as mem:
            raw = mem.raw()
            raw.run("SET LOCAL enable_seqscan = off")
            statements = _read_statements(raw)
            assert len(statements) == 16
            for sql, params in statements:
                plan = json.loads(
                    json.dumps(raw.rows(f"EXPLAIN (FORMAT JSON) {sql}", params)[0][0])
                )
                nodes = list(_scans(plan[0]["Plan"]))
                read = [n for n in nodes if n.get("Relation Name", "").rsplit("_p", 1)[0] in ours]
                assert read, sql
                for node in read:
                    cond = node.get("Index Cond", "") + node.get("Recheck Cond", "")
                    assert "agent_id" in cond, (sql, node["Node Type"], node.get("Relation Name"))
                for table in ours:
                    parts = {
                        n["Relation Name"] for n in read if n["Relation Name"].startswith(table)
                    }
                    assert len(parts) <= 1, (sql, parts)
