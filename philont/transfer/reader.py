"""Reading an export file: each line parsed and checked, with its line number."""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import IO, Any, TextIO, cast

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql

from philont import filewrite
from philont.db.engine import missing_reason
from philont.db.schema import metadata
from philont.errors import FilePathError, InvalidInputError
from philont.log import get_logger
from philont.migrate.scripts import known_revisions
from philont.schemas.stored import INT64_MAX, INT64_MIN, json_error
from philont.transfer.format import (
    B64_KEY,
    FORMAT,
    FORMAT_VERSION,
    MAX_LINE_CHARS,
    NON_FINITE,
    REAL_KEY,
    ROWID_KEY,
    ROWID_TABLES,
    ImportFormatError,
    is_int,
)

log = get_logger(__name__)


@dataclass
class _Header:
    tables: list[str]
    sequences: dict[str, int]


def _known_revisions() -> set[str]:
    return set(known_revisions())


def _parse(number: int, line: str) -> dict[str, Any]:
    text = line.rstrip("\r\n")
    if not text.strip():
        raise ImportFormatError(number, "empty line")
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(number, f"invalid JSON ({json_error(exc)})") from exc
    except ValueError as exc:  # the only other: Python's limit of digits of an int
        raise ImportFormatError(
            number,
            f"a JSON number of more than {sys.get_int_max_str_digits():,} digits (no stored "
            "value has one)",
        ) from exc
    except RecursionError as exc:
        raise ImportFormatError(number, "JSON nested too deeply (no export line is)") from exc
    if not isinstance(obj, dict):
        raise ImportFormatError(number, f"expected a JSON object, found {type(obj).__name__}")
    return obj


def _read_header(number: int, obj: dict[str, Any], known: dict[str, Table]) -> _Header:
    if obj.get("format") != FORMAT:
        raise ImportFormatError(number, f"not a {FORMAT} file (format={obj.get('format')!r})")
    version = obj.get("format_version")
    if not is_int(version) or version != FORMAT_VERSION:
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
        name in tables and is_int(seq) and INT64_MIN <= seq <= INT64_MAX
        for name, seq in sequences.items()
    ):
        raise ImportFormatError(
            number, "header 'sequences' must map listed tables to 64-bit integers"
        )
    return _Header(tables=list(tables), sequences=dict(sequences))


_NON_FINITE = list(NON_FINITE)  # looked up by equality: a list or object there is no key


def _decode_value(number: int, table: str, column: str, value: Any) -> Any:
    if isinstance(value, float) and value == 0.0:
        return 0.0  # -0.0 (an older export's) as an SQLite REAL holds it, on both backends
    if value is None or isinstance(value, str | float) or is_int(value):
        return value
    if isinstance(value, dict) and set(value) == {REAL_KEY} and value[REAL_KEY] in _NON_FINITE:
        return NON_FINITE[value[REAL_KEY]]
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
    if ROWID_KEY in row and not is_int(row[ROWID_KEY]):
        raise ImportFormatError(number, f"{name}: {ROWID_KEY} must be an integer")
    values = {k: _decode_value(number, name, k, v) for k, v in row.items()}
    return name, values


class Reader:
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
            try:  # at most one character more than a line holds: never a whole 1 GB line
                line = self.lines.readline(MAX_LINE_CHARS + 1)
            except UnicodeDecodeError as exc:
                raise ImportFormatError(number + 1, f"not UTF-8 text ({exc.reason})") from exc
            if not line:
                break
            number += 1
            if len(line) > MAX_LINE_CHARS and not line.endswith("\n"):
                raise ImportFormatError(
                    number,
                    f"longer than {MAX_LINE_CHARS:,} characters, the longest line an export "
                    "holds: not an export file",
                )
            obj = _parse(number, line)
            if trailer_seen:
                raise ImportFormatError(number, "data after the trailer")
            if self.header is None:
                self.header = _read_header(number, obj, self.known)
                counts = dict.fromkeys(self.header.tables, 0)
                continue
            if "end" in obj:
                check_trailer(number, obj, counts)
                trailer_seen = True
                continue
            name, row = _read_row(number, obj, self.header, self.known)
            counts[name] += 1
            yield number, name, row
        if self.header is None:
            raise ImportFormatError(1, "empty file: no header")
        if not trailer_seen:
            raise ImportFormatError(number + 1, "no trailer: the file is truncated")


