"""AsyncStore under concurrency, cancellation and failure: many tasks leave what one task
leaves, a busy database is waited out as ``tools.call`` waits it out, a cancelled unit of
work ends (rolled back, no lock held) before its caller goes on, ``close()`` waits for the
calls in flight, and a closed store, another event loop or a deleted file are typed results,
never a raw exception."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import random
import sqlite3
import threading
import warnings
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session

from philont import tools
from philont.aio import AsyncStore
from philont.db.models import Note
from philont.errors import (
    DatabaseGoneError,
    EventLoopError,
    InvalidDatabaseError,
    InvalidInputError,
    StoreClosedError,
    UnitOfWorkError,
)
from philont.memory import Memory
from philont.store import Store
from tests.tools.test_calls_under_contention import HELD_S, READS
from tests.tools.workload import Call, final_state, outcome, seed, workload

BOTH_BACKENDS = True
T = TypeVar("T")

Memories = Callable[[], tuple[Path | URL, str | None]]


@pytest.fixture
def memories(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Memories:
    """Factory of new empty memories: (target, agent) of a file at head, or of a new agent of
    this run's layout (as the application role)."""
    made = iter(range(1_000))

    def make() -> tuple[Path | URL, str | None]:
        if backend == "postgres":
            layout = request.getfixturevalue("pg_layout")
            return layout.app_url, layout.new_agent()
        template: Path = request.getfixturevalue("tool_template")
        path = tmp_path / f"memory-{next(made)}.sqlite"
        with sqlite3.connect(str(template)) as src, sqlite3.connect(str(path)) as dst:
            src.backup(dst)
        return path, None

    return make


def run(
    where: tuple[Path | URL, str | None],
    body: Callable[[AsyncStore], Awaitable[T]],
    **options: Any,
) -> T:
    """``body(astore)`` on a new AsyncStore of ``where``, in a new event loop."""

    async def main() -> T:
        target, agent = where
        astore = await AsyncStore.open(target, agent=agent, upgrade=False, **options)
        try:
            return await body(astore)
        finally:
            await astore.close()

    return asyncio.run(main())


def within(seconds: float, fn: Callable[[], T]) -> T:
    """``fn()``, failing the test when it has not returned after ``seconds`` (an event loop
    waiting forever on a connection torn down behind it would hang the run)."""
    done: list[T] = []
    failed: list[BaseException] = []

    def target() -> None:
        try:
            done.append(fn())
        except BaseException as exc:
            failed.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if failed:
        raise failed[0]
    assert done, f"still running after {seconds} s"
    return done[0]


def sync_store(where: tuple[Path | URL, str | None]) -> Store:
    target, agent = where
    return Store.open(target, agent=agent, upgrade=False)


# --- many tasks --------------------------------------------------------------------------------


def test_concurrent_calls_through_one_async_store_leave_what_a_sequential_run_leaves(
    memories: Memories,
) -> None:
    calls = workload(200)

    async def seeded(astore: AsyncStore) -> None:
        assert all([(await astore.call(name, args)).ok for name, args in seed()])

    async def one_by_one(astore: AsyncStore) -> list[tuple[bool, str | None]]:
        await seeded(astore)
        return [outcome(await astore.call(name, args)) for name, args in calls]

    async def all_at_once(astore: AsyncStore) -> list[tuple[bool, str | None]]:
        await seeded(astore)
        results = await asyncio.gather(*(astore.call(name, args) for name, args in calls))
        return [outcome(r) for r in results]

    first, second = memories(), memories()
    expected, got = run(first, one_by_one), run(second, all_at_once)
    assert got == expected
    with sync_store(first) as a, sync_store(second) as b:
        assert final_state(b) == final_state(a)


# --- a busy database ---------------------------------------------------------------------------

WRITES: list[Call] = [
    ("store_fact", {"namespace": "user", "key": "lock", "value": 1}),
    ("create_calendar_event", {"title": "Dentist", "starts_at": "2030-01-02T09:00:00+01:00"}),
    ("schedule_reminder", {"name": "tea", "message": "tea", "interval_ms": 3_600_000}),
]


