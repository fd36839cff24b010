"""Listings order text in code point order on PostgreSQL whatever the database's collation:
a database made under a ``en_US.UTF-8`` locale (initdb's default on many systems) sorts
``apple`` before ``Banana``; SQLite (BINARY) and Python put ``Banana`` first. Facts, notes and
events listed with a limit came back different on the two backends."""

from __future__ import annotations

import itertools
import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from philont.store import Store
from tests import pg_support
from tests.conftest import FakeClock

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
ICU = "en-US-x-icu"
KEYS = ["Banana", "apple", "a_b", "a-b", "aB", "ab", "Zed", "z1", "x_", "0a", "a.b", "A-B"]
NAMESPACES = ["user", "user.b-c", "user.b_c", "user.bc", "user.b-d", "user.b0"]


@pytest.fixture(scope="module")
def icu_layout() -> Iterator[pg_support.Layout]:
    """A layout whose every text column collates by ``en_US`` (as in a database made under
    that locale)."""
    layout = pg_support.make_layout(f"t_coll_{os.getpid()}_{uuid.uuid4().hex[:6]}", app_role=False)
    engine = create_engine(layout.url)
    try:
        with engine.begin() as conn:
            columns = conn.execute(
                text(
                    "SELECT table_name, column_name FROM information_schema.columns"
                    " WHERE table_schema = :s AND data_type = 'text' AND table_name NOT IN"
                    " (SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid)"
                ),
                {"s": layout.schema},
            ).all()
            for table, column in columns:
                try:
                    with conn.begin_nested():
                        conn.execute(
                            text(
                                f'ALTER TABLE "{layout.schema}"."{table}" ALTER COLUMN'
                                f' "{column}" TYPE text COLLATE "{ICU}"'
                            )
                        )
                except DBAPIError:
                    pass  # a column a generated one reads (text searched, never sorted)
        yield layout
    finally:
        engine.dispose()
        layout.drop()


def _fill(target: Path | URL, **open_args: object) -> dict[str, object]:
    clock = FakeClock(T0)
    with Store.open(target, clock=clock, **open_args) as store:  # type: ignore[arg-type]
        with store.begin() as mem:
            for ns, key in itertools.product(NAMESPACES, KEYS):
                mem.facts.store(ns, key, f"{ns}.{key}")
                mem.facts.store(
                    ns, f"e-{key}", key, fact_kind="event", occurred_at=T0 - timedelta(days=1)
                )
            for key in KEYS:  # same importance and time: the id decides
                mem.notes.add(f"note {key}", id=f"note-{key}")
        out: dict[str, object] = {}
        with store.begin(write=False) as mem:
            out["list"] = [(f.namespace, f.key) for f in mem.facts.list("user.*")]
            for limit in (1, 5, 20):
                out[f"list-{limit}"] = [
                    (f.namespace, f.key) for f in mem.facts.list("user.*", limit=limit)
                ]
                out[f"ranked-{limit}"] = [
                    (f.namespace, f.key) for f in mem.facts.list(ranked=True, limit=limit)
                ]
                out[f"notes-{limit}"] = [n.id for n in mem.notes.list(limit=limit)]
                out[f"notes-search-{limit}"] = [n.id for n in mem.notes.search("note", limit=limit)]
            out["events"] = [(f.namespace, f.key) for f in mem.facts.events("user")]
    return out


@pytest.mark.postgres
def test_listings_agree_with_sqlite_under_a_locale_collation(
    tmp_path: Path, icu_layout: pg_support.Layout
) -> None:
    sqlite = _fill(tmp_path / "m.sqlite")
    postgres = _fill(icu_layout.url, agent="collation")

    assert sqlite["list"] == sorted(sqlite["list"])  # type: ignore[type-var]
    differ = [name for name, value in sqlite.items() if postgres[name] != value]
    assert differ == []
