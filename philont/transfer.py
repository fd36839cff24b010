"""Export and import of every memory layer as versioned JSON lines (raw stored values)."""

from __future__ import annotations

import base64
import binascii
import json
import os
import re
import sqlite3
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal, Protocol, TextIO, cast

from sqlalchemy import Integer, Table
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import URL

from philont import charter, migrate
from philont.backup import fts5_tables
from philont.db.bootstrap import GLOBAL_SESSION_ID
from philont.db.engine import FILE_MODE, create_engine, is_postgres, resolve_url, sqlite_path
from philont.db.fts import FTS_INDEXES
from philont.db.schema import metadata
from philont.errors import ConflictError, InvalidInputError, SchemaError, StorageError
from philont.log import get_logger

if TYPE_CHECKING:
    import psycopg

log = get_logger(__name__)

FORMAT = "philont-export"
FORMAT_VERSION = 1
ROWID_KEY = "_rowid"  # the implicit rowid, kept where an external-content FTS index keys on it
B64_KEY = "$b64"
PROGRESS_EVERY = 1000

DbTarget = str | Path | URL | None
Progress = Callable[[str, int, int], None]
Mode = Literal["refuse", "merge"]


class ImportFormatError(InvalidInputError):
    """A line of an import file is malformed; nothing was imported."""

    code = "import_format"

    def __init__(self, line_number: int, reason: str) -> None:
        super().__init__(f"line {line_number}: {reason}", line_number=line_number, reason=reason)
        self.line_number = line_number
        self.reason = reason


class ImportForeignKeyError(InvalidInputError):
    """The imported rows reference rows that exist neither in the file nor in the target."""

    code = "import_foreign_key"

    def __init__(self, violations: list[tuple[Any, ...]]) -> None:
        shown = ", ".join(f"{t} rowid {r} -> {p}" for t, r, p, *_ in violations[:5])
        super().__init__(
            f"{len(violations)} foreign key violation(s) after import ({shown}); nothing imported",
            violations=violations,
        )
        self.violations = violations


@dataclass(frozen=True)
class ExportReport:
    """Rows written per table (in file order) and the schema they came from."""

    rows: dict[str, int]
    schema_revision: str
    path: Path | None = None


@dataclass
class ImportReport:
    """What an import did, per table."""

    inserted: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)  # primary key already present
    replaced: list[str] = field(default_factory=list)  # "table:id" bootstrap rows taken over
    rowids_renumbered: dict[str, int] = field(default_factory=dict)  # ``_rowid`` was taken
    fts_rebuilt: list[str] = field(default_factory=list)
    upgrade: migrate.UpgradeReport | None = None


# --- what is exported ------------------------------------------------------------------------


def export_tables() -> list[Table]:
    """Every model table in dependency order (FTS tables and the version table are not models:
    triggers rebuild the one, the target's own migrations own the other)."""
    return [t for t in metadata.sorted_tables if "_fts" not in t.name]


def _rowid_tables() -> frozenset[str]:
    """Content tables of external-content FTS indexes whose rowid is not their primary key."""
    names = set()
    for index in FTS_INDEXES:
        pk = list(index.content_table.primary_key.columns)
        if not (len(pk) == 1 and isinstance(pk[0].type, Integer)):
            names.add(index.content_table.name)
    return frozenset(names)


ROWID_TABLES = _rowid_tables()

