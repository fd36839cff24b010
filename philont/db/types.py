"""Column types that keep Philont's storage (epoch-ms integers, compact JSON text, 0/1 flags)
while the Python side sees aware datetimes, parsed JSON, booleans and enums."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any, TypeVar, cast

from sqlalchemy import (
    REAL,
    BigInteger,
    Column,
    ColumnElement,
    Dialect,
    Float,
    Integer,
    LargeBinary,
    Table,
    Text,
    case,
)
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION
from sqlalchemy.sql.elements import SQLCoreOperations
from sqlalchemy.types import TypeDecorator, TypeEngine

from philont.db import stored_values
from philont.db.stored_values import EPOCH, Kind, Kinds
from philont.domain import json_values
from philont.domain.timepolicy import MAX_EPOCH_MS, MIN_EPOCH_MS
from philont.errors import InvalidInputError

Int: TypeEngine[int] = Integer().with_variant(BigInteger(), "postgresql")
"""Philont's INTEGER: SQLite integers are 64-bit, so PostgreSQL gets BIGINT (epoch-ms fits)."""


def _unsigned_zero(value: Any) -> Any:
    return 0.0 if isinstance(value, float) and value == 0.0 else value


class _Double(TypeDecorator[float]):
    """PostgreSQL's DOUBLE PRECISION storing and reading -0.0 as 0.0, as an SQLite REAL column
    does (it keeps no sign of zero): the same write reads back the same on both backends."""

    impl = DOUBLE_PRECISION
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> Any:
        return _unsigned_zero(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return _unsigned_zero(value)  # a host's -0.0 reads as SQLite would hold it


Real: TypeEngine[float] = REAL().with_variant(_Double(), "postgresql")
"""Philont's REAL: SQLite reals are 8-byte doubles, so PostgreSQL gets DOUBLE PRECISION
(which stores -0.0 as 0.0, as SQLite does)."""


COUNT: dict[str, Any] = {"least": 0}
"""``info`` of a count column: a stored negative count reads as 0 where a rule needs a count."""
OBJECT: dict[str, Any] = {"shape": dict}
"""``info`` of a JSON column whose readers need an object: anything else reads as ``{}``."""


def choices(values: Iterable[str], fallback: str) -> dict[str, Any]:
    """``info`` of an enum-like TEXT column: a value not among ``values`` reads as
    ``fallback`` where a record needs one of them."""
    return {"choices": tuple(values), "fallback": fallback}


class _Int64Decorator:
    """Mixin: the decorated INTEGER is BIGINT on PostgreSQL (see :data:`Int`)."""

    def load_dialect_impl(self, dialect: Dialect) -> Any:
        return dialect.type_descriptor(BigInteger() if dialect.name == "postgresql" else Integer())


def to_epoch_ms(value: datetime) -> int:
    """An aware datetime as integer milliseconds since the epoch (naive values are refused)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError(f"naive datetime {value.isoformat()} has no time zone")
    delta = value - EPOCH
    return delta.days * 86_400_000 + delta.seconds * 1000 + delta.microseconds // 1000


def from_epoch_ms(value: int) -> datetime:
    """Stored epoch milliseconds as an aware UTC datetime (exact, no float rounding). Never
    raises: a value outside the supported times is clamped, text reads as the latest time
    (:func:`philont.db.stored_values.epoch_ms`)."""
    # Positional (days, seconds, microseconds, milliseconds): the keyword form is slower. The
    # range check is the whole cost of the normal case (A/B: as fast as ``int(value)`` was).
    try:
        if MIN_EPOCH_MS <= value <= MAX_EPOCH_MS:
            return EPOCH + timedelta(0, 0, 0, value)
    except TypeError:  # text or a blob
        pass
    return stored_values.instant(value)


# One encoder for every call: json.dumps with options builds a new one each time.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_compact(value: Any, name: str = "value") -> str:
    """JSON exactly as JavaScript's ``JSON.stringify`` writes it: compact, non-ASCII kept. What
    cannot be stored is refused naming where in the argument ``name`` it is (``not valid
    Unicode text in value.a[0] (a lone surrogate at position 0)``)."""
    try:
        text = _COMPACT.encode(value)
        text.encode("utf-8")  # lone surrogates cannot be stored
    except (TypeError, ValueError, RecursionError) as exc:
        found = json_values.problem(value, name)  # "<where in name>: <why>"
        raise InvalidInputError(found or f"{name}: not JSON ({exc})", argument=name) from exc
    return text


class _Stored:
    """Mixin: a column type whose reads are total. ``where`` is ``(table, column)``, set on
    each column's own type instance once the models are defined (:func:`locate`), so that a
    value read leniently is reported with its place."""

    where: tuple[str, str] = ("?", "?")

    def _lenient(self, stored: Any, read: Any) -> Any:
        stored_values.report(*self.where, None, stored, read)
        return read


class EpochMillis(_Stored, _Int64Decorator, TypeDecorator[datetime]):
    """INTEGER epoch milliseconds on disk, timezone-aware ``datetime`` in Python. A value
    outside the supported times is clamped on read, text reads as the latest time
    (:mod:`philont.db.stored_values`)."""

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value: datetime | int | None, dialect: Dialect) -> int | None:
        if value is None:
            return None
        if isinstance(value, datetime):
            return to_epoch_ms(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise InvalidInputError(f"expected a datetime, got {type(value).__name__}")

    def process_result_value(self, value: int | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        try:
            if MIN_EPOCH_MS <= value <= MAX_EPOCH_MS:
                return EPOCH + timedelta(0, 0, 0, value)
        except TypeError:  # text or a blob
            return self._lenient(value, stored_values.instant(value))  # type: ignore[no-any-return]
        return stored_values.instant(value)


class JsonText(_Stored, TypeDecorator[Any]):
    """TEXT holding compact JSON; Python sees the parsed value (text that is not JSON: the
    text itself, see :func:`philont.db.stored_values.json_value`)."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else dumps_compact(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        read, lenient = stored_values.json_read(value)
        return self._lenient(value, read) if lenient else read


class IntBool(_Stored, _Int64Decorator, TypeDecorator[bool]):
    """INTEGER 0/1 on disk, ``bool`` in Python (a number is true unless 0; text is false)."""

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value: bool | None, dialect: Dialect) -> int | None:
        return None if value is None else int(bool(value))

    def process_result_value(self, value: int | None, dialect: Dialect) -> bool | None:
        if value is None:
            return None
        if value.__class__ is int:
            return value != 0
        if stored_values.is_number(value):
            return bool(value)
        return self._lenient(value, False)  # type: ignore[no-any-return]


