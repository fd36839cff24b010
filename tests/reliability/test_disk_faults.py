"""A write the disk refuses — full (page limit) or read-only — raises a typed error and loses
nothing committed before it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event
from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy.exc import OperationalError

from philont import tools
from philont.db.engine import create_engine, install_sqlite_hooks
from philont.errors import DatabaseFullError, DatabaseReadOnlyError
from philont.memory import Memory
from philont.store import Store
from tests.reliability.helpers import integrity_problems
from tests.tools.helpers import actions, snapshot

HEADROOM_PAGES = 100
TEXT = "lorem ipsum dolor sit amet " * 200  # ~5 KB (and its index entries): a few pages each
BIG = TEXT * 40  # ~200 KB: more than the headroom


def _page_count(path: Path) -> int:
    with closing(sqlite3.connect(str(path))) as conn:
        return int(conn.execute("PRAGMA page_count").fetchone()[0])


@pytest.fixture
def capped_engine(tool_db: Path) -> Iterator[Engine]:
    """An engine whose connections may grow the file by only a few pages."""
    limit = _page_count(tool_db) + HEADROOM_PAGES
    engine = create_engine(tool_db)

    @event.listens_for(engine, "connect")
    def _cap(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
        dbapi_conn.execute(f"PRAGMA max_page_count = {limit}")

    yield engine
    engine.dispose()


@pytest.fixture
def read_only_engine(tool_db: Path) -> Iterator[Engine]:
    """An engine that opens the file with ``mode=ro`` (chmod cannot stop root from writing)."""
    engine = sa_create_engine(f"sqlite:///file:{tool_db}?mode=ro&uri=true")
    install_sqlite_hooks(engine, foreign_keys=True)
    yield engine
    engine.dispose()


def _messages(path: Path) -> dict[int, str]:
    with closing(sqlite3.connect(str(path))) as conn:
        return dict(conn.execute("SELECT id, content FROM memory_raw_messages").fetchall())


def test_a_write_past_the_page_limit_raises_database_full_and_keeps_what_was_committed(
    capped_engine: Engine, tool_db: Path
) -> None:
    committed: dict[int, str] = {}
    with pytest.raises(DatabaseFullError) as raised:
        for i in range(1_000):
            content = f"zqfull{i} {TEXT}"
            with Store(capped_engine).begin() as mem:
                committed[mem.timeline.append(content).id] = content
    assert isinstance(raised.value.__cause__, OperationalError)
    assert "full" in raised.value.message
    assert len(committed) >= 1

    stored = _messages(tool_db)
    assert {i: stored.get(i) for i in committed} == committed
    assert len([c for c in stored.values() if c.startswith("zqfull")]) == len(committed)
    assert integrity_problems(tool_db) == []

    # the limit was the only problem: without it the same write succeeds
    capped_engine.dispose()
    engine = create_engine(tool_db)
    try:
        with Store(engine).begin() as mem:
            mem.timeline.append(f"zqfull-after {BIG}")
    finally:
        engine.dispose()


def test_a_tool_call_on_a_full_database_fails_as_database_full_and_writes_nothing(
    capped_engine: Engine, tool_db: Path
) -> None:
    with Store(capped_engine).begin() as mem:
        mem.facts.store("user", "name", "Lena")
    before, log_before = snapshot(tool_db), actions(tool_db)

    result = tools.call(
        "store_fact",
        {"namespace": "user", "key": "essay", "value": BIG * 3},
        db=Store(capped_engine),
    )

    assert not result.ok
    assert result.error_code == "database_full"
    assert result.error and "full" in result.error
    # naming the file, as the unit of work does (it said "the memory database is full")
    assert result.error.startswith(f"{tool_db} is full"), result.error
    assert snapshot(tool_db) == before
    assert actions(tool_db) == log_before
    with Store(capped_engine).begin(write=False) as mem:
        fact = mem.facts.get("user", "name")
        assert fact is not None and fact.value == "Lena"


def test_a_write_through_a_read_only_connection_raises_database_read_only(
    tool_db: Path, read_only_engine: Engine
) -> None:
    engine = create_engine(tool_db)
    with Store(engine).begin() as mem:
        kept = mem.timeline.append("written before the file became read-only").id
    engine.dispose()

    with pytest.raises(DatabaseReadOnlyError) as raised, Store(read_only_engine).begin() as mem:
        mem.timeline.append("refused")
    assert isinstance(raised.value.__cause__, OperationalError)
    assert "readonly" in raised.value.message

    with Store(read_only_engine).begin(write=False) as mem:
        assert [m.id for m in mem.timeline.messages("global")][-1] == kept
    assert "refused" not in _messages(tool_db).values()
    assert integrity_problems(tool_db) == []


def test_a_tool_call_through_a_read_only_connection_fails_as_read_only_and_writes_nothing(
    tool_db: Path, read_only_engine: Engine
) -> None:
    before, log_before = snapshot(tool_db), actions(tool_db)

    stored = tools.call(
        "store_fact", {"namespace": "user", "key": "k", "value": "v"}, db=Store(read_only_engine)
    )

    assert not stored.ok
    assert stored.error_code == "database_read_only"
    assert snapshot(tool_db) == before and actions(tool_db) == log_before


def test_a_database_file_without_write_permission_is_refused_with_a_typed_error(
    tool_db: Path,
) -> None:
    tool_db.chmod(0o444)
    try:
        with pytest.raises(DatabaseReadOnlyError):
            Memory.open(tool_db)
        result = tools.call("store_fact", {"namespace": "u", "key": "k", "value": 1}, db=tool_db)
        assert not result.ok and result.error_code == "database_read_only"
    finally:
        tool_db.chmod(0o600)
    assert integrity_problems(tool_db) == []
