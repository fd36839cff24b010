"""Stored-value types: what a column may hold on disk where no input type describes it yet.

Services write datetimes, parsed JSON and booleans through the column types of
``philont.db.types``; an import writes the raw stored values (epoch ms, JSON text, 0/1). These
types accept exactly the raw values those column types produce, so a row an import stores reads
back like a row a service stored. Times defer to :data:`philont.schemas.inputs.AwareTime`: a
stored time is valid when the datetime it reads back as would be a valid input.
"""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Final

from pydantic import AfterValidator, Field, PlainValidator, StrictInt, StrictStr

from philont.domain.timepolicy import MAX_EPOCH_MS, MIN_EPOCH_MS
from philont.errors import InvalidInputError
from philont.schemas import inputs

__all__ = [
    "EpochMs",
    "Flag",
    "Int64",
    "JsonList",
    "JsonText",
    "Real",
    "StoredFactKey",
    "StoredNamespace",
    "StoredText",
    "json_value",
]

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


def _epoch_ms(value: int) -> int:
    """Epoch milliseconds whose datetime :data:`inputs.AwareTime` accepts. A read clamps a time
    outside that range (:mod:`philont.db.stored_values`); an import refuses it, so what it
    writes is what a service could have written (checked here, not left to the clamp)."""
    from philont.db.types import from_epoch_ms  # SQLAlchemy's module: loaded when used

    if not MIN_EPOCH_MS <= value <= MAX_EPOCH_MS:
        raise ValueError(f"{value} ms is outside the supported times")
    try:
        inputs.check(inputs.AwareTime, from_epoch_ms(value), "time")
    except InvalidInputError as exc:
        raise ValueError(f"{value} ms: {exc.message}") from exc
    return value


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (JSON has no NaN or Infinity)")


def json_error(exc: json.JSONDecodeError) -> str:
    """Where and why text is not JSON, in one phrase: ``Expecting value at column 7``. Some of
    the parser's own phrases already end in "at" ("Unterminated string starting at")."""
    return f"{exc.msg.removesuffix(' at')} at column {exc.colno}"


def json_value(text: str) -> Any:
    """The value of stored JSON text, parsed as every read parses it, and refused when it is
    not strict JSON or could not be written back (NaN, lone surrogates)."""
    from philont.db.types import dumps_compact  # SQLAlchemy's module: loaded when used

    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON text ({json_error(exc)})") from exc
    except RecursionError as exc:
        raise ValueError("JSON nested too deeply") from exc
    try:
        dumps_compact(value)
    except InvalidInputError as exc:
        raise ValueError(exc.message) from exc
    return value


def _json_text(text: str) -> str:
    json_value(text)
    return text


def _json_list(text: str) -> str:
    value = json_value(text)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("must be a JSON list of strings")
    return text


def _finite(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("must be a number, not true/false")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("must be a finite number")
    if not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {type(value).__name__}")
    if isinstance(value, int) and abs(value) > EXACT_WHOLE:
        raise ValueError(
            "a whole number beyond 2**53 in a REAL column: a double rounds it (SQLite cannot "
            "even take one beyond 64 bits); write it as a number with a fraction or exponent "
            "(1e30), which is stored as it is read"
        )
    return value


EXACT_WHOLE = 2**53
"""The largest whole number every smaller one of which a double (a REAL column) holds as it
is: past it a whole number in a REAL column is refused, not rounded by the database."""


EpochMs = Annotated[StrictInt, AfterValidator(_epoch_ms)]
"""A time as stored: integer epoch milliseconds of a time ``AwareTime`` accepts."""
Int64 = Annotated[StrictInt, Field(ge=INT64_MIN, le=INT64_MAX)]
"""An INTEGER column: a whole number that fits SQLite's 64 bits (and PostgreSQL's BIGINT)."""
Flag = Annotated[StrictInt, Field(ge=0, le=1)]
"""A 0/1 flag (a boolean column)."""
Real = Annotated[float, PlainValidator(_finite)]
"""A REAL column: a finite number (whole numbers too: SQLite keeps 1.0 as 1), one the column
holds as it is: a whole number up to 2**53 (:data:`EXACT_WHOLE`; 2**53 + 1 a double rounds)."""
StoredText = Annotated[StrictStr, inputs.UNICODE]
"""A TEXT column: valid Unicode text."""
JsonText = Annotated[StrictStr, AfterValidator(_json_text), inputs.UNICODE]
"""A JSON column: strict JSON text (what ``JSON.stringify`` and ``dumps_compact`` write)."""
JsonList = Annotated[StrictStr, AfterValidator(_json_list), inputs.UNICODE]
"""A JSON column whose readers expect a list of strings (keywords, recipe steps, tool policy)."""


StoredNamespace = Annotated[
    StrictStr,
    Field(min_length=1, max_length=inputs.MAX_NAMESPACE_CHARS),
    AfterValidator(inputs.held_name),
]
"""A fact row's namespace as imported (lenient: :func:`philont.schemas.inputs.held_name`)."""
StoredFactKey = Annotated[
    StrictStr, Field(min_length=1, max_length=64), AfterValidator(inputs.held_name)
]
"""A fact row's key as imported (lenient: :func:`philont.schemas.inputs.held_name`)."""
