"""Async hosts: every service and tool through an AsyncStore (aiosqlite, async psycopg), the
host's own AsyncSession, concurrency, and an event loop that keeps running."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, insert, select
from sqlalchemy.engine import URL

from philont.aio import AsyncStore
from philont.memory import Memory
from tests.integration.test_store import SERVICES
from tests.tools.test_schemas import CALLS

BOTH_BACKENDS = True
T = TypeVar("T")


def run(target: Path | URL, body: Callable[[AsyncStore], Awaitable[T]]) -> T:
    """``body(astore)`` on a fresh AsyncStore, in a fresh event loop."""

    async def main() -> T:
        astore = await AsyncStore.open(target)
        try:
            return await body(astore)
        finally:
            await astore.close()

    return asyncio.run(main())


@pytest.mark.parametrize(("attribute", "cls", "call"), SERVICES, ids=[s[0] for s in SERVICES])
def test_every_service_works_under_an_async_engine(
    target: Path | URL, attribute: str, cls: type[Any], call: str
) -> None:
    def work(mem: Memory) -> str:
        mem.facts.store("user.home", "city", "Berlin")
        mem.timeline.append("We moved to Berlin last spring.")
        assert isinstance(getattr(mem, attribute), cls)
        eval(call, {"mem": mem})
        return type(getattr(mem, attribute)).__name__

    assert run(target, lambda a: a.run(work)) == cls.__name__


def test_every_tool_works_under_an_async_engine(target: Path | URL) -> None:
    async def body(astore: AsyncStore) -> list[tuple[bool, str | None]]:
        results = []
        for name, arguments in CALLS:
            result = await astore.call(name, arguments)
            results.append((result.ok, result.error_code))
        return results

    got = run(target, body)
    assert [ok for ok, _code in got] == [True] * 6 + [False] + [True] * 5 + [False]
    assert got[-1][1] == "reserved_namespace"


def test_search_retriever_and_prefix_read_through_the_async_driver(target: Path | URL) -> None:
    async def body(astore: AsyncStore) -> tuple[list[str], int, str]:
        await astore.run(lambda mem: mem.timeline.append("The Kastanienallee flat is warm rent."))
        await astore.run(lambda mem: mem.facts.store("user.home", "street", "Kastanienallee"))
        hits = await astore.run(lambda mem: [h.content for h in mem.search.messages("Kastanien")])
        window = await astore.run(lambda mem: mem.retriever.retrieve("Kastanienallee rent?"))
        prefix = await astore.run(lambda mem: mem.prefix.build().text, write=False)
        return hits, window.recency_count, prefix

    hits, recent, prefix = run(target, body)
    assert hits == ["The Kastanienallee flat is warm rent."]
    assert recent == 1 and "user.home.street" in prefix


def test_concurrent_tasks_on_one_async_store_lose_nothing(target: Path | URL) -> None:
    async def body(astore: AsyncStore) -> tuple[int, list[Any]]:
        async def one(i: int) -> None:
            await astore.call("store_fact", {"namespace": "tasks", "key": f"k{i}", "value": i})
            await astore.run(lambda mem: mem.timeline.append(f"task {i}"))

        await asyncio.gather(*(one(i) for i in range(20)))
        count = await astore.run(lambda mem: mem.timeline.count(), write=False)
        facts = await astore.run(lambda mem: [f.value for f in mem.facts.list("tasks")])
        return count, facts

    count, facts = run(target, body)
    assert count == 20 and sorted(facts) == list(range(20))


def test_the_event_loop_runs_while_a_unit_of_work_waits_for_the_database(
    target: Path | URL,
) -> None:
    async def body(astore: AsyncStore) -> tuple[int, int]:
        ticks = 0
        done = False

        async def ticker() -> None:
            nonlocal ticks
            while not done:
                ticks += 1
                await asyncio.sleep(0)

        def many_statements(mem: Memory) -> int:
            for i in range(40):
                mem.timeline.append(f"message {i}")
            return mem.timeline.count()

        task = asyncio.create_task(ticker())
        await asyncio.sleep(0)
        before = ticks
        count = await astore.run(many_statements)
        done = True
        await task
        return ticks - before, count

    ticked, count = run(target, body)
    assert count == 40
    assert ticked >= 20  # the loop ran between the statements, not only after them


# --- the host's own AsyncSession -------------------------------------------------------------

HOST = MetaData()
ORDERS = Table(
    "host_orders",
    HOST,
    Column("id", Integer, primary_key=True),
    Column("item", String(100), nullable=False),
)


def test_host_writes_and_memory_writes_commit_and_roll_back_together(target: Path | URL) -> None:
    from sqlalchemy.ext.asyncio import AsyncSession

    async def body(astore: AsyncStore) -> tuple[int, int, int, int]:
        async with astore.engine.begin() as conn:
            await conn.run_sync(HOST.create_all)

        async def order(item: str, fail: bool) -> None:
            async with AsyncSession(astore.engine) as session, session.begin():
                await session.execute(insert(ORDERS).values(item=item))
                await astore.run(
                    lambda mem: mem.facts.store("orders", "last", item), session=session
                )
                result = await astore.call(
                    "store_fact",
                    {"namespace": "orders", "key": "count", "value": 1},
                    session=session,
                )
                assert result.ok
                if fail:
                    raise RuntimeError("the host's handler failed")

        await order("tea", fail=False)
        with pytest.raises(RuntimeError):
            await order("coffee", fail=True)
        async with AsyncSession(astore.engine) as session:
            orders = (await session.execute(select(func.count()).select_from(ORDERS))).scalar()
            last = await astore.run(
                lambda mem: mem.facts.get("orders", "last", include_expired=True),
                session=session,
            )
            versions = await astore.run(
                lambda mem: len(mem.facts.history("orders", "last")), session=session
            )
            calls = await astore.run(
                lambda mem: len(mem.actions.query(tool_name="store_fact")), session=session
            )
            await session.rollback()
        assert last is not None and last.value == "tea"
        return int(orders or 0), versions, calls, 0

    orders, versions, calls, _ = run(target, body)
    assert (orders, versions, calls) == (1, 1, 1)


def test_a_plain_aiosqlite_engine_is_refused(tmp_path: Path) -> None:
    # As for Store.from_engine: pysqlite's (and aiosqlite's) own transaction handling would let
    # a host rollback keep what a tool call wrote first in the host's transaction.
    from sqlalchemy.ext.asyncio import create_async_engine

    from philont.errors import InvalidDatabaseError

    path = tmp_path / "memory.sqlite"
    asyncio.run(run_and_close(path))
    plain = create_async_engine(f"sqlite+aiosqlite:///{path}")

    async def main() -> None:
        try:
            with pytest.raises(InvalidDatabaseError, match="create_async_engine"):
                await AsyncStore.from_engine(plain)
        finally:
            await plain.dispose()

    asyncio.run(main())


async def run_and_close(path: Path) -> None:
    astore = await AsyncStore.open(path)  # creates the database
    await astore.close()
