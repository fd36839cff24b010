"""Loading checked rows into SQLite or PostgreSQL in one transaction; FTS rebuilds."""

from __future__ import annotations

import re
import sqlite3
from contextlib import suppress
from functools import partial
from typing import IO, Any, cast

from sqlalchemy import Table
from sqlalchemy.engine import URL

from philont import migrate, settings
from philont.backup import fts5_tables
from philont.db.engine import (
    BEGIN_OPTION,
    check_file,
    sqlite_engine,
    switch_to_wal,
    tighten_permissions,
)
from philont.db.schema import metadata
from philont.interrupts import point_of_no_return
from philont.log import get_logger
from philont.migrate.plan import plan_from
from philont.transfer.files import pre_upgrade_copy
from philont.transfer.format import (
    INDEXING,
    ROWID_KEY,
    ImportForeignKeyError,
    ImportReport,
    Mode,
    Progress,
    conflicting_row,
    export_tables,
    ident,
    rejected_row,
    sqlite_file,
    without_rowid,
)
from philont.transfer.merge import (
    Incoming,
    MergeConflicts,
    count_row,
    file_row,
    place_row,
    same_row_sql,
)
from philont.transfer.reader import Reopen, find_lines

log = get_logger(__name__)


def load_sqlite(url: URL, incoming: Incoming) -> None:
    """Upgrade the target and insert the rows in ONE transaction: a refusal anywhere (a row, a
    conflict, a foreign key, the upgrade itself) rolls back the upgrade too, and the file keeps
    its journal mode until the commit, so a refused import changes no byte of it (and the
    pre-upgrade copy it took is removed again). In a rollback-journal mode the transaction's
    pages stay in memory (up to :data:`SPILL_BYTES`) instead of being written into the file
    before the commit, which would lock readers out until it."""
    path, report = sqlite_file(url)[1], incoming.report
    check_file(path, create=True)
    engine = sqlite_engine(url, foreign_keys=False, wal=False)
    try:
        with engine.connect() as target, incoming.reopen() as fh:
            conn = cast(sqlite3.Connection, target.connection.driver_connection)
            _keep_readers_reading(conn)
            # the write lock before the schema is read and emptiness checked
            transaction = target.execution_options(**{BEGIN_OPTION: "IMMEDIATE"}).begin()
            try:
                with pre_upgrade_copy(path, plan_from(conn)) as copy:
                    report.upgrade = migrate.upgrade(target)  # inside this transaction
                    report.upgrade.backup = copy
                    _load(conn, fh, incoming)
                    with point_of_no_return():  # Ctrl-C from here on: too late, the rows stay
                        transaction.commit()
            except BaseException:
                if transaction.is_active:  # SQLite may already have rolled back (disk full)
                    transaction.rollback()
                raise
            with suppress(sqlite3.Error):  # as a Store would on opening it (it still may)
                switch_to_wal(conn.cursor(), settings.BUSY_TIMEOUT_MS)
    finally:
        engine.dispose()
    if report.upgrade.applied:
        tighten_permissions(path)


SPILL_BYTES = 256 << 20
"""How much of an import's changes to a file in a rollback-journal mode (the original's) SQLite
keeps in memory before it writes them into the file ahead of the commit."""


def _keep_readers_reading(conn: sqlite3.Connection) -> None:
    """Outside WAL, SQLite writes changed pages into the database file once its page cache
    (2 MB by default) is full, and must hold the file's exclusive lock from then on: readers
    get "database is locked" until the commit, most of an import. With ``cache_spill`` at
    :data:`SPILL_BYTES`, they read the file as it was until the commit (of an import whose
    changes fit; a larger one's past that point); in WAL readers never wait for a writer."""
    if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
        # in KiB (negative): SQLite reads a page count N also as the boolean N % 256 (65536
        # pages would turn spilling off, and memory would grow with the import)
        conn.execute(f"PRAGMA cache_spill = -{SPILL_BYTES // 1024}")


def _load(conn: sqlite3.Connection, fh: IO[str], incoming: Incoming) -> None:
    place = partial(_insert_row, conn, incoming.mode, incoming.report)
    _raise_sequences(conn, incoming.place_rows(conn, fh, place))
    incoming.report.fts_rebuilt = rebuild_fts(conn, incoming.progress)
    _check_foreign_keys(conn, incoming.reopen, incoming.known)


def _check_foreign_keys(conn: sqlite3.Connection, reopen: Reopen, known: dict[str, Table]) -> None:
    """``foreign_key_check`` of the imported tables (a host's own tables in a shared file are
    not ours to check); the rows at fault are named by primary key and line."""
    violations: list[tuple[Any, ...]] = []
    for table in export_tables():
        violations += conn.execute(f"PRAGMA foreign_key_check({ident(table.name)})").fetchall()
    if not violations:
        return
    shown: list[tuple[Any, ...]] = []
    wanted: list[tuple[str, tuple[Any, ...]]] = []
    for name, rowid, parent, *_ in violations[:5]:
        pk = [c.name for c in metadata.tables[name].primary_key.columns]
        cols = ", ".join(ident(c) for c in pk)
        sql = f"SELECT {cols} FROM {ident(name)} WHERE rowid = ?"
        key = tuple(conn.execute(sql, (rowid,)).fetchone())
        wanted.append((name, key))
        shown.append((name, dict(zip(pk, key, strict=True)), parent))
    lines = find_lines(reopen, known, wanted)
    raise ImportForeignKeyError(shown + [tuple(v) for v in violations[5:]], lines=lines)


