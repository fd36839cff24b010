"""Small, stable helpers the Alembic revisions share (they never import philont.db)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import sqlalchemy as sa
from alembic import op

FTS5_DEFAULT_HASHSIZE = 1024 * 1024
FTS5_BULK_HASHSIZE = 32 * 1024 * 1024


def now_ms() -> int:
    """Epoch milliseconds, as Philont stores every timestamp."""
    return int(time.time() * 1000)


def INTEGER() -> sa.types.TypeEngine[int]:
    """Philont's INTEGER (64-bit in SQLite): BIGINT on PostgreSQL."""
    return sa.Integer().with_variant(sa.BigInteger(), "postgresql")


def REAL() -> sa.types.TypeEngine[float]:
    """Philont's REAL (an 8-byte double in SQLite): DOUBLE PRECISION on PostgreSQL."""
    return sa.REAL().with_variant(sa.Double(), "postgresql")


def is_sqlite() -> bool:
    return op.get_bind().dialect.name == "sqlite"


def has_table(name: str) -> bool:
    return sa.inspect(op.get_bind()).has_table(name)


def has_column(table: str, column: str) -> bool:
    cols = sa.inspect(op.get_bind()).get_columns(table)
    return any(c["name"] == column for c in cols)


def add_column_if_missing(table: str, column: sa.Column[object]) -> None:
    """Philont's migrations are 'add if missing'; doing the same lets us adopt a database that a
    crash left half-migrated (spec Q-M3)."""
    if has_table(table) and not has_column(table, column.name):
        op.add_column(table, column)


def create_index_if_missing(sql: str) -> None:
    """Run a literal ``CREATE INDEX IF NOT EXISTS ...`` statement."""
    op.execute(sa.text(sql))


def set_schema_version(version: int) -> None:
    """Record Philont's ``memory_meta.schema_version`` (a decimal string).

    The table is created when missing: an adopted version-2 database may predate it.
    """
    op.execute(
        sa.text(
            "CREATE TABLE IF NOT EXISTS memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
    )
    op.execute(sa.text("DELETE FROM memory_meta WHERE key = 'schema_version'"))
    op.execute(
        sa.text("INSERT INTO memory_meta (key, value) VALUES ('schema_version', :v)").bindparams(
            v=str(version)
        )
    )


@contextmanager
def fts5_bulk_load(table: str) -> Iterator[None]:
    """Index many rows into the FTS5 table ``table`` with a 32 MiB buffer of pending terms.

    FTS5 writes its buffered terms out as a new segment each time they pass ``hashsize`` (1 MiB
    by default) and merges the segments as it goes. Alone, the trigram index of 1M messages
    took 50 s to build, 25-31 s with this buffer; in the whole upgrade the step went from 49 s
    to 37 s (docs/benchmarks.md). The setting is stored in the table's ``_config`` shadow
    table, so afterwards it is set back through FTS5 (every connection reloads it) and its row
    removed, leaving the table as a fresh one would be. On an error the migration's transaction
    rolls the setting back with everything else.
    """
    before, after = fts5_bulk_statements(table)
    for sql in before:
        op.execute(sql)
    yield
    for sql in after:
        op.execute(sql)


def fts5_bulk_statements(table: str) -> tuple[list[str], list[str]]:
    """What :func:`fts5_bulk_load` runs before and after the load (the benchmark's raw
    baseline runs the same)."""

    def hashsize(size: int) -> str:
        return f"INSERT INTO {table}({table}, rank) VALUES('hashsize', {size})"

    return [hashsize(FTS5_BULK_HASHSIZE)], [
        hashsize(FTS5_DEFAULT_HASHSIZE),
        f"DELETE FROM {table}_config WHERE k = 'hashsize'",
    ]
