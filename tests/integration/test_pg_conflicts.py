"""PostgreSQL ends a transaction for a concurrent one's sake: philont types it, and runs its own
units of work again.

A deadlock (SQLSTATE 40P01) forced with two threads in a known order: a host's transaction that
stores a fact (the fact's key lock) and then makes a Learner (the agent's learning lock), against
a unit of work that holds the learning lock and stores the same fact (a consolidator, a Learner
in ``Store.run``). Also: a tool call and a host that append actions and store facts in opposite
orders (the per-agent id counter and a fact's key lock), a lock not granted within
``lock_timeout`` (55P03) and a serialization failure (40001, under SERIALIZABLE).

Before: the host got a raw ``OperationalError (psycopg.errors.DeadlockDetected)``, a tool call
reported ``storage_error`` and the consolidator failed its batch (retried minutes later).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from structlog.testing import capture_logs
from typer.testing import CliRunner

from philont.aio import AsyncStore
from philont.cli import app
from philont.db import retry
from philont.db.engine import create_engine
from philont.db.models import Action
from philont.errors import DatabaseBusyError, TransactionConflictError
from philont.learning import Consolidator, ConsolidatorConfig, Learner, LearningConfig
from philont.learning.lock import hold_learning_lock
from philont.llm import ScriptedModel
from philont.memory import Memory
from philont.schemas.learning import ConsolidationStatus
from philont.store import Store
from philont.tools import call
from tests.conftest import FakeClock
from tests.integration.conflict_helpers import (
    WAITS_LONG,
    Sides,
    held_until_blocked,
    side_engine,
    wait_until_blocked,
)
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

START = datetime(2026, 6, 14, 4, 0, tzinfo=UTC)
CONFIG = LearningConfig(summary_min_messages=10_000)
CITY = {"namespace": "user", "key": "city"}


@pytest.fixture
def probe(pg_layout: Layout) -> Iterator[Engine]:
    engine = create_engine(pg_layout.url)
    yield engine
    engine.dispose()


@pytest.fixture
def sides(
    pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> Iterator[Callable[..., tuple[Store, str]]]:
    """Factory of Stores on one fresh agent, each on an engine of its own whose connections
    carry a name (for :func:`wait_until_blocked`)."""
    agent = pg_agent_name()
    engines: list[Engine] = []

    def make(side: str, **settings: str) -> tuple[Store, str]:
        engine, name = side_engine(pg_layout, side, **settings)
        engines.append(engine)
        return Store(engine, agent=agent, clock=FakeClock(START)), name

    yield make
    for engine in engines:
        engine.dispose()


def converse(store: Store) -> None:
    with store.begin() as mem:
        mem.timeline.start_session("s1")
        mem.timeline.append("I moved to Paris last week", role="user", session_id="s1")


PARIS = [{"action": "store_fact", **CITY, "value": "Paris"}]


def model(answer: list[dict[str, Any]], asked: list[int] | None = None) -> ScriptedModel:
    """Extraction proposes ``answer`` (``asked`` counts the questions)."""

    def extract(prompt: str) -> str:
        if asked is not None:
            asked.append(1)
        return json.dumps(answer)

    return ScriptedModel.by_task(
        {"extract": extract, "reflect": "[]", "summarize": "", "condense": "[]"}
    )


def values(store: Store, key: str = "city") -> list[Any]:
    with store.begin(write=False) as mem:
        return [f.value for f in reversed(mem.facts.history("user", key))]


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == name]


def learn_nothing(mem: Memory) -> None:
    """A host's Learner: its extraction writes nothing, but the learning lock is taken."""
    Learner(mem, model([]), config=CONFIG).extract(session_id="s1")


LOCK_TIMEOUT = "500ms"
"""The ``lock_timeout`` of a side that meets a held lock and runs its unit again: the holder lets
go at its first retry (:func:`let_go_at_the_first_retry`), and the attempts left wait this long
each for the holder's commit."""


def let_go_at_the_first_retry(monkeypatch: pytest.MonkeyPatch, release: threading.Event) -> None:
    """Set ``release`` (the holder commits) as the first failed attempt is about to run again.
    A timer let go too early (before an attempt slowed by a loaded machine had timed out: no
    retry) or too late (after every attempt had)."""
    delay = retry.backoff

    def released_then_delay(*args: Any, **kwargs: Any) -> float:
        release.set()
        return delay(*args, **kwargs)

    monkeypatch.setattr(retry, "backoff", released_then_delay)


# --- the deadlock -------------------------------------------------------------------------------


