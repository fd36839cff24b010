"""ActionLog: one row per tool call (layer 0.5), the evidence skill attribution works from."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update

from philont.db.models import Action
from philont.db.queries import actions as action_rows
from philont.db.stored_values import record, too_deep
from philont.db.types import dumps_compact, to_epoch_ms
from philont.errors import InvalidInputError
from philont.finds import finds
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.actions import ActionRecord
from philont.services.base import Service

__all__ = ["RESULT_MAX_CHARS", "ActionLog", "ObjectJson", "object_json"]

log = get_logger(__name__)

RESULT_MAX_CHARS = 2000
"""Stored results are cut to this many characters (the server kept 500)."""


def _check_name(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name}: must be non-blank text, got {value!r}", argument=name)
    return value


def _check_optional_text(value: object, name: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{name}: must be text or None, got {value!r}", argument=name)
    return value


def _check_params(value: object) -> tuple[str, dict[str, Any]]:
    """``value`` as stored (compact JSON) and as a read gives it back: encoding it checks it
    now, so nothing is written on failure."""
    stored = object_json(value)
    parsed: dict[str, Any] = json.loads(stored)
    return stored, parsed


class ObjectJson(str):
    """The compact JSON text of an object with text keys, as :func:`object_json` encoded it
    (:func:`~philont.db.types.dumps_compact`): :meth:`ActionLog.record_call` stores it without
    parsing it again. Make it only with :func:`object_json`."""

    __slots__ = ()


def object_json(value: object) -> ObjectJson:
    """``value`` (a dict with text keys, JSON values) as :class:`ObjectJson`; InvalidInputError
    naming ``params`` when it is not one or cannot be encoded (NaN, a lone surrogate, a value
    JSON cannot hold, nesting deeper than a read gives back)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise InvalidInputError(
            f"params: must be a dict with string keys, got {value!r}", argument="params"
        )
    text = dumps_compact(value, "params")  # a refusal names where in params
    if (problem := too_deep(value, text)) is not None:  # a read would give it back as text
        raise InvalidInputError(f"params: {problem}", argument="params")
    return ObjectJson(text)


def _is_object_json(text: str) -> bool:
    """Whether ``text`` is the JSON text of an object (what ``params_json`` must be)."""
    if isinstance(text, ObjectJson):
        return True  # encoded from a dict by object_json: nothing to parse
    try:
        return isinstance(json.loads(text, parse_constant=_no_constant), dict)
    except (ValueError, RecursionError):
        return False


def _no_constant(name: str) -> Any:
    """NaN and Infinity are not JSON (what JavaScript's ``JSON.parse`` reads back)."""
    raise ValueError(f"{name} is not JSON")


_ID_BATCH = 10_000
"""Ids per statement of :meth:`ActionLog.link_skill` (each one is a bound parameter)."""


def _action_ids(values: Iterable[int]) -> list[int]:
    """``values`` as whole numbers an id column holds, or InvalidInputError naming them."""
    ids = list(values)
    if not all(
        isinstance(i, int) and not isinstance(i, bool) and -(2**63) <= i < 2**63 for i in ids
    ):
        raise InvalidInputError(
            f"action_ids: must be whole numbers of 64 bits, got {ids[:5]!r}"
            + (" ..." if len(ids) > 5 else ""),
            argument="action_ids",
        )
    return ids


def _no_actions(
    _service: Any,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    success: object = None,
    **_: Any,
) -> list[ActionRecord]:
    """``query`` (or ``recent_failures``) by a session, tool or skill name none can have: its
    arguments checked as it checks them, then no actions."""
    inputs.window(since, until)
    if success is not None and not isinstance(success, bool):
        raise InvalidInputError(
            f"success: must be True, False or None, got {success!r}", argument="success"
        )
    return []


