"""The write gate (philont.db.write_gate): one process's writers of one SQLite file take SQLite's
lock in the order they came, instead of whoever polls SQLite's lock first; every unit of work
gives the gate back however it ended; a forked child starts with it open; and the time queued
counts against the busy timeout."""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from philont.db import write_gate
from philont.db.retry import RetryPolicy, translate
from philont.db.write_gate import AsyncWriteGate, WriteGate, gate_for, give_back, queued, take
from philont.errors import DatabaseBusyError, NestedWriteError
from philont.memory import Memory
from philont.store import Store

TIMEOUT_MS = 500
QUEUED_MS = 2_000
"""The busy timeout of writers queued behind another process's lock: one timeout is told from
two by 0.6 of it, 1.2 s here (0.3 s with TIMEOUT_MS: a loaded machine's stall)."""


@pytest.fixture
def store(tool_db: Path) -> Iterator[Store]:
    with Store.open(tool_db, busy_timeout_ms=TIMEOUT_MS) as opened:
        yield opened


@pytest.fixture
def queued_store(tool_db: Path) -> Iterator[Store]:
    with Store.open(tool_db, busy_timeout_ms=QUEUED_MS) as opened:
        yield opened


def _free(path: Path) -> bool:
    """Whether the file's gate is open (taken and given back at once if so)."""
    gate = gate_for(path)
    if gate.acquire(0):
        gate.release()
        return True
    return False