def check_trailer(number: int, obj: dict[str, Any], counts: dict[str, int]) -> None:
    rows = obj.get("rows")
    if set(obj) != {"end", "rows"} or obj["end"] is not True or not isinstance(rows, dict):
        raise ImportFormatError(number, 'malformed trailer (expected {"end":true,"rows":{...}})')
    if set(rows) != set(counts):
        raise ImportFormatError(number, "the trailer's tables differ from the header's")
    for name, n in counts.items():
        if rows[name] != n or not is_int(rows[name]):
            raise ImportFormatError(
                number, f"trailer says {rows[name]!r} rows for {name!r}, the file holds {n}"
            )


def source(src: object) -> Path | TextIO:
    """``src`` as :func:`philont.transfer.import_` reads it: a path (text or ``os.PathLike``,
    as :func:`philont.transfer.export` takes one) or a text stream (anything with ``read``);
    InvalidInputError naming ``src`` otherwise (a path given as text failed with
    AttributeError: 'str' object has no attribute 'seekable')."""
    if isinstance(src, str | os.PathLike):
        return Path(src)
    if callable(getattr(src, "read", None)):
        return cast(TextIO, src)
    raise InvalidInputError(
        f"src: must be a path or a text stream, got {type(src).__name__}", argument="src"
    )


CHECKPOINT_LINES = 1000
"""How many lines of an import file a later read of it goes at most before it compares what
it read with the check's (:class:`_Watched`)."""


class _Watched:
    """One read of an import file, whose lines are fingerprinted as they are read: the first
    read (the check) notes a digest every :data:`CHECKPOINT_LINES` lines and one at the end;
    every later read (the load, the lines an error names) compares its own as it reaches
    them, and raises :class:`ImportFormatError` at the first difference. The load reads the
    file again after the check, and another process may have written it meanwhile (appended
    to it, rewritten it in place): rows the check never saw would have gone in unchecked. So
    the load places at most a checkpoint's rows the check did not see, inside its transaction,
    before the change is found and everything rolled back. The rest of the file object (its
    ``fileno``, ``buffer``: the progress of the check) is the file's own."""

    def __init__(self, fh: IO[str], marks: list[bytes] | None) -> None:
        self._fh = fh
        self._marks = marks  # the check's digests; None while the check itself reads
        self.noted: list[bytes] = []
        self._hash = hashlib.blake2b(digest_size=16)
        self._lines = 0
        self.ended = False

    def readline(self, size: int = -1) -> str:
        line = self._fh.readline(size)
        if self.ended:
            return line
        if line:
            self._hash.update(line.encode("utf-8", "surrogatepass"))
            self._lines += 1
            if self._lines % CHECKPOINT_LINES == 0:
                self._mark()
        else:
            self.ended = True
            self._mark()
        return line

    def _mark(self) -> None:
        digest = self._hash.copy().digest()
        index = len(self.noted)
        self.noted.append(digest)
        if self._marks is None or (index < len(self._marks) and self._marks[index] == digest):
            return
        raise self._changed()

    def _changed(self) -> ImportFormatError:
        self.ended = True  # nothing more to compare: it differs
        return ImportFormatError(
            self._lines,
            "the file changed after it was checked (another process wrote it meanwhile); "
            "nothing was imported: import it again once it is complete",
        )

    def settle(self) -> None:
        """After a later read stopped early (an error): read on to its next checkpoint only,
        so a file changed meanwhile is said to be, rather than what its unchecked line caused
        (up to there, what was read is what the check read, and the error stands). Text that
        no longer decodes is such a change; a read that fails leaves the error as it is. It
        read on to the end: every failed load read the whole file once more, and a change
        past the next checkpoint (bytes no longer UTF-8) replaced the load's own error by an
        untyped UnicodeDecodeError."""
        checkpoint = len(self.noted) + 1
        try:
            while not self.ended and len(self.noted) < checkpoint:
                self.readline(MAX_LINE_CHARS + 1)
        except UnicodeDecodeError as exc:
            raise self._changed() from exc
        except OSError:
            return

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)