# Rows every database carries (spec §2.6). An import into a database that holds only these
# takes the file's versions over (mode "refuse"); memory_meta describes the target's own schema
# and always keeps the target's values.
BOOTSTRAP_ROWS: frozenset[tuple[str, tuple[Any, ...]]] = frozenset(
    {
        ("memory_raw_sessions", (GLOBAL_SESSION_ID,)),
        ("memory_pursuits", (charter.ROOT_PURSUIT_ID,)),
    }
)


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _dumps(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _encode(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return {B64_KEY: base64.b64encode(bytes(value)).decode("ascii")}
    return value


def _sqlite_file(db: DbTarget) -> tuple[URL, Path]:
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is None:
        raise StorageError("export and import need an SQLite database file")
    return url, path


@contextmanager
def _raw_connection(url: URL, *, create: bool) -> Iterator[sqlite3.Connection]:
    """A plain sqlite3 connection with our PRAGMAs (foreign keys off: import order is free and
    ``foreign_key_check`` runs before commit); values come back exactly as stored."""
    engine = create_engine(url, foreign_keys=False, create=create)
    try:
        raw = engine.raw_connection()
        try:
            yield cast(sqlite3.Connection, raw.driver_connection)
        finally:
            raw.close()
    finally:
        engine.dispose()


@contextmanager
def _pg_connection(url: URL, *, create: bool) -> Iterator[psycopg.Connection[tuple[Any, ...]]]:
    """A plain psycopg connection in the URL's agent schema, outside any transaction; values
    come back exactly as stored (int, float, str), no SQLAlchemy types in between."""
    engine = create_engine(url, create=create)
    try:
        raw = engine.raw_connection()
        try:
            conn = cast("psycopg.Connection[tuple[Any, ...]]", raw.driver_connection)
            conn.rollback()  # whatever the pool's ping left open
            yield conn
        finally:
            raw.close()
    finally:
        engine.dispose()


def _without_rowid(conn: sqlite3.Connection, table: str) -> bool:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    sql = row.fetchone()
    return bool(sql and re.search(r"\bwithout\s+rowid\b", sql[0], re.I))


# --- export ----------------------------------------------------------------------------------


@contextmanager
def _writer(out: Path | TextIO) -> Iterator[TextIO]:
    """A text stream for ``out``; a path is written to a private temp file renamed on success,
    so a failed export never leaves a plausible-looking partial file behind."""
    if not isinstance(out, Path):
        yield out
        return
    tmp = out.parent / f".{out.name}.{uuid.uuid4().hex}.tmp"
    fd = os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE)
    try:
        with open(fd, "w", encoding="utf-8", newline="\n") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def export(db: DbTarget, out: Path | TextIO, *, progress: Progress | None = None) -> ExportReport:
    """Write every row of every model table to ``out`` as JSON lines.

    Line 1 is a header (``format``, ``format_version``, ``schema_revision``, ``schema_version``,
    ``exported_at``, ``tables`` in dependency order, AUTOINCREMENT ``sequences``); then one
    ``{"table": ..., "row": {column: stored value}}`` per row, values exactly as stored (epoch-ms
    integers, JSON text as its stored string, BLOBs as ``{"$b64": ...}``; notes and skills also
    carry ``_rowid``); last a trailer ``{"end": true, "rows": {table: count}}``.

    The database must be at head (``SchemaOutOfDateError`` otherwise). All rows come from one
    read snapshot, table by table and within a table by rowid (primary key for WITHOUT ROWID
    tables), streamed; ``progress(table, done, total)`` reports as it goes. A path is written
    with mode 0600 through a temp file renamed at the end.

    A PostgreSQL URL (made by ``resolve_url(url, agent=...)``) exports that agent's schema in
    the same format from one REPEATABLE READ READ ONLY snapshot, rows by primary key (text in
    code point order), raw driver values, no ``_rowid`` (PostgreSQL has none), and
    ``sequences`` from the id sequences (or the largest id, if higher).
    """
    target = resolve_url(db)
    if is_postgres(target):
        return _export_pg(target, out, progress)
    url, path = _sqlite_file(db)
    status = migrate.check(url)
    tables = export_tables()
    counts: dict[str, int] = {}
    with _raw_connection(url, create=False) as conn:
        conn.execute("BEGIN")  # one snapshot: the counts and the rows agree
        try:
            for table in tables:
                _check_columns(conn, table)
                counts[table.name] = conn.execute(
                    f"SELECT count(*) FROM {_q(table.name)}"
                ).fetchone()[0]
            version_row = conn.execute(
                "SELECT value FROM memory_meta WHERE key = 'schema_version'"
            ).fetchone()
            sequences: dict[str, int] = {}
            if conn.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_sequence'"
            ).fetchone():
                sequences = dict(conn.execute("SELECT name, seq FROM sqlite_sequence").fetchall())
            header = _header(status.head, version_row, sequences)
            with _writer(out) as fh:
                fh.write(_dumps(header) + "\n")
                for table in tables:
                    _export_table(conn, fh, table, counts[table.name], progress)
                fh.write(_dumps({"end": True, "rows": counts}) + "\n")
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    log.info("transfer.exported", db=str(path), rows=sum(counts.values()))
    return ExportReport(
        rows=counts,
        schema_revision=status.head,
        path=out if isinstance(out, Path) else None,
    )


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
    _same_columns(table, [r[1] for r in conn.execute(f"PRAGMA table_info({_q(table.name)})")])


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
    select = ", ".join((["rowid"] if with_rowid else []) + [_q(c) for c in columns])
    if _without_rowid(conn, table.name):
        order = ", ".join(_q(c.name) for c in table.primary_key.columns)
    else:
        order = "rowid"
    cursor = conn.execute(f"SELECT {select} FROM {_q(table.name)} ORDER BY {order}")
    _write_rows(fh, table.name, names, cursor, total, progress)