def _insert_row(
    conn: sqlite3.Connection,
    mode: Mode,
    report: ImportReport,
    conflicts: MergeConflicts,
    number: int,
    name: str,
    row: dict[str, Any],
) -> None:
    pk, key, values = file_row(name, row)
    try:
        outcome = place_row(
            name,
            key,
            number,
            mode,
            conflicts,
            insert=lambda: _insert_new(conn, name, row, report),
            replace=lambda: _replace(conn, name, pk, key, values),
            same=lambda: _same_row(conn, name, pk, row),
        )
    except sqlite3.IntegrityError as exc:  # named by kind, never by the row's values
        if exc.sqlite_errorname in ("SQLITE_CONSTRAINT_UNIQUE", "SQLITE_CONSTRAINT_PRIMARYKEY"):
            raise conflicting_row(number, name, exc) from exc
        raise rejected_row(number, name, exc) from exc
    count_row(report, name, key, outcome)


def _insert_new(
    conn: sqlite3.Connection, name: str, row: dict[str, Any], report: ImportReport
) -> bool:
    """Insert the file row unless the target holds its primary key (False)."""
    pk, key, values = file_row(name, row)
    where = " AND ".join(f"{ident(c)} = ?" for c in pk)
    if conn.execute(f"SELECT 1 FROM {ident(name)} WHERE {where}", key).fetchone():
        return False
    rowid = row.get(ROWID_KEY)
    if rowid is not None:
        if conn.execute(f"SELECT 1 FROM {ident(name)} WHERE rowid = ?", (rowid,)).fetchone():
            report.rowids_renumbered[name] = report.rowids_renumbered.get(name, 0) + 1
        else:
            values = {"rowid": rowid, **values}
    columns = ", ".join(c if c == "rowid" else ident(c) for c in values)
    marks = ", ".join("?" for _ in values)
    conn.execute(f"INSERT INTO {ident(name)} ({columns}) VALUES ({marks})", tuple(values.values()))
    return True


def _replace(
    conn: sqlite3.Connection, name: str, pk: list[str], key: tuple[Any, ...], values: dict[str, Any]
) -> None:
    """Give the target's bootstrap row the file's values, and its place in the file's order
    (its rowid past the rows so far, as an inserted row's): the target made it before any
    other row, the source may have made it later (a database from before it existed), and an
    export of the target would list it elsewhere than the file does."""
    sets = [f"{ident(c)} = ?" for c in values]
    if not without_rowid(conn, name):
        sets.append(f"rowid = (SELECT max(rowid) + 1 FROM {ident(name)})")
    where = " AND ".join(f"{ident(c)} = ?" for c in pk)
    conn.execute(
        f"UPDATE {ident(name)} SET {', '.join(sets)} WHERE {where}", (*values.values(), *key)
    )


def _same_row(conn: sqlite3.Connection, name: str, pk: list[str], row: dict[str, Any]) -> bool:
    sql, params = same_row_sql(name, pk, row, mark="?", null_safe_eq="IS")
    return conn.execute(sql, params).fetchone() is not None


def _raise_sequences(conn: sqlite3.Connection, sequences: dict[str, int]) -> None:
    """Carry AUTOINCREMENT high-water marks over, so ids deleted in the source are never
    reused by the target (inserting explicit ids already raised them to the largest id)."""
    if (
        sequences
        and not conn.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'"
        ).fetchone()
    ):
        return  # no AUTOINCREMENT table in the target: nothing to carry over
    for name, seq in sequences.items():
        row = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = ?", (name,)).fetchone()
        if row is None:
            conn.execute("INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (name, seq))
        elif row[0] < seq:
            conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = ?", (seq, name))


_CONTENTLESS = re.compile(r"\bcontent\s*=\s*(''|\"\")", re.I)


def rebuild_fts(conn: sqlite3.Connection, progress: Progress | None = None) -> list[str]:
    """``'rebuild'`` every FTS5 virtual table that has content to rebuild from, reported as
    ``progress(INDEXING, rebuilt, of)``."""
    names = []
    for name in fts5_tables(conn):
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
        if not _CONTENTLESS.search(sql):
            names.append(name)
    for done, name in enumerate(names):
        if progress is not None:
            progress(INDEXING, done, len(names))
        conn.execute(f"INSERT INTO {ident(name)}({ident(name)}) VALUES ('rebuild')")
    if progress is not None:
        progress(INDEXING, len(names), len(names))
    return names
