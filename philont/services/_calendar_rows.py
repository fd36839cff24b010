"""Calendar rows as read models, from raw stored values that another program may have written
badly (each unreadable value is named, never raised mid-query)."""

from __future__ import annotations

from pydantic import ValidationError

from philont.domain import series, timepolicy
from philont.errors import InvalidInputError, UnreadableRowError
from philont.schemas.calendar import CalendarEventRecord
from philont.services import _rows

__all__ = ["checked", "decode", "optional_pursuit"]


def decode(row: _rows.Row) -> CalendarEventRecord:
    """A stored row as a record, or ``InvalidInputError`` saying which value is unreadable."""
    try:
        starts_at = timepolicy.stored_instant(row["starts_at"], "starts_at")
        ends_at = _rows.optional_instant(row, "ends_at")
        zone = _rows.text_value(row, "timezone")
        return CalendarEventRecord(
            id=_rows.text_value(row, "id"),
            title=_rows.text_value(row, "title"),
            starts_at=starts_at,
            ends_at=ends_at,
            rrule=_rows.optional_text(row, "rrule"),
            timezone=zone,
            related_fact_id=_rows.optional_text(row, "related_fact_id"),
            external_ref=_rows.optional_text(row, "external_ref"),
            created_at=timepolicy.stored_instant(row["created_at"], "created_at"),
            root_pursuit_id=_rows.optional_text(row, "root_pursuit_id"),
            all_day=series.all_day_dates(starts_at, ends_at, zone) is not None,
        )
    except ValidationError as exc:
        raise InvalidInputError(f"unreadable values: {exc.error_count()} error(s)") from exc


def checked(row: _rows.Row) -> CalendarEventRecord:
    try:
        return decode(row)
    except InvalidInputError as exc:
        id_ = _rows.row_id(row)
        raise UnreadableRowError(
            f"calendar event {id_!r} cannot be read ({exc}); remove it with "
            f"`philont calendar remove {id_}`",
            id=id_,
        ) from exc


def optional_pursuit(row: _rows.Row) -> str | None:
    value = row["root_pursuit_id"]
    return value if isinstance(value, str) else None
