"""Export every memory layer of a database (SQLite or PostgreSQL) as JSON lines."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO, cast

from sqlalchemy import Integer, Table
from sqlalchemy.engine import URL

from philont import filewrite, migrate
from philont.db.cursors import NOT_UTF8
from philont.db.engine import FILE_MODE, database_name, is_postgres, resolve_url, sqlite_path
from philont.db.retry import typed_errors
from philont.db.schema import metadata
from philont.errors import FilePathError, InvalidInputError, SchemaError, StorageError
from philont.interrupts import point_of_no_return
from philont.log import get_logger
from philont.transfer.format import (
    FORMAT,
    FORMAT_VERSION,
    MAX_LINE_CHARS,
    PROGRESS_EVERY,
    ROWID_KEY,
    ROWID_TABLES,
    DbTarget,
    ExportReport,
    ExportRowTooLongError,
    ExportTextNotUtf8Error,
    Progress,
    dumps_line,
    encode_row,
    encode_value,
    export_tables,
    ident,
    sqlite_connection,
    sqlite_file,
    without_rowid,
)

log = get_logger(__name__)


def _sink(out: object) -> Path | TextIO:
    """``out`` as :func:`export` writes it: a path (text or ``os.PathLike``) or a text stream
    (anything with ``write``); InvalidInputError naming ``out`` otherwise (``export(db, 5)``
    failed with AttributeError deep inside, a path given as text with another)."""
    if isinstance(out, str | os.PathLike):
        path = Path(out)
        check_output(path)
        return path
    if callable(getattr(out, "write", None)):
        return cast(TextIO, out)
    raise InvalidInputError(
        f"out: must be a path or a text stream, got {type(out).__name__}", argument="out"
    )


def check_output(out: Path) -> None:
    """Refuse (:class:`FilePathError`, naming the path and the reason) a path no export can be
    written at, before the database is read: a directory, a missing directory, a parent that
    is a plain file, a directory that cannot be written, and an existing file that is no
    regular one (``/dev/null``, a pipe, a ``/proc`` file: the export's rename would replace it;
    use ``-`` for a stream)."""
    filewrite.regular(out)
    parent = out.parent
    if not parent.is_dir():
        nearest = next(p for p in (parent, *parent.parents) if p.exists())  # / exists
        if nearest.is_dir():
            raise FilePathError(str(out), "its directory does not exist")
        raise FilePathError(str(out), f"a parent is not a directory ({nearest})")
    if not filewrite.may(parent, os.W_OK | os.X_OK):
        raise FilePathError(str(out), "its directory is not writable (permission denied)")


EXPORT_COPY = ".export-"
"""Marks an export being written beside its file (``.<file>.export-<id>.tmp``)."""


@contextmanager
def _writer(out: Path | TextIO) -> Iterator[TextIO]:
    """A text stream for ``out``; a path is written to a private temp file renamed on success,
    so a failed export never leaves a plausible-looking partial file behind, and a write that
    fails there is :class:`FilePathError` naming ``out`` (:mod:`philont.filewrite`)."""
    if not isinstance(out, Path):
        yield out
        return
    check_output(out)
    tmp = filewrite.temp_beside(out, EXPORT_COPY)  # and a killed export's file goes
    try:
        held = filewrite.LockedTemp(tmp, FILE_MODE)
    except OSError as exc:
        raise FilePathError(str(out), f"cannot write beside it ({exc.strerror})") from exc
    with held:  # removed unless renamed; a write that fails is FilePathError naming ``out``
        with filewrite.refusing(out, FilePathError, filewrite.WRITING):  # EMFILE: no fd left
            fd = os.dup(held.fd)
        with filewrite.text_writer(fd, out) as fh:
            yield fh
            filewrite.fsync(fh, out)
        with (
            point_of_no_return(),  # Ctrl-C: too late now
            filewrite.refusing(out, FilePathError, filewrite.WRITING),
        ):
            os.replace(tmp, out)


def export(
    db: DbTarget,
    out: str | os.PathLike[str] | TextIO,
    *,
    progress: Progress | None = None,
    agent: str | None = None,
) -> ExportReport:
    """Write every row of every model table to ``out`` as JSON lines.

    Line 1 is a header (``format``, ``format_version``, ``schema_revision``, ``schema_version``,
    ``exported_at``, ``tables`` in dependency order, AUTOINCREMENT ``sequences``); then one
    ``{"table": ..., "row": {column: stored value}}`` per row, values exactly as stored (epoch-ms
    integers, JSON text as its stored string, BLOBs as ``{"$b64": ...}``, an infinity or NaN
    as ``{"$real": "Infinity"}``, ``"-Infinity"`` or ``"NaN"``: JSON has no such number; notes
    and skills also carry ``_rowid``); last a trailer ``{"end": true, "rows": {table: count}}``.

    The database must be at head (``SchemaOutOfDateError`` otherwise). All rows come from one
    read snapshot, table by table and within a table by rowid (primary key for WITHOUT ROWID
    tables), streamed; ``progress(table, done, total)`` reports as it goes. A path is written
    with mode 0600 through a temp file renamed at the end.

    A PostgreSQL URL exports one agent (``agent``, else ``$PHILONT_AGENT``) in the same format
    (``philont.transfer.postgres.export_agent``).
    """
    out = _sink(out)
    target = resolve_url(db)
    _not_the_database(out, target)
    with typed_errors("transfer.export_failed", where=database_name(target)):
        return _export(db, target, out, progress, agent)


def _not_the_database(out: Path | TextIO, db: URL) -> None:
    """Refuse (:class:`FilePathError`) an export file whose rename would replace the SQLite
    database being exported, or a file SQLite keeps beside it (its ``-wal`` holds committed
    transactions): ``philont export memory.sqlite`` with that file as the database replaced
    the memory with its export. A link to the database is another name, which the rename
    replaces alone: it is written."""
    if not isinstance(out, Path) or is_postgres(db):
        return
    path = sqlite_path(db)
    if path is None:
        return
    entry = out.parent.resolve() / out.name  # what the rename replaces
    files = {path.parent.resolve() / path.name, path.resolve()}  # SQLite's -wal: beside either
    if any(entry == Path(f"{f}{s}") for f in files for s in ("", *filewrite.COMPANIONS)):
        raise FilePathError(
            str(out),
            f"it is the database being exported, or a file SQLite keeps beside it ({path}); "
            "the export would replace it: name another file",
        )


def _export(
    db: DbTarget, target: URL, out: Path | TextIO, progress: Progress | None, agent: str | None
) -> ExportReport:
    if is_postgres(target):
        from philont.transfer.postgres import export_agent

        return export_agent(target, out, progress, agent=agent)
    url, path = sqlite_file(db)
    status = migrate.check(url)
    tables = export_tables()
    counts: dict[str, int] = {}
    with sqlite_connection(url) as conn:  # it only reads
        conn.execute("BEGIN")  # one snapshot: the counts and the rows agree
        try:
            for table in tables:
                _check_columns(conn, table)
                counts[table.name] = conn.execute(
                    f"SELECT count(*) FROM {ident(table.name)}"
                ).fetchone()[0]
            version_row = conn.execute(
                "SELECT value FROM memory_meta WHERE key = 'schema_version'"
            ).fetchone()
            header = _header(status.head, version_row, _sqlite_sequences(conn))
            with _writer(out) as fh:
                fh.write(dumps_line(header) + "\n")
                for table in tables:
                    _export_table(conn, fh, table, counts[table.name], progress)
                fh.write(dumps_line({"end": True, "rows": counts}) + "\n")
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    log.info("transfer.exported", db=str(path), rows=sum(counts.values()))
    return ExportReport(
        rows=counts,
        schema_revision=status.head,
        path=out if isinstance(out, Path) else None,
    )


def _sqlite_sequences(conn: sqlite3.Connection) -> dict[str, int]:
    """The AUTOINCREMENT high-water marks (none before the first AUTOINCREMENT table)."""
    if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'").fetchone():
        return {}
    return dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())


def _header(
    revision: str, version_row: Sequence[Any] | None, sequences: dict[str, int]
) -> dict[str, Any]:
    tables = export_tables()
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "schema_revision": revision,
        "schema_version": None if version_row is None else str(version_row[0]),
        "exported_at": datetime.now(UTC).isoformat(timespec="milliseconds"),
        "tables": [t.name for t in tables],
        "sequences": {t.name: sequences[t.name] for t in tables if t.name in sequences},
    }


def _check_columns(conn: sqlite3.Connection, table: Table) -> None:
    _same_columns(table, [r[1] for r in conn.execute(f"PRAGMA table_info({ident(table.name)})")])


def _same_columns(table: Table, found: list[str]) -> None:
    expected = {c.name for c in table.c}
    if set(found) != expected:
        raise SchemaError(
            f"{table.name} has columns {sorted(found)}, the models {sorted(expected)}; "
            "refusing to export a table whose columns the format cannot carry"
        )


def _export_table(
    conn: sqlite3.Connection,
    fh: TextIO,
    table: Table,
    total: int,
    progress: Progress | None,
) -> None:
    columns = [c.name for c in table.c]
    with_rowid = table.name in ROWID_TABLES
    names = ([ROWID_KEY] if with_rowid else []) + columns
    select = ", ".join((["rowid"] if with_rowid else []) + [ident(c) for c in columns])
    if without_rowid(conn, table.name):
        order = ", ".join(ident(c.name) for c in table.primary_key.columns)
    else:
        order = "rowid"
    query = f"SELECT {select} FROM {ident(table.name)} ORDER BY {order}"
    try:
        _write_rows(fh, table.name, names, conn.execute(query), total, progress)
    except sqlite3.OperationalError as exc:
        if not str(exc).startswith(NOT_UTF8):
            raise
        raise _not_utf8(conn, table, names, query) from exc


class _Undecodable(bytes):
    """Stored text that is not UTF-8, as :func:`_not_utf8`'s reading returns it."""


