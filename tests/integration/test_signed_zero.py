"""-0.0 is stored and read as 0.0 on both backends: an SQLite REAL column keeps no sign of zero
(it stores 0), and PostgreSQL's DOUBLE PRECISION kept -0.0, so the same write read back -0.0
there and 0.0 from SQLite, and an export of the same memory differed by backend."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest
from sqlalchemy import Float, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import URL

from philont import settings
from philont.db.engine import create_engine
from philont.db.schema import metadata
from philont.store import Store

BOTH_BACKENDS = True

REALS = [c for t in metadata.sorted_tables for c in t.c if isinstance(c.type, Float)]


def test_there_are_real_columns() -> None:
    assert len(REALS) >= 5


@pytest.mark.parametrize("dialect", [postgresql.psycopg.dialect(), sqlite.dialect()])
@pytest.mark.parametrize("column", REALS, ids=lambda c: f"{c.table.name}.{c.name}")
@pytest.mark.parametrize("value", [-0.0, 0.0])
def test_every_real_column_binds_zero_without_its_sign(
    column: object, dialect: object, value: float
) -> None:
    from sqlalchemy import Column

    assert isinstance(column, Column)
    impl = column.type.dialect_impl(dialect)  # type: ignore[arg-type]
    bind = impl.bind_processor(dialect)  # type: ignore[arg-type]
    bound = value if bind is None else bind(value)
    if dialect.name == "postgresql":  # type: ignore[attr-defined]
        assert math.copysign(1.0, bound) == 1.0, (column, bound)
    else:  # SQLite itself stores it as 0
        assert bound == 0.0


def _negative_zeros(target: Path | URL) -> int:
    """Stored REAL values with the sign bit, every table's (the agent's on PostgreSQL), read
    without philont's types."""
    agent = os.environ.get(settings.AGENT_ENV)
    where = ""
    if isinstance(target, URL):
        where = " WHERE agent_id = (SELECT id FROM philont_agents WHERE name = :a)"
    engine = create_engine(target)
    try:
        with engine.connect() as conn:
            found = 0
            for column in REALS:
                rows = conn.execute(
                    text(f'SELECT "{column.name}" FROM "{column.table.name}"{where}'),
                    {"a": agent} if where else {},
                ).scalars()
                found += sum(1 for v in rows if isinstance(v, float) and math.copysign(1.0, v) < 0)
            return found
    finally:
        engine.dispose()


def test_a_written_minus_zero_reads_back_as_zero(target: Path | URL) -> None:
    with Store.open(target) as store, store.begin() as mem:
        note = mem.notes.add("hello", importance=-0.0)
        fact = mem.facts.store("user", "city", "Berlin", confidence=-0.0)
        assert math.copysign(1.0, note.importance) == 1.0
        assert math.copysign(1.0, fact.confidence) == 1.0
    with Store.open(target) as store, store.begin() as mem:
        (read,) = mem.notes.list()
        got = mem.facts.get("user", "city")
        assert got is not None
        assert [math.copysign(1.0, v) for v in (read.importance, got.confidence)] == [1.0, 1.0]
    assert _negative_zeros(target) == 0


@pytest.mark.parametrize("path", ["search", "prefix"])
def test_a_hosts_minus_zero_reads_as_zero_on_the_lean_reads_too(
    target: Path | URL, path: str
) -> None:
    """The hot paths' lean reads (search's notes, the prefix's notes and facts) read a host's
    -0.0 as the ORM does: 0.0 (they select without philont's column types)."""
    with Store.open(target) as store:
        with store.begin() as mem:
            note = mem.notes.add("the blue heron nests by the river", importance=0.3)
            mem.facts.store("user", "city", "Berlin")
            for table, column in (("memory_notes", "importance"), ("memory_facts", "confidence")):
                mem.session.execute(text(f"UPDATE {table} SET {column} = :z"), {"z": -0.0})
        with store.begin() as mem:
            if path == "search":
                (hit,) = mem.search.notes("heron river")
                assert (hit.id, math.copysign(1.0, hit.importance)) == (note.id, 1.0)
            else:
                shown = mem.prefix.build().text
                assert "(0.0) the blue heron" in shown, shown
                assert "-0.0" not in shown, shown
