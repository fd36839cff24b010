"""Helpers of the tool tests: snapshots of memory tables and of the action log."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

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


def snapshot(path: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the memory tables except the action log."""
    with closing(sqlite3.connect(str(path))) as conn:
        return {
            t: conn.execute(f"SELECT * FROM {t} ORDER BY rowid").fetchall()
            for t in MEMORY_TABLES_EXCEPT_ACTIONS
        }


def actions(path: Path) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(str(path))) as conn:
        return conn.execute(
            "SELECT tool_name, success, params_json, result FROM memory_actions ORDER BY id"
        ).fetchall()