@contextmanager
def reopenable(src: Path | TextIO) -> Iterator[Callable[[], AbstractContextManager[IO[str]]]]:
    """Something to read the source twice from (validate, then insert): a path is opened once
    (a file renamed over it meanwhile is not read) and rewound, a seekable stream rewound,
    anything else spooled to a private temp file first. Every read after the first compares
    what it reads with what the first read (:class:`_Watched`)."""
    with ExitStack() as stack:
        stream: IO[str]
        if isinstance(src, Path):
            filewrite.regular(src)  # a directory, device, pipe or /proc file: never opened
            if not src.is_file():
                raise FilePathError(str(src), missing_reason(src))
            try:
                stream = stack.enter_context(src.open("r", encoding="utf-8", newline="\n"))
            except OSError as exc:
                raise FilePathError(str(src), exc.strerror or str(exc)) from exc
        elif not src.seekable():
            stream = stack.enter_context(
                tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n")
            )
            for chunk in iter(lambda: src.read(1 << 16), ""):
                stream.write(chunk)
            stream.seek(0)
        else:
            stream = src
        start = stream.tell()
        first: list[list[bytes]] = []  # the check's digests, once it has read the whole file

        @contextmanager
        def _rewound() -> Iterator[IO[str]]:
            stream.seek(start)
            read = _Watched(stream, first[0] if first else None)
            try:
                yield cast(IO[str], read)
            except Exception:
                if first:
                    read.settle()  # raises, from the error, when the file changed
                raise
            if not first and read.ended:
                first.append(read.noted)

        yield _rewound


Reopen = Callable[[], AbstractContextManager[IO[str]]]


def file_size(fh: IO[str]) -> int | None:
    """The size in bytes of the file behind ``fh``, or None (not a file)."""
    try:
        return os.fstat(fh.fileno()).st_size
    except (OSError, ValueError, io.UnsupportedOperation):
        return None


def file_position(fh: IO[str]) -> int | None:
    """How far into its file ``fh`` has read, in bytes (None: not a file); read ahead by the
    text layer's buffer, so a progress measure, not an offset to seek to."""
    buffer = getattr(fh, "buffer", None)
    try:
        return None if buffer is None else int(buffer.tell())
    except (OSError, ValueError):
        return None


@cache
def _pg_types(name: str) -> dict[str, str]:
    dialect = postgresql.dialect()  # type: ignore[no-untyped-call]
    return {c.name: c.type.compile(dialect=dialect) for c in metadata.tables[name].c}


_PG_ACCEPTS: dict[str, Callable[[Any], bool]] = {
    "BIGINT": is_int,
    "DOUBLE PRECISION": lambda v: is_int(v) or isinstance(v, float),
    "TEXT": lambda v: isinstance(v, str),
}


def check_pg_row(number: int, name: str, row: dict[str, Any]) -> None:
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


def find_lines(
    reopen: Reopen, known: dict[str, Table], wanted: list[tuple[str, tuple[Any, ...]]]
) -> list[int | None]:
    """The line of each ``(table, primary key)`` in the file (None when absent): read again
    only when an import failed, to name the lines of the rows at fault."""
    found: dict[tuple[str, tuple[Any, ...]], int] = {}
    targets = set(wanted)
    with reopen() as fh:
        for number, name, row in Reader(fh, known):
            pk = tuple(row.get(c.name) for c in known[name].primary_key.columns)
            if (name, pk) in targets and (name, pk) not in found:
                found[(name, pk)] = number
                if len(found) == len(targets):
                    break
    return [found.get(item) for item in wanted]
