"""PostgreSQL: a unit of work begun while this thread's own is open, that waits for a lock the
open one holds (a fact's key, a note id, the learning lock, a row), is refused with
``NestedWriteError`` instead of waiting forever (the thread is blocked, so the holder can never
commit); the open unit goes on. Nested units that do not conflict work as before, and a wait
for another thread's transaction is still a wait.

Each case runs in a thread joined with a timeout: the old code hung there (the fixture then
terminates the test's server processes, so the run goes on)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from philont import Memory, Store, agents, tools
from philont.db.engine import create_engine
from philont.errors import NestedWriteError, StorageError, UnitOfWorkError
from philont.learning.lock import hold_learning_lock
from philont.memory import Memory as _Memory
from tests.pg_support import Bouncer, Layout

pytestmark = pytest.mark.postgres

HUNG_S = 30
"""A case still running after this long waits for its own thread (not a speed target)."""


@pytest.fixture
def store(pg_layout: Layout, pg_agent_name: Callable[[], str]) -> Iterator[Store]:
    name = f"philont-nested-{uuid.uuid4().hex[:8]}"
    url = pg_layout.url.update_query_dict({"application_name": name})
    opened = Store.open(url, agent=pg_agent_name(), upgrade=False)
    with opened.begin() as mem:  # what the locks below are taken on
        mem.notes.upsert("n1", "first")
    yield opened
    probe = create_engine(pg_layout.url)
    try:
        with probe.begin() as conn:  # a case that hung (the old code): end its transactions
            conn.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE application_name = :n AND pid <> pg_backend_pid()"
                ),
                {"n": name},
            )
    finally:
        probe.dispose()
        opened.close()


def _in_a_thread(work: Callable[[], object]) -> None:
    """Run ``work`` in a thread; fail if it is still running after :data:`HUNG_S`, re-raise
    what it raised."""
    failures: list[BaseException] = []

    def body() -> None:
        try:
            work()
        except BaseException as exc:  # re-raised below
            failures.append(exc)

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(HUNG_S)
    assert not thread.is_alive(), "it waited for its own thread's open unit of work"
    if failures:
        raise failures[0]


LOCKS: dict[str, Callable[[_Memory, str], object]] = {
    "a fact's key": lambda mem, v: mem.facts.store(namespace="user.x", key="k", value=v),
    "a note id": lambda mem, v: mem.notes.upsert("n1", v),
    "the learning lock": lambda mem, _v: hold_learning_lock(mem),
    "a row (the messages' id counter)": lambda mem, v: mem.timeline.append(v),
    "a lock of the host's own statement (the unit's end types it)": lambda mem, _v: (
        mem.session.execute(text("SELECT pg_advisory_xact_lock(8282)"))
    ),
}
HOSTS_LOCK = "a lock of the host's own statement (the unit's end types it)"


def _enter(unit: _Memory, take: Callable[[_Memory, str], object]) -> None:
    with unit as mem:
        take(mem, "inner")


NESTED: dict[str, Callable[[Store, Callable[[_Memory, str], object]], None]] = {
    "store.begin()": lambda s, take: _enter(s.begin(), take),
    "store.run(fn)": lambda s, take: s.run(lambda mem: take(mem, "inner")),
    "Memory.open(url)": lambda s, take: _enter(Memory.open(s.url, agent=s.agent), take),
}


@pytest.mark.parametrize("lock", sorted(LOCKS))
@pytest.mark.parametrize("way", sorted(NESTED))
def test_a_nested_unit_that_waits_for_its_outer_one_is_refused_and_the_outer_goes_on(
    store: Store, way: str, lock: str
) -> None:
    take = LOCKS[lock]

    def case() -> None:
        with store.begin() as mem:
            take(mem, "outer")
            with pytest.raises(NestedWriteError) as caught:
                NESTED[way](store, take)
            assert isinstance(caught.value, UnitOfWorkError)
            assert caught.value.code == "nested_write"
            mem.facts.store(namespace="user.x", key="after", value=1)

    _in_a_thread(case)
    with store.begin(write=False) as mem:
        assert mem.facts.get("user.x", "after") is not None  # the outer unit committed
        if lock == "a fact's key":
            fact = mem.facts.get("user.x", "k")
            assert fact is not None and fact.value == "outer"
        if lock == "a note id":
            note = mem.notes.get("n1")
            assert note is not None and note.content == "outer"


TOOL_CALLS: dict[str, tuple[Callable[[_Memory], object], str, dict[str, object]]] = {
    "a fact's key (store_fact)": (
        lambda mem: mem.facts.store(namespace="user.x", key="k", value="outer"),
        "store_fact",
        {"namespace": "user.x", "key": "k", "value": "inner"},
    ),
    "a row (the action log's id counter, a reading tool)": (
        lambda mem: tools.call("list_facts", {"namespace": "user.x"}, db=mem),
        "list_facts",
        {"namespace": "user.x"},
    ),
}


@pytest.mark.parametrize("case", sorted(TOOL_CALLS))
def test_a_tool_call_on_the_store_inside_a_unit_that_holds_its_lock_reports_nested_write(
    store: Store, case: str
) -> None:
    take, name, arguments = TOOL_CALLS[case]
    results = []

    def work() -> None:
        with store.begin() as mem:
            take(mem)
            results.append(tools.call(name, arguments, db=store))
            assert tools.call(name, arguments, db=mem).ok  # the open unit is the way

    _in_a_thread(work)
    assert not results[0].ok
    assert results[0].error_code == "nested_write", results[0]


def test_a_nested_read_of_a_fact_the_outer_unit_wrote_is_refused(store: Store) -> None:
    """``facts.get`` refreshes the fact's access time, under its key's lock."""

    def case() -> None:
        with store.begin() as mem:
            LOCKS["a fact's key"](mem, "outer")
            with pytest.raises(NestedWriteError), store.begin(write=False) as inner:
                inner.facts.get("user.x", "k")

    _in_a_thread(case)


def test_an_outer_unit_that_waits_for_a_nested_one_is_refused(store: Store) -> None:
    def case() -> None:
        with store.begin() as outer, store.begin() as inner:
            LOCKS["a fact's key"](inner, "inner")
            LOCKS["a fact's key"](outer, "outer")

    with pytest.raises(NestedWriteError):
        _in_a_thread(case)
    with store.begin(write=False) as mem:
        assert mem.facts.get("user.x", "k") is None  # both rolled back


@pytest.mark.parametrize("way", sorted(NESTED))
def test_nested_units_that_do_not_conflict_work(store: Store, way: str) -> None:
    def case() -> None:
        with store.begin() as mem:
            mem.facts.store(namespace="user.x", key="outer", value=1)
            NESTED[way](store, lambda inner, v: inner.facts.store("user.x", "inner", v))
            with store.begin(write=False) as inner:  # not committed yet
                assert "outer" not in [f.key for f in inner.facts.list()]
            with store.begin(agent=f"{store.agent}-2") as other:  # another agent, same pool
                LOCKS["a fact's key"](other, "other")
            mem.facts.store(namespace="user.x", key="outer", value=2)

    _in_a_thread(case)
    with store.begin(write=False) as mem:
        assert sorted(f.key for f in mem.facts.list()) == ["inner", "outer"]


def test_a_nested_unit_waiting_for_another_thread_waits_for_it(store: Store) -> None:
    """Only a wait for this thread's own units is refused: another thread's lock is waited
    for (here until that thread commits)."""
    holds, may_end = threading.Event(), threading.Event()

    def other() -> None:
        with store.begin() as mem:
            LOCKS["a fact's key"](mem, "other")
            holds.set()
            assert may_end.wait(HUNG_S)

    def case() -> None:
        with store.begin() as mem:
            mem.facts.store(namespace="user.x", key="outer", value=1)
            threading.Timer(1.0, may_end.set).start()  # after the watcher looked a few times
            with store.begin() as inner:
                LOCKS["a fact's key"](inner, "inner")

    holder = threading.Thread(target=other, daemon=True)
    holder.start()
    assert holds.wait(HUNG_S)
    _in_a_thread(case)
    holder.join(HUNG_S)
    with store.begin(write=False) as mem:
        fact = mem.facts.get("user.x", "k")
        assert fact is not None and fact.value == "inner"


def test_behind_pgbouncer_as_the_application_role_too(
    bouncer: Bouncer, pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> None:
    """The server process is read in each transaction (PgBouncer changes it between them),
    the cancel request goes through PgBouncer, and the application role may ask who blocks."""
    with Store.open(bouncer.url(pg_layout.app_url), agent=pg_agent_name()) as store:

        def case() -> None:
            with store.begin() as mem:
                LOCKS["a fact's key"](mem, "outer")
                with pytest.raises(NestedWriteError):
                    NESTED["store.begin()"](store, LOCKS["a fact's key"])
                NESTED["store.begin()"](store, LOCKS["a note id"])  # no conflict: it works

        _in_a_thread(case)
        with store.begin(write=False) as mem:
            fact, note = mem.facts.get("user.x", "k"), mem.notes.get("n1")
            assert fact is not None and fact.value == "outer"
            assert note is not None and note.content == "inner"


def test_deleting_the_agent_inside_its_open_unit_of_work_is_refused(store: Store) -> None:
    """The delete takes the agent's lock alone; the open unit holds it shared."""
    assert store.agent is not None
    agent = store.agent

    def case() -> None:
        with store.begin() as mem:
            LOCKS["a fact's key"](mem, "outer")
            with pytest.raises(NestedWriteError):
                agents.delete(store, agent)

    _in_a_thread(case)
    with store.begin(write=False) as mem:
        fact = mem.facts.get("user.x", "k")
        assert fact is not None and fact.value == "outer"


