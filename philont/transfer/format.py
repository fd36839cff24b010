"""The export format: versioned JSON lines of raw stored values, what is exported, reports."""

from __future__ import annotations

import base64
import json
import math
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from sqlalchemy import Integer, Table
from sqlalchemy.engine import URL

from philont import charter, migrate
from philont.db.bootstrap import GLOBAL_SESSION_ID
from philont.db.engine import resolve_url, sqlite_path, sqlite_read_only_engine
from philont.db.fts import FTS_INDEXES
from philont.db.retry import refusal
from philont.db.schema import metadata
from philont.errors import ConflictError, InvalidInputError, StorageError
from philont.log import get_logger

if TYPE_CHECKING:
    pass


log = get_logger(__name__)


FORMAT = "philont-export"


FORMAT_VERSION = 1


ROWID_KEY = "_rowid"  # the implicit rowid, kept where an external-content FTS index keys on it


B64_KEY = "$b64"


REAL_KEY = "$real"
"""A REAL that JSON has no number for, as ``{"$real": "Infinity"}`` (or ``"-Infinity"``,
``"NaN"``): SQLite holds infinities (``9e999`` is stored so, in any numeric column),
PostgreSQL NaN too; :func:`dumps_line` writes no bare ``Infinity`` token, which is not JSON."""

NON_FINITE: dict[str, float] = {"Infinity": math.inf, "-Infinity": -math.inf, "NaN": math.nan}


PROGRESS_EVERY = 1000


MAX_LINE_CHARS = 1 << 28
"""The longest line of an export file, in characters (256 Mi): room for every row a service
writes (the longest free text, 16 Mi characters, is at most 96 Mi once escaped), and what an
import reads of a line before it refuses it, so a file that is not ours (a 1 GB line, a binary
without line breaks) is refused without being read into memory whole. An export refuses a row
that would not fit, naming it, rather than write a file no import reads."""


CHECKING = "(checking)"
"""The pseudo-table an import reports the progress of its first pass under (every line
checked, nothing written yet), in bytes of the file: ``progress(CHECKING, done, total)``."""


INDEXING = "(indexing)"
"""The pseudo-table an SQLite import reports rebuilding its full-text indexes under, after the
rows: ``progress(INDEXING, rebuilt, of)``."""


DbTarget = str | Path | URL | None


Progress = Callable[[str, int, int], None]


def reported(
    rows: Iterable[tuple[int, str, dict[str, Any]]],
    totals: dict[str, int],
    progress: Progress | None,
) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """An import's ``(line number, table, row)`` as they come, with ``progress(table, n, total)``
    once a row is handled: every ``PROGRESS_EVERY`` rows of a table and at its last."""
    done: dict[str, int] = {}
    for number, name, row in rows:
        yield number, name, row
        done[name] = done.get(name, 0) + 1
        n, total = done[name], totals.get(name, 0)
        if progress is not None and (n % PROGRESS_EVERY == 0 or n == total):
            progress(name, n, total)


def report_empty(tables: Iterable[str], totals: dict[str, int], progress: Progress | None) -> None:
    """``progress(table, 0, 0)`` for each table of the file that has no rows."""
    for name in tables:
        if progress is not None and not totals.get(name):
            progress(name, 0, 0)


Mode = Literal["refuse", "merge"]


class ImportFormatError(InvalidInputError):
    """A line of an import file is malformed; nothing was imported."""

    code = "import_format"

    def __init__(self, line_number: int, reason: str) -> None:
        super().__init__(f"line {line_number}: {reason}", line_number=line_number, reason=reason)
        self.line_number = line_number
        self.reason = reason


def _refused(exc: BaseException) -> str:
    return refusal(exc) or type(exc).__name__


def conflicting_row(number: int, table: str, exc: BaseException) -> ConflictError:
    """The file row of line ``number`` collides with a row of the target on a unique key the
    database enforces (``exc``, its refusal): named by the constraint, never by the database's
    message, which holds the row's values (PostgreSQL's ``Key (name)=(...) already exists``)."""
    return ConflictError(
        f"line {number}: {table} row conflicts with an existing one ({_refused(exc)})",
        line_number=number,
        table=table,
    )


