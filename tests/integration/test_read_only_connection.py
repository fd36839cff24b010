"""A connection SQLite opened read-only (the file was not writable when the pool opened it)
stayed in the pool read-only for the Store's life: once the file was writable again, every
unit of work that got that connection was refused ``database_read_only`` until the process
restarted (an MCP server, a web app). The refusal now drops the connection, so the next unit
of work opens a fresh one, and a writable file is written again."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from philont import tools
from philont.aio import AsyncStore
from philont.errors import DatabaseReadOnlyError, PhilontError
from philont.memory import Memory
from philont.store import Store
from tests.integration.test_read_only_store import LOW_WRITES
from tests.support import file_permissions_apply


def _keys(path: Path) -> list[str]:
    with closing(sqlite3.connect(str(path))) as conn:
        rows = conn.execute(
            "SELECT DISTINCT key FROM memory_facts WHERE namespace = 'ro' ORDER BY key"
        )
        return [row[0] for row in rows]


def test_a_file_writable_again_is_written_again_through_the_same_store(tool_db: Path) -> None:
    with Store.open(tool_db) as store, file_permissions_apply():
        os.chmod(tool_db, 0o444)  # before the pool opens its first connection
        try:
            with pytest.raises(DatabaseReadOnlyError), store.begin() as mem:
                mem.facts.store("ro", "refused", 1)
            refused = tools.call("store_fact", {"namespace": "ro", "key": "tool", "value": 1},
                                 db=store)  # fmt: skip
            assert refused.error_code == "database_read_only"
        finally:
            os.chmod(tool_db, 0o644)
        # The first unit of work after the chmod may still meet SQLite's read-only file
        # handle (refused, and dropped); the pool's connections are new from then on.
        for _attempt in range(2):
            with contextlib.suppress(DatabaseReadOnlyError), store.begin() as mem:
                mem.facts.store("ro", "again", 1)
        for n in range(3):
            assert tools.call(
                "store_fact", {"namespace": "ro", "key": f"tool{n}", "value": 2}, db=store
            ).ok
    assert _keys(tool_db) == ["again", "tool0", "tool1", "tool2"]


def test_an_async_store_writes_a_file_writable_again(tool_db: Path) -> None:
    async def body() -> list[str | None]:
        astore = await AsyncStore.open(tool_db)
        try:
            with file_permissions_apply():
                os.chmod(tool_db, 0o444)
                try:
                    refused = await astore.call(
                        "store_fact", {"namespace": "ro", "key": "a", "value": 1}
                    )
                finally:
                    os.chmod(tool_db, 0o644)
                codes = [refused.error_code]
                for n in range(4):  # the first may still meet the read-only handle
                    args = {"namespace": "ro", "key": f"b{n}", "value": 1}
                    codes.append((await astore.call("store_fact", args)).error_code)
                return codes
        finally:
            await astore.close()

    codes = asyncio.run(body())
    assert codes[0] == "database_read_only"
    assert codes[-3:] == [None, None, None], codes


def test_a_connection_a_host_made_read_only_itself_is_kept(tool_db: Path) -> None:
    """A host's own session joined (``store.join``) on a connection it set ``PRAGMA
    query_only`` on: a refused write is typed, and the connection stays the host's (it was
    dropped mid-transaction, so the host's next read failed and the connection came back
    writable). Only one SQLite opened read-only is dropped."""
    from sqlalchemy import text
    from sqlalchemy.orm import Session

    with Store.open(tool_db) as store, Session(store.engine) as session:
        session.execute(text("PRAGMA query_only = 1"))
        with pytest.raises(DatabaseReadOnlyError), store.join(session) as mem:
            mem.facts.store("ro", "refused", 1)
        assert session.execute(text("SELECT count(*) FROM memory_facts")).scalar() is not None
        session.rollback()
        assert session.execute(text("PRAGMA query_only")).scalar() == 1
    assert _keys(tool_db) == []


def _tool(name: str, args: dict[str, object]) -> Callable[[Store], None]:
    def call(store: Store) -> None:
        result = tools.call(name, args, db=store)
        if not result.ok:
            raise PhilontError(f"{name}: {result.error_code}")

    return call


def _in_unit(write: Callable[[Memory], object]) -> Callable[[Store], None]:
    def run(store: Store) -> None:
        with store.begin() as mem:
            write(mem)

    return run


# Every kind of path a write takes to SQLite: the read tools (a DEFERRED unit of work whose
# first write is the lean action-log row), the services' lean writes (access rows, the
# timeline), the ORM's, Core's, and a host's own calls on the DB-API connection.
WRITES: dict[str, Callable[[Store], None]] = {
    "search_notes": _tool("search_notes", {"query": "hello"}),
    "get_fact": _tool("get_fact", {"namespace": "ro", "key": "seed"}),
    "list_facts": _tool("list_facts", {"namespace": "ro"}),
    "store_fact": _tool("store_fact", {"namespace": "ro", "key": "tool", "value": 1}),
    "notes.get": _in_unit(lambda mem: mem.notes.get("n1")),
    "access.record": _in_unit(lambda mem: mem.access.record("note", "n1")),
    "facts.store": _in_unit(lambda mem: mem.facts.store("ro", "orm", 1)),
    **{
        name: _in_unit(write)
        for name, write in LOW_WRITES.items()
        if not name.startswith("orm")  # one note, added once (facts.store is the ORM's)
    },
}


@pytest.mark.parametrize("how", sorted(WRITES))
def test_every_write_path_drops_a_connection_opened_read_only(tool_db: Path, how: str) -> None:
    """A connection SQLite opened read-only stayed pooled when the refused write was one
    SQLAlchemy never saw (a lean write, a host's DB-API call): a read tool answered
    ``database_read_only`` for the Store's life once the file was writable again."""
    write = WRITES[how]
    with Store.open(tool_db) as store, store.begin() as mem:
        mem.notes.add("hello world", id="n1")
        mem.facts.store("ro", "seed", 0)
        mem.timeline.start_session("s1")
    with Store.open(tool_db) as store, file_permissions_apply():
        os.chmod(tool_db, 0o444)  # before the pool opens its first connection
        try:
            with pytest.raises((PhilontError, sqlite3.OperationalError)):
                write(store)
        finally:
            os.chmod(tool_db, 0o644)
        # The -wal and -shm SQLite made read-only beside the file (with its mode) are made
        # writable by the next connection (the first unit of work after the chmod met them)
        for _ in range(3):
            write(store)