def _outer_waits_for_another_thread(store: Store) -> Callable[[_Memory], object]:
    """A statement of a service that waits for a fact's key another thread holds (until the
    test ends): a unit's own ``statement_timeout`` cancels it, through the service's typing."""
    holds, may_end = threading.Event(), threading.Event()

    def other() -> None:
        with store.begin() as mem:
            LOCKS["a fact's key"](mem, "other")
            holds.set()
            may_end.wait(HUNG_S)

    threading.Thread(target=other, daemon=True).start()
    assert holds.wait(HUNG_S)

    def wait(mem: _Memory) -> object:
        try:
            return LOCKS["a fact's key"](mem, "outer")
        finally:
            may_end.set()

    return wait


CANCELLED_LATER: dict[str, Callable[[Store], Callable[[_Memory], object]]] = {
    "a statement of the host's (the unit's end types it)": lambda _store: (
        lambda mem: mem.session.execute(text("SELECT pg_sleep(1)"))
    ),
    "a service's statement (the service types it)": _outer_waits_for_another_thread,
}


def _refused(store: Store) -> None:
    with pytest.raises(NestedWriteError):
        NESTED["store.begin()"](store, LOCKS["a note id"])


def _caught_untyped(store: Store) -> None:
    with store.begin() as inner, pytest.raises(OperationalError):
        LOCKS[HOSTS_LOCK](inner, "inner")


