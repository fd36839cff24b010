"""Helpers of the tool tests: snapshots of memory tables and of the action log."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from philont.store import Store

MEMORY_TABLES_EXCEPT_ACTIONS = (
    "memory_facts",
    "memory_notes",
    "memory_skills",
    "memory_raw_messages",
    "memory_raw_sessions",
    "memory_calendar",
    "memory_schedules",
    "schedule_outcomes",
    "memory_access_log",
    "philont_skill_recipes",
    "philont_skill_revisions",
)

ACTIONS_SQL = (
    "SELECT tool_name, success, params_json, result FROM memory_actions{where} ORDER BY id"
)


def _pg_rows(url: URL, sql: str) -> list[tuple[Any, ...]]:
    """Rows of the test's agent ($PHILONT_AGENT): ``{where}`` in ``sql`` is its condition."""
    with Store.open(url, upgrade=False) as store, store.begin(write=False) as mem:
        raw = mem.raw()
        return [tuple(row) for row in raw.rows(sql.format(where=raw.where()))]


def snapshot(db: Path | URL) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the memory tables except the action log (a SQLite file or a PG URL)."""
    if isinstance(db, URL):  # no rowid on PostgreSQL: rows in a stable (sorted) order
        return {
            t: sorted(_pg_rows(db, f"SELECT * FROM {t}{{where}}"), key=repr)
            for t in MEMORY_TABLES_EXCEPT_ACTIONS
        }
    with closing(sqlite3.connect(str(db))) as conn:
        return {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
            for t in MEMORY_TABLES_EXCEPT_ACTIONS
        }


def actions(db: Path | URL) -> list[tuple[object, ...]]:
    if isinstance(db, URL):
        return _pg_rows(db, ACTIONS_SQL)
    with closing(sqlite3.connect(str(db))) as conn:
        return conn.execute(ACTIONS_SQL.format(where="")).fetchall()


DbTarget = Path | URL  # what the `tool_target` fixture gives: a SQLite file or a PG agent URL
