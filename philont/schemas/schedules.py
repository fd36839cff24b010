"""Read models of schedules, their claimed runs, upcoming runs and recorded outcomes."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from philont.domain.kinds import ScheduleKind
from philont.schemas.base import ReadModel
from philont.schemas.calendar import SkippedRow


class ActionType(enum.StrEnum):
    """What a schedule does when it fires (the host dispatches; philont only stores)."""

    PROMPT = "prompt"
    """Push the reminder text (``payload.message``) to the user."""
    TOOL_CALL = "tool_call"
    """Reserved by the original program: logged, never executed."""
    REFLECT = "reflect"
    """Reflect on the session ``payload.sessionId``."""
    AUTONOMOUS_TURN = "autonomous_turn"
    """Run a full agent turn with ``payload.prompt``."""


class OutcomeStatus(enum.StrEnum):
    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"


class ScheduleRecord(ReadModel):
    """One stored schedule.

    ``cron_expr`` is the stored text; ``kind``, ``interval_ms``, ``cron``, ``cron_timezone``
    and ``timezone`` are what it means (``kind`` is ``once`` for rows whose expression cannot be
    read). ``timezone`` is the zone its times are shown in: a cron schedule's, the one a
    one-shot's time or an interval's first run was given in (an interval keeps it in its
    payload, ``timezone``); None for UTC.
    """

    id: str
    name: str
    kind: ScheduleKind
    cron_expr: str | None
    interval_ms: int | None
    cron: str | None
    cron_timezone: str | None
    timezone: str | None
    next_run_at: datetime
    last_run_at: datetime | None
    action_type: str
    payload: Any
    enabled: bool
    created_by: str
    consecutive_failures: int
    paused_until: datetime | None
    project: str | None
    created_at: datetime


class Claim(ReadModel):
    """One occurrence of a schedule that this caller, and no other, now owns and must run.

    ``occurrence`` is the time that was due (the schedule's ``next_run_at`` when claimed);
    ``claimed_at`` is the poll time; ``schedule`` is the row after the claim (its
    ``next_run_at`` already advanced, or ``enabled`` false for a one-shot).
    """

    schedule: ScheduleRecord
    occurrence: datetime
    claimed_at: datetime


class UpcomingRun(ReadModel):
    """A schedule in a ``due_between`` listing.

    ``run_at`` is when it will actually fire: ``next_run_at``, or the end of its pause when a
    circuit-breaker pause holds it past that. ``overdue`` marks runs that were due before the
    window started and have not fired yet (they fire at the next poll).
    """

    schedule: ScheduleRecord
    run_at: datetime
    overdue: bool


class ScheduleListing(ReadModel):
    """The runs due in a window (``due_between``), capped: ``runs`` are the soonest, ``total``
    all that are due, ``more = total - len(runs)``; ``skipped_bad_rows`` counts stored schedules
    among them whose values no layer can read (``skipped`` names them; they are left alone)."""

    runs: list[UpcomingRun]
    total: int
    more: int
    skipped_bad_rows: int
    skipped: list[SkippedRow]


class ScheduleOutcomeRecord(ReadModel):
    """What one run of a schedule produced."""

    id: str
    schedule_id: str
    fired_at: datetime
    duration_ms: int
    outcome: OutcomeStatus
    http_ok_count: int
    http_fail_count: int
    http_status: Any
    failure_signatures: Any
    text_summary: str
    created_at: datetime
