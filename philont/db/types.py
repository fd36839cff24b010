"""Column types that keep Philont's storage (epoch-ms integers, compact JSON text, 0/1 flags)
while the Python side sees aware datetimes, parsed JSON, booleans and enums."""

from __future__ import annotations

import enum
import json
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import REAL, BigInteger, Dialect, Integer, Text
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION
from sqlalchemy.types import TypeDecorator, TypeEngine

from philont.errors import InvalidInputError

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

Int: TypeEngine[int] = Integer().with_variant(BigInteger(), "postgresql")
"""Philont's INTEGER: SQLite integers are 64-bit, so PostgreSQL gets BIGINT (epoch-ms fits)."""

Real: TypeEngine[float] = REAL().with_variant(DOUBLE_PRECISION(), "postgresql")
"""Philont's REAL: SQLite reals are 8-byte doubles, so PostgreSQL gets DOUBLE PRECISION."""


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
    """Integer epoch milliseconds as an aware UTC datetime (exact, no float rounding)."""
    # Positional (days, seconds, microseconds, milliseconds): the keyword form is slower.
    return EPOCH + timedelta(0, 0, 0, int(value))


# One encoder for every call: json.dumps with options builds a new one each time.
_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_compact(value: Any) -> str:
    """JSON exactly as JavaScript's ``JSON.stringify`` writes it: compact, non-ASCII kept."""
    try:
        text = _COMPACT.encode(value)
        text.encode("utf-8")  # lone surrogates cannot be stored
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(f"value is not JSON-serialisable: {exc}") from exc
    return text


class EpochMillis(_Int64Decorator, TypeDecorator[datetime]):
    """INTEGER epoch milliseconds on disk, timezone-aware ``datetime`` in Python."""

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
        return None if value is None else from_epoch_ms(value)


class JsonText(TypeDecorator[Any]):
    """TEXT holding compact JSON; Python sees the parsed value."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        return None if value is None else dumps_compact(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


class IntBool(_Int64Decorator, TypeDecorator[bool]):
    """INTEGER 0/1 on disk, ``bool`` in Python."""

    impl = Integer
    cache_ok = True

    def process_bind_param(self, value: bool | None, dialect: Dialect) -> int | None:
        return None if value is None else int(bool(value))

    def process_result_value(self, value: int | None, dialect: Dialect) -> bool | None:
        return None if value is None else bool(value)


E = TypeVar("E", bound=enum.StrEnum)


class StrEnumText(TypeDecorator[E]):
    """TEXT holding an enum's value. Unknown stored values read as ``fallback`` when one is
    given (Philont reads unknown maturities as 'draft'), else raise."""

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
            if self.fallback is not None:
                return self.fallback
            raise