def test_a_host_block_that_took_a_fact_lock_then_the_learning_lock_gets_the_typed_error(
    sides: Callable[..., tuple[Store, str]], probe: Engine
) -> None:
    host, _ = sides("host")
    worker, worker_name = sides("consolidator", deadlock_timeout=WAITS_LONG)
    converse(host)
    holding, learning = threading.Event(), threading.Event()

    def host_block() -> None:
        with host.begin() as mem:
            mem.facts.store("user", "city", "Berlin")  # the fact's key lock
            holding.set()
            assert learning.wait(30)  # the other side holds the learning lock
            wait_until_blocked(probe, worker_name)  # and waits for the fact's lock
            learn_nothing(mem)  # the learning lock: waits second, closes the cycle

    def consolidator_write() -> None:  # what the consolidator's write does (batch.apply)
        assert holding.wait(30)
        with worker.begin() as mem:
            hold_learning_lock(mem)
            learning.set()
            mem.facts.store("user", "city", "Paris")  # waits first, for the host's fact lock

    run = Sides()
    with capture_logs() as logs:
        run.start("host", host_block)
        run.start("consolidator", consolidator_write)
        run.join()

    error = run.errors.get("host")
    assert isinstance(error, TransactionConflictError), repr(error)
    assert isinstance(error, DatabaseBusyError)
    assert error.code == "transaction_conflict"
    assert error.details["sqlstate"] == "40P01"
    assert "rolled back" in error.message and "run the unit of work again" in error.message
    assert "consolidator" not in run.errors, run.errors
    assert values(host) == ["Paris"]  # nothing of the host's block was kept
    # the host took the learning lock after a fact's lock, and was told so
    assert [e["lock"] for e in events(logs, "db.lock_order")] == ["learning"]


def test_a_consolidator_deadlocked_with_a_host_runs_its_unit_again_and_consolidates(
    sides: Callable[..., tuple[Store, str]], probe: Engine
) -> None:
    host, host_name = sides("host", deadlock_timeout=WAITS_LONG)
    worker, _ = sides("consolidator")
    converse(host)
    consolidator = Consolidator.for_store(
        worker,
        model(PARIS),
        config=CONFIG,
        schedule=ConsolidatorConfig(idle_after=timedelta(0), min_messages=1, backlog=True),
    )
    holding = threading.Event()
    # the consolidator holds the learning lock: it asks for the city's lock (second, closing
    # the cycle: its unit is ended) once the host waits for the learning lock
    learning = held_until_blocked(worker.engine, "learning", probe=probe, name=host_name)

    def host_block() -> None:
        with host.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            holding.set()
            assert learning.wait(30)
            learn_nothing(mem)  # waits first, for the consolidator's learning lock

    def consolidate() -> Any:
        assert holding.wait(30)
        return consolidator.run_once()

    run = Sides()
    with capture_logs() as logs:
        run.start("host", host_block)
        run.start("consolidator", consolidate)
        run.join()

    assert run.errors == {}
    report = run.results["consolidator"]
    assert report.status == ConsolidationStatus.CONSOLIDATED, report.error
    assert report.extraction is not None and report.extraction.facts == 1
    assert values(host) == ["Berlin", "Paris"]
    retries = events(logs, "db.retry")
    assert [r["code"] for r in retries] == ["transaction_conflict"]
    assert "deadlock" in retries[0]["reason"]
    # the host took its locks out of order; the consolidator, both times, in order
    assert len(events(logs, "db.lock_order")) == 1


def test_a_learner_in_store_run_deadlocked_with_a_host_runs_again_and_both_succeed(
    sides: Callable[..., tuple[Store, str]], probe: Engine
) -> None:
    host, host_name = sides("host", deadlock_timeout=WAITS_LONG)
    learner, _ = sides("learner")
    converse(host)
    holding = threading.Event()
    # the Learner holds the learning lock; it asks for the city's lock (second: it is ended)
    learning = held_until_blocked(learner.engine, "learning", probe=probe, name=host_name)
    asked: list[int] = []

    def host_block() -> str:
        with host.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            holding.set()
            assert learning.wait(30)
            learn_nothing(mem)  # waits first, for the Learner's learning lock
        return "committed"

    def learn(mem: Memory) -> Any:
        return Learner(mem, model(PARIS, asked), config=CONFIG).extract(session_id="s1")

    def learn_retried() -> Any:
        assert holding.wait(30)
        return learner.run(learn)

    run = Sides()
    with capture_logs() as logs:
        run.start("host", host_block)
        run.start("learner", learn_retried)
        run.join()

    assert run.errors == {}
    assert run.results["host"] == "committed"
    assert run.results["learner"].facts == 1
    assert len(asked) == 2  # the whole unit ran again, the model asked again
    assert values(host) == ["Berlin", "Paris"]
    assert len(events(logs, "db.lock_order")) == 1  # the host's; the Learner's unit: in order


# --- a tool call ---------------------------------------------------------------------------------