def test_every_async_tool_call_waits_out_a_lock_as_tools_call_does(memories: Memories) -> None:
    # It was one attempt (a busy database was a result, never retried) that always took the
    # write lock, reads included. The lock is held for less than the busy timeout: one held
    # past it is not waited for again (philont.db.retry.RetryPolicy, test_busy_policy.py).
    where, baseline = memories(), memories()
    if isinstance(where[0], URL):
        pytest.skip("PostgreSQL has no database-wide write lock")
    with sync_store(baseline) as store:
        expected = [outcome(tools.call(name, args, db=store)) for name, args in READS + WRITES]
    holder = sqlite3.connect(str(where[0]), isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(HELD_S, holder.execute, ("COMMIT",))

    async def body(astore: AsyncStore) -> list[tuple[bool, str | None]]:
        release.start()
        results = await asyncio.gather(*(astore.call(n, a) for n, a in READS + WRITES))
        return [outcome(r) for r in results]

    try:
        got = run(where, body, busy_timeout_ms=int(HELD_S * 4_000))
    finally:
        release.join()
        holder.close()
    assert got == expected


# --- cancellation ------------------------------------------------------------------------------


def _second_writer_gets_through_at_once(where: tuple[Path | URL, str | None], key: str) -> None:
    """Another connection writes ``key`` without waiting: no lock of the cancelled unit of work
    is left (SQLite's write lock; on PostgreSQL the key's lock and the rows')."""
    target, _agent = where
    if isinstance(target, Path):
        conn = sqlite3.connect(str(target), timeout=0, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
        finally:
            conn.close()
        return
    with sync_store(where) as store, store.begin() as mem:
        mem.session.execute(text("SET LOCAL lock_timeout = '100ms'"))
        mem.facts.store("cancel", key, "second writer")


def _kept(where: tuple[Path | URL, str | None], key: str) -> tuple[int, int]:
    """Versions of the fact ``cancel.key`` and action-log rows of calls that stored it."""
    with sync_store(where) as store, store.begin(write=False) as mem:
        versions = [f for f in mem.facts.history("cancel", key) if f.value != "second writer"]
        logged = [a for a in mem.actions.query(limit=10_000) if a.params.get("key") == key]
    return len(versions), len(logged)


@pytest.fixture
def quiet_logs(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """No warning or error from asyncio, SQLAlchemy's pool or the drivers: a connection torn
    down later ("Task was destroyed but it is pending", "Exception during reset", "query
    cancellation interrupted") is a unit of work that did not end when its caller went on."""
    caplog.set_level(logging.WARNING)
    yield
    gc.collect()
    noisy = [
        r for r in caplog.records if r.name.split(".")[0] in {"asyncio", "sqlalchemy", "psycopg"}
    ]
    assert [r.getMessage()[:200] for r in noisy] == []


@pytest.mark.parametrize("how", ["anyio", "asyncio"])
def test_a_cancelled_unit_of_work_has_ended_when_its_caller_goes_on(
    memories: Memories, how: str, quiet_logs: None
) -> None:
    # Cancelled as it writes: anyio (Starlette, the MCP SDK) delivers the cancellation at every
    # await, so it also interrupted the rollback and the connection's return to the pool; the
    # connection was torn down later, its lock held until then.
    where = memories()

    async def once(astore: AsyncStore, key: str) -> bool:
        """Run a unit of work that is cancelled as it writes; whether its caller saw it."""
        holder: dict[str, Callable[[], object]] = {}

        def work(mem: Memory) -> None:
            mem.facts.store("cancel", key, "first")
            holder["cancel"]()
            mem.actions.record("t", params={"key": key}, success=True, session_id="s")
            mem.facts.store("cancel", key, "again")

        if how == "anyio":
            with anyio.CancelScope() as scope:
                holder["cancel"] = scope.cancel
                await astore.run(work)
            return scope.cancelled_caught
        task = asyncio.ensure_future(astore.run(work))
        holder["cancel"] = task.cancel
        try:
            await task
        except asyncio.CancelledError:
            return True
        return False

    async def body(astore: AsyncStore) -> list[bool]:
        seen = []
        for i in range(6):
            seen.append(await once(astore, f"k{i}"))
            # nothing of it is still running (a connection being torn down behind the caller)
            assert [t for t in asyncio.all_tasks() if t is not asyncio.current_task()] == []
            _second_writer_gets_through_at_once(where, f"k{i}")
        return seen

    assert within(60, lambda: run(where, body)) == [True] * 6
    for i in range(6):
        assert _kept(where, f"k{i}") == (0, 0)


def test_a_timed_out_tool_call_has_its_whole_effect_or_none(
    memories: Memories, quiet_logs: None
) -> None:
    where = memories()
    pick = random.Random(7)

    async def body(astore: AsyncStore) -> list[bool]:
        started = asyncio.get_running_loop().time()
        await astore.call("store_fact", {"namespace": "cancel", "key": "warm", "value": 0})
        took = asyncio.get_running_loop().time() - started
        done = []
        for i in range(20):
            args = {"namespace": "cancel", "key": f"t{i}", "value": i}
            try:
                await asyncio.wait_for(astore.call("store_fact", args), pick.uniform(0, took))
                done.append(True)
            except TimeoutError:
                done.append(False)
            _second_writer_gets_through_at_once(where, f"t{i}")
        return done

    done = within(60, lambda: run(where, body))
    for i, finished in enumerate(done):
        kept = _kept(where, f"t{i}")
        assert kept in {(0, 0), (1, 1)}, (i, kept)
        assert kept == (1, 1) or not finished


# --- closing, another loop, a deleted file ----------------------------------------------------


def test_closing_waits_for_the_calls_in_flight_and_then_refuses(memories: Memories) -> None:
    where = memories()

    async def body(astore: AsyncStore) -> tuple[list[bool], str | None]:
        args = [{"namespace": "close", "key": f"k{i}", "value": i} for i in range(20)]
        calls = [asyncio.ensure_future(astore.call("store_fact", a)) for a in args]
        pool: Any = astore.engine.sync_engine.pool
        while pool.checkedout() == 0:
            assert not all(c.done() for c in calls)
            await asyncio.sleep(0)
        await astore.close()  # with calls in flight, connections checked out
        results = await asyncio.gather(*calls)
        after = await astore.call("list_facts", {"namespace": "close"})
        with pytest.raises(StoreClosedError):
            await astore.run(lambda mem: mem.facts.list("close"))
        return [r.ok for r in results], after.error_code

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        oks, after = run(where, body)
        gc.collect()
    assert oks == [True] * 20 and after == "store_closed"
    assert [str(w.message)[:120] for w in caught if w.category is ResourceWarning] == []
    with sync_store(where) as store, store.begin(write=False) as mem:
        assert len(mem.facts.list("close")) == 20


def test_another_event_loop_is_refused_by_name(memories: Memories) -> None:
    # The pool's queue and the connections belong to the first loop: a second loop's tasks
    # failed with "<Queue> is bound to a different event loop" as soon as they waited for it.
    target, agent = memories()
    with asyncio.Runner() as first:
        astore = first.run(AsyncStore.open(target, agent=agent, upgrade=False))
        with asyncio.Runner() as second:
            result = second.run(astore.call("list_facts", {"namespace": "user"}))
            with pytest.raises(EventLoopError, match="one AsyncStore per event loop"):
                second.run(astore.run(lambda mem: mem.facts.list("user")))
        assert first.run(astore.call("list_facts", {"namespace": "user"})).ok
        first.run(astore.close())
    assert result.error_code == "wrong_event_loop"


def test_closing_from_another_threads_loop_closes_on_its_own_after_its_units(
    memories: Memories,
) -> None:
    # close() from another thread's loop did not wait for the units in flight (their tasks are
    # the other loop's): it closed the Store and the engine under a running unit, whose
    # connection was then left to the garbage collector. It now closes on the AsyncStore's
    # own loop, after its units, and returns when that is done.
    target, agent = memories()
    events: list[str] = []
    closing, closed = threading.Event(), threading.Event()

    def work(mem: Memory) -> int:
        mem.facts.store("close", "first", 1)
        closing.set()
        closed.wait(2)  # never set before close() returns: only bounds a close that does not wait
        mem.facts.store("close", "second", 2)
        events.append("unit ended")
        return 2

    def closer(astore: AsyncStore) -> None:
        closing.wait()
        asyncio.run(astore.close())
        events.append("closed")
        closed.set()

    async def body() -> tuple[int, str | None]:
        astore = await AsyncStore.open(target, agent=agent, upgrade=False)
        thread = threading.Thread(target=closer, args=(astore,))
        thread.start()
        done = await astore.run(work)
        await asyncio.to_thread(thread.join)
        after = await astore.call("list_facts", {"namespace": "close"})
        return done, after.error_code

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        assert asyncio.run(body()) == (2, "store_closed")
        gc.collect()
    assert events == ["unit ended", "closed"]
    assert [str(w.message)[:120] for w in caught if w.category is ResourceWarning] == []
    with sync_store((target, agent)) as store, store.begin(write=False) as mem:
        assert len(mem.facts.list("close")) == 2


def test_closing_from_another_loop_while_its_own_is_stopped_with_units_is_refused(
    memories: Memories,
) -> None:
    # A unit of work suspended with its loop (a Runner between two run() calls) was cut off by
    # a close() from another loop: it went on to a closed Store (StoreClosedError).
    target, agent = memories()
    with asyncio.Runner() as first:
        astore = first.run(AsyncStore.open(target, agent=agent, upgrade=False))

        async def start() -> asyncio.Task[Any]:
            unit = asyncio.ensure_future(astore.run(lambda mem: mem.facts.store("u", "k", 1)))
            while not astore._in_flight:
                await asyncio.sleep(0)
            return unit

        unit = first.run(start())
        with asyncio.Runner() as second, pytest.raises(EventLoopError, match="close it there"):
            second.run(astore.close())

        async def finish() -> None:
            await unit
            await astore.close()

        first.run(finish())
    with asyncio.Runner() as third:  # a loop that has ended has no units left: closing is fine
        later = third.run(AsyncStore.open(target, agent=agent, upgrade=False))
    asyncio.run(later.close())
    with sync_store((target, agent)) as store, store.begin(write=False) as mem:
        assert [f.key for f in mem.facts.list("u")] == ["k"]


def test_a_deleted_database_file_is_refused_not_written_to_the_old_file(
    memories: Memories,
) -> None:
    where = memories()
    if not isinstance(where[0], Path):
        pytest.skip("a file of SQLite's")
    path = where[0]

    async def body(astore: AsyncStore) -> tuple[bool, str | None]:
        stored = await astore.call("store_fact", {"namespace": "u", "key": "k", "value": 1})
        os.remove(path)
        gone = await astore.call("store_fact", {"namespace": "u", "key": "k", "value": 2})
        with pytest.raises(DatabaseGoneError, match="was deleted"):
            await astore.run(lambda mem: mem.facts.list("u"))
        return stored.ok, gone.error_code

    assert run(where, body) == (True, "database_gone")
    assert not path.exists()  # no empty file made in its place either


async def _later(mem: Memory) -> int:
    mem.facts.store("awaited", "never", 1)
    return 1


def test_work_that_gives_a_coroutine_is_refused_and_its_unit_rolled_back(
    memories: Memories,
) -> None:
    # An async function as work (or a function that returns its coroutine): the unit of work
    # committed what work had done before returning it, the coroutine's body never ran, and
    # the caller got the coroutine back ("never awaited" warning at garbage collection).
    where = memories()
    started = [
        lambda mem: (mem.facts.store("awaited", "before", 1), _later(mem))[1],
        lambda mem: (mem.facts.store("awaited", "before", 1), asyncio.sleep(0))[1],
    ]

    async def body(astore: AsyncStore) -> list[str]:
        refused = []
        for work in [_later, *started]:
            with pytest.raises(InvalidInputError) as raised:
                await astore.run(work)
            refused.append(str(raised.value))
        return refused

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no coroutine left never awaited
        refused = run(where, body)
        with sync_store(where) as store:
            for work in [_later, *started]:
                with pytest.raises(InvalidInputError) as raised:
                    store.run(work)
                refused.append(str(raised.value))
            gc.collect()
            with store.begin(write=False) as mem:
                assert mem.facts.list("awaited") == []  # nothing committed
    assert all(text.startswith("work: ") for text in refused), refused
    assert "async function" in refused[0] and "async function" in refused[3]
    assert "returned coroutine" in refused[1] and "returned coroutine" in refused[4], refused


def test_work_that_gives_a_task_or_future_is_refused_saying_why(memories: Memories) -> None:
    # A Task or Future is scheduled work, not what the unit did: it is no part of the
    # transaction (under an AsyncStore it may run between the unit's statements, and a unit
    # run again after a conflict schedules it again). Refused, like a coroutine, but the
    # refusal said "what it was to do never ran", which is not so of scheduled work.
    where = memories()
    ran: list[str] = []

    async def later() -> None:
        ran.append("ran")

    def scheduling(mem: Memory) -> asyncio.Future[None]:
        mem.facts.store("pending", "before", 1)
        return asyncio.ensure_future(later())

    async def body(astore: AsyncStore) -> str:
        with pytest.raises(InvalidInputError) as raised:
            await astore.run(scheduling)
        await asyncio.sleep(0)  # a refused Task is left as it is: it was scheduled
        return str(raised.value)

    told = [run(where, body)]
    loop = asyncio.new_event_loop()
    try:
        with sync_store(where) as store:
            with pytest.raises(InvalidInputError) as raised:
                store.run(lambda mem: (mem.facts.store("pending", "x", 1), loop.create_future())[1])
            told.append(str(raised.value))
            with store.begin(write=False) as mem:
                assert mem.facts.list("pending") == []  # nothing committed
    finally:
        loop.close()
    assert told[0].startswith("work: returned Task (scheduled work, not its result"), told
    assert told[1].startswith("work: returned Future (scheduled work, not its result"), told
    assert "schedule it after run() returns" in told[0] and ran == ["ran"]


def _caught_flush(mem: Memory) -> None:
    """A flush the database refuses (a note without content), caught, and a read after it."""
    mem.session.add(Note(id="n", content=None, created_at=datetime(2026, 1, 1, tzinfo=UTC)))
    with pytest.raises(IntegrityError):
        mem.session.flush()
    mem.facts.list("user")


def test_a_unit_that_goes_on_after_a_caught_failed_flush_ends_typed(memories: Memories) -> None:
    # The failed flush rolled the transaction back; the block went on and ended: SQLAlchemy's
    # untyped PendingRollbackError (its text holding the refused statement's parameters).
    where = memories()

    async def body(astore: AsyncStore) -> str:
        with pytest.raises(UnitOfWorkError) as raised:
            await astore.run(_caught_flush)
        return str(raised.value)

    told = [run(where, body)]
    with sync_store(where) as store:
        with pytest.raises(UnitOfWorkError) as raised, store.begin() as mem:
            _caught_flush(mem)
        told.append(str(raised.value))
        with Session(store.engine) as session:  # the host's transaction goes on, and commits
            with pytest.raises(UnitOfWorkError) as raised, store.join(session) as mem:
                _caught_flush(mem)
            told.append(str(raised.value))
            with store.join(session) as mem:
                mem.facts.store("host", "after", 1)
            session.commit()
        with store.begin(write=False) as mem:
            assert [f.key for f in mem.facts.list("host")] == ["after"]
    for said in told:
        assert said.startswith("a write of this unit of work failed (IntegrityError)"), said
        assert "nothing of it was written" in said


def _failed_and_undone(key: str) -> Callable[[Memory], None]:
    """A flush refused inside a SAVEPOINT of the block's own (rolled back, caught), and a
    SAVEPOINT the block rolls back while it handles an error of its own: neither failed the
    unit of work, whose later write of ``key`` is kept."""

    def work(mem: Memory) -> None:
        when = datetime(2026, 1, 1, tzinfo=UTC)
        with pytest.raises(IntegrityError), mem.session.begin_nested():
            mem.session.add(Note(id="n", content=None, created_at=when))
            mem.session.flush()
        try:
            raise LookupError("the host's own")
        except LookupError:
            with pytest.raises(LookupError), mem.session.begin_nested():
                mem.facts.store("host", "undone", 1)
                raise
        mem.facts.store("host", key, 1)

    return work


def test_a_flush_refused_inside_a_savepoint_of_the_block_does_not_fail_the_unit(
    memories: Memories,
) -> None:
    # The unit ends typed only when a failed flush rolled back its own transaction (the
    # error it keeps, after_soft_rollback): never for one a SAVEPOINT inside it undid, nor
    # for a rollback the block does while handling an error.
    where = memories()

    async def body(astore: AsyncStore) -> None:
        await astore.run(_failed_and_undone("async"))

    run(where, body)
    with sync_store(where) as store:
        with store.begin() as mem:
            _failed_and_undone("own")(mem)
        with Session(store.engine) as session:
            with store.join(session) as mem:
                _failed_and_undone("joined")(mem)
            session.commit()
        with store.begin(write=False) as mem:
            assert sorted(f.key for f in mem.facts.list("host")) == ["async", "joined", "own"]


# --- the sync face, and how the database is named ------------------------------------------------


def test_the_sync_face_refuses_a_unit_of_work_of_its_own_naming_what_to_use(
    memories: Memories,
) -> None:
    # astore.store.begin() failed inside SQLAlchemy (MissingGreenlet, a traceback): its
    # statements must be awaited, which only the AsyncStore's own units of work do.
    where = memories()

    async def body(astore: AsyncStore) -> tuple[list[str], tools.ToolResult, int]:
        messages = []
        for attempt in (
            lambda: astore.store.begin().__enter__(),
            lambda: astore.store.run(lambda mem: mem.facts.list("user")),
        ):
            with pytest.raises(InvalidDatabaseError) as caught:
                attempt()
            messages.append(str(caught.value))
        result = tools.call("list_facts", {"namespace": "user"}, db=astore.store)
        still = await astore.run(lambda mem: len(mem.facts.list("user")))
        return messages, result, still

    messages, result, still = run(where, body)
    for message in [*messages, result.error or ""]:
        assert "await astore.run(work)" in message and "await astore.call(" in message
    assert result.error_code == "invalid_database" and still == 0


def test_a_closed_async_store_names_its_database_as_the_sync_store_does(
    memories: Memories,
) -> None:
    # It said "the Store of sqlite+aiosqlite:////...": the async driver's URL.
    target, agent = memories()
    store = Store.open(target, agent=agent, upgrade=False)
    store.close()
    with pytest.raises(StoreClosedError) as sync_closed:
        store.begin()

    async def body(astore: AsyncStore) -> str:
        await astore.close()
        with pytest.raises(StoreClosedError) as closed:
            await astore.run(lambda mem: mem.facts.list("user"))
        return str(closed.value)

    message = run((target, agent), body)
    assert message == str(sync_closed.value)
    if isinstance(target, Path):
        assert message == f"the Store of {target} is closed"
    else:
        assert not target.password or f":{target.password}@" not in message
        assert message == f"the Store of {target.set(drivername='postgresql')!r} is closed"


# --- errors name the API in use --------------------------------------------------------------

ENDS = {
    "commit": lambda s: s.commit(),
    "rollback": lambda s: s.rollback(),
    "close": lambda s: s.close(),
}


@pytest.mark.parametrize("then_write", [False, True], ids=["end", "end-then-write"])
@pytest.mark.parametrize("end", ENDS)
@pytest.mark.parametrize("host", [False, True], ids=["own", "host-session"])
def test_a_unit_whose_transaction_work_ended_names_asyncstore_run(
    memories: Memories, host: bool, end: str, then_write: bool
) -> None:
    # The error of a unit whose transaction was ended inside it said "store.join: ... inside
    # the joined block; end it after the block": an AsyncStore's user never called store.join
    from sqlalchemy.ext.asyncio import AsyncSession

    def work(mem: Memory) -> None:
        ENDS[end](mem.session)
        if then_write:
            mem.facts.store("user", "after", 1)

    async def body(astore: AsyncStore) -> str:
        with pytest.raises(UnitOfWorkError) as raised:
            if host:
                async with AsyncSession(astore.engine) as session, session.begin():
                    await astore.run(work, session=session)
            else:
                await astore.run(work)
        return str(raised.value)

    said = run(memories(), body)
    assert said.startswith("AsyncStore.run: "), said
    assert "store.join" not in said
    assert ("the AsyncSession ended its transaction" in said) is host, said


def test_a_host_session_that_cannot_be_joined_is_refused_naming_session(
    memories: Memories,
) -> None:
    # It was refused naming a "bind" argument AsyncStore.run does not have
    from sqlalchemy.ext.asyncio import AsyncSession

    async def body(astore: AsyncStore) -> dict[str, Any]:
        async with AsyncSession(astore.engine) as session:
            await session.begin()
            with pytest.raises(DBAPIError):  # a failed flush, not rolled back
                session.add(Note(id="n", content=None, created_at=datetime(2026, 1, 1, tzinfo=UTC)))
                await session.flush()
            with pytest.raises(InvalidInputError) as raised:
                await astore.run(lambda mem: mem.facts.list("user"), session=session)
            return {**raised.value.details, "message": str(raised.value)}

    details = run(memories(), body)
    assert details["argument"] == "session"
    assert "the AsyncSession cannot be joined" in details["message"], details


def test_a_host_session_on_another_file_is_refused_naming_asyncstore_run(
    memories: Memories,
) -> None:
    from sqlalchemy.ext.asyncio import AsyncSession

    from philont.aio import create_async_engine

    where, (other, agent) = memories(), memories()
    if agent is not None:
        pytest.skip("another file: SQLite")

    async def body(astore: AsyncStore) -> str:
        engine = create_async_engine(other)
        try:
            async with AsyncSession(engine) as session, session.begin():
                with pytest.raises(InvalidDatabaseError) as raised:
                    await astore.run(lambda mem: mem.facts.list("user"), session=session)
                return str(raised.value)
        finally:
            await engine.dispose()

    said = run(where, body)
    # ... and ended with store.join's advice, naming the store.join call it had just left
    # (AsyncStore.run takes no connection) and a Session where the host passed an AsyncSession
    assert said.startswith("AsyncStore.run: the AsyncSession is on "), said
    assert "store.join" not in said, said