def _decoded(raw: bytes) -> str | _Undecodable:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return _Undecodable(raw)


def _not_utf8(
    conn: sqlite3.Connection, table: Table, names: list[str], query: str
) -> ExportTextNotUtf8Error:
    """The first row and column of ``table`` whose stored text is not UTF-8, read again in the
    export's snapshot with a decoding that keeps such text as bytes (only when the export
    failed on it: the usual reading stays sqlite3's own)."""
    keys = [c.name for c in table.primary_key.columns]
    conn.text_factory = _decoded
    try:
        for record in conn.execute(query):
            row = dict(zip(names, record, strict=True))
            bad = next((n for n, v in row.items() if isinstance(v, _Undecodable)), None)
            if bad is not None:
                return ExportTextNotUtf8Error(table.name, {k: row[k] for k in keys}, bad)
    finally:
        conn.text_factory = str
    raise StorageError(f"{table.name}: a stored text is not UTF-8, but none was found again")


def _write_rows(
    fh: TextIO,
    name: str,
    names: list[str],
    records: Iterable[Sequence[Any]],
    total: int,
    progress: Progress | None,
) -> None:
    done = 0
    prefix = '{"table":' + dumps_line(name) + ',"row":'
    for record in records:
        row = {n: encode_value(v) for n, v in zip(names, record, strict=True)}
        line = prefix + encode_row(row) + "}"
        if len(line) > MAX_LINE_CHARS:
            key = {c.name: row[c.name] for c in metadata.tables[name].primary_key.columns}
            raise ExportRowTooLongError(name, key, len(line))
        fh.write(line + "\n")
        done += 1
        if progress is not None and done % PROGRESS_EVERY == 0 and done != total:
            progress(name, done, total)
    if done != total:  # cannot happen inside one snapshot; a guard against silent loss
        raise StorageError(f"{name}: counted {total} rows but read {done}")
    if progress is not None:
        progress(name, done, total)


def _pg_order(table: Table) -> str:
    """Primary key order; text in code point order ("C"), as SQLite's BINARY collation."""
    return ", ".join(
        ident(c.name) + ("" if isinstance(c.type, Integer) else ' COLLATE "C"')
        for c in table.primary_key.columns
    )
