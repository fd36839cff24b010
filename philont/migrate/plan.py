"""Read-only inspection before an upgrade: what a database is, what to stamp, what to refuse."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from philont import settings
from philont.errors import (
    SchemaError,
    UnknownSchemaVersionError,
    UnrecognizedSchemaError,
)
from philont.log import get_logger
from philont.migrate.scripts import known_revisions

log = get_logger(__name__)

HEAD_PHILONT_VERSION = settings.SCHEMA_VERSION

# The base layers as Philont schema 2 had them (spec §2.5): memory tables without a version row
# are adopted as version 2 only when they have exactly this shape.
V2_COLUMNS: dict[str, set[str]] = {
    "memory_raw_sessions": {"id", "started_at", "ended_at"},
    "memory_raw_messages": {"id", "session_id", "role", "content", "timestamp"},
    "memory_notes": {"id", "content", "importance", "session_id", "created_at"},
    "memory_facts": {
        "id",
        "namespace",
        "key",
        "value_json",
        "confidence",
        "superseded_by",
        "supersedes",
        "created_at",
    },
    "memory_actions": {
        "id",
        "session_id",
        "trigger",
        "tool_name",
        "params_json",
        "result",
        "success",
        "timestamp",
    },
    "memory_skills": {
        "id",
        "name",
        "description",
        "trigger_keywords",
        "action_template",
        "use_count",
        "last_used_at",
        "created_at",
    },
}
BASE_TABLES = frozenset(V2_COLUMNS)
MEMORY_TABLE = re.compile(
    r"^(memory_\w+|routing_rules|autonomous_budget|push_subscriptions|config_rules|"
    r"reasoning_sessions|reasoning_nodes|schedule_outcomes)$"
)

# --- inspection (read-only, before anything is written) --------------------------------------


@dataclass(frozen=True)
class _Plan:
    revision: str | None  # current Alembic revision, if versioned
    stamp: str | None  # revision to stamp for an unversioned Philont database
    has_data: bool


def ro_connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def table_names(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}


def parse_schema_version(raw: str | None) -> int:
    """Philont's ``schema_version`` as an int in 1..31, else ``UnknownSchemaVersionError``.

    Unlike the original (which reads garbage as NaN and silently relabels it 31, spec Q-M1/Q-M2),
    anything but a decimal 1..31 is refused.
    """
    if raw is None or not re.fullmatch(r"[0-9]{1,6}", raw.strip()):
        raise UnknownSchemaVersionError(raw)
    value = int(raw.strip())
    if not 1 <= value <= HEAD_PHILONT_VERSION:
        raise UnknownSchemaVersionError(raw)
    return value


def _plan_sqlite(path: Path) -> _Plan:
    if not path.exists() or path.stat().st_size == 0:
        return _Plan(revision=None, stamp=None, has_data=False)
    try:
        with closing(ro_connect(path)) as conn:
            return plan_from(conn)
    except sqlite3.DatabaseError as exc:
        raise SchemaError(f"cannot read {path}: {exc}") from exc


def plan_from(conn: sqlite3.Connection) -> _Plan:
    """What upgrading this (read-only) connection's database would do; raises before any
    write when the schema is unknown."""
    tables = table_names(conn)
    has_data = bool(tables)
    known = known_revisions()
    if settings.VERSION_TABLE in tables:
        row = conn.execute(f"SELECT version_num FROM {settings.VERSION_TABLE}").fetchone()
        revision = row[0] if row else None
        if revision is not None and revision not in known:
            raise UnknownSchemaVersionError(revision)
        return _Plan(revision=revision, stamp=None, has_data=has_data)
    memory = {t for t in tables if MEMORY_TABLE.match(t)}
    raw: str | None = None
    if "memory_meta" in tables:
        row = conn.execute("SELECT value FROM memory_meta WHERE key = 'schema_version'").fetchone()
        raw = None if row is None else str(row[0])
    if raw is not None and raw.strip() != "0":
        version = parse_schema_version(raw)
        missing = BASE_TABLES - tables
        if missing:
            raise UnrecognizedSchemaError(
                f"schema_version {version} but tables {sorted(missing)} are missing"
            )
        return _Plan(revision=None, stamp=f"v{version:03d}", has_data=has_data)
    if not (memory - {"memory_meta"}):
        return _Plan(revision=None, stamp=None, has_data=has_data)  # ours get built beside
    for table, expected in V2_COLUMNS.items():
        found = _columns(conn, table) if table in tables else set()
        if found != expected:
            raise UnrecognizedSchemaError(
                f"memory tables without a schema version, and {table} does not have the "
                f"version-2 shape (expected columns {sorted(expected)}, found {sorted(found)})"
            )
    return _Plan(revision=None, stamp="v002", has_data=has_data)