def rejected_row(number: int, table: str, exc: BaseException) -> ImportFormatError:
    """The file row of line ``number`` refused by the database (``exc``) after the gate let it
    pass: named by the kind of constraint or value refused, never by the database's message
    (PostgreSQL's ``Failing row contains (...)`` is the row)."""
    return ImportFormatError(number, f"{table} row rejected by the database: {_refused(exc)}")


class ImportForeignKeyError(InvalidInputError):
    """The imported rows reference rows that exist neither in the file nor in the target;
    nothing was imported. ``line_number`` is the line of the first such row."""

    code = "import_foreign_key"

    def __init__(
        self, violations: list[tuple[Any, ...]], *, lines: list[int | None] | None = None
    ) -> None:
        found = lines if lines is not None else [None] * len(violations)
        shown = ", ".join(
            ("" if n is None else f"line {n}: ") + f"{t} {key} -> {parent}"
            for (t, key, parent, *_), n in zip(violations[:5], found[:5], strict=False)
        )
        first = next((n for n in found if n is not None), None)
        where = "" if first is None else f"line {first}: "
        super().__init__(
            f"{where}{len(violations)} row(s) refer to rows that are neither in the file nor in "
            f"the database ({shown}); nothing imported",
            violations=violations,
            line_number=first,
        )
        self.violations = violations
        self.lines = found
        self.line_number = first


class ExportRowTooLongError(StorageError):
    """A row whose export line would exceed :data:`MAX_LINE_CHARS`: no import could read the
    file, so none is written."""

    code = "export_row_too_long"

    def __init__(self, table: str, key: dict[str, Any], length: int) -> None:
        super().__init__(
            f"{table} row {key!r} is {length:,} characters as an export line, more than the "
            f"{MAX_LINE_CHARS:,} an import reads; nothing exported",
            table=table,
            key=key,
            length=length,
        )


class ExportTextNotUtf8Error(StorageError):
    """A stored text value that is not valid UTF-8 (written by another program): an export
    carries values as they are stored and cannot carry it, so none is written."""

    code = "export_text_not_utf8"

    def __init__(self, table: str, key: dict[str, Any], column: str) -> None:
        super().__init__(
            f"{table} row {key!r}: {column} holds text that is not valid UTF-8 (written by "
            "another program); an export carries text as it is stored, so nothing was exported: "
            "correct or remove that value first",
            table=table,
            key=key,
            column=column,
        )


@dataclass(frozen=True)
class ExportReport:
    """Rows written per table (in file order) and the schema they came from."""

    rows: dict[str, int]
    schema_revision: str
    path: Path | None = None


Outcome = Literal["inserted", "replaced", "skipped", "kept", "not_imported"]
"""What an import did with one row of the file (:func:`philont.transfer.merge.place_row`):

* ``inserted``: added to the target;
* ``replaced``: a bootstrap row (the 'global' session, the root pursuit: rows every new
  database is created with) that the file's version replaced (refuse mode);
* ``skipped``: the target already held the same row (every column equal);
* ``kept``: a bootstrap row the target holds in another version, which a merge keeps;
* ``not_imported``: a ``memory_meta`` row: it describes the source's schema, not memory, and
  the target keeps its own.

Every row of a successful import has exactly one; any other row fails the whole import."""

OUTCOMES: tuple[Outcome, ...] = ("inserted", "replaced", "skipped", "kept", "not_imported")

WARNINGS_KEPT = 20
"""How many warnings an :class:`ImportReport` keeps word for word (it counts all)."""