REFUSALS: dict[str, Callable[[Store], None]] = {
    "refused": _refused,
    "cancelled, the host caught it untyped and ended the nested unit": _caught_untyped,
}


@pytest.mark.parametrize("refusal", sorted(REFUSALS))
@pytest.mark.parametrize("later", sorted(CANCELLED_LATER))
def test_a_later_cancellation_in_the_thread_is_not_a_nested_write(
    store: Store, later: str, refusal: str
) -> None:
    """Only the statement the watcher cancelled is ``nested_write``: a statement of the outer
    unit cancelled afterwards by its ``statement_timeout`` is a storage error of its own kind."""
    wait = CANCELLED_LATER[later](store)

    def case() -> None:
        with pytest.raises(StorageError) as caught, store.begin() as mem:
            mem.notes.upsert("n1", "outer")
            LOCKS[HOSTS_LOCK](mem, "outer")
            REFUSALS[refusal](store)
            mem.session.execute(text("SET LOCAL statement_timeout = '50ms'"))
            wait(mem)
        assert not isinstance(caught.value, NestedWriteError), caught.value
        assert caught.value.code != "nested_write"

    _in_a_thread(case)


def test_a_nested_wait_is_refused_with_every_pooled_connection_in_use(store: Store) -> None:
    """The watcher does not take its connection from the pool the thread's units hold."""
    engine = sa_create_engine(
        store.url,
        pool_size=2,
        max_overflow=0,
        pool_timeout=HUNG_S * 2,
        connect_args={"prepare_threshold": None},
    )
    try:
        small = Store.from_engine(engine, agent=store.agent)

        def case() -> None:
            with small.begin() as mem:  # one connection, the nested unit the other
                LOCKS["a fact's key"](mem, "outer")
                with pytest.raises(NestedWriteError):
                    NESTED["store.begin()"](small, LOCKS["a fact's key"])
                mem.facts.store(namespace="user.x", key="after", value=1)

        _in_a_thread(case)
        with small.begin(write=False) as mem:
            assert mem.facts.get("user.x", "after") is not None
        small.close()
    finally:
        engine.dispose()
