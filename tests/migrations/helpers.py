"""Shared helpers of the migration tests: logical dumps, digests, FTS checks."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

FTS_TABLES = ("memory_raw_messages_fts", "memory_notes_fts", "memory_skills_fts")


def connect_ro(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def logical_dump(path: Path) -> list[str]:
    """Schema and every row, as SQL text (byte-level header changes such as WAL mode ignored)."""
    with closing(sqlite3.connect(str(path))) as conn:
        return list(conn.iterdump())


def table_digest(
    conn: sqlite3.Connection, table: str, columns: list[str], exclude_ids: tuple[str, ...] = ()
) -> str:
    """The manifest recipe: rows ordered by id, compact JSON, sha256 (``exclude_ids``: rows the
    upgrade added on purpose)."""
    cols = ", ".join(f'"{c}"' for c in columns)
    marks = ", ".join("?" for _ in exclude_ids)
    where = f" WHERE id NOT IN ({marks})" if exclude_ids else ""
    rows = conn.execute(f"SELECT {cols} FROM {table}{where} ORDER BY id", exclude_ids).fetchall()
    payload = json.dumps([list(r) for r in rows], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    names = [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
        )
        if not r[0].startswith("sqlite_") and "_fts_" not in r[0]
    ]
    return {n: conn.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0] for n in names}


def fts_integrity(conn: sqlite3.Connection, table: str) -> None:
    """Raises sqlite3.DatabaseError when the FTS index disagrees with its content table."""
    conn.execute(f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)")


def manifest(fixtures: Path, name: str) -> dict[str, Any]:
    return json.loads((fixtures / f"{name}.manifest.json").read_text(encoding="utf-8"))
