"""No statement outlives its unit of work (:mod:`philont.db.cursors`).

A result left half-read when its unit of work ends (an exception raised in a loop over rows
and kept, a result the caller holds on to) used to keep its statement, and so its read
snapshot, on the pooled connection: the next unit of work on it read the past (another
connection's commit unseen) and a writing one failed with "database is locked" at once. Each
case below leaves a result behind in a different way and then checks, on real WAL files, that
the next units of work see what another connection committed and write at once."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select, text
from sqlalchemy.exc import SQLAlchemyError

from philont.db.models import Fact
from philont.memory import Memory
from philont.store import Store

ROWS = 40


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    path = tmp_path_factory.mktemp("leftover") / "m.sqlite"
    with Store.open(path, busy_timeout_ms=2000) as opened:
        with opened.begin() as mem:
            for i in range(ROWS):
                mem.facts.store("n", f"k{i}", i)
        yield opened


# Ways of reading rows that stop early. Each returns an iterator over the rows of ``mem``.
QUERIES: dict[str, Callable[[Memory], Iterator[Any]]] = {
    "text": lambda mem: iter(mem.session.execute(text("SELECT key FROM memory_facts"))),
    "orm": lambda mem: iter(mem.session.scalars(select(Fact))),
    "mappings": lambda mem: iter(mem.session.execute(select(Fact.key)).mappings()),
    "yield_per": lambda mem: iter(
        mem.session.execute(select(Fact.key).execution_options(yield_per=5))
    ),
    "dbapi": lambda mem: iter(
        mem.session.connection().connection.dbapi_connection.execute(  # type: ignore[union-attr]
            "SELECT key FROM memory_facts"
        )
    ),
}


class Left(Exception):
    """Raised inside the loop; kept by the test, with its traceback (and so the result)."""


def leave_behind(store: Store, query: str, read: int, write: bool, how: str) -> object:
    """Begin a unit of work, read ``read`` rows of ``query`` and leave: by an exception kept
    with its traceback, or keeping the half-read result itself. Returns what was kept."""
    if how == "exception":
        try:
            with store.begin(write=write) as mem:
                rows = QUERIES[query](mem)
                for i, _row in enumerate(rows):
                    if i + 1 >= read:
                        raise Left
        except Left as exc:
            return exc
        raise AssertionError("the loop ended before the exception")
    with store.begin(write=write) as mem:
        rows = QUERIES[query](mem)
        for _ in range(read):
            next(rows)
    return rows


def changed_elsewhere(store: Store, value: int) -> None:
    """Another connection (another process, say) commits a new value of ``n.k1``."""
    assert store.path is not None
    conn = sqlite3.connect(store.path, isolation_level=None, timeout=2)
    try:
        conn.execute("UPDATE memory_facts SET value_json = ? WHERE key = 'k1'", (str(value),))
    finally:
        conn.close()


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.sampled_from(sorted(QUERIES)),
    read=st.integers(1, ROWS - 1),
    write=st.booleans(),
    how=st.sampled_from(["exception", "result"]),
    value=st.integers(1000, 10**6),
)
def test_a_result_left_half_read_does_not_pin_the_next_units_snapshot(
    store: Store, query: str, read: int, write: bool, how: str, value: int
) -> None:
    kept = leave_behind(store, query, read, write, how)
    changed_elsewhere(store, value)
    with store.begin(write=False) as mem:
        seen = mem.session.execute(
            text("SELECT value_json FROM memory_facts WHERE key = 'k1'")
        ).scalar()
    assert seen == str(value)  # not the snapshot of the unit that left the result behind
    with store.begin() as mem:  # a writer begins at once: no stale read lock on its connection
        mem.facts.store("n", "written", value)
    with store.begin(write=False) as mem:
        assert mem.facts.get("n", "written").value == value
    del kept


def test_a_result_read_after_its_unit_ended_fails_instead_of_reading_the_past(
    store: Store,
) -> None:
    rows = leave_behind(store, "text", 1, False, "result")
    assert isinstance(rows, Iterator)
    with pytest.raises((SQLAlchemyError, sqlite3.ProgrammingError)):
        next(rows)


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    query=st.sampled_from(sorted(set(QUERIES) - {"dbapi"})),  # the adapter has no execute
    read=st.integers(1, ROWS - 1),
    write=st.booleans(),
    how=st.sampled_from(["exception", "result"]),
    value=st.integers(1000, 10**6),
)
def test_nor_does_one_left_by_an_async_unit_of_work(
    store: Store, query: str, read: int, write: bool, how: str, value: int
) -> None:
    """The same through an AsyncStore (aiosqlite): a ``yield_per`` result is a server-side
    cursor there, which held its statement on the pooled connection alike."""
    pytest.importorskip("aiosqlite")
    from philont.aio import AsyncStore

    def half(mem: Memory) -> object:
        rows = QUERIES[query](mem)
        for i, _row in enumerate(rows):
            if i + 1 >= read:
                if how == "exception":
                    raise Left
                return rows
        raise AssertionError("fewer rows than read")

    def k1(mem: Memory) -> object:
        sql = text("SELECT value_json FROM memory_facts WHERE key = 'k1'")
        return mem.session.execute(sql).scalar()

    async def scenario() -> tuple[object, object]:
        assert store.path is not None
        astore = await AsyncStore.open(store.path)
        try:
            try:
                kept = await astore.run(half, write=write)
            except Left as exc:
                kept = exc
            changed_elsewhere(store, value)
            seen = await astore.run(k1, write=False)
            await astore.run(lambda mem: mem.facts.store("n", "written", value))
            written = await astore.run(lambda mem: mem.facts.get("n", "written"), write=False)
            del kept
            return seen, written
        finally:
            await astore.close()

    seen, written = asyncio.run(scenario())
    assert seen == str(value)
    assert getattr(written, "value", None) == value
