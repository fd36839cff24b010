"""Fuzzing the dispatcher: no input makes it raise, and a failed call writes no memory row."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont import Memory, tools
from tests.tools.helpers import MEMORY_TABLES_EXCEPT_ACTIONS

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
EXAMPLES = 10_000 if HEAVY else 150
PG_EXAMPLES = 1_000 if HEAVY else 60  # each example is a few round trips to the server

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4)
    ),
    max_leaves=12,
)
names = st.sampled_from(sorted(tools.TOOL_NAMES)) | st.text(max_size=30)
field_names = st.sampled_from(
    [
        "namespace",
        "key",
        "value",
        "query",
        "name",
        "limit",
        "at",
        "interval_ms",
        "cron",
        "title",
        "starts_at",
        "timezone",
        "rrule",
        "since",
        "until",
        "window_days",
        "id",
        "confidence",
        "fact_kind",
        "occurred_at",
        "message",
        "action_type",
        "project",
    ]
) | st.text(max_size=10)
arguments = st.dictionaries(field_names, json_values, max_size=6) | st.text(max_size=60)


def _counts(conn: sqlite3.Connection) -> tuple[int, ...]:
    return tuple(
        conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in MEMORY_TABLES_EXCEPT_ACTIONS
    )


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=names, args=arguments)
def test_call_never_raises_and_failures_write_nothing(
    name: str, args: object, tool_db: Path
) -> None:
    with Memory.open(tool_db) as mem, closing(sqlite3.connect(str(tool_db))) as _:
        conn = mem.session.connection().connection.driver_connection
        assert isinstance(conn, sqlite3.Connection)
        before = _counts(conn)
        actions_before = conn.execute("SELECT count(*) FROM memory_actions").fetchone()[0]
        result = tools.call(name, args, db=mem)  # type: ignore[arg-type]
        assert isinstance(result, tools.ToolResult)
        if not result.ok:
            assert result.error_code and result.error
            assert _counts(conn) == before
        assert conn.execute("SELECT count(*) FROM memory_actions").fetchone()[0] == (
            actions_before + 1
        )


@pytest.fixture
def pg_tool_db(pg_layout, pg_agent_name) -> tuple[URL, str]:  # type: ignore[no-untyped-def]
    """This run's PostgreSQL layout and a fresh agent in it."""
    return pg_layout.url, pg_agent_name()


def _pg_counts(
    mem: Memory, tables: tuple[str, ...] = MEMORY_TABLES_EXCEPT_ACTIONS
) -> tuple[int, ...]:
    """The unit of work's agent's rows in ``tables``."""
    raw = mem.raw()
    return tuple(int(raw.rows(f"SELECT count(*) FROM {t}{raw.where()}")[0][0]) for t in tables)


@pytest.mark.postgres
@settings(
    max_examples=PG_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=names, args=arguments)
def test_on_postgres_call_never_raises_and_failures_write_nothing(
    name: str, args: object, pg_tool_db: tuple[URL, str]
) -> None:
    url, agent = pg_tool_db
    with Memory.open(url, agent=agent) as mem:
        before = _pg_counts(mem)
        (actions_before,) = _pg_counts(mem, ("memory_actions",))
        result = tools.call(name, args, db=mem)  # type: ignore[arg-type]
        assert isinstance(result, tools.ToolResult)
        if not result.ok:
            assert result.error_code and result.error
            assert _pg_counts(mem) == before
        assert _pg_counts(mem, ("memory_actions",)) == (actions_before + 1,)
