"""Reading stored rows value by value, so that one row another program wrote badly is reported
instead of breaking the query that met it (the ORM would raise mid-iteration)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import FromClause, Label, type_coerce
from sqlalchemy.types import NullType

from philont.domain.timepolicy import stored_instant
from philont.errors import InvalidInputError

__all__ = [
    "SKIPPED_SHOWN",
    "Row",
    "optional_instant",
    "optional_text",
    "raw_columns",
    "row_id",
    "text_value",
]

Row = Mapping[Any, Any]
"""A row as the database handed it over (``Row._mapping``)."""

SKIPPED_SHOWN = 20
"""How many skipped rows a listing names (all of them are counted)."""


def raw_columns(table: FromClause) -> list[Label[Any]]:
    """Every column of ``table`` as the database hands it over (no type conversion), labelled
    with its attribute key."""
    return [type_coerce(col, NullType()).label(col.key) for col in table.c]


def text_value(row: Row, name: str) -> str:
    value = row[name]
    if not isinstance(value, str):
        raise InvalidInputError(f"{name} is not text ({type(value).__name__})")
    return value


def row_id(row: Row) -> str | None:
    """The row's id when it is text (to name an unreadable row), else None."""
    value = row.get("id")
    return value if isinstance(value, str) else None


def optional_text(row: Row, name: str) -> str | None:
    return None if row[name] is None else text_value(row, name)


def optional_instant(row: Row, name: str) -> datetime | None:
    return None if row[name] is None else stored_instant(row[name], name)