def _write_rows(
    fh: TextIO,
    name: str,
    names: list[str],
    records: Iterable[Sequence[Any]],
    total: int,
    progress: Progress | None,
) -> None:
    done = 0
    prefix = '{"table":' + _dumps(name) + ',"row":'
    for record in records:
        row = {n: _encode(v) for n, v in zip(names, record, strict=True)}
        fh.write(prefix + _dumps(row) + "}\n")
        done += 1
        if progress is not None and done % PROGRESS_EVERY == 0 and done != total:
            progress(name, done, total)
    if done != total:  # cannot happen inside one snapshot; a guard against silent loss
        raise StorageError(f"{name}: counted {total} rows but read {done}")
    if progress is not None:
        progress(name, done, total)


# --- PostgreSQL export -----------------------------------------------------------------------


def _autoincrement_tables() -> list[Table]:
    """Tables whose integer id AUTOINCREMENTs on SQLite (a BIGSERIAL sequence on PostgreSQL)."""
    return [t for t in export_tables() if t.dialect_options["sqlite"].get("autoincrement")]


def _pg_high_water(conn: psycopg.Connection[tuple[Any, ...]], table: Table) -> tuple[str, int]:
    """The table's id sequence and the largest id it has handed out or the table holds."""
    (pk,) = table.primary_key.columns
    row = conn.execute(
        f"SELECT pg_get_serial_sequence(%s, %s), (SELECT max({_q(pk.name)}) FROM {_q(table.name)})",
        (_q(table.name), pk.name),
    ).fetchone()
    if row is None or row[0] is None:
        raise SchemaError(f"{table.name}.{pk.name} has no sequence (not a philont schema?)")
    last = conn.execute("SELECT pg_sequence_last_value(%s::regclass)", (row[0],)).fetchone()
    return row[0], max(row[1] or 0, (last and last[0]) or 0)


def _pg_order(table: Table) -> str:
    """Primary key order; text in code point order ("C"), as SQLite's BINARY collation."""
    return ", ".join(
        _q(c.name) + ("" if isinstance(c.type, Integer) else ' COLLATE "C"')
        for c in table.primary_key.columns
    )


def _export_pg(url: URL, out: Path | TextIO, progress: Progress | None) -> ExportReport:
    import psycopg

    status = migrate.check(url)
    tables = export_tables()
    counts: dict[str, int] = {}
    with _pg_connection(url, create=False) as conn:
        conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        conn.read_only = True
        with conn.transaction():  # one snapshot: the counts and the rows agree
            for table in tables:
                found = conn.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND table_name = %s",
                    (table.name,),
                ).fetchall()
                _same_columns(table, [r[0] for r in found])
                count = conn.execute(f"SELECT count(*) FROM {_q(table.name)}").fetchone()
                counts[table.name] = count[0] if count else 0
            version_row = conn.execute(
                "SELECT value FROM memory_meta WHERE key = 'schema_version'"
            ).fetchone()
            sequences = {}
            for table in _autoincrement_tables():
                _seq, high = _pg_high_water(conn, table)
                if high:
                    sequences[table.name] = high
            header = _header(status.head, version_row, sequences)
            with _writer(out) as fh:
                fh.write(_dumps(header) + "\n")
                for table in tables:
                    columns = [c.name for c in table.c]
                    select = ", ".join(_q(c) for c in columns)
                    with conn.cursor(name=f"philont_export_{table.name}") as cursor:
                        cursor.itersize = PROGRESS_EVERY
                        cursor.execute(
                            f"SELECT {select} FROM {_q(table.name)} ORDER BY {_pg_order(table)}"
                        )
                        _write_rows(fh, table.name, columns, cursor, counts[table.name], progress)
                fh.write(_dumps({"end": True, "rows": counts}) + "\n")
    log.info("transfer.exported", db=_shown(url), rows=sum(counts.values()))
    return ExportReport(
        rows=counts,
        schema_revision=status.head,
        path=out if isinstance(out, Path) else None,
    )