E = TypeVar("E", bound=enum.StrEnum)


class StrEnumText(_Stored, TypeDecorator[E]):
    """TEXT holding an enum's value. Unknown stored values read as ``fallback`` when one is
    given (Philont reads unknown maturities as 'draft'), else as the stored text."""

    impl = Text
    cache_ok = True

    def __init__(self, enum_cls: type[E], fallback: E | None = None) -> None:
        super().__init__()
        self.enum_cls = enum_cls
        self.fallback = fallback

    def process_bind_param(self, value: E | str | None, dialect: Dialect) -> str | None:
        if value is None:
            return None
        try:
            return self.enum_cls(value).value
        except ValueError as exc:
            allowed = ", ".join(m.value for m in self.enum_cls)
            raise InvalidInputError(f"{value!r} is not one of: {allowed}") from exc

    def process_result_value(self, value: str | None, dialect: Dialect) -> E | None:
        if value is None:
            return None
        try:
            return self.enum_cls(value)
        except ValueError:
            # without a fallback: the stored text (a str, as the members are)
            read = stored_values.member(self.enum_cls, value, self.fallback)
            return cast(E, self._lenient(value, read))


def bumped(counter: SQLCoreOperations[Any]) -> ColumnElement[Any]:
    """``counter + 1`` in SQL, except at the 64-bit end, where it stays (PostgreSQL would
    refuse the statement: bigint out of range; SQLite would turn it into a REAL)."""
    return case((counter == stored_values.INT64_MAX, counter), else_=counter + 1)


# --- where each column is, and what clean() needs of it ------------------------------------


def locate(tables: Iterable[Table]) -> None:
    """Tell each column's own type instance where it is (for reports of lenient reads)."""
    for table in tables:
        for column in table.c:
            if isinstance(column.type, _Stored):
                column.type.where = (table.name, column.name)


def _default(column: Column[Any], kind: str) -> Any:
    default = column.server_default
    arg = getattr(default, "arg", None)
    text = getattr(arg, "text", arg)
    if isinstance(text, str):
        try:
            value = json.loads(text.strip("'"))
        except ValueError:
            value = None
        if kind == "int" and isinstance(value, int):
            return value
        if kind == "real" and stored_values.is_number(value):
            return float(value)
    if column.nullable:
        return None
    return 0 if kind == "int" else 0.0 if kind == "real" else None


def column_kind(column: Column[Any]) -> Kind:
    """What a column holds, for :func:`philont.db.stored_values.clean`."""
    t, name = column.type, column.table.name
    if isinstance(t, EpochMillis):
        return Kind(name, column.name, "epoch", None)
    if isinstance(t, JsonText):
        return Kind(name, column.name, "json", None, shape=column.info.get("shape"))
    if isinstance(t, StrEnumText):
        return Kind(name, column.name, "enum", None, t.enum_cls, t.fallback)
    if isinstance(t, IntBool):
        return Kind(name, column.name, "flag", None)
    if isinstance(t, Float):
        return Kind(name, column.name, "real", _default(column, "real"))
    if isinstance(t, Integer):
        least = column.info.get("least")
        return Kind(name, column.name, "int", _default(column, "int"), least=least)
    if isinstance(t, LargeBinary):
        return Kind(name, column.name, "blob", None)
    choices = column.info.get("choices")
    return Kind(
        name, column.name, "text", None, choices=choices, text_fallback=column.info.get("fallback")
    )


def kinds_of(*models: type[Any], renames: dict[str, str] | None = None) -> Kinds:
    """Each column of ``models`` (mapped classes) by attribute key and by column name (the
    first model wins a shared name); ``renames`` adds fields under other names
    (``{"steps": "steps_json"}``)."""
    kinds: Kinds = {}
    for model in reversed(models):
        for attr in model.__mapper__.column_attrs:
            column = attr.columns[0]
            kind = column_kind(column)
            kinds[attr.key] = kinds[column.name] = kind
    for field, name in (renames or {}).items():
        kinds[field] = kinds[name]
    return kinds