def test_a_tool_call_deadlocked_with_a_host_runs_again_and_leaves_one_action(
    sides: Callable[..., tuple[Store, str]], probe: Engine
) -> None:
    # The host appends an action (a tool call in its transaction: the agent's id counter of
    # the action log stays locked to its commit) and then stores user.k2; the tool call holds
    # user.k2's lock and then appends its action.
    host, host_name = sides("host", deadlock_timeout=WAITS_LONG)
    tool, _ = sides("tool")
    holding = threading.Event()
    # the tool call holds user.k2's lock; it appends its action (second: it is ended)
    k2 = held_until_blocked(tool.engine, "fact", "user", "k2", probe=probe, name=host_name)

    def host_block() -> None:
        with host.begin() as mem:
            first = call("store_fact", {"namespace": "user", "key": "k1", "value": 1}, db=mem)
            assert first.ok, first.error
            holding.set()
            assert k2.wait(30)
            mem.facts.store("user", "k2", "host")  # waits first, for the tool call's k2 lock

    def tool_call() -> Any:
        assert holding.wait(30)
        return call("store_fact", {"namespace": "user", "key": "k2", "value": "tool"}, db=tool)

    run = Sides()
    with capture_logs() as logs:
        run.start("host", host_block)
        run.start("tool", tool_call)
        run.join()

    assert run.errors == {}
    result = run.results["tool"]
    assert result.ok, (result.error_code, result.error)
    assert [r["code"] for r in events(logs, "db.retry")] == ["transaction_conflict"]
    assert values(host, "k2") == ["host", "tool"]
    with host.begin(write=False) as mem:
        assert mem.session.scalar(select(func.count()).select_from(Action)) == 2


