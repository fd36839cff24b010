"""Read-only inspection before an upgrade: what a database is, what to stamp, what to refuse."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from philont import settings
from philont.db.engine import connect_read_only
from philont.db.retry import file_error
from philont.errors import (
    DatabaseCorruptError,
    PhilontError,
    TableNameConflictError,
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
    r"reasoning_sessions|reasoning_nodes|schedule_outcomes|philont_\w+)$"
)
"""Names of philont's tables (Philont's runtime tables and our own ``philont_*`` ones)."""
VERSION_COLUMN = f"{settings.VERSION_TABLE}.version_num"
_REVISION = re.compile(r"v([0-9]{3})")
MEMORY_META_SINCE = 3
"""From v003 on every revision has written ``memory_meta.schema_version``."""

# --- inspection (read-only, before anything is written) --------------------------------------


@dataclass(frozen=True)
class _Plan:
    revision: str | None  # current Alembic revision, if versioned
    stamp: str | None  # revision to stamp for an unversioned Philont database
    has_data: bool


def ro_connect(path: Path, *, timeout: float = 5.0) -> sqlite3.Connection:
    return connect_read_only(path, timeout=timeout)


def unreadable(path: Path, exc: sqlite3.Error) -> PhilontError:
    """The typed error for a file the read-only inspection could not read: locked by another
    connection (:class:`DatabaseBusyError`), read-only, an I/O error, else damaged."""
    return file_error(exc, path=str(path)) or DatabaseCorruptError(str(path), str(exc))


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


def check_recorded(revision: str | None, raw_version: str | None) -> None:
    """Refuse a versioned database whose records disagree: a revision we do not ship, or a
    ``memory_meta.schema_version`` that is not the one that revision writes (``'99'``,
    ``'abc'``, or ``'27'`` beside our head). Every revision up to v031 records its own number,
    later ones keep 31; only a database stamped v002 (a version-2 file has no ``memory_meta``)
    may lack the value, for the chain to write."""
    if revision is None:
        return
    if revision not in known_revisions():
        raise UnknownSchemaVersionError(revision, column=VERSION_COLUMN)
    match = _REVISION.fullmatch(revision)
    number = int(match.group(1)) if match else None
    if raw_version is None:
        if number is not None and number >= MEMORY_META_SINCE:
            raise UnrecognizedSchemaError(
                f"memory_meta.schema_version is missing but {VERSION_COLUMN} is {revision!r}"
            )
        return
    version = parse_schema_version(raw_version)
    expected = version if number is None else min(number, HEAD_PHILONT_VERSION)
    if version != expected:
        raise UnrecognizedSchemaError(
            f"memory_meta.schema_version is {raw_version!r} but {VERSION_COLUMN} is "
            f"{revision!r}, which records schema version {expected}; refusing a database whose "
            "records disagree"
        )


def plan_file(path: Path, *, timeout: float = 5.0) -> _Plan:
    """:func:`plan_from` on a read-only connection to ``path`` (an empty or missing file is a
    new database), waiting up to ``timeout`` seconds for another connection's lock; a file
    still locked is :class:`DatabaseBusyError`, unreadable pages :class:`DatabaseCorruptError`."""
    if not path.exists() or path.stat().st_size == 0:
        return _Plan(revision=None, stamp=None, has_data=False)
    try:
        with closing(ro_connect(path, timeout=timeout)) as conn:
            return plan_from(conn)
    except sqlite3.DatabaseError as exc:
        raise unreadable(path, exc) from exc


def _schema_version(conn: sqlite3.Connection, tables: set[str]) -> str | None:
    if "memory_meta" not in tables:
        return None
    row = conn.execute("SELECT value FROM memory_meta WHERE key = 'schema_version'").fetchone()
    return None if row is None else str(row[0])


def plan_from(conn: sqlite3.Connection) -> _Plan:
    """What upgrading this connection's database would do; raises before any write when the
    schema is unknown, its records disagree, or other tables take philont's names."""
    tables = table_names(conn)
    has_data = bool(tables)
    raw = _schema_version(conn, tables)
    if settings.VERSION_TABLE in tables:
        row = conn.execute(f"SELECT version_num FROM {settings.VERSION_TABLE}").fetchone()
        revision = row[0] if row else None
        check_recorded(revision, raw)
        return _Plan(revision=revision, stamp=None, has_data=has_data)
    if raw is not None and raw.strip() != "0":
        version = parse_schema_version(raw)
        missing = BASE_TABLES - tables
        if missing:
            raise UnrecognizedSchemaError(
                f"schema_version {version} but tables {sorted(missing)} are missing"
            )
        return _Plan(revision=None, stamp=f"v{version:03d}", has_data=has_data)
    named = sorted(t for t in tables if MEMORY_TABLE.match(t) and t != "memory_meta")
    if not named:
        return _Plan(revision=None, stamp=None, has_data=has_data)  # ours get built beside
    if not BASE_TABLES & tables:
        raise TableNameConflictError(named)
    for table, expected in V2_COLUMNS.items():
        found = _columns(conn, table) if table in tables else set()
        if found != expected:
            raise UnrecognizedSchemaError(
                f"memory tables without a schema version, and {table} does not have the "
                f"version-2 shape (expected columns {sorted(expected)}, found {sorted(found)})"
            )
    return _Plan(revision=None, stamp="v002", has_data=has_data)
