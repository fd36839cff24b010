"""Checks of a schedule's arguments and of a run's outcome: pure, all done before anything is
written."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from philont.db.types import dumps_compact
from philont.errors import InvalidInputError
from philont.schemas import inputs, planning
from philont.schemas.schedules import ActionType, OutcomeStatus

_REPLY_CHANNELS: Final = ("silent", "summary")


def action_type_of(value: object) -> ActionType:
    allowed = ", ".join(a.value for a in ActionType)
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return ActionType(value)
    except ValueError as exc:
        raise InvalidInputError.of("action_type", f"{value!r} is not one of: {allowed}") from exc


def check_count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError.of(name, f"must be a non-negative integer, got {value!r}")
    return value


def compose_payload(action: ActionType, message: object, payload: object) -> dict[str, Any]:
    """The stored payload, as Philont's dispatcher reads it: ``prompt`` -> ``{message}``,
    ``autonomous_turn`` -> ``{prompt, replyChannel}``, ``reflect`` -> ``{sessionId}``.

    What the original only discovered at fire time (and then silently skipped) is refused now:
    an autonomous turn without a prompt, a reflection without a session id.
    """
    if payload is None:
        data: dict[str, Any] = {}
    elif isinstance(payload, Mapping):
        # validates (a refusal names where in payload) and copies
        data = json.loads(dumps_compact(dict(payload), "payload"))
    else:
        raise InvalidInputError.of("payload", f"must be a JSON object (a dict), got {payload!r}")
    if message is not None:
        text_message = inputs.check(planning.ScheduleMessage, message, "message").strip()
        key = "prompt" if action is ActionType.AUTONOMOUS_TURN else "message"
        if key in data and data[key] != text_message:
            raise InvalidInputError.of_together(
                ("message", "payload"), f"message and payload[{key!r}] disagree; give one of them"
            )
        data[key] = text_message
    if action is ActionType.AUTONOMOUS_TURN:
        prompt = data.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise InvalidInputError.of_together(
                ("message", "payload"),
                "an autonomous_turn schedule needs the prompt to run: pass message='...'",
            )
        data.setdefault("replyChannel", "silent")
        if data["replyChannel"] not in _REPLY_CHANNELS:
            raise InvalidInputError.of(
                "payload",
                f"replyChannel must be 'silent' or 'summary', got {data['replyChannel']!r}",
            )
    elif action is ActionType.REFLECT:
        session_id = data.get("sessionId")
        if not isinstance(session_id, str) or not session_id.strip():
            raise InvalidInputError.of(
                "payload", "a reflect schedule needs the session to reflect on: {'sessionId': ...}"
            )
    return data


@dataclass(frozen=True)
class Outcome:
    """A run's outcome, checked; ``status`` is Philont's label for it."""

    ok: bool
    fired_at: datetime
    duration_ms: int
    summary: str
    http_ok: int
    http_fail: int
    http_status: dict[str, int]
    signatures: list[str]
    threshold: int
    pause_end: datetime

    @property
    def status(self) -> OutcomeStatus:
        """``failed`` when the run failed or every HTTP call did, ``partial`` when some did."""
        if not self.ok or (self.http_fail > 0 and self.http_ok == 0):
            return OutcomeStatus.FAILED
        return OutcomeStatus.PARTIAL if self.http_fail > 0 else OutcomeStatus.OK


def checked_outcome(
    *,
    ok: object,
    fired_at: object,
    duration_ms: object,
    summary: object,
    http_ok: object,
    http_fail: object,
    http_status: object,
    failure_signatures: object,
    threshold: object,
    pause: object,
) -> Outcome:
    """``record_outcome``'s arguments, checked (raises before anything is written)."""
    if not isinstance(ok, bool):
        raise InvalidInputError.of("ok", f"must be True or False, got {ok!r}")
    fired: datetime = inputs.check(inputs.AwareTime, fired_at, "fired_at")
    if not isinstance(summary, str):
        raise InvalidInputError.of("summary", f"must be text, got {summary!r}")
    if not isinstance(pause, timedelta) or pause <= timedelta(0):
        raise InvalidInputError.of("pause", f"must be a positive timedelta, got {pause!r}")
    try:
        pause_end = fired + pause
    except OverflowError as exc:
        raise InvalidInputError.of("pause", f"{pause!r} reaches past the calendar") from exc
    return Outcome(
        ok=ok,
        fired_at=fired,
        duration_ms=check_count(duration_ms, "duration_ms"),
        summary=summary,
        http_ok=check_count(http_ok, "http_ok"),
        http_fail=check_count(http_fail, "http_fail"),
        http_status=_status_counts(http_status),
        signatures=_signatures(failure_signatures),
        threshold=inputs.check(inputs.FailureThreshold, threshold, "threshold"),
        pause_end=pause_end,
    )


def _status_counts(value: object) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, int) and not isinstance(v, bool) and v >= 0
        for k, v in value.items()
    ):
        raise InvalidInputError.of(
            "http_status", f"must map status text to counts, like {{'200': 3}}, got {value!r}"
        )
    return dict(value)


def _signatures(value: object) -> list[str]:
    if value is None:
        return []
    if (
        isinstance(value, str)
        or not isinstance(value, Sequence)
        or not all(isinstance(s, str) for s in value)
    ):
        raise InvalidInputError.of("failure_signatures", f"must be a list of text, got {value!r}")
    return list(value)