@dataclass
class ImportReport:
    """What an import did, per table: for every table, the rows of the file (``file_rows``)
    are ``inserted + replaced + skipped + kept + not_imported`` (see :data:`Outcome`); the
    target gained ``inserted`` rows."""

    file_rows: dict[str, int] = field(default_factory=dict)
    inserted: dict[str, int] = field(default_factory=dict)
    replaced: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)
    not_imported: dict[str, int] = field(default_factory=dict)
    replaced_ids: list[str] = field(default_factory=list)  # "table:id" of the replaced rows
    rowids_renumbered: dict[str, int] = field(default_factory=dict)  # ``_rowid`` was taken
    fts_rebuilt: list[str] = field(default_factory=list)
    upgrade: migrate.UpgradeReport | None = None
    warnings: list[str] = field(default_factory=list)
    """What was imported as it is but deserves a look (the first ``WARNINGS_KEPT``, each
    naming its line); ``warnings_total`` counts them all."""
    warnings_total: int = 0

    def warn(self, line: int, text: str) -> None:
        self.warnings_total += 1
        if len(self.warnings) < WARNINGS_KEPT:
            self.warnings.append(f"line {line}: {text}")

    def count(self, table: str, outcome: Outcome) -> None:
        counts: dict[str, int] = getattr(self, outcome)
        counts[table] = counts.get(table, 0) + 1

    def totals(self) -> dict[str, int]:
        """Rows of the file and of each outcome, over every table."""
        return {"file_rows": sum(self.file_rows.values())} | {
            o: sum(getattr(self, o).values()) for o in OUTCOMES
        }


def export_tables() -> list[Table]:
    """Every model table in dependency order (FTS tables and the version table are not models:
    triggers rebuild the one, the target's own migrations own the other; stored vectors are
    derived data, rebuilt on the target by ``philont embed``)."""
    return [
        t
        for t in metadata.sorted_tables
        if "_fts" not in t.name and not t.info.get("derived", False)
    ]


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


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# Characters some line readers take for a line break (``str.splitlines``, JavaScript before
# ES2019), which JSON leaves unescaped; the control characters among them JSON escapes itself.
_LINE_BREAKS = re.compile("[\x85\u2028\u2029]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def dumps_line(obj: Any) -> str:
    """``obj`` as one line of compact JSON: text as it is (UTF-8), but every character any
    line reader could split a line at escaped, so that every reader sees the same lines. A
    float JSON has no number for is a ValueError (:func:`encode_row` writes it)."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    if _LINE_BREAKS.search(text) is None:
        return text
    return _LINE_BREAKS.sub(_escaped, text)


def encode_value(value: Any) -> Any:
    """A stored value as the export writes it: a blob as ``{"$b64": ...}``, -0.0 as 0.0 (what
    an SQLite REAL column holds of it: PostgreSQL keeps the sign, and an export is the same
    whichever backend holds the memory)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return {B64_KEY: base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, float) and value == 0.0:
        return 0.0
    return value


def encode_row(row: dict[str, Any]) -> str:
    """A row's stored values (:func:`encode_value`) as one JSON line; an infinity or NaN as
    ``{"$real": ...}`` (:data:`REAL_KEY`), looked for only when JSON refused the row."""
    try:
        return dumps_line(row)
    except ValueError:  # allow_nan=False: a float that is not finite
        return dumps_line({name: _finite_or_tagged(value) for name, value in row.items()})


def _finite_or_tagged(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return {REAL_KEY: "NaN" if math.isnan(value) else ("-" if value < 0 else "") + "Infinity"}
    return value


def sqlite_file(db: DbTarget) -> tuple[URL, Path]:
    url = resolve_url(db)
    path = sqlite_path(url)
    if path is None:
        raise StorageError("export and import need an SQLite database file")
    return url, path


@contextmanager
def sqlite_connection(url: URL) -> Iterator[sqlite3.Connection]:
    """An export's plain sqlite3 connection, values exactly as stored: a read-only Store's
    (``mode=ro``, foreign keys as a Store has them: nothing is written), so a file this process
    may not write is read too, and nothing of the file changes (its journal mode neither). An
    import writes through :func:`philont.transfer.load.load_sqlite`'s own."""
    engine = sqlite_read_only_engine(url)
    try:
        raw = engine.raw_connection()
        try:
            yield cast(sqlite3.Connection, raw.driver_connection)
        finally:
            raw.close()
    finally:
        engine.dispose()


def without_rowid(conn: sqlite3.Connection, table: str) -> bool:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    sql = row.fetchone()
    return bool(sql and re.search(r"\bwithout\s+rowid\b", sql[0], re.I))


def autoincrement_tables() -> list[Table]:
    """Tables whose integer id AUTOINCREMENTs on SQLite (a BIGSERIAL sequence on PostgreSQL)."""
    return [t for t in export_tables() if t.dialect_options["sqlite"].get("autoincrement")]


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
