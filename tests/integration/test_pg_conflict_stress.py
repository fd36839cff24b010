"""Threads storing facts and learning at once on one PostgreSQL agent end with the rows of a
sequential run, and nothing but typed errors on the way.

Three kinds of work, each thread doing several of one kind, on a few shared fact keys:

* a host's block that stores two facts (one through a tool call in its transaction, which
  appends an action: the agent's id counter of the action log) and then learns: its Learner
  takes the learning lock after the facts' key locks, the order philont itself never uses;
* a tool call storing a fact in a unit of work of its own (``tools.call(db=store)``);
* a Learner over the conversation in ``Store.run``.

They deadlock with each other (a host holds the action counter and waits for a fact's lock a
tool call holds, which waits for the counter; two hosts likewise). PostgreSQL ends one of each
pair: a tool call or a learner runs again by itself (5 attempts), a host's block gets
:class:`TransactionConflictError` (a tool call joined to it reports ``transaction_conflict``)
and runs its block again, as a host would; so does the test with a tool call or a learner
whose attempts were all ended. Anything else fails the test. What the database
holds at the end is compared with a sequential run of the same work on another agent: every
fact version once, one current version per key, and what one learner writes.
"""

from __future__ import annotations

import json
import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select
from structlog.testing import capture_logs

from philont.db.models import Fact
from philont.errors import TransactionConflictError
from philont.learning import Learner
from philont.memory import Memory
from philont.store import Store
from philont.tools import call
from tests.conftest import FakeClock
from tests.integration.conflict_helpers import side_engine
from tests.integration.learn_worker import START, RuleJudge, config, model
from tests.integration.test_learning_race import converse, snapshot
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

KINDS = ("host", "tool", "learner")
THREADS_PER_KIND = 3
OPS_PER_THREAD = 5
KEYS = ("k0", "k1", "k2")
AGAIN = 20
"""How many times the test itself runs an operation that ended in TransactionConflictError:
a host's block every time, philont's own units when their 5 attempts were all ended."""


@pytest.fixture
def engine(pg_layout: Layout) -> Iterator[Engine]:
    """The owner's role, with deadlocks found after 100 ms instead of 1 s."""
    made, _ = side_engine(pg_layout, "stress", deadlock_timeout="100ms")
    yield made
    made.dispose()


def learn(mem: Memory) -> None:
    cfg = config("shadow", "full")
    learner = Learner(mem, model(lambda: None, "full"), config=cfg, judge=RuleJudge())
    learner.learn(learner.window(since=START, until=START + timedelta(hours=1)))


class Work:
    """The operations of one agent's Store, each raising nothing but what the test allows."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.ended: Counter[str] = Counter()  # operations ended by a conflict, per kind

    def again(self, kind: str, op: str, once: Callable[[], None]) -> None:
        """``once()`` until it ends otherwise than with TransactionConflictError."""
        for _ in range(AGAIN):
            try:
                once()
                return
            except TransactionConflictError:
                self.ended[kind] += 1
        raise AssertionError(f"{op} conflicted {AGAIN} times")

    def host(self, op: str, rng: random.Random) -> None:
        first, second = rng.choice(KEYS), rng.choice(KEYS)

        def block() -> None:
            with self.store.begin() as mem:
                fact = {"namespace": "user.h", "key": first, "value": f"{op}a"}
                result = call("store_fact", fact, db=mem)
                if result.error_code == TransactionConflictError.code:  # it wrote nothing
                    raise TransactionConflictError(result.error or "")
                assert result.ok, (result.error_code, result.error)
                mem.facts.store("user.h", second, f"{op}b")
                learn(mem)

        self.again("host", op, block)

    def tool(self, op: str, rng: random.Random) -> None:
        fact = {"namespace": "user.h", "key": rng.choice(KEYS), "value": op}

        def once() -> None:
            result = call("store_fact", fact, db=self.store)
            if result.error_code == TransactionConflictError.code:  # 5 attempts, all ended
                raise TransactionConflictError(result.error or "")
            assert result.ok, (result.error_code, result.error)

        self.again("tool", op, once)

    def learner(self, op: str, rng: random.Random) -> None:
        self.again("learner", op, lambda: self.store.run(learn))

    def run(self, kind: str, thread: int) -> None:
        rng = random.Random(f"{kind}{thread}")
        for n in range(OPS_PER_THREAD):
            getattr(self, kind)(f"{kind}{thread}.{n}", rng)


def rows(store: Store) -> dict[str, Any]:
    """What a sequential run must give too: the learner's rows, and every fact version once
    (which one is current depends on the order of the writes, not how many there are)."""
    with store.begin(write=False) as mem:
        seen = snapshot(mem)
        facts = list(mem.session.scalars(select(Fact)))
    seen["facts"] = Counter(
        (f.namespace, f.key, json.dumps(f.value), f.fact_kind, str(f.occurred_at))
        for f in facts
        if f.forgotten_at is None
    )
    current = Counter((f.namespace, f.key) for f in facts if f.superseded_by is None)
    assert set(current.values()) == {1}, current  # one current version per key
    versions = Counter((f.namespace, f.key) for f in facts)
    links = Counter((f.namespace, f.key) for f in facts if f.supersedes is not None)
    assert all(links[k] == n - 1 for k, n in versions.items())  # one chain per key
    return seen


def test_threads_storing_facts_and_learning_end_with_the_rows_of_a_sequential_run(
    engine: Engine, pg_agent_name: Callable[[], str]
) -> None:
    def fresh() -> Store:
        store = Store(engine, agent=pg_agent_name(), clock=FakeClock(START))
        converse(store, store.clock, "full")  # type: ignore[arg-type]
        return store

    sequential = Work(fresh())
    for kind in KINDS:
        for thread in range(THREADS_PER_KIND):
            sequential.run(kind, thread)
    expected = rows(sequential.store)

    concurrent = Work(fresh())
    errors: list[BaseException] = []
    start = threading.Barrier(len(KINDS) * THREADS_PER_KIND, timeout=60)

    def body(kind: str, thread: int) -> None:
        try:
            start.wait()
            concurrent.run(kind, thread)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [
        threading.Thread(target=body, args=(kind, n))
        for kind in KINDS
        for n in range(THREADS_PER_KIND)
    ]
    with capture_logs() as logs:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=600)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert errors == []
    assert rows(concurrent.store) == expected
    retried = Counter(e["code"] for e in logs if e["event"] == "db.retry")
    print(f"\nended by a conflict: {dict(concurrent.ended)}; retries: {dict(retried)}")
    assert set(retried) <= {"transaction_conflict"}
