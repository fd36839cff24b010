"""What a read makes of a stored value our Python types cannot hold as it is.

SQLite keeps whatever it is given, and the original program (and hand edits, other tools) gave
it values a column's kind does not promise: JavaScript times far outside Python's calendar
(``8.64e15`` ms is year 275760), text in an INTEGER column, JSON that does not parse, an enum
text nobody knows. A read never fails on such a value and never rewrites it; it reads it as
follows (docs/stored-values.md has the table):

* **epoch ms** — a number outside the supported times (0001-01-02 .. 9999-12-30 UTC, see
  :mod:`philont.domain.timepolicy`) is clamped to the nearest end (a far-future ``valid_until``
  stays "forever", a far-past time "long ago"); text or a blob reads as the latest time, where
  SQLite itself orders it (after every number), so what Python compares agrees with what SQL
  filtered and sorted.
* **JSON text** that is not JSON (or holds a number past the largest float, ``1e999``, or
  nests deeper than :data:`MAX_JSON_DEPTH`) reads as the
  stored text itself, a JSON string; a lone surrogate (``"\\ud800"``, which JavaScript
  writes) as U+FFFD.
* **enum text** it does not know reads as the column's fallback (the original's own reading:
  a fact kind as ``state``, a skill kind as ``positive``, a grade as ``draft``, a role as
  ``user``), or as the stored text where the column has none.
* **0/1 flags**: a number is true unless 0; text or a blob is false (SQLite's own truth value).
* **integer, real and text columns** hand over what is stored; where that is not the column's
  kind (text in a count, a blob for a name) the reader building a row's record reads it again
  through :func:`clean`: a whole number (a fraction dropped, out of 64 bits clamped; a count
  below 0 as 0), a real number, or the column's default (its server default, else NULL, else
  zero) for text and blobs; a blob in a text column is decoded as UTF-8 (errors replaced); a
  JSON value of the wrong shape where a record needs an object as ``{}``; an enum-like text
  column's unknown value as its fallback.

Clamping is silent: it is how far-off times the original accepted are read. Every other lenient
reading is a WARNING ``stored_value.read_leniently`` naming the table, the column, the row id
(where the reader has the row) and the value, once per process per value.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
from collections.abc import Callable, Iterable
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Any, Final, NamedTuple, TypeVar, cast

from philont.db import fork
from philont.domain.graphemes import clip
from philont.domain.timepolicy import MAX_EPOCH_MS, MIN_EPOCH_MS
from philont.errors import InvalidInputError
from philont.log import get_logger

__all__ = [
    "CAREFUL",
    "EPOCH",
    "MAX_JSON_DEPTH",
    "UNREADABLE",
    "careful",
    "careful_read",
    "clean",
    "clean_named",
    "cleaned",
    "epoch_ms",
    "flag",
    "instant",
    "json_depth",
    "json_read",
    "json_text",
    "json_value",
    "member",
    "record",
    "register",
    "report",
    "rows_read",
    "too_deep",
    "whole",
]

log = get_logger(__name__)

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

UNREADABLE: Final = (
    TypeError,
    ValueError,
    ArithmeticError,
    AttributeError,
    RecursionError,
    InvalidInputError,
)
"""What a rule over stored values raises when a value is not of its column's kind (text in a
count, a blob for a name, a negative count, JSON nested too deeply): the reader then reads the
row again through :func:`clean`."""

# --- reporting ------------------------------------------------------------------------------

_REPORTED_MAX: Final = 1000
_reported: set[tuple[str, str, str, str]] = set()
_reported_lock = fork.Lock()


def _shown(value: Any) -> str:
    if isinstance(value, str | bytes):
        value = value[:100]  # a deeply nested JSON text is 100,000 characters
    text = repr(value)
    return clip(text, 80, mark="...")


def report(table: str, column: str, row_id: Any, stored: Any, read_as: Any) -> None:
    """Log (once per process per value) that ``table.column`` of row ``row_id`` (None: the
    reader does not know the row) held ``stored``, read as ``read_as``."""
    shown = _shown(stored)
    key = (table, column, repr(row_id), shown)
    with _reported_lock:
        if key in _reported:
            return
        if len(_reported) >= _REPORTED_MAX:
            _reported.clear()
        _reported.add(key)
    log.warning(
        "stored_value.read_leniently",
        table=table,
        column=column,
        id=row_id,
        stored=shown,
        read_as=_shown(read_as),
    )


# --- epoch milliseconds ---------------------------------------------------------------------


def epoch_ms(value: Any) -> int | float:
    """A stored epoch-ms value inside the supported times: a number clamped to the nearest end
    (a fraction of a millisecond is kept), text and blobs the latest time (see the module's
    docstring)."""
    if value.__class__ is int:
        return MIN_EPOCH_MS if value < MIN_EPOCH_MS else min(value, MAX_EPOCH_MS)
    if isinstance(value, Decimal):
        value = float(value)
    if is_number(value) and not math.isnan(value):
        return MIN_EPOCH_MS if value <= MIN_EPOCH_MS else min(value, MAX_EPOCH_MS)
    return MAX_EPOCH_MS  # text, a blob (SQLite cannot hold a NaN; a host's float might)


def instant(value: Any) -> datetime:
    """:func:`epoch_ms` as an aware UTC datetime (the slow path of ``from_epoch_ms``)."""
    return EPOCH + timedelta(0, 0, 0, epoch_ms(value))


def is_number(value: Any) -> bool:
    """A number as a database hands one over (PostgreSQL's sums are ``Decimal``)."""
    return isinstance(value, int | float | Decimal) and not isinstance(value, bool)


def real(value: Any, default: Any) -> Any:
    """A REAL column's value as a record holds it: a finite number as it is, an infinity as
    the largest float of its sign (what it ranks and means stays: a ``decay_tau_days`` of
    -infinity is still pinned; no JSON can write an infinity), anything else (text, a blob,
    PostgreSQL's NaN) as the column's ``default``, -0.0 (a host's on PostgreSQL) as 0.0, as
    an SQLite REAL holds it."""
    if not is_number(value) or math.isnan(value):
        return default
    if value == 0:
        return 0.0 if isinstance(value, float) else value
    return value if math.isfinite(value) else math.copysign(sys.float_info.max, value)


# --- JSON -----------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    """A JSON number as a float, refusing one past the largest float (``1e999``): Python reads
    it as infinity, which no JSON writer (nor a record's JSON, nor a prefix) can give back."""
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:40]} is past the largest JSON number a reader holds")
    return value


