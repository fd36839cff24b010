"""A writing unit of work begun on an SQLite file while this thread's own writing unit of work on
it is still open would wait for a lock only this thread can give back: it is refused at once
(``NestedWriteError``), whichever way it is begun, and the open unit goes on. Other threads
still wait their turn."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from philont import Memory, Store, tools
from philont.aio import AsyncStore
from philont.errors import NestedWriteError, UnitOfWorkError
from philont.memory import Memory as _Memory
from philont.store import shared

BUSY_MS = 60_000
"""Nested, the old code waited this long, then said database_busy: a refusal that comes in less
than half of it did not wait for the lock (not a speed target)."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "m.sqlite", busy_timeout_ms=BUSY_MS)
    yield opened
    opened.close()


@contextlib.contextmanager
def _without_waiting() -> Iterator[None]:
    started = time.monotonic()
    try:
        yield
    finally:
        assert time.monotonic() - started < BUSY_MS / 2_000, "it waited for the lock"


def _store_fact(mem: _Memory, key: str) -> None:
    mem.facts.store(namespace="user.t", key=key, value=1)


NESTED: dict[str, Callable[[Store], object]] = {
    "store.begin()": lambda s: _enter(s.begin()),
    "store.run(fn)": lambda s: s.run(lambda mem: _store_fact(mem, "inner")),
    "Memory.open(path)": lambda s: _enter(Memory.open(s.path, busy_timeout_ms=BUSY_MS)),
    "shared(path).begin()": lambda s: _enter(shared(s.path, busy_timeout_ms=BUSY_MS).begin()),
    "tools.call(db=store)": lambda s: _tool(s),
    "tools.call(db=path)": lambda s: _tool(str(s.path)),
    "a tool that reads, tools.call(db=store)": lambda s: _tool(s, "list_facts", {}),
}


def _enter(unit: _Memory) -> None:
    with unit as mem:
        _store_fact(mem, "inner")


def _tool(db: object, name: str = "store_fact", args: dict[str, object] | None = None) -> None:
    args = {"namespace": "user.t", "key": "inner", "value": 1} if args is None else args
    result = tools.call(name, args, db=db)
    assert not result.ok
    assert result.error_code == "nested_write", result
    raise NestedWriteError()


@pytest.mark.parametrize("way", sorted(NESTED))
def test_a_nested_writing_unit_is_refused_at_once_and_the_open_one_goes_on(
    store: Store, way: str
) -> None:
    with store.begin() as mem:
        _store_fact(mem, "outer")  # its transaction begins here (SQLAlchemy begins lazily)
        with pytest.raises(NestedWriteError) as caught, _without_waiting():
            NESTED[way](store)
        assert isinstance(caught.value, UnitOfWorkError)
        assert caught.value.code == "nested_write"
        _store_fact(mem, "outer_again")
    with store.begin(write=False) as mem:
        assert sorted(f.key for f in mem.facts.list()) == ["outer", "outer_again"]


@pytest.mark.parametrize("way", sorted(NESTED))
def test_a_sync_writer_in_the_loop_of_an_open_async_writing_unit_is_refused_at_once(
    store: Store, way: str
) -> None:
    # The AsyncStore's unit holds SQLite's lock on its aiosqlite connection, which only the
    # event loop can end: a sync writer begun in the loop's thread (inside astore.run's work)
    # blocked that loop for the whole busy timeout, then said database_busy.
    assert store.path is not None

    async def main() -> list[str]:
        astore = await AsyncStore.open(store.path, busy_timeout_ms=BUSY_MS)
        try:

            def work(mem: _Memory) -> str:
                _store_fact(mem, "outer")
                with pytest.raises(NestedWriteError) as caught:
                    NESTED[way](store)
                _store_fact(mem, "outer_again")
                return caught.value.code

            assert await astore.run(work) == "nested_write"
            _enter(store.begin())  # the unit has ended: the loop's thread writes again
            return await astore.run(
                lambda mem: sorted(f.key for f in mem.facts.list()), write=False
            )
        finally:
            await astore.close()

    assert asyncio.run(main()) == ["inner", "outer", "outer_again"]


def test_a_unit_that_has_not_begun_its_transaction_holds_nothing(store: Store) -> None:
    with store.begin() as mem:
        _enter(store.begin())
        _store_fact(mem, "outer")
    with store.begin(write=False) as mem:
        assert sorted(f.key for f in mem.facts.list()) == ["inner", "outer"]


def test_a_nested_unit_that_only_reads_is_not_refused(store: Store) -> None:
    with store.begin() as mem:
        _store_fact(mem, "outer")
        with store.begin(write=False) as inner:
            assert inner.facts.list() == []  # the outer unit has not committed yet


NESTED_DEFERRED_WRITES: dict[str, Callable[[_Memory], object]] = {
    "a fact stored": lambda mem: _store_fact(mem, "inner"),
    "a fact read (its access time)": lambda mem: mem.facts.get("user.t", "before"),
    "a message appended": lambda mem: mem.timeline.append("hello"),
}


@pytest.mark.parametrize("write", sorted(NESTED_DEFERRED_WRITES))
def test_the_first_write_of_a_nested_deferred_unit_is_refused_as_nested(
    store: Store, write: str
) -> None:
    with store.begin() as mem:
        _store_fact(mem, "before")
    with store.begin() as mem:
        _store_fact(mem, "outer")
        with (
            pytest.raises(NestedWriteError),
            _without_waiting(),
            store.begin(write=False) as inner,
        ):
            NESTED_DEFERRED_WRITES[write](inner)
    with store.begin(write=False) as mem:
        assert sorted(f.key for f in mem.facts.list()) == ["before", "outer"]


def test_another_thread_waits_its_turn_and_the_gate_follows_its_holder(store: Store) -> None:
    """The gate handed to another thread is that thread's: this one, asking again while the
    other holds it, waits for it (it is not refused), and both write."""
    other_holds, other_may_end = threading.Event(), threading.Event()
    failures: list[BaseException] = []

    def other() -> None:
        try:
            with store.begin() as mem:
                _store_fact(mem, "other")
                other_holds.set()
                other_may_end.wait(10)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    with store.begin() as mem:
        _store_fact(mem, "first")
        thread = threading.Thread(target=other)
        thread.start()
        assert not other_holds.wait(0.3)  # it waits behind this unit
    assert other_holds.wait(10)  # handed over as this unit ended
    threading.Timer(0.3, other_may_end.set).start()
    with store.begin() as mem:  # waits for the other thread, not refused
        _store_fact(mem, "second")
    thread.join(10)
    assert failures == []
    with store.begin(write=False) as mem:
        assert sorted(f.key for f in mem.facts.list()) == ["first", "other", "second"]
