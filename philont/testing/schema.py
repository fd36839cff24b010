"""Normalized description of an SQLite schema, for comparing databases made different ways.

``create_all`` and ``alembic upgrade`` never produce byte-identical ``CREATE TABLE`` text, and
column order depends on the upgrade path, so we compare structure: columns (type, NOT NULL,
default, primary-key position), foreign keys, unique constraints, named indexes with their columns,
sort order and WHERE clause, and the exact (whitespace-normalized) SQL of triggers and FTS tables.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

from philont.db.engine import connect_read_only

FTS_SHADOW_SUFFIXES = ("_data", "_idx", "_docsize", "_config", "_content")
IGNORED_TABLES = {"sqlite_sequence", "sqlite_stat1", "sqlite_stat4"}


def normalize_sql(sql: str) -> str:
    """Collapse whitespace, drop ``--`` comments and spaces next to brackets and commas."""
    sql = re.sub(r"--[^\n]*", " ", sql)
    sql = re.sub(r"\s+", " ", sql).strip()
    sql = re.sub(r"\s*([(),])\s*", r"\1", sql)
    return sql.replace("IF NOT EXISTS ", "")


def _where_clause(sql: str | None) -> str | None:
    if not sql:
        return None
    m = re.search(r"\bWHERE\b(.*)$", normalize_sql(sql), flags=re.IGNORECASE | re.DOTALL)
    return m.group(1).strip() if m else None


def _normalize_default(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip()
    while value.startswith("(") and value.endswith(")"):
        value = value[1:-1].strip()
    return value


def normalized_schema(
    db: str | Path | sqlite3.Connection, *, ignore_tables: set[str] | None = None
) -> dict[str, Any]:
    """Describe the schema of an SQLite database (a path or an open ``sqlite3`` connection)."""
    own = isinstance(db, str | Path)
    conn = connect_read_only(db) if isinstance(db, str | Path) else db
    assert isinstance(conn, sqlite3.Connection)
    try:
        return _describe(conn, ignore_tables or set())
    finally:
        if own:
            conn.close()


def _describe(conn: sqlite3.Connection, ignore: set[str]) -> dict[str, Any]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    virtual = {
        name: sql
        for typ, name, _t, sql in rows
        if typ == "table" and sql and sql.upper().startswith("CREATE VIRTUAL TABLE")
    }
    shadow = {v + s for v in virtual for s in FTS_SHADOW_SUFFIXES}
    skip = IGNORED_TABLES | shadow | set(virtual) | ignore
    tables: dict[str, Any] = {}
    indexes: dict[str, Any] = {}
    triggers: dict[str, str] = {}
    for typ, name, tbl, sql in rows:
        if typ == "table" and name not in skip and not name.startswith("sqlite_"):
            tables[name] = _describe_table(conn, name)
        elif typ == "index" and sql and tbl not in skip:
            indexes[name] = _describe_index(conn, name, tbl, sql)
        elif typ == "trigger" and tbl not in skip:
            triggers[name] = normalize_sql(sql)
    return {
        "tables": tables,
        "indexes": indexes,
        "triggers": triggers,
        "virtual_tables": {k: normalize_sql(v) for k, v in virtual.items() if k not in ignore},
    }


def _describe_table(conn: sqlite3.Connection, name: str) -> dict[str, Any]:
    q = name.replace('"', '""')
    columns = {
        r[1]: {
            "type": (r[2] or "").upper(),
            "notnull": bool(r[3]),
            "default": _normalize_default(r[4]),
            "pk": r[5],
        }
        for r in conn.execute(f'PRAGMA table_info("{q}")')
    }
    fks = sorted((r[2], r[3], r[4]) for r in conn.execute(f'PRAGMA foreign_key_list("{q}")'))
    unique = sorted(
        tuple(c[2] for c in conn.execute(f'PRAGMA index_info("{r[1]}")'))
        for r in conn.execute(f'PRAGMA index_list("{q}")')
        if r[3] == "u"
    )
    sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
    autoincrement = "AUTOINCREMENT" in sql.upper()
    return {
        "columns": columns,
        "foreign_keys": fks,
        "unique": unique,
        "autoincrement": autoincrement,
    }


def _describe_index(conn: sqlite3.Connection, name: str, table: str, sql: str) -> dict[str, Any]:
    cols = [
        (r[2], bool(r[3]))
        for r in conn.execute(f'PRAGMA index_xinfo("{name}")')
        if r[5]  # key columns only
    ]
    unique = bool(
        conn.execute(
            'SELECT 1 FROM pragma_index_list(?) WHERE name = ? AND "unique"', (table, name)
        ).fetchone()
    )
    return {"table": table, "columns": cols, "unique": unique, "where": _where_clause(sql)}


def schema_diff(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Human-readable differences between two normalized schemas (empty when equal)."""
    out: list[str] = []
    for section in ("tables", "indexes", "triggers", "virtual_tables"):
        sa_, sb = a[section], b[section]
        for key in sorted(set(sa_) | set(sb)):
            if key not in sa_:
                out.append(f"{section}: {key} only in second")
            elif key not in sb:
                out.append(f"{section}: {key} only in first")
            elif sa_[key] != sb[key]:
                out.append(f"{section}: {key} differs:\n  {sa_[key]}\n  {sb[key]}")
    return out