def test_a_lock_timeout_is_typed_for_a_host_and_waited_out_by_a_tool_call(
    sides: Callable[..., tuple[Store, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    host, _ = sides("host")
    impatient, _ = sides("impatient", lock_timeout=LOCK_TIMEOUT)
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with host.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            holding.set()
            assert release.wait(30)

    run = Sides()
    run.start("holder", holder)
    assert holding.wait(30)
    # a host's block: not run again
    with pytest.raises(TransactionConflictError) as caught, impatient.begin() as mem:
        mem.facts.store("user", "city", "Rome")
    assert caught.value.details["sqlstate"] == "55P03"
    assert not release.is_set()
    let_go_at_the_first_retry(monkeypatch, release)  # the holder commits after an attempt
    result = call("store_fact", {**CITY, "value": "Paris"}, db=impatient)
    assert release.is_set()  # an attempt timed out and was run again
    run.join()
    assert run.errors == {}
    assert result.ok, (result.error_code, result.error)
    assert values(host) == ["Berlin", "Paris"]


def test_a_serialization_failure_is_run_again_by_a_tool_call(
    sides: Callable[..., tuple[Store, str]], probe: Engine
) -> None:
    host, _ = sides("host")
    strict, strict_name = sides("strict", default_transaction_isolation="serializable")
    with host.begin() as mem:
        mem.facts.store("user", "city", "Lyon")
    holding = threading.Event()

    def host_block() -> None:
        with host.begin() as mem:
            mem.facts.store("user", "city", "Berlin")  # supersedes Lyon
            holding.set()
            wait_until_blocked(probe, strict_name)  # its snapshot is taken: commit now

    run = Sides()
    run.start("host", host_block)
    assert holding.wait(30)
    with capture_logs() as logs:
        # its snapshot still sees Lyon current, and superseding it is a serialization failure
        result = call("store_fact", {**CITY, "value": "Paris"}, db=strict)
    run.join()
    assert run.errors == {}
    assert result.ok, (result.error_code, result.error)
    assert [r["code"] for r in events(logs, "db.retry")] == ["transaction_conflict"]
    assert "serialization failure" in events(logs, "db.retry")[0]["reason"]
    assert values(host) == ["Lyon", "Berlin", "Paris"]
    with host.begin(write=False) as mem:
        assert [f.value for f in mem.facts.history("user", "city") if f.active] == ["Paris"]


def test_an_async_tool_call_in_a_unit_of_its_own_runs_again_after_a_lock_timeout(
    sides: Callable[..., tuple[Store, str]], pg_layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, _ = sides("host")
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with host.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            holding.set()
            assert release.wait(30)

    options = f"{pg_layout.url.query['options']} -clock_timeout={LOCK_TIMEOUT}"
    url = pg_layout.url.update_query_dict({"options": options})

    async def tool_call() -> Any:
        astore = await AsyncStore.open(url, agent=host.agent, upgrade=False)
        try:
            return await astore.call("store_fact", {**CITY, "value": "Paris"})
        finally:
            await astore.close()

    run = Sides()
    run.start("holder", holder)
    assert holding.wait(30)
    let_go_at_the_first_retry(monkeypatch, release)
    with capture_logs() as logs:
        result = asyncio.run(tool_call())
    run.join()
    assert run.errors == {}
    assert result.ok, (result.error_code, result.error)
    assert {r["code"] for r in events(logs, "db.retry")} == {"transaction_conflict"}
    assert values(host) == ["Berlin", "Paris"]
    with host.begin(write=False) as mem:  # the attempts that timed out left no action row
        assert mem.session.scalar(select(func.count()).select_from(Action)) == 1


def test_a_command_runs_its_unit_of_work_again_after_a_lock_timeout(
    sides: Callable[..., tuple[Store, str]], pg_layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, _ = sides("host")
    with host.begin() as mem:
        mem.facts.store("user", "city", "Lyon")
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with host.begin() as mem:
            assert mem.facts.get("user", "city") is not None  # its access time: a row lock
            holding.set()
            assert release.wait(30)

    options = f"{pg_layout.url.query['options']} -clock_timeout={LOCK_TIMEOUT}"
    url = pg_layout.url.update_query_dict({"options": options})
    run = Sides()
    run.start("holder", holder)
    assert holding.wait(30)
    let_go_at_the_first_retry(monkeypatch, release)
    # `facts get` refreshes the access time of the row it reads too
    db = url.render_as_string(hide_password=False)
    assert host.agent is not None
    started = time.monotonic()
    result = CliRunner().invoke(
        app, ["--agent", host.agent, "facts", "get", "user", "city", "--json", "--db", db]
    )
    waited = time.monotonic() - started
    run.join()
    assert run.errors == {}
    assert result.exit_code == 0, (result.output, result.exception)
    assert json.loads(result.stdout)["value"] == "Lyon"
    assert release.is_set()  # its first attempt timed out and it ran again
    assert waited >= 0.45  # that attempt waited the lock_timeout (500 ms)


def test_a_host_that_gets_then_stores_a_fact_waits_for_no_tool_and_no_tool_for_it_forever(
    sides: Callable[..., tuple[Store, str]], probe: Engine
) -> None:
    """A host's get of a fact locked its row (the access time it refreshes) without the key's
    lock; a tool's store of the key then held the key lock and waited for the row, and the
    host's store of the key waited for the key lock: a deadlock, and PostgreSQL ended one of
    them (the host's block with transaction_conflict, or the tool's call, run again). Now get
    takes the key lock first: the tool waits for the host."""
    host, _ = sides("host")
    tool, tool_name = sides("tool")
    with host.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    assert isinstance(host.clock, FakeClock)
    host.clock.advance(minutes=1)  # the get has an access time to write
    got = threading.Event()

    def host_block() -> None:
        with host.begin() as mem:
            assert mem.facts.get("user", "city") is not None
            got.set()
            wait_until_blocked(probe, tool_name)
            mem.facts.store("user", "city", "host")

    def tool_call() -> Any:
        assert got.wait(30)
        return call("store_fact", {**CITY, "value": "tool"}, db=tool)

    run = Sides()
    with capture_logs() as logs:
        run.start("host", host_block)
        run.start("tool", tool_call)
        run.join()
    assert run.errors == {}
    assert run.results["tool"].ok, run.results["tool"].error
    assert events(logs, "db.retry") == []  # nobody was ended and run again
    assert values(host) == ["Berlin", "host", "tool"]


def test_a_sweep_leaves_a_row_a_writer_holds_to_the_next_sweep_instead_of_waiting(
    sides: Callable[..., tuple[Store, str]],
) -> None:
    """sweep locked every candidate row, waiting for one a concurrent writer held (here past a
    150 ms lock_timeout: transaction_conflict, nothing swept); it could close a cycle of waits
    with a writer that held the row's key lock. Rows a writer holds are now left to the next
    sweep."""
    host, _ = sides("host")
    sweeper, _ = sides("sweeper", lock_timeout="150ms")
    with host.begin() as mem:
        for key in ("a", "b", "c"):
            mem.facts.store("scratch", key, key, confidence=0.01)
    holding, release = threading.Event(), threading.Event()

    def holder() -> None:
        with host.begin() as mem:
            mem.facts.forget(mem.facts.history("scratch", "b")[0].id)  # b's row is held
            holding.set()
            assert release.wait(30)

    run = Sides()
    run.start("holder", holder)
    assert holding.wait(30)
    try:
        with sweeper.begin() as mem:
            swept = mem.facts.sweep(threshold=0.5)
    finally:
        release.set()
        run.join()
    assert run.errors == {}
    assert swept == 2
    with host.begin(write=False) as mem:
        assert mem.facts.list("scratch") == []  # a and c swept, b forgotten by the holder
