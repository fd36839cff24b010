"""Schedule rows to write: a new schedule from its checked arguments, the row of a run's outcome,
and the circuit breaker's update (atomic in SQL). No session: the service adds and runs them."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any, Final

from sqlalchemy import and_, case, literal, or_

from philont.db.models import Schedule, ScheduleOutcome
from philont.db.types import EpochMillis, bumped
from philont.domain import recurrence, timepolicy
from philont.domain.recurrence import Recurrence, ScheduleKind
from philont.errors import InvalidInputError
from philont.schemas import inputs, planning
from philont.schemas.schedules import ActionType
from philont.services._schedule_checks import Outcome, action_type_of, compose_payload
from philont.services._schedule_rows import DEFAULT_CREATED_BY, INTERVAL_ZONE_KEY

__all__ = ["PAST_AT_TOLERANCE", "breaker", "new_row", "outcome_row"]

PAST_AT_TOLERANCE: Final = timedelta(minutes=1)
"""How far in the past a one-shot's ``at`` may lie (clock skew, a slow caller); it then fires at
the next poll. Older times are refused: they are almost always a wrong date or zone, and the
original fired them immediately and silently."""


def new_row(
    name: object,
    *,
    now: datetime,
    message: object = None,
    payload: object = None,
    at: object = None,
    interval_ms: object = None,
    cron: object = None,
    timezone: object = "UTC",
    action_type: object = ActionType.PROMPT,
    project: object = None,
    created_by: object = DEFAULT_CREATED_BY,
) -> Schedule:
    """A validated, not yet added row first due after ``now``. Raises before anything is
    written."""
    clean_name = inputs.check(planning.ScheduleName, name, "name").strip()
    action = action_type_of(action_type)
    data = compose_payload(action, message, payload)
    clean_project = inputs.check(planning.Project, project, "project")
    author = inputs.check(planning.Author, created_by, "created_by").strip()
    zone = recurrence.validate_timezone(timezone)
    given = [
        n for n, v in (("at", at), ("interval_ms", interval_ms), ("cron", cron)) if v is not None
    ]
    if not given or len(given) > (1 if cron is not None else 2):
        raise InvalidInputError.of_together(
            tuple(given) if given else ("at", "interval_ms", "cron"),
            "give at (one-time), interval_ms (every N ms; with at, at is its first run) or "
            f"cron (5-field cron in `timezone`), cron alone; got {', '.join(given) or 'none'}",
        )
    rec: Recurrence
    if at is not None:
        first = inputs.check(inputs.AwareTime, at, "at")
        if first < now - PAST_AT_TOLERANCE:
            raise InvalidInputError.of(
                "at",
                f"{first.isoformat()} is in the past (now is {now.isoformat()}); "
                "check the date and time zone",
                at=first,
            )
        if interval_ms is None:
            rec = recurrence.one_shot(zone)
        else:
            rec = recurrence.every(interval_ms)
            second = timedelta(milliseconds=rec.interval_ms or 0)
            timepolicy.shifted(first, second, "interval_ms (the run after at)")
    else:
        if interval_ms is not None:
            rec = recurrence.every(interval_ms)
        else:
            rec = recurrence.cron_schedule(cron, zone)
        first = recurrence.first_run(rec, now)
    if rec.kind is ScheduleKind.INTERVAL:
        data = _with_zone(data, zone)
    return Schedule(
        id=str(uuid.uuid4()),
        name=clean_name,
        cron_expr=rec.expr,
        next_run_at=first,
        last_run_at=None,
        action_type=action.value,
        payload=data,
        enabled=True,
        created_at=now,
        created_by=author,
        consecutive_failures=0,
        paused_until=None,
        project=clean_project,
    )


def _with_zone(data: dict[str, Any], zone: str) -> dict[str, Any]:
    """An interval's payload with the zone its times are shown in (``timezone``, left out for
    UTC): ``cron_expr`` must stay Philont's ``interval:<ms>``, or the original would run the
    row once and stop, and the payload is the one place left that both programs keep whole
    (Philont's dispatcher reads only its own keys). A ``timezone`` the payload already has
    must name the same zone."""
    utc = timepolicy.is_utc(zone)
    held = data.get(INTERVAL_ZONE_KEY)
    if held is None:
        return data if utc else data | {INTERVAL_ZONE_KEY: zone}
    try:
        same = recurrence.validate_timezone(held) == zone or (utc and timepolicy.is_utc(held))
    except InvalidInputError:
        same = False
    if not same:
        raise InvalidInputError.of_together(
            ("timezone", "payload"),
            f"timezone {zone!r} and payload['timezone'] {held!r:.80} disagree; give one",
        )
    return data if utc else data | {INTERVAL_ZONE_KEY: zone}


def outcome_row(run: Outcome, name: str, created_at: datetime) -> ScheduleOutcome:
    """The ``schedule_outcomes`` row of a run, keyed as Philont keys it: by the schedule's name."""
    return ScheduleOutcome(
        id=str(uuid.uuid4()),
        schedule_id=name,
        fired_at=run.fired_at,
        duration_ms=run.duration_ms,
        outcome=run.status.value,
        http_ok_count=run.http_ok,
        http_fail_count=run.http_fail,
        http_status=run.http_status,
        failure_signatures=run.signatures,
        text_summary=run.summary,
        created_at=created_at,
    )


def breaker(run: Outcome) -> dict[str, Any]:
    """The breaker's update, atomic in SQL: a success resets it; a failure counts and, at the
    threshold, pauses unless a pause is already in force at ``fired_at``."""
    if run.ok:
        return {"consecutive_failures": 0, "paused_until": None}
    failures = bumped(Schedule.consecutive_failures)
    not_paused = or_(Schedule.paused_until.is_(None), Schedule.paused_until <= run.fired_at)
    pause = literal(run.pause_end, EpochMillis())
    return {
        "consecutive_failures": failures,
        "paused_until": case(
            (and_(failures >= run.threshold, not_paused), pause), else_=Schedule.paused_until
        ),
    }
