"""Schedule rows as read models: from ORM rows, and from raw stored values that another program
may have written badly (each unreadable value is named, never raised mid-query)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from pydantic import ValidationError

from philont.db import stored_values
from philont.db.models import Schedule
from philont.domain import recurrence, timepolicy
from philont.domain.recurrence import Recurrence, ScheduleKind
from philont.errors import InvalidInputError, UnreadableRowError
from philont.schemas.schedules import ScheduleRecord
from philont.services import _rows

__all__ = ["DEFAULT_CREATED_BY", "INTERVAL_ZONE_KEY", "checked", "decode", "record"]

DEFAULT_CREATED_BY: Final = "llm_external"

INTERVAL_ZONE_KEY: Final = "timezone"
"""The payload key holding the zone an interval schedule's times are shown in (its
``cron_expr`` must stay Philont's ``interval:<ms>``)."""


def _recurrence_of(expr: str | None) -> Recurrence:
    try:
        return recurrence.parse_schedule_expr(expr)
    except InvalidInputError:
        # Philont treats an expression it cannot read as a one-shot: fire once, then disable.
        return recurrence.ONE_SHOT


def record(row: Schedule) -> ScheduleRecord:
    """A schedule's record from its ORM row (a value of the wrong kind read as its column's)."""
    return stored_values.record(_orm_record, row)


def _orm_record(row: Schedule) -> ScheduleRecord:
    return _record_of(
        {
            "id": row.id,
            "name": row.name,
            "cron_expr": row.cron_expr,
            "next_run_at": row.next_run_at,
            "last_run_at": row.last_run_at,
            "action_type": row.action_type,
            "payload": row.payload,
            "enabled": row.enabled,
            "created_by": row.created_by,
            "consecutive_failures": row.consecutive_failures,
            "paused_until": row.paused_until,
            "project": row.project,
            "created_at": row.created_at,
        }
    )


def _shown_zone(rec: Recurrence, payload: object) -> str | None:
    """The zone a schedule's times are shown in: a cron schedule's or a one-shot's, from its
    expression; an interval's, from its payload (None when absent, UTC or no zone)."""
    if rec.kind is not ScheduleKind.INTERVAL:
        return rec.timezone
    held = payload.get(INTERVAL_ZONE_KEY) if isinstance(payload, Mapping) else None
    try:
        zone = timepolicy.validate_timezone(held)
    except InvalidInputError:
        return None
    return None if timepolicy.is_utc(zone) else zone


def _record_of(values: Mapping[str, Any]) -> ScheduleRecord:
    rec = _recurrence_of(values["cron_expr"])
    return ScheduleRecord(
        id=values["id"],
        name=values["name"],
        kind=rec.kind,
        cron_expr=values["cron_expr"],
        interval_ms=rec.interval_ms,
        cron=rec.cron,
        cron_timezone=rec.timezone if rec.kind is ScheduleKind.CRON else None,
        timezone=_shown_zone(rec, values["payload"]),
        next_run_at=values["next_run_at"],
        last_run_at=values["last_run_at"],
        action_type=values["action_type"],
        payload=values["payload"],
        enabled=bool(values["enabled"]),
        created_by=values["created_by"] or DEFAULT_CREATED_BY,
        consecutive_failures=values["consecutive_failures"] or 0,
        paused_until=values["paused_until"],
        project=values["project"],
        created_at=values["created_at"],
    )


def decode(row: _rows.Row) -> ScheduleRecord:
    """A stored row (raw values) as a record, or ``InvalidInputError`` naming what is unreadable
    (rows another program wrote: an impossible time, payload text that is not JSON, ...)."""
    try:
        payload = json.loads(_rows.text_value(row, "payload_json"))
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"payload_json is not JSON ({exc})") from exc
    failures = row["consecutive_failures"]
    if failures is not None and (isinstance(failures, bool) or not isinstance(failures, int)):
        raise InvalidInputError(f"consecutive_failures is not an integer ({failures!r})")
    values = {
        "id": _rows.text_value(row, "id"),
        "name": _rows.text_value(row, "name"),
        "cron_expr": _rows.optional_text(row, "cron_expr"),
        "next_run_at": timepolicy.stored_instant(row["next_run_at"], "next_run_at"),
        "last_run_at": _rows.optional_instant(row, "last_run_at"),
        "action_type": _rows.text_value(row, "action_type"),
        "payload": payload,
        "enabled": row["enabled"],
        "created_by": _rows.optional_text(row, "created_by"),
        "consecutive_failures": failures,
        "paused_until": _rows.optional_instant(row, "paused_until"),
        "project": _rows.optional_text(row, "project"),
        "created_at": timepolicy.stored_instant(row["created_at"], "created_at"),
    }
    try:
        return _record_of(values)
    except ValidationError as exc:
        raise InvalidInputError(f"unreadable values: {exc.error_count()} error(s)") from exc


def checked(row: _rows.Row) -> ScheduleRecord:
    try:
        return decode(row)
    except InvalidInputError as exc:
        raise UnreadableRowError(
            f"schedule {_rows.row_id(row)!r} cannot be read ({exc})", id=_rows.row_id(row)
        ) from exc
