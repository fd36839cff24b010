"""Checks an upgrade runs on a file it may share with a host: scoped to philont's own tables."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from sqlalchemy import Connection, text

from philont import settings
from philont.db.engine import connect_read_only
from philont.db.retry import translate
from philont.errors import DatabaseCorruptError, MigrationError, PhilontError
from philont.migrate.plan import MEMORY_TABLE, table_names


def philont_tables(tables: set[str]) -> list[str]:
    """The tables of a file that are philont's: Philont's runtime tables, our ``philont_*``
    ones (the version table included), FTS5 indexes and their shadow tables. A host's own
    tables are never in the list, whatever their state."""
    return sorted(t for t in tables if MEMORY_TABLE.match(t) or t == settings.VERSION_TABLE)


def check_integrity(conn: sqlite3.Connection, path: Path | str) -> None:
    """``PRAGMA quick_check`` of each of philont's tables (and their indexes) in the file; any
    problem, or pages that cannot even be read, is :class:`DatabaseCorruptError` naming the
    table. A host's damaged table is the host's business: it is not read."""
    try:
        tables = philont_tables(table_names(conn))
    except sqlite3.DatabaseError as exc:
        raise _failed(path, exc, "the schema cannot be read") from exc
    for table in tables:
        try:
            rows = [r[0] for r in conn.execute(f'PRAGMA quick_check("{table}")').fetchall()]
        except sqlite3.DatabaseError as exc:
            raise _failed(path, exc, table) from exc
        if rows != ["ok"]:
            raise DatabaseCorruptError(str(path), f"{table}: " + "; ".join(rows[:3]))


def _failed(path: Path | str, exc: sqlite3.DatabaseError, what: str) -> PhilontError:
    """A lock held by another connection (or a read-only or failing disk) is said as such;
    anything else that stops the check is damage in ``what``."""
    typed = translate(exc, path=str(path))
    return typed or DatabaseCorruptError(str(path), f"{what}: {exc}")


def check_foreign_keys(conn: Connection) -> None:
    """``PRAGMA foreign_key_check`` of philont's tables only: an orphan row in a host table
    (the host's foreign keys, the host's business) never fails our upgrade."""
    driver = conn.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    bad: list[tuple[object, ...]] = []
    for table in philont_tables(table_names(driver)):
        bad.extend(conn.execute(text(f'PRAGMA foreign_key_check("{table}")')).fetchall())
    if bad:
        raise MigrationError(f"foreign key violations after upgrade: {bad[:5]}")


def is_wal(path: Path) -> bool:
    """Whether an existing SQLite file is already in WAL mode (as SQLite reads it, without
    switching it: opening with philont's engine would); False when SQLite cannot tell."""
    try:
        with closing(connect_read_only(path)) as conn:
            return str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower() == "wal"
    except sqlite3.Error:
        return False