def _wait_until(condition: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_the_gate_is_handed_over_in_the_order_its_waiters_came() -> None:
    gate = WriteGate()
    assert gate.acquire(0)
    order: list[int] = []

    def waiter(n: int) -> None:
        assert gate.acquire(5)
        order.append(n)
        gate.release()

    threads = []
    for n in range(8):
        threads.append(threading.Thread(target=waiter, args=(n,)))
        threads[-1].start()
        _wait_until(lambda n=n: len(gate._waiters) == n + 1)  # queued before the next comes
    gate.release()
    for t in threads:
        t.join()
    assert order == list(range(8))


def test_a_waiter_whose_time_ran_out_leaves_the_queue() -> None:
    gate = WriteGate()
    assert gate.acquire(0)
    started = time.monotonic()
    assert not gate.acquire(0.1)
    assert time.monotonic() - started >= 0.09
    gate.release()
    assert gate.acquire(0)  # open again: nobody left waiting for a turn that never ends


def test_a_waiter_waits_on_past_the_timeout_while_the_queue_moves(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The gate's clock is the test's: on the real one, a loaded machine that let this thread
    # sleep past 0.3 s between two moves of the queue timed the waiter out.
    now = [1000.0]
    monkeypatch.setattr(write_gate, "time", SimpleNamespace(monotonic=lambda: now[0]))
    gate = WriteGate()
    assert gate.acquire(0)
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(gate.acquire(0.3)))
    waiter.start()
    _wait_until(lambda: len(gate._waiters) == 1)
    for _ in range(8):  # 1.2 s: four timeouts, but a holder finished a transaction meanwhile
        time.sleep(0.15)  # (real time too: the waiter looks at the clock meanwhile)
        now[0] += 0.15
        gate.moved_at = now[0]
    assert waiter.is_alive() and not got
    gate.release()
    waiter.join(5)
    assert got == [True]


def test_writing_units_of_one_store_take_the_lock_in_the_order_they_came(tool_db: Path) -> None:
    # SQLite's busy handler lets whoever retries first in, so a thread can lose again and again
    # until its busy timeout is spent; behind the gate they go first come, first served.
    first_in = threading.Event()
    go_on = threading.Event()
    order: list[int] = []

    def first(mem: Memory) -> None:
        mem.timeline.count()  # the transaction (and the gate) begins with its first statement
        first_in.set()
        assert go_on.wait(5)
        mem.timeline.append("first")

    def later(n: int) -> None:
        store.run(lambda mem: order.append(n) or mem.timeline.append(f"writer {n}"))

    store = Store.open(tool_db, busy_timeout_ms=20_000)
    holder = threading.Thread(target=store.run, args=(first,))
    holder.start()
    assert first_in.wait(5)
    gate = gate_for(tool_db)
    writers = []
    for n in range(6):
        writers.append(threading.Thread(target=later, args=(n,)))
        writers[-1].start()
        _wait_until(lambda n=n: len(gate._waiters) == n + 1)
    go_on.set()
    for t in [holder, *writers]:
        t.join()
    store.close()
    assert order == list(range(6))


@pytest.mark.parametrize("ending", ["commit", "exception", "busy BEGIN"])
def test_a_unit_of_work_gives_the_gate_back_however_it_ended(
    store: Store, tool_db: Path, ending: str
) -> None:
    if ending == "commit":
        with store.begin() as mem:
            mem.timeline.append("kept")
    elif ending == "exception":
        with pytest.raises(ZeroDivisionError), store.begin() as mem:
            mem.timeline.append("rolled back")
            _ = 1 / 0
    else:
        other = sqlite3.connect(str(tool_db), isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(DatabaseBusyError), store.begin() as mem:
                mem.timeline.count()
        finally:
            other.execute("ROLLBACK")
            other.close()
    assert _free(tool_db)


LONG_MS = 60_000
"""A busy timeout whose half no unit of work of a test takes unless it waited for a lock (not
a speed target: within 0.5 s, a loaded machine's stall told a wait that was none)."""


def test_a_connection_that_begins_twice_before_going_back_to_the_pool_does_not_wait_on_itself(
    tool_db: Path,
) -> None:
    started = time.monotonic()
    with Store.open(tool_db, busy_timeout_ms=LONG_MS) as store:
        with store.write_engine.connect() as conn:
            for _ in range(2):
                conn.begin()
                conn.execute(text("SELECT 1"))
                conn.commit()
            assert not _free(tool_db)  # still this connection's until it goes back
        assert time.monotonic() - started < LONG_MS / 2000
        assert _free(tool_db)


def test_writers_queued_behind_one_waiting_out_another_process_give_up_with_it(
    queued_store: Store, tool_db: Path
) -> None:
    # Another connection holds SQLite's lock all along: the first writer waits one busy
    # timeout in SQLite while the second queues at the gate, where nothing moves; the second
    # gives up too (or waits only what is left), after about one busy timeout, not two.
    store = queued_store
    other = sqlite3.connect(str(tool_db), isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    took: dict[int, float] = {}

    def writer(n: int) -> None:
        started = time.monotonic()
        with pytest.raises(DatabaseBusyError):
            store.run(lambda mem: mem.timeline.append("never"))
        took[n] = time.monotonic() - started

    try:
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert max(took.values()) < 1.6 * QUEUED_MS / 1000 + 0.2, took
    with store.begin() as mem:  # the busy timeout is whole again for the next unit
        waited = mem.session.connection().exec_driver_sql("PRAGMA busy_timeout").scalar()
    assert waited == QUEUED_MS


def _child_takes(path: str, result: multiprocessing.Queue[bool]) -> None:
    result.put(gate_for(Path(path)).acquire(0.5))


def _a_forked_child_takes_the_gate(path: Path) -> bool:
    ctx = multiprocessing.get_context("fork")
    result: multiprocessing.Queue[bool] = ctx.Queue()
    child = ctx.Process(target=_child_takes, args=(str(path), result))
    child.start()
    child.join(10)
    if child.is_alive():  # hung on a lock
        child.kill()
        return False
    return result.get(timeout=5)


def test_a_forked_child_finds_the_gate_open(tool_db: Path) -> None:
    gate = gate_for(tool_db)
    held = threading.Event()
    done = threading.Event()

    def hold() -> None:  # another thread holds it: it does not exist in the child
        assert gate.acquire(1)
        held.set()
        done.wait(10)
        gate.release()

    keeper = threading.Thread(target=hold)
    keeper.start()
    assert held.wait(5)
    try:
        assert _a_forked_child_takes_the_gate(tool_db)
    finally:
        done.set()
        keeper.join()


def test_a_child_forked_while_others_queue_and_hold_the_gates_mutex_takes_it_at_once(
    tool_db: Path,
) -> None:
    # At the fork the forking thread holds the gate, another waits in its queue and a third is
    # inside its mutex: the child (its forking thread busy with other things) finds the gate
    # open, its queue empty and its mutex free.
    gate = gate_for(tool_db)
    assert gate.acquire(1)
    waiting = threading.Thread(target=lambda: gate.acquire(10) and gate.release())
    waiting.start()
    _wait_until(lambda: len(gate._waiters) == 1)
    inside, done = threading.Event(), threading.Event()

    def hold_the_mutex() -> None:
        with gate._mutex:
            inside.set()
            done.wait(10)

    holder = threading.Thread(target=hold_the_mutex)
    holder.start()
    assert inside.wait(5)
    try:
        assert _a_forked_child_takes_the_gate(tool_db)
    finally:
        done.set()
        holder.join()
        gate.release()
        waiting.join()
    assert _free(tool_db)


def _in_a_child(check: Callable[[], bool]) -> bool:
    """Whether ``check`` holds in a child forked here (by ``os.fork``, from this thread)."""
    pid = os.fork()
    if pid == 0:  # the child: no pytest machinery, only an exit code
        code = 1
        try:
            code = 0 if check() else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _kept_out(info: dict[str, object], gate: WriteGate) -> bool:
    """Whether the connection of ``info`` is kept from ``gate``, which another holds: it waited
    and gave up, or (this thread holds it) it was refused as a nested writer at once."""
    try:
        return take(info, gate, 0.05) is None
    except NestedWriteError:
        return True


def test_a_write_the_parent_was_inside_at_a_fork_neither_holds_nor_gives_back_the_childs_gate(
    tool_db: Path,
) -> None:
    """A unit of work the forking thread was inside: its pooled connection's record says it
    holds the gate, and the child has a copy. In the child that copy took the gate to be held
    already (a second transaction wrote beside the child's own holder) and its check-in gave
    the gate back while the child's own holder had it: the gate open twice."""
    gate = gate_for(tool_db)
    parents: dict[str, object] = {}
    assert take(parents, gate, 1) is not None  # the parent is inside a write

    def child() -> bool:
        own: dict[str, object] = {}
        if take(own, gate, 1) is None:  # the child's gate starts open
            return False
        if not _kept_out(parents, gate):  # the copy must wait its turn like any other
            return False
        give_back(parents)  # the copy's connection goes back to its pool
        others: dict[str, object] = {}
        still_held = _kept_out(others, gate)
        give_back(own)
        return still_held and take(others, gate, 1) is not None

    try:
        assert _in_a_child(child)
        assert not gate.acquire(0)  # the parent's write is unaffected: it holds the gate
    finally:
        give_back(parents)
    assert _free(tool_db)


# --- an AsyncStore's writers -----------------------------------------------------------------


def test_an_async_gate_is_given_back_when_its_holder_or_a_waiter_is_cancelled() -> None:
    async def main() -> list[str]:
        gate = AsyncWriteGate()
        order: list[str] = []
        inside = asyncio.Event()

        async def holder() -> None:
            async with queued(gate, 5):
                inside.set()
                await asyncio.sleep(10)

        async def waiter(name: str) -> None:
            async with queued(gate, 5):
                order.append(name)

        first = asyncio.ensure_future(holder())
        await inside.wait()
        doomed = asyncio.ensure_future(waiter("cancelled while waiting"))
        last = asyncio.ensure_future(waiter("last"))
        await asyncio.sleep(0.01)
        doomed.cancel()
        first.cancel()
        await asyncio.wait_for(last, 5)
        assert not gate.lock.locked()
        return order

    assert asyncio.run(main()) == ["last"]


def test_an_async_writer_whose_turn_does_not_come_in_time_is_busy_and_not_retried() -> None:
    async def main() -> BaseException:
        gate = AsyncWriteGate()
        await gate.lock.acquire()
        try:
            async with queued(gate, 0.1):
                raise AssertionError("never its turn")
        except DBAPIError as exc:
            return exc
        raise AssertionError("not refused")

    exc = asyncio.run(main())
    assert isinstance(translate(exc), DatabaseBusyError)
    verdict = RetryPolicy().decide(exc, attempt=1, attempt_s=0.1, total_s=0.1)
    assert isinstance(verdict, DatabaseBusyError) and "whole busy timeout" in verdict.message