_DECODE = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite).decode
_SURROGATE = re.compile("[\ud800-\udfff]")


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def text_of(value: Any) -> str:
    """Stored text as text: a blob decoded as UTF-8 (errors replaced), a number written out."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


MAX_JSON_DEPTH: Final = 100
"""How deeply a JSON value may nest (arrays and objects, the outermost counts 1): a value
written is refused deeper (``philont.schemas.inputs.FactValue``), a stored one deeper reads
as its text (:func:`json_read`). Every record holding a value must stay printable, and
pydantic's serializer gives up at 255 levels (``model_dump`` raised for a fact nested that
deep: the tools' ``get_fact``/``list_facts`` of its namespace failed for good)."""


def json_depth(value: Any, limit: int = MAX_JSON_DEPTH) -> int:
    """How deeply ``value`` nests arrays and objects (a scalar: 0), counted up to ``limit +
    1`` (enough to tell that it is too deep); iterative, so any depth is measured."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            item = list(item.values())
        elif not isinstance(item, list | tuple):
            continue
        deepest = max(deepest, depth)
        if depth > limit:
            return depth
        todo.extend((child, depth + 1) for child in item if isinstance(child, list | dict))
    return deepest


_DEEP_CHARS: Final = 2 * MAX_JSON_DEPTH
"""JSON text no longer than this cannot nest deeper (each level takes two characters)."""


def _brackets(text: str) -> int:
    """Opening brackets in JSON text: a bound on how deeply a value in it nests."""
    return text.count("[") + text.count("{")


def _too_deep_text(text: str, value: Any) -> bool:
    """Whether ``value``, read from ``text``, nests deeper than :data:`MAX_JSON_DEPTH`."""
    return _brackets(text) > MAX_JSON_DEPTH and json_depth(value) > MAX_JSON_DEPTH


def too_deep(value: Any, text: str) -> str | None:
    """Why ``value`` (encoded as ``text``) may not be stored, nesting deeper than
    :data:`MAX_JSON_DEPTH`; None when it does not."""
    if _brackets(text) <= MAX_JSON_DEPTH or (depth := json_depth(value)) <= MAX_JSON_DEPTH:
        return None
    return (
        f"nests lists and objects {depth}+ levels deep; at most {MAX_JSON_DEPTH} "
        "(store a flatter value)"
    )


def json_read(stored: str | bytes) -> tuple[Any, bool]:
    """The value of a JSON column's stored text, and whether it was read leniently: text that
    is not strict JSON (JavaScript's ``JSON.parse`` refuses ``NaN`` too) or holds a number past
    the largest float (``1e999``, read as infinity, which JSON cannot write), nests deeper than
    :data:`MAX_JSON_DEPTH` or is a blob reads as the text itself; a lone surrogate reads as
    U+FFFD."""
    if stored.__class__ is str:
        try:
            value = _DECODE(stored)
        except (ValueError, RecursionError):
            return _without_surrogates(stored), True
        if len(stored) > _DEEP_CHARS and _too_deep_text(stored, value):
            return _without_surrogates(stored), True
        if "\\u" in stored and ("\\ud" in stored or "\\uD" in stored):
            scrubbed = _without_surrogates(value)
            return scrubbed, scrubbed != value
        return value, False
    return _without_surrogates(text_of(stored)), True


def json_value(stored: Any) -> Any:
    """:func:`json_read`'s value (``None`` stays ``None``)."""
    return None if stored is None else json_read(stored)[0]


def json_text(stored: Any) -> str:
    """Stored JSON text that parses: itself when it does, else the JSON text of what
    :func:`json_read` reads."""
    value, lenient = json_read(stored)
    if not lenient and stored.__class__ is str:
        return str(stored)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --- enums and flags ------------------------------------------------------------------------

E = TypeVar("E", bound=StrEnum)


def member(enum_cls: type[E], stored: Any, fallback: E | None) -> E | str:
    """The member whose value is ``stored``; an unknown value reads as ``fallback``, or as the
    stored text where there is none."""
    try:
        return enum_cls(stored)
    except ValueError:
        return fallback if fallback is not None else text_of(stored)


def flag(stored: Any) -> bool:
    """A 0/1 column's value: a number is true unless 0, anything else false (SQLite's truth)."""
    return bool(stored) if is_number(stored) else False


# --- rows -----------------------------------------------------------------------------------


class Kind(NamedTuple):
    """What :func:`clean` needs of a column: its table, name, kind and default."""

    table: str
    name: str
    kind: str  # epoch, json, enum, flag, int, real, text, blob
    default: Any
    enum_cls: type[StrEnum] | None = None
    fallback: StrEnum | None = None
    least: int | None = None  # a count's least value
    shape: type | None = None  # what a JSON column's readers need (dict, list)
    choices: tuple[str, ...] | None = None  # an enum-like text column's values (fallback too)
    text_fallback: str | None = None


Kinds = dict[str, Kind]
"""A row's fields (attribute keys or column names) -> what they hold."""


def whole(value: Any, default: Any = 0) -> Any:
    """A stored integer as a 64-bit whole number: a fraction dropped toward the past, a value
    beyond 64 bits clamped, anything else (text, a blob, NaN) ``default``."""
    if is_number(value):
        if not isinstance(value, int):
            if value != value:  # NaN
                return default
            if value in (math.inf, -math.inf):
                return INT64_MAX if value > 0 else INT64_MIN
            value = math.floor(value)
        return max(INT64_MIN, min(INT64_MAX, int(value)))
    return default


def _decoded(kind: Kind, value: Any, raw: bool) -> Any:
    """``value`` read as ``kind`` says; ``raw``: as stored (epoch ms, JSON text, 0/1), not yet
    through the column type (whose readings are already total, so they pass unchanged)."""
    k = kind.kind
    if k == "int":
        whole_ = value if value.__class__ is int else whole(value, kind.default)
        least = kind.least
        return least if least is not None and whole_ is not None and whole_ < least else whole_
    if k == "real":
        return real(value, kind.default)
    if k == "text":
        text = text_of(value)
        if kind.choices is not None and text not in kind.choices:
            return kind.text_fallback
        return text
    if k == "blob":
        return value if isinstance(value, bytes) else text_of(value).encode("utf-8")
    if k == "json" and kind.shape is not None:
        read = json_value(value) if raw else value
        if not isinstance(read, kind.shape):
            read = kind.shape()
        return json.dumps(read, ensure_ascii=False, separators=(",", ":")) if raw else read
    if not raw:
        return value
    if k == "epoch":
        return epoch_ms(value)
    if k == "json":
        return json_text(value)
    if k == "flag":
        return int(flag(value))
    if kind.enum_cls is not None:
        read = member(kind.enum_cls, value, kind.fallback)
        return read.value if isinstance(read, StrEnum) else read
    return value


R = TypeVar("R")


def clean(row: R, kinds: Kinds, *, raw: bool, fields: Iterable[str] | None = None) -> R | Any:
    """``row`` (a NamedTuple, a column row, an ORM object) with every value of ``fields``
    (default: each field ``kinds`` knows) read as its column's kind, each changed value
    reported; ``row`` itself when nothing changed, else a row of the same fields (a NamedTuple
    keeps its type)."""
    names = [f for f in (kinds if fields is None else fields) if f in kinds]
    changes: dict[str, Any] = {}
    for name in names:
        if not hasattr(row, name):
            continue
        value = getattr(row, name)
        if value is None and kinds[name].shape is None:
            continue
        read = _decoded(kinds[name], value, raw)
        if (read is not value and read != value) or type(read) is not type(value):
            changes[name] = read
    if not changes:
        return row
    row_id = _identity(row)
    for name, read in changes.items():
        kind = kinds[name]
        if kind.kind != "epoch" or not is_number(getattr(row, name)):
            report(kind.table, kind.name, row_id, getattr(row, name), read)
    return _with(row, changes)


def _identity(row: Any) -> Any:
    """What names a row in a report: its id, else its address (a fact's namespace and key,
    a skill's name) where a lean read selects no id."""
    for names in (("id",), ("namespace", "key"), ("name",)):
        if all(hasattr(row, n) for n in names):
            values = tuple(getattr(row, n) for n in names)
            return values[0] if len(values) == 1 else ".".join(map(str, values))
    return None


class _Row:
    """A row's fields as attributes (what an ORM object or a column row is read as)."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.__dict__.update(values)

    def __getitem__(self, name: str) -> Any:
        return self.__dict__[name]

    def get(self, name: str, default: Any = None) -> Any:
        return self.__dict__.get(name, default)


def _with(row: Any, changes: dict[str, Any]) -> Any:
    if isinstance(row, tuple) and hasattr(row, "_replace"):
        return row._replace(**changes)
    mapping = getattr(row, "_mapping", None)
    if mapping is not None:
        values = {str(k): v for k, v in mapping.items()}
    else:
        mapper = getattr(row, "__mapper__", None)
        keys = [a.key for a in mapper.column_attrs] if mapper is not None else list(vars(row))
        values = {k: getattr(row, k) for k in keys if not k.startswith("_")}
    return _Row({**values, **changes})


def cleaned(row: R, kinds: Kinds, *, raw: bool) -> R | Any:
    """Inside an ``except UNREADABLE`` block: ``row`` read through :func:`clean`, or the
    exception being handled raised again when cleaning changes nothing (then it is a bug, not
    a stored value)."""
    new = clean(row, kinds, raw=raw)
    if new is row:
        raise
    return new


T = TypeVar("T")
M = TypeVar("M")

# --- lean reads (the query modules' NamedTuples) ---------------------------------------------

CAREFUL: Final = "philont.stored_values.careful"
"""``Session.info`` key: while set, every row a query module reads is read through
:func:`clean` (see :func:`careful`)."""

_NAMED: dict[type, Kinds] = {}


def register(row_type: type, kinds: Kinds) -> None:
    """Declare what the fields of a query module's NamedTuple hold (for careful reads)."""
    _NAMED[row_type] = kinds


def clean_named(rows: list[R]) -> list[R]:
    """Each row read through :func:`clean` by its type's registered kinds."""
    kinds = _NAMED.get(type(rows[0])) if rows else None
    return rows if kinds is None else [clean(r, kinds, raw=True) for r in rows]


F = TypeVar("F", bound=Callable[..., Any])


def careful_read(method: F) -> F:
    """A service method that reads through :func:`careful` (its unit of work's session)."""

    @functools.wraps(method)
    def read(self: Any, *args: Any, **kwargs: Any) -> Any:
        return careful(self.session, lambda: method(self, *args, **kwargs))

    return cast(F, read)


def careful(session: Any, read: Callable[[], T]) -> T:
    """``read()`` (a hot path over the query modules: the prefix, search, the retriever);
    when a stored value of the wrong kind breaks one of its rules, ``read()`` again with every
    row read through :func:`clean` (costs nothing until a value breaks something). A failure
    that careful reading does not avoid is raised as it was."""
    try:
        return read()
    except UNREADABLE:
        if CAREFUL in session.info:
            raise
        session.info[CAREFUL] = True
        try:
            return read()
        finally:
            session.info.pop(CAREFUL, None)


def record(read_model: Callable[[Any], M], row: Any) -> M:
    """``read_model(row)`` of an ORM object (``SomeRecord.model_validate``), a value of the
    wrong kind read again as its column's kind (the kinds of the row's mapped class)."""
    try:
        return read_model(row)
    except UNREADABLE:
        from philont.db.types import kinds_of  # the slow path only (types imports us)

        return read_model(cleaned(row, kinds_of(type(row)), raw=False))


def rows_read(use: Callable[[list[R]], T], rows: list[R], kinds: Kinds, *, raw: bool) -> T:
    """``use(rows)`` (a rule over a whole listing: ranking, formatting); when a value of the
    wrong kind makes it fail, ``use`` of the rows read through :func:`clean` (what cleaning
    does not change is raised as it was)."""
    try:
        return use(rows)
    except UNREADABLE:
        fixed = [clean(r, kinds, raw=raw) for r in rows]
        if all(f is r for f, r in zip(fixed, rows, strict=True)):
            raise
        return use(fixed)