def _shown(url: URL) -> str:
    return url.render_as_string(hide_password=True)


# --- reading and validating an import file ---------------------------------------------------


@dataclass
class _Header:
    tables: list[str]
    sequences: dict[str, int]


def _known_revisions() -> set[str]:
    return {s.revision for s in migrate.script_directory().walk_revisions()}


def _parse(number: int, line: str) -> dict[str, Any]:
    text = line.rstrip("\r\n")
    if not text.strip():
        raise ImportFormatError(number, "empty line")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(number, f"invalid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(obj, dict):
        raise ImportFormatError(number, f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _read_header(number: int, obj: dict[str, Any], known: dict[str, Table]) -> _Header:
    if obj.get("format") != FORMAT:
        raise ImportFormatError(number, f"not a {FORMAT} file (format={obj.get('format')!r})")
    version = obj.get("format_version")
    if not _is_int(version) or version != FORMAT_VERSION:
        raise ImportFormatError(
            number, f"unsupported format_version {version!r} (this release reads {FORMAT_VERSION})"
        )
    revision = obj.get("schema_revision")
    if not isinstance(revision, str) or revision not in _known_revisions():
        raise ImportFormatError(
            number, f"schema_revision {revision!r} is unknown to this release (newer?)"
        )
    tables = obj.get("tables")
    if not isinstance(tables, list) or not all(isinstance(t, str) for t in tables):
        raise ImportFormatError(number, "header 'tables' must be a list of table names")
    for name in tables:
        if name not in known:
            raise ImportFormatError(number, f"unknown table {name!r} in the header")
    if len(set(tables)) != len(tables):
        raise ImportFormatError(number, "header 'tables' lists a table twice")
    sequences = obj.get("sequences", {})
    if not isinstance(sequences, dict) or not all(
        name in tables and _is_int(seq) for name, seq in sequences.items()
    ):
        raise ImportFormatError(number, "header 'sequences' must map listed tables to integers")
    return _Header(tables=list(tables), sequences=dict(sequences))


def _decode_value(number: int, table: str, column: str, value: Any) -> Any:
    if value is None or isinstance(value, str | float) or _is_int(value):
        return value
    if isinstance(value, dict) and set(value) == {B64_KEY} and isinstance(value[B64_KEY], str):
        try:
            return base64.b64decode(value[B64_KEY], validate=True)
        except (binascii.Error, ValueError) as exc:
            raise ImportFormatError(number, f"{table}.{column}: bad base64") from exc
    raise ImportFormatError(
        number, f"{table}.{column}: {type(value).__name__} is not a stored SQLite value"
    )


def _read_row(
    number: int, obj: dict[str, Any], header: _Header, known: dict[str, Table]
) -> tuple[str, dict[str, Any]]:
    if set(obj) != {"table", "row"}:
        raise ImportFormatError(number, 'expected {"table": ..., "row": {...}}')
    name, row = obj["table"], obj["row"]
    if not isinstance(name, str) or name not in known:
        raise ImportFormatError(number, f"unknown table {name!r}")
    if name not in header.tables:
        raise ImportFormatError(number, f"table {name!r} is not listed in the header")
    if not isinstance(row, dict):
        raise ImportFormatError(number, "'row' must be a JSON object")
    table = known[name]
    allowed = {c.name for c in table.c}
    if name in ROWID_TABLES:
        allowed.add(ROWID_KEY)
    unknown = sorted(set(row) - allowed)
    if unknown:
        raise ImportFormatError(number, f"unknown column(s) {unknown} for table {name!r}")
    for pk in table.primary_key.columns:
        if row.get(pk.name) is None:
            raise ImportFormatError(number, f"{name}: primary key column {pk.name!r} is missing")
    if ROWID_KEY in row and not _is_int(row[ROWID_KEY]):
        raise ImportFormatError(number, f"{name}: {ROWID_KEY} must be an integer")
    values = {k: _decode_value(number, name, k, v) for k, v in row.items()}
    return name, values


class _Reader:
    """Validates an import file line by line while yielding its rows; the header is known after
    the first row (or the end), and the trailer is checked when the file is exhausted."""

    def __init__(self, lines: IO[str], known: dict[str, Table]) -> None:
        self.lines = lines
        self.known = known
        self.header: _Header | None = None

    def __iter__(self) -> Iterator[tuple[int, str, dict[str, Any]]]:
        counts: dict[str, int] = {}
        trailer_seen = False
        number = 0
        while True:
            try:
                line = self.lines.readline()
            except UnicodeDecodeError as exc:
                raise ImportFormatError(number + 1, f"not UTF-8 text ({exc.reason})") from exc
            if not line:
                break
            number += 1
            obj = _parse(number, line)
            if trailer_seen:
                raise ImportFormatError(number, "data after the trailer")
            if self.header is None:
                self.header = _read_header(number, obj, self.known)
                counts = dict.fromkeys(self.header.tables, 0)
                continue
            if "end" in obj:
                _check_trailer(number, obj, counts)
                trailer_seen = True
                continue
            name, row = _read_row(number, obj, self.header, self.known)
            counts[name] += 1
            yield number, name, row
        if self.header is None:
            raise ImportFormatError(1, "empty file: no header")
        if not trailer_seen:
            raise ImportFormatError(number + 1, "no trailer: the file is truncated")


def _check_trailer(number: int, obj: dict[str, Any], counts: dict[str, int]) -> None:
    rows = obj.get("rows")
    if set(obj) != {"end", "rows"} or obj["end"] is not True or not isinstance(rows, dict):
        raise ImportFormatError(number, 'malformed trailer (expected {"end":true,"rows":{...}})')
    if set(rows) != set(counts):
        raise ImportFormatError(number, "the trailer's tables differ from the header's")
    for name, n in counts.items():
        if rows[name] != n or not _is_int(rows[name]):
            raise ImportFormatError(
                number, f"trailer says {rows[name]!r} rows for {name!r}, the file holds {n}"
            )


@contextmanager
def _reopenable(src: Path | TextIO) -> Iterator[Callable[[], AbstractContextManager[IO[str]]]]:
    """Something to read the source twice from (validate, then insert): a path is reopened, a
    seekable stream rewound, anything else spooled to a private temp file first."""
    if isinstance(src, Path):

        @contextmanager
        def _open_path() -> Iterator[IO[str]]:
            with src.open("r", encoding="utf-8", newline="\n") as fh:
                yield fh

        yield _open_path
        return
    with ExitStack() as stack:
        stream: IO[str] = src
        if not src.seekable():
            spool = stack.enter_context(
                tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")
            )
            for chunk in iter(lambda: src.read(1 << 16), ""):
                spool.write(chunk)
            spool.seek(0)
            stream = spool
        start = stream.tell()

        @contextmanager
        def _rewound() -> Iterator[IO[str]]:
            stream.seek(start)
            yield stream

        yield _rewound


# --- import ----------------------------------------------------------------------------------


def import_(
    db: DbTarget,
    src: Path | TextIO,
    *,
    mode: Mode = "refuse",
    progress: Progress | None = None,
) -> ImportReport:
    """Import an export file into ``db`` in one transaction (all or nothing).

    The whole file is validated first (``ImportFormatError(line_number, reason)``, nothing
    touched); then the target is upgraded to head. ``mode="refuse"`` raises ``ConflictError``
    when the target holds anything but the bootstrap rows, whose file versions then replace
    the target's; ``mode="merge"`` skips every row whose primary key exists. Explicit ids keep
    AUTOINCREMENT ids (and the file's ``sqlite_sequence`` high-water marks); ``_rowid`` keeps
    the rowids external-content FTS keys on (renumbered only when taken, in merge). Every FTS5
    index is rebuilt and ``foreign_key_check`` must pass before the commit.

    Into a PostgreSQL agent schema the same happens in one transaction that locks the tables
    against other writers: values the schema would change (NUL in text, a non-integer in a
    BIGINT column) are refused while validating, with the line number; ``_rowid`` is ignored;
    an existing primary key is skipped (``ON CONFLICT DO NOTHING``); every id sequence is set
    past the file's ``sequences`` and the largest id; a foreign key violation (checked row by
    row, parents come first in the file) rolls everything back.
    """
    if mode not in ("refuse", "merge"):
        raise InvalidInputError(f"mode must be 'refuse' or 'merge', got {mode!r}", mode=mode)
    url = resolve_url(db)
    postgres = is_postgres(url)
    if not postgres:
        url, path = _sqlite_file(db)
    known = {t.name: t for t in export_tables()}
    report = ImportReport()
    with _reopenable(src) as reopen:
        totals: dict[str, int] = {}
        with reopen() as fh:
            for number, name, row in _Reader(fh, known):
                if postgres:
                    _check_pg_row(number, name, row)
                totals[name] = totals.get(name, 0) + 1
        report.upgrade = migrate.upgrade(url)
        if postgres:
            _load_pg(url, reopen, known, mode, totals, report, progress)
        else:
            _load_sqlite(url, reopen, known, mode, totals, report, progress)
    log.info(
        "transfer.imported",
        db=_shown(url) if postgres else str(path),
        mode=mode,
        inserted=sum(report.inserted.values()),
        skipped=sum(report.skipped.values()),
    )
    return report


Reopen = Callable[[], AbstractContextManager[IO[str]]]


class _Cursor(Protocol):
    def fetchone(self) -> Any: ...


class _Connection(Protocol):
    """What the SQLite and the PostgreSQL loaders share: ``execute`` (marks ``?`` or ``%s``)."""

    def execute(self, sql: Any, params: Any = ..., /) -> _Cursor: ...


def _load_sqlite(
    url: URL,
    reopen: Reopen,
    known: dict[str, Table],
    mode: Mode,
    totals: dict[str, int],
    report: ImportReport,
    progress: Progress | None,
) -> None:
    with _raw_connection(url, create=True) as conn, reopen() as fh:
        conn.execute("BEGIN IMMEDIATE")  # take the write lock before checking emptiness
        try:
            if mode == "refuse":
                _refuse_unless_empty(conn)
            reader = _Reader(fh, known)
            _insert_all(conn, reader, mode, totals, report, progress)
            assert reader.header is not None  # validated above
            _raise_sequences(conn, reader.header.sequences)
            for name in reader.header.tables:
                if progress is not None and not totals.get(name):
                    progress(name, 0, 0)
            report.fts_rebuilt = _rebuild_fts(conn)
            violations = conn.execute("PRAGMA foreign_key_check").fetchall()
            if violations:
                raise ImportForeignKeyError([tuple(v) for v in violations])
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:  # SQLite may already have rolled back (e.g. disk full)
                conn.execute("ROLLBACK")
            raise


def _refuse_unless_empty(conn: _Connection, mark: str = "?") -> None:
    for table in export_tables():
        if table.name == "memory_meta":
            continue
        pk = [c.name for c in table.primary_key.columns]
        exempt = [key for name, key in BOOTSTRAP_ROWS if name == table.name]
        where = ""
        params: list[Any] = []
        for key in exempt:
            clause = " AND ".join(f"{_q(c)} = {mark}" for c in pk)
            where += (" AND " if where else " WHERE ") + f"NOT ({clause})"
            params.extend(key)
        row = conn.execute(f"SELECT count(*) FROM {_q(table.name)}{where}", params).fetchone()
        n = row[0] if row else 0
        if n:
            raise ConflictError(
                f"the target already holds memory ({table.name}: {n} row(s)); import with "
                "mode='merge' to add to it, or into a new database",
                table=table.name,
            )


def _insert_all(
    conn: sqlite3.Connection,
    reader: _Reader,
    mode: Mode,
    totals: dict[str, int],
    report: ImportReport,
    progress: Progress | None,
) -> None:
    done: dict[str, int] = {}
    for number, name, row in reader:
        _insert_row(conn, number, name, row, mode, report)
        done[name] = done.get(name, 0) + 1
        n, total = done[name], totals.get(name, 0)
        if progress is not None and (n % PROGRESS_EVERY == 0 or n == total):
            progress(name, n, total)


def _insert_row(
    conn: sqlite3.Connection,
    number: int,
    name: str,
    row: dict[str, Any],
    mode: Mode,
    report: ImportReport,
) -> None:
    table = metadata.tables[name]
    pk = [c.name for c in table.primary_key.columns]
    key = tuple(row[c] for c in pk)
    where = " AND ".join(f"{_q(c)} = ?" for c in pk)
    values = {k: v for k, v in row.items() if k != ROWID_KEY}
    if conn.execute(f"SELECT 1 FROM {_q(name)} WHERE {where}", key).fetchone():
        if mode == "refuse" and (name, key) in BOOTSTRAP_ROWS:
            sets = ", ".join(f"{_q(c)} = ?" for c in values)
            conn.execute(f"UPDATE {_q(name)} SET {sets} WHERE {where}", (*values.values(), *key))
            report.replaced.append(f"{name}:{':'.join(map(str, key))}")
        else:
            report.skipped[name] = report.skipped.get(name, 0) + 1
        return
    rowid = row.get(ROWID_KEY)
    if rowid is not None:
        if conn.execute(f"SELECT 1 FROM {_q(name)} WHERE rowid = ?", (rowid,)).fetchone():
            report.rowids_renumbered[name] = report.rowids_renumbered.get(name, 0) + 1
        else:
            values = {"rowid": rowid, **values}
    columns = ", ".join(c if c == "rowid" else _q(c) for c in values)
    marks = ", ".join("?" for _ in values)
    try:
        conn.execute(f"INSERT INTO {_q(name)} ({columns}) VALUES ({marks})", tuple(values.values()))
    except sqlite3.IntegrityError as exc:
        if "UNIQUE" in str(exc):
            raise ConflictError(
                f"line {number}: {name} row conflicts with an existing one ({exc})",
                line_number=number,
                table=name,
            ) from exc
        raise ImportFormatError(number, f"{name} row rejected by the database: {exc}") from exc
    report.inserted[name] = report.inserted.get(name, 0) + 1


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


# --- PostgreSQL import -----------------------------------------------------------------------


@cache
def _pg_types(name: str) -> dict[str, str]:
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    return {c.name: c.type.compile(dialect=dialect) for c in metadata.tables[name].c}


_PG_ACCEPTS: dict[str, Callable[[Any], bool]] = {
    "BIGINT": _is_int,
    "DOUBLE PRECISION": lambda v: _is_int(v) or isinstance(v, float),
    "TEXT": lambda v: isinstance(v, str),
}


def _check_pg_row(number: int, name: str, row: dict[str, Any]) -> None:
    """Refuse what PostgreSQL would change or reject: NUL in text (its text cannot hold
    U+0000), and values of another type than the column's (SQLite's dynamic typing lets a
    REAL sit in an INTEGER column; PostgreSQL would round it)."""
    types = _pg_types(name)
    for column, value in row.items():
        if column == ROWID_KEY or value is None:
            continue
        if isinstance(value, str) and "\x00" in value:
            raise ImportFormatError(
                number,
                f"{name}.{column}: text with a NUL character (U+0000) cannot be stored "
                "in PostgreSQL",
            )
        accepts = _PG_ACCEPTS.get(types[column])
        if accepts is not None and not accepts(value):
            raise ImportFormatError(
                number,
                f"{name}.{column}: a {type(value).__name__} cannot be stored unchanged in a "
                f"PostgreSQL {types[column]} column",
            )


def _load_pg(
    url: URL,
    reopen: Reopen,
    known: dict[str, Table],
    mode: Mode,
    totals: dict[str, int],
    report: ImportReport,
    progress: Progress | None,
) -> None:
    """Insert in one transaction; PostgreSQL checks foreign keys row by row (the file lists
    parents first), so a failure anywhere rolls back everything."""
    with _pg_connection(url, create=True) as conn, reopen() as fh, conn.transaction():
        # Block other writers (not readers) until the commit, as SQLite's BEGIN IMMEDIATE does.
        names = ", ".join(_q(t.name) for t in export_tables())
        conn.execute(f"LOCK TABLE {names} IN EXCLUSIVE MODE")
        if mode == "refuse":
            _refuse_unless_empty(conn, "%s")
        reader = _Reader(fh, known)
        done: dict[str, int] = {}
        for number, name, row in reader:
            _insert_row_pg(conn, number, name, row, mode, report)
            done[name] = done.get(name, 0) + 1
            n, total = done[name], totals.get(name, 0)
            if progress is not None and (n % PROGRESS_EVERY == 0 or n == total):
                progress(name, n, total)
        assert reader.header is not None  # validated above
        for table in _autoincrement_tables():
            seq, high = _pg_high_water(conn, table)
            high = max(high, reader.header.sequences.get(table.name, 0))
            if high:  # the next id drawn is above every id the file held or had handed out
                conn.execute("SELECT setval(%s::regclass, %s)", (seq, high))
        for name in reader.header.tables:
            if progress is not None and not totals.get(name):
                progress(name, 0, 0)


def _insert_row_pg(
    conn: psycopg.Connection[tuple[Any, ...]],
    number: int,
    name: str,
    row: dict[str, Any],
    mode: Mode,
    report: ImportReport,
) -> None:
    import psycopg

    table = metadata.tables[name]
    pk = [c.name for c in table.primary_key.columns]
    key = tuple(row[c] for c in pk)
    values = {k: v for k, v in row.items() if k != ROWID_KEY}  # PostgreSQL has no rowid
    columns = ", ".join(_q(c) for c in values)
    marks = ", ".join("%s" for _ in values)
    try:
        cursor = conn.execute(
            f"INSERT INTO {_q(name)} ({columns}) VALUES ({marks}) "
            f"ON CONFLICT ({', '.join(_q(c) for c in pk)}) DO NOTHING",
            tuple(values.values()),
        )
    except psycopg.errors.UniqueViolation as exc:
        raise ConflictError(
            f"line {number}: {name} row conflicts with an existing one ({exc})",
            line_number=number,
            table=name,
        ) from exc
    except psycopg.errors.ForeignKeyViolation as exc:
        parent = exc.diag.message_detail or str(exc)
        raise ImportForeignKeyError([(name, key[0] if len(key) == 1 else key, parent)]) from exc
    except (psycopg.errors.IntegrityError, psycopg.errors.DataError) as exc:
        raise ImportFormatError(number, f"{name} row rejected by the database: {exc}") from exc
    if cursor.rowcount == 1:
        report.inserted[name] = report.inserted.get(name, 0) + 1
    elif mode == "refuse" and (name, key) in BOOTSTRAP_ROWS:
        sets = ", ".join(f"{_q(c)} = %s" for c in values)
        where = " AND ".join(f"{_q(c)} = %s" for c in pk)
        conn.execute(f"UPDATE {_q(name)} SET {sets} WHERE {where}", (*values.values(), *key))
        report.replaced.append(f"{name}:{':'.join(map(str, key))}")
    else:
        report.skipped[name] = report.skipped.get(name, 0) + 1


_CONTENTLESS = re.compile(r"\bcontent\s*=\s*(''|\"\")", re.I)


def _rebuild_fts(conn: sqlite3.Connection) -> list[str]:
    """``'rebuild'`` every FTS5 virtual table that has content to rebuild from."""
    rebuilt = []
    for name in fts5_tables(conn):
        sql = conn.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()[0]
        if _CONTENTLESS.search(sql):
            continue
        conn.execute(f"INSERT INTO {_q(name)}({_q(name)}) VALUES ('rebuild')")
        rebuilt.append(name)
    return rebuilt


__all__ = [
    "ExportReport",
    "ImportForeignKeyError",
    "ImportFormatError",
    "ImportReport",
    "export",
    "export_tables",
    "import_",
]