class ActionLog(Service):
    """The log of executed tool calls, with success and an optional linked skill."""

    def record(
        self,
        tool_name: str,
        *,
        params: dict[str, Any],
        success: bool,
        result: str | None = None,
        session_id: str = "global",
        trigger: str | None = None,
        linked_skill: str | None = None,
        at: datetime | None = None,
    ) -> ActionRecord:
        """Log one tool call (``at`` defaults to now); ``result`` is cut to
        :data:`RESULT_MAX_CHARS` characters. Everything is checked before the insert."""
        # ``success`` (declared bool) and the types of the others are checked on entry (Service)
        tool = _check_name(tool_name, "tool_name")
        params_json, args = _check_params(params)
        text = _check_optional_text(result, "result")
        sid = _check_name(session_id, "session_id")
        trig = _check_optional_text(trigger, "trigger")
        skill = None if linked_skill is None else _check_name(linked_skill, "linked_skill")
        stamp = self._now() if at is None else inputs.check(inputs.AwareTime, at, "at")
        kept = None if text is None else text[:RESULT_MAX_CHARS]
        new_id = self._insert(tool, params_json, success, kept, sid, trig, skill, stamp)
        return ActionRecord(
            id=new_id,
            session_id=sid,
            trigger=trig,
            tool_name=tool,
            params=args,
            result=kept,
            success=success,
            timestamp=stamp,
            linked_skill=skill,
        )

    def record_call(
        self, tool_name: str, *, params_json: str, success: bool, result: str, session_id: str
    ) -> int:
        """Log one tool call now whose params are already compact JSON text of an object (what
        :func:`~philont.db.types.dumps_compact` writes; the dispatcher encoded them once, for
        its size check) and return the row's id: :meth:`record` without encoding the params
        again and building the read model nobody reads. Its text was checked on entry like
        every argument (valid Unicode; on PostgreSQL no NUL); ``params_json`` must parse as
        a JSON object (an :class:`ObjectJson` from :func:`object_json` is one, unparsed)."""
        tool = _check_name(tool_name, "tool_name")
        sid = _check_name(session_id, "session_id")
        if not _is_object_json(params_json):
            raise InvalidInputError(
                f"params_json: must be the JSON text of an object, got {params_json[:80]!r}",
                argument="params_json",
            )
        kept = result[:RESULT_MAX_CHARS]
        # str(): the exact type, whatever subclass was given (a driver adapts by type)
        return self._insert(tool, str(params_json), success, kept, sid, None, None, self._now())

    def _insert(
        self,
        tool: str,
        params_json: str,
        success: bool,
        result: str | None,
        session_id: str,
        trigger: str | None,
        linked_skill: str | None,
        at: datetime,
    ) -> int:
        # One lean INSERT: every tool call writes this row, and the ORM's unit of work would
        # cost more than the insert itself. (Its text was checked on entry, NUL included.)
        new_id = action_rows.insert(
            self.mem.raw(),
            session_id=session_id,
            trigger=trigger,
            tool_name=tool,
            params_json=params_json,
            result=result,
            success=success,
            timestamp=to_epoch_ms(at),
            linked_skill=linked_skill,
        )
        log.info(
            "action.recorded", id=new_id, tool_name=tool, success=success, session_id=session_id
        )
        return new_id

    @finds("session_id", "tool_name", "linked_skill", order=inputs.Order, absent=_no_actions)
    def query(
        self,
        *,
        session_id: str | None = None,
        tool_name: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        linked_skill: str | None = None,
        success: bool | None = None,
        limit: int = 500,
        order: inputs.Order = "asc",
    ) -> list[ActionRecord]:
        """Actions matching every given filter (time bounds inclusive), ordered by timestamp
        then id in ``order``, at most ``limit`` (1..10000)."""
        start, end = inputs.window(since, until)
        order = inputs.check(inputs.Order, order, "order")
        if success is not None and not isinstance(success, bool):
            raise InvalidInputError(
                f"success: must be True, False or None, got {success!r}", argument="success"
            )
        stmt = select(Action)
        if session_id is not None:
            stmt = stmt.where(Action.session_id == session_id)
        if tool_name is not None:
            stmt = stmt.where(Action.tool_name == tool_name)
        if linked_skill is not None:
            stmt = stmt.where(Action.linked_skill == linked_skill)
        if success is not None:
            stmt = stmt.where(Action.success == success)
        if start is not None:
            stmt = stmt.where(Action.timestamp >= start)
        if end is not None:
            stmt = stmt.where(Action.timestamp <= end)
        if order == "desc":
            stmt = stmt.order_by(Action.timestamp.desc(), Action.id.desc())
        else:
            stmt = stmt.order_by(Action.timestamp, Action.id)
        return [
            record(ActionRecord.model_validate, r) for r in self.session.scalars(stmt.limit(limit))
        ]

    def link_skill(self, action_ids: Iterable[int], skill_name: str) -> int:
        """Attribute actions to a skill (overwriting an earlier link); returns how many of the
        ids exist. This is what outcome attribution needs and the original never did (Q-K2).
        Any number of ids: they are linked in batches (PostgreSQL takes at most 65,535
        parameters in one statement)."""
        skill = _check_name(skill_name, "skill_name")
        ids = sorted(set(_action_ids(action_ids)))
        count = 0
        for start in range(0, len(ids), _ID_BATCH):
            batch = ids[start : start + _ID_BATCH]
            count += int(
                self.session.scalar(
                    select(func.count()).select_from(Action).where(Action.id.in_(batch))
                )
                or 0
            )
            self.session.execute(
                update(Action)
                .where(Action.id.in_(batch))
                .values(linked_skill=skill)
                .execution_options(synchronize_session="fetch")
            )
        log.info("action.skill_linked", skill=skill, count=count)
        return count

    @finds("session_id", absent=_no_actions)
    def recent_failures(
        self, since: datetime | None = None, limit: int = 30, session_id: str | None = None
    ) -> list[ActionRecord]:
        """Failed actions, newest first (since ``since`` inclusive)."""
        return self.query(
            session_id=session_id, since=since, success=False, limit=limit, order="desc"
        )

    @finds("tool_name")
    def count(self, tool_name: str | None = None) -> int:
        """How many actions are logged (of one tool when given)."""
        stmt = select(func.count()).select_from(Action)
        if tool_name is not None:
            stmt = stmt.where(Action.tool_name == tool_name)
        return int(self.session.scalar(stmt) or 0)
