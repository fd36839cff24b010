"""The import gate: every value of an import file passes the types and rules a service write
applies, before the target is touched.

Each column gets one type: the service's input type where a service writes it (``Content``,
``Confidence``, ``ZoneName``, ...), else the stored-value type of its column type
(:mod:`philont.schemas.stored`: epoch ms, JSON text, 0/1 flags, 64-bit integers, finite reals,
enum values). A fact's namespace and key take the lenient stored-name types and a skill's name
its lenient lookup type, as legacy databases may hold names today's writes would refuse. Then
each row passes the domain rules of its table (a fact never supersedes itself, a calendar rule
must be one the calendar accepts, ...). A refusal is an :class:`ImportFormatError` naming the
line, the table and the column.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

from sqlalchemy import Column, Float, Integer, Table

from philont.db.schema import metadata
from philont.db.types import EpochMillis, IntBool, JsonText, StrEnumText, from_epoch_ms
from philont.domain import decay, recurrence, series
from philont.errors import InvalidInputError
from philont.schemas import inputs, planning, stored
from philont.schemas.schedules import ActionType
from philont.transfer.format import ROWID_KEY, ImportFormatError

__all__ = ["check_row", "column_type"]

Row = dict[str, Any]


class _Rule(NamedTuple):
    """A column rule of its own (not a pydantic type): raises ``InvalidInputError``."""

    check: Callable[[Any], Any]


def _tau(value: Any) -> Any:
    return decay.validate_tau_override(inputs.check(stored.Real, value, "decay_tau_days"))


def _fact_value(text: Any) -> Any:
    value = stored.json_value(inputs.check(stored.StoredText, text, "value_json"))
    inputs.check(inputs.FactValue, value, "value_json")
    return text


def _json_object(text: Any) -> Any:
    if not isinstance(stored.json_value(inputs.check(stored.StoredText, text, "json")), dict):
        raise InvalidInputError("must be a JSON object")
    return text


def _action_type(value: Any) -> Any:
    return inputs.check(Literal[tuple(a.value for a in ActionType)], value, "action_type")


# The service input types of the columns services write.
SERVICE_TYPES: dict[str, dict[str, Any]] = {
    "memory_facts": {
        "id": inputs.RecordId,
        "namespace": stored.StoredNamespace,
        "key": stored.StoredFactKey,
        "value_json": _Rule(_fact_value),
        "confidence": inputs.Confidence,
        "decay_tau_days": _Rule(_tau),
        "superseded_by": inputs.RecordId,
        "supersedes": inputs.RecordId,
    },
    "memory_notes": {
        "id": inputs.RecordId,
        "content": inputs.Content,
        "importance": inputs.Importance,
        "session_id": inputs.SessionId,
    },
    "memory_raw_sessions": {"id": inputs.SessionId},
    "memory_raw_messages": {"session_id": inputs.SessionId, "content": inputs.Content},
    "memory_actions": {"session_id": inputs.SessionId, "params_json": stored.JsonText},
    "memory_access_log": {"target_id": inputs.RecordId},
    "memory_skills": {
        "id": inputs.RecordId,
        "name": inputs.SkillNameLookup,
        "trigger_keywords": stored.JsonList,
        "use_count": inputs.Count,
        "success_count": inputs.Count,
        "failure_count": inputs.Count,
        "consecutive_failures": inputs.Count,
    },
    "philont_skill_recipes": {
        "steps_json": stored.JsonList,
        "tool_policy_json": stored.JsonList,
        "revision": inputs.Count,
    },
    "philont_skill_revisions": {
        "trigger_keywords": stored.JsonList,
        "steps_json": stored.JsonList,
        "tool_policy_json": stored.JsonList,
        "revision": inputs.Count,
        "success_count": inputs.Count,
        "failure_count": inputs.Count,
    },
    "memory_calendar": {
        "id": inputs.RecordId,
        "title": planning.Title,
        "timezone": planning.ZoneName,
        "related_fact_id": inputs.RecordId,
        "external_ref": planning.ExternalRef,
    },
    "memory_schedules": {
        "id": planning.ScheduleId,
        "name": planning.ScheduleName,
        "action_type": _Rule(_action_type),
        "payload_json": _Rule(_json_object),
        "created_by": planning.Author,
        "project": planning.Project,
        "consecutive_failures": inputs.Count,
    },
}


def _stored_type(column: Column[Any]) -> Any:
    """The stored-value type of a column, from its SQLAlchemy type."""
    kind = column.type
    if isinstance(kind, EpochMillis):
        return stored.EpochMs
    if isinstance(kind, JsonText):
        return stored.JsonText
    if isinstance(kind, IntBool):
        return stored.Flag
    if isinstance(kind, StrEnumText):
        return Literal[tuple(member.value for member in kind.enum_cls)]
    if isinstance(kind, Float):
        return stored.Real
    if isinstance(kind, Integer):
        return stored.Int64
    return stored.StoredText


@functools.cache
def column_type(table: str, column: str) -> Any:
    """The one type an imported value of ``table.column`` must pass."""
    given = SERVICE_TYPES.get(table, {}).get(column)
    return given if given is not None else _stored_type(metadata.tables[table].c[column])


def _check_value(table: Table, column: Column[Any], value: Any) -> None:
    if value is None:
        if not column.nullable or column.primary_key:
            raise InvalidInputError("must not be null")
        return
    kind = column_type(table.name, column.name)
    if isinstance(kind, _Rule):
        try:
            kind.check(value)
        except ValueError as exc:  # the stored-value rules speak pydantic's language
            raise InvalidInputError(str(exc)) from None
        return
    inputs.check(kind, value, column.name)
    if column.name in SERVICE_TYPES.get(table.name, {}):
        inputs.check(_stored_type(column), value, column.name)  # and storable as the column


def check_row(number: int, name: str, row: Row) -> str | None:
    """Refuse (:class:`ImportFormatError` naming the line) a row whose values a service write
    would refuse: each column's type, then the table's domain rules. A row that is imported as
    it is but deserves a look returns why (a warning); else None."""
    table = metadata.tables[name]
    for column in table.c:
        if column.name not in row:
            if not column.nullable and column.server_default is None:
                raise ImportFormatError(number, f"{name}.{column.name}: missing (no default)")
            continue
        try:
            _check_value(table, column, row[column.name])
        except InvalidInputError as exc:
            reason = exc.message.removeprefix(f"{column.name}: ")
            raise ImportFormatError(number, f"{name}.{column.name}: {reason}") from None
    rule = ROW_RULES.get(name)
    warning = None
    try:
        warning = None if rule is None else rule(row)
        if ROWID_KEY in row:
            inputs.check(stored.Int64, row[ROWID_KEY], ROWID_KEY)
    except InvalidInputError as exc:
        raise ImportFormatError(number, f"{name}: {exc.message}") from None
    return None if warning is None else f"{name}: {warning}"


# --- the tables' domain rules ----------------------------------------------------------------


def _ordered(row: Row, first: str, last: str) -> None:
    start, end = row.get(first), row.get(last)
    if start is not None and end is not None and end < start:
        raise InvalidInputError(f"{last} ({end}) is earlier than {first} ({start})")


def _fact_rules(row: Row) -> None:
    for link in ("superseded_by", "supersedes"):
        if row.get(link) is not None and row.get(link) == row["id"]:
            raise InvalidInputError(f"the fact {row['id']!r} names itself in {link}")
    _ordered(row, "valid_from", "valid_until")


def _calendar_rules(row: Row) -> None:
    """The check a calendar write runs (:func:`philont.domain.series.check_event`): the rule,
    and the arithmetic every later listing does with it (an ``INTERVAL=99999999`` days, a
    yearly event lasting until 9999, a rule too costly to list are refused)."""
    _ordered(row, "starts_at", "ends_at")
    rule = row.get("rrule")
    if rule is None:
        return
    start = from_epoch_ms(row["starts_at"])
    end = None if row.get("ends_at") is None else from_epoch_ms(row["ends_at"])
    series.check_event(start, end, row["timezone"], rule)


def _schedule_rules(row: Row) -> str | None:
    """The expression must be one the schedules read, except the zone of a one-shot's
    ``once@<zone>``: it only says where the time is shown, and a zone this machine's tzdata
    lacks (a newer one names it, say) leaves the row the one-shot it is, for Philont and for
    us. Such a row is imported as it is, with a warning, rather than refusing the file."""
    expr = row.get("cron_expr")
    if expr is None:
        return None
    text = inputs.check(stored.StoredText, expr, "cron_expr")
    try:
        recurrence.parse_schedule_expr(text)
    except InvalidInputError:
        if not text.startswith(recurrence.ONCE_PREFIX):
            raise
        return (
            f"cron_expr {text[:80]!r}: the zone is not one this machine knows; imported as "
            "it is, a one-shot that fires at its time (shown in UTC until the zone is known)"
        )
    return None


ROW_RULES: dict[str, Callable[[Row], str | None]] = {
    "memory_facts": _fact_rules,
    "memory_calendar": _calendar_rules,
    "memory_schedules": _schedule_rules,
}
