"""ScheduleService: reminders and recurring jobs, claimed once each, with a circuit breaker."""

from __future__ import annotations

import builtins
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final, TypedDict, Unpack

from sqlalchemy import ColumnElement, Select, and_, case, func, or_, select, text, update
from sqlalchemy.engine import CursorResult

from philont.db.models import Schedule, ScheduleOutcome
from philont.db.ordering import code_points
from philont.db.stored_values import record
from philont.domain import recurrence
from philont.domain.recurrence import MissedRunPolicy
from philont.errors import (
    InvalidInputError,
    InvalidTimeRangeError,
    PhilontError,
)
from philont.finds import finds
from philont.log import get_logger
from philont.schemas import inputs, planning
from philont.schemas.calendar import SkippedRow
from philont.schemas.schedules import (
    Claim,
    ScheduleListing,
    ScheduleOutcomeRecord,
    ScheduleRecord,
    UpcomingRun,
)
from philont.services import _rows
from philont.services._schedule_checks import checked_outcome
from philont.services._schedule_lookups import (
    ENABLED,
    cancel_unheld,
    no_outcome_schedule,
    no_schedule_id,
    none_enabled,
    same_schedule,
)
from philont.services._schedule_rows import DEFAULT_CREATED_BY
from philont.services._schedule_rows import checked as _checked
from philont.services._schedule_rows import decode as _decode
from philont.services._schedule_rows import record as _record
from philont.services._schedule_writes import PAST_AT_TOLERANCE, breaker, new_row, outcome_row
from philont.services.base import Service

__all__ = [
    "DEFAULT_CREATED_BY",
    "FAILURE_THRESHOLD",
    "LISTING_LIMIT",
    "PAST_AT_TOLERANCE",
    "PAUSE",
    "ScheduleService",
    "ScheduleSpec",
]

log = get_logger(__name__)

FAILURE_THRESHOLD: Final = 3
"""Consecutive failures that pause a schedule (Philont's ``SCHEDULE_FAILURE_THRESHOLD``)."""

PAUSE: Final = timedelta(hours=1)
"""How long the circuit breaker pauses a failing schedule (Philont's ``SCHEDULE_PAUSE_MS``)."""

_ID_MAX_LENGTH: Final = 200
_TABLE = Schedule.__table__

LISTING_LIMIT: Final = 200
"""Default cap of a schedule listing (``list``, ``due_between``)."""

# IntBool binds True as 1, which keeps the partial index idx_schedules_next_run usable.
_ENABLED = ENABLED


def _outcome_record(row: ScheduleOutcome) -> ScheduleOutcomeRecord:
    return record(ScheduleOutcomeRecord.model_validate, row)


def _aware(value: object, name: str) -> datetime:
    return inputs.check(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


class ScheduleSpec(TypedDict, total=False):
    """A schedule besides its name, as :meth:`ScheduleService.create` and
    :meth:`ScheduleService.replace` take it (defaults: no message, no payload, ``timezone``
    ``"UTC"``, ``action_type`` ``prompt``, no project, ``created_by`` ``DEFAULT_CREATED_BY``;
    ``at``, ``interval_ms`` (with ``at`` as its first run, or without) or ``cron`` alone)."""

    message: str | None
    payload: Mapping[str, Any] | None
    at: datetime | None
    interval_ms: int | None
    cron: str | None
    timezone: str
    action_type: str
    project: str | None
    created_by: str


class ScheduleService(Service):
    """Schedules in Philont's ``memory_schedules`` table.

    ``cron_expr`` keeps Philont's format: NULL for a one-shot, ``interval:<ms>`` for an interval
    (the original can still run these), and ours for cron, ``cron:<5 fields>@<IANA zone>`` (e.g.
    ``cron:0 9 * * 1-5@Europe/Berlin``), and for a one-shot given in a zone other than UTC,
    ``once@<IANA zone>`` (the zone it is shown in). Philont's reader treats an expression it does
    not know as a one-shot: it cannot run a cron schedule repeatedly, but it does not crash on
    one, and it runs a ``once@`` row exactly as it runs its own one-shots. An interval keeps
    Philont's ``interval:<ms>``, so the original runs it as it runs its own; the zone its times
    are shown in goes into its payload (``timezone``), which the original's dispatcher ignores.
    """

    # --- writing ------------------------------------------------------------------------------

    def create(
        self,
        name: str,
        **spec: Unpack[ScheduleSpec],
    ) -> ScheduleRecord:
        """Add a schedule (same-named ones are left alone; see :meth:`replace`).

        ``at`` (one-shot; aware; at most ``PAST_AT_TOLERANCE`` in the past), ``interval_ms``
        (an int, 1 s to ~10 years; first run ``at`` when given, else ``now + interval``, which
        anchors the grid) or ``cron`` (5 fields, evaluated in ``timezone``; first run the next
        cron time). Any other combination is an error, not a silent choice. ``timezone`` is
        where ``cron`` is evaluated; a one-shot keeps it (``cron_expr`` ``once@<zone>``, NULL
        for UTC) and an interval too (in its payload, ``timezone``; none for UTC), so their
        times are shown at their wall time there. An interval counts elapsed time: its runs
        are ``interval_ms`` apart whatever the zone's clocks do.
        ``message`` goes into the payload where Philont's
        dispatcher looks for it (``message``, or ``prompt`` for ``autonomous_turn``).
        """
        row = new_row(name, now=self._now(), **spec)  # validated before any write
        self.session.add(row)
        self.session.flush()
        log.info("schedule.created", id=row.id, name=row.name, cron_expr=row.cron_expr)
        return _record(row)

    def replace(
        self,
        name: str,
        **spec: Unpack[ScheduleSpec],
    ) -> tuple[ScheduleRecord, int]:
        """``schedule_reminder``: the new schedule replaces every enabled one with this name.

        The new schedule is built and validated first; only then, in the caller's transaction,
        are the old ones disabled (kept as history) and the new one inserted. A bad new schedule
        therefore leaves the old one running (the original disabled it first). Returns the new
        schedule and how many were replaced.
        """
        row = new_row(name, now=self._now(), **spec)  # validated before any write
        # The only replacer of this name until the transaction ends: two read committed
        # transactions each disabled what they saw and each inserted theirs (PostgreSQL),
        # leaving two enabled schedules of one name, both firing.
        self.mem.backend.serialize(self.session, "schedule", row.name)
        result = self.session.execute(
            update(Schedule)
            .where(Schedule.name == row.name, _ENABLED)
            .values(enabled=False)
            .execution_options(synchronize_session="fetch")
        )
        replaced = _rowcount(result)
        self.session.add(row)
        self.session.flush()
        log.info("schedule.replaced", id=row.id, name=row.name, replaced=replaced)
        return _record(row), replaced

    @finds(name=planning.ScheduleName, id=planning.ScheduleId, absent=cancel_unheld)
    def cancel(
        self, *, name: str | None = None, id: str | None = None
    ) -> builtins.list[ScheduleRecord]:
        """Disable (soft-cancel, history kept) the enabled schedules with exactly this ``name``,
        or the one with this ``id``.

        Exact name, not a substring; enabled schedules only. Neither given:
        ``InvalidInputError``. Both given: they must name the same schedule. Nothing matched:
        :class:`~philont.errors.ScheduleNotFoundError`, whose message lists what is enabled.
        """
        if name is None and id is None:
            raise InvalidInputError.of_together(
                ("name", "id"), "give name (exact) or id to cancel a schedule"
            )
        conditions: builtins.list[ColumnElement[bool]] = [_ENABLED]
        clean_name = inputs.optional(planning.ScheduleName, name, "name")
        clean_name = None if clean_name is None else clean_name.strip()
        if id is not None:
            conditions.append(Schedule.id == inputs.check(planning.ScheduleId, id, "id"))
            if clean_name is not None:
                same_schedule(self.session, id, clean_name)
        if clean_name is not None:
            conditions.append(Schedule.name == clean_name)
        rows = self.session.scalars(
            select(Schedule).where(*conditions).order_by(Schedule.created_at, Schedule.id)
        ).all()
        if not rows:
            none_enabled(self.session, name, id)
        for row in rows:
            row.enabled = False
        self.session.flush()
        log.info("schedule.cancelled", ids=[r.id for r in rows], name=clean_name)
        return [_record(r) for r in rows]

    # --- reading ------------------------------------------------------------------------------

    @finds("id")
    def get(self, id: str) -> ScheduleRecord | None:
        """The schedule (enabled or not), or None; :class:`~philont.errors.UnreadableRowError`
        when its stored values cannot be read."""
        if not isinstance(id, str):
            return None
        rows = self._raw(select(*_rows.raw_columns(_TABLE)).where(Schedule.id == id))
        return None if not rows else _checked(rows[0])

    @finds(name=planning.ScheduleName)
    def find_by_name(self, name: str) -> ScheduleRecord | None:
        """The newest enabled schedule with exactly this name, or None."""
        clean = inputs.check(planning.ScheduleName, name, "name").strip()
        row = self.session.scalars(
            select(Schedule)
            .where(Schedule.name == clean, _ENABLED)
            .order_by(Schedule.created_at.desc(), Schedule.id.desc())
            .limit(1)
        ).first()
        return None if row is None else _record(row)

    def _raw(self, stmt: Select[Any]) -> builtins.list[_rows.Row]:
        return [row._mapping for row in self.session.execute(stmt)]

    def list(
        self, enabled_only: bool = False, *, limit: int = LISTING_LIMIT
    ) -> builtins.list[ScheduleRecord]:
        """Schedules by next run (soonest first), at most ``limit``; disabled ones too unless
        ``enabled_only``. Rows whose stored values cannot be read are left out (and logged)."""
        stmt = select(*_rows.raw_columns(_TABLE)).order_by(Schedule.next_run_at, Schedule.id)
        if enabled_only:
            stmt = stmt.where(_ENABLED)
        found = []
        for row in self._raw(stmt.limit(limit)):
            try:
                found.append(_decode(row))
            except InvalidInputError as exc:
                log.warning("schedule.skipped_row", id=_rows.row_id(row), reason=str(exc))
        return found

    def due_between(
        self, start: datetime, end: datetime, *, limit: int = LISTING_LIMIT
    ) -> ScheduleListing:
        """What will fire in ``[start, end]`` (for ``list_upcoming``): the soonest ``limit`` runs
        and how many there are.

        Enabled schedules whose actual run time falls in the window: ``next_run_at``, or the end
        of a circuit-breaker pause that holds it back (so a schedule paused past ``end`` is not
        listed, and one paused into the window is listed at its resume time). Runs that were due
        before ``start`` and are not held by a pause have not fired yet; they are included with
        ``overdue=True`` because they fire at the next poll. ``end < start``:
        :class:`~philont.errors.InvalidTimeRangeError`. Ordered by run time, then name (code
        point order, on every backend), then id, and limited in SQL; rows whose values cannot be
        read are skipped and counted, never fatal.
        """
        lo = _aware(start, "start")
        hi = _aware(end, "end")
        if hi < lo:
            raise InvalidTimeRangeError(lo, hi, names=("start", "end"), what="schedule window")
        due = and_(
            _ENABLED,
            Schedule.next_run_at <= hi,
            or_(Schedule.paused_until.is_(None), Schedule.paused_until <= hi),
        )
        held = and_(
            Schedule.paused_until.is_not(None), Schedule.paused_until > Schedule.next_run_at
        )
        run_at = case((held, Schedule.paused_until), else_=Schedule.next_run_at)
        total = int(self.session.scalar(select(func.count()).select_from(_TABLE).where(due)) or 0)
        stmt = (
            select(*_rows.raw_columns(_TABLE))
            .where(due)
            .order_by(run_at, code_points(Schedule.name), Schedule.id)
            .limit(limit)
        )
        runs: builtins.list[UpcomingRun] = []
        skipped: builtins.list[SkippedRow] = []
        for row in self._raw(stmt):
            try:
                record = _decode(row)
            except InvalidInputError as exc:
                skipped.append(SkippedRow(id=_rows.row_id(row), reason=str(exc)))
                log.warning("schedule.skipped_row", id=_rows.row_id(row), reason=str(exc))
                continue
            when = record.next_run_at
            if record.paused_until is not None and record.paused_until > when:
                when = record.paused_until
            runs.append(UpcomingRun(schedule=record, run_at=when, overdue=when < lo))
        total -= len(skipped)
        return ScheduleListing(
            runs=runs,
            total=total,
            more=total - len(runs),
            skipped_bad_rows=len(skipped),
            skipped=skipped[: _rows.SKIPPED_SHOWN],
        )

    # --- running ------------------------------------------------------------------------------

    def _take_write_lock(self) -> None:
        # A deferred SQLite transaction that reads and then writes fails at once ("database is
        # locked", without waiting for busy_timeout) when another connection committed in
        # between. Writing first takes the write lock up front, so concurrent pollers queue on
        # busy_timeout instead. Correctness does not depend on this: the compare-and-set does.
        if self.session.get_bind().dialect.name == "sqlite":
            self.session.execute(text("UPDATE memory_schedules SET enabled = enabled WHERE 0"))

    def claim_due(
        self,
        now: datetime | None = None,
        *,
        limit: int = 50,
        policy: MissedRunPolicy = MissedRunPolicy.SKIP,
    ) -> builtins.list[Claim]:
        """Claim the schedules due at ``now`` (enabled, ``next_run_at <= now``, not paused),
        oldest first, and return one :class:`Claim` per occurrence this caller must run.

        Each claim is a compare-and-set, ``UPDATE ... SET next_run_at = <next>, last_run_at =
        <now> [, enabled = 0 for a one-shot] WHERE id = ? AND next_run_at = <seen> AND
        enabled = 1``; the occurrence is ours only when exactly one row changed. Two processes
        polling at once therefore never both fire an occurrence. The next run follows
        ``policy`` (default: skip missed occurrences, stay on the schedule's grid; see
        :class:`~philont.domain.recurrence.MissedRunPolicy`). A row whose expression cannot be
        read is treated as a one-shot, as Philont does. Claiming before running means a crash
        mid-run loses that run rather than repeating it (at most once).
        """
        at = self._now() if now is None else _aware(now, "now")
        policy = inputs.check(MissedRunPolicy, policy, "policy")
        self._take_write_lock()
        rows = self._raw(
            select(*_rows.raw_columns(_TABLE))
            .where(
                _ENABLED,
                Schedule.next_run_at <= at,
                or_(Schedule.paused_until.is_(None), Schedule.paused_until <= at),
            )
            .order_by(Schedule.next_run_at, Schedule.id)
            .limit(limit)
        )
        claims: builtins.list[Claim] = []
        for raw in rows:
            try:
                record = _decode(raw)
            except InvalidInputError as exc:
                self._disable_unreadable(raw, str(exc))
                continue
            schedule_id, seen, expr = record.id, record.next_run_at, record.cron_expr
            try:
                rec = recurrence.parse_schedule_expr(expr)
            except InvalidInputError:
                log.warning("schedule.unreadable_expression", id=schedule_id, cron_expr=expr)
                rec = recurrence.ONE_SHOT
            following = self._following(schedule_id, rec, seen, at, policy)
            values: dict[str, Any] = {"last_run_at": at}
            if following is None:
                values["enabled"] = False
            else:
                values["next_run_at"] = following
            result = self.session.execute(
                update(Schedule)
                .where(Schedule.id == schedule_id, Schedule.next_run_at == seen, _ENABLED)
                .values(**values)
                .execution_options(synchronize_session=False)
            )
            if _rowcount(result) != 1:
                log.info("schedule.claim_lost", id=schedule_id, occurrence=seen)
                continue
            row = self.session.get(Schedule, schedule_id, populate_existing=True)
            assert row is not None
            claims.append(Claim(schedule=_record(row), occurrence=seen, claimed_at=at))
            log.info("schedule.claimed", id=schedule_id, occurrence=seen, next_run_at=following)
        return claims

    @staticmethod
    def _following(
        schedule_id: str,
        rec: recurrence.Recurrence,
        seen: datetime,
        at: datetime,
        policy: MissedRunPolicy,
    ) -> datetime | None:
        """The run after the one being claimed; None ends the schedule. A schedule whose next
        run cannot be computed (past the supported calendar, say) runs this once and stops,
        rather than failing the whole poll and blocking every other due schedule."""
        try:
            return recurrence.next_after(rec, due=seen, now=at, policy=policy)
        except PhilontError as exc:
            log.warning("schedule.no_next_run", id=schedule_id, reason=str(exc))
            return None

    def _disable_unreadable(self, row: _rows.Row, reason: str) -> None:
        # A due row nobody can read would be selected again at every poll (and, soonest
        # first, crowd out readable ones): stop it, keep it for inspection, say so.
        row_id = _rows.row_id(row)
        log.warning("schedule.unreadable_row_disabled", id=row_id, reason=reason)
        if row_id is not None:
            self.session.execute(
                update(Schedule)
                .where(Schedule.id == row_id)
                .values(enabled=False)
                .execution_options(synchronize_session=False)
            )

    def _row(self, schedule_id: object) -> Schedule:
        row = self.session.get(
            Schedule, inputs.check(planning.ScheduleId, schedule_id, "schedule_id")
        )
        if row is None:
            no_schedule_id(self, schedule_id)
        return row

    @finds(schedule_id=planning.ScheduleId, absent=no_outcome_schedule)
    def record_outcome(
        self,
        schedule_id: str,
        *,
        ok: bool,
        fired_at: datetime,
        duration_ms: int,
        summary: str,
        http_ok: int = 0,
        http_fail: int = 0,
        http_status: Mapping[str, int] | None = None,
        failure_signatures: Sequence[str] | None = None,
        threshold: int = FAILURE_THRESHOLD,
        pause: timedelta = PAUSE,
    ) -> ScheduleRecord:
        """Record what a run produced and feed the circuit breaker; returns the schedule.

        Writes a ``schedule_outcomes`` row keyed, as Philont keys it, by the schedule's *name*
        (its prefix builder reads ``schedule_id = <name>``; the history also survives a
        same-name :meth:`replace`). The label follows Philont: ``failed`` when the run failed
        (``ok`` false) or every HTTP call failed, ``partial`` when some did, else ``ok``.

        Breaker (``ok`` decides): a success resets ``consecutive_failures`` and lifts any pause;
        a failure increments the counter atomically in SQL and, once it reaches ``threshold``,
        pauses the schedule until ``fired_at + pause``, unless a pause is already in force at
        ``fired_at``: further failures while paused do not extend it (the original pushed it
        forward on every failure). After the pause the schedule fires once; if that fails too,
        it is paused again.
        """
        run = checked_outcome(
            ok=ok,
            fired_at=fired_at,
            duration_ms=duration_ms,
            summary=summary,
            http_ok=http_ok,
            http_fail=http_fail,
            http_status=http_status,
            failure_signatures=failure_signatures,
            threshold=threshold,
            pause=pause,
        )
        row = self._row(schedule_id)
        self.session.add(outcome_row(run, row.name, self._now()))
        fired = run.fired_at
        was_paused = row.paused_until is not None and row.paused_until > fired
        self.session.execute(
            update(Schedule)
            .where(Schedule.id == row.id)
            .values(**breaker(run))
            .execution_options(synchronize_session=False)
        )
        self.session.flush()
        fresh = self.session.get(Schedule, row.id, populate_existing=True)
        assert fresh is not None
        log.info(
            "schedule.outcome",
            id=fresh.id,
            outcome=run.status.value,
            consecutive_failures=fresh.consecutive_failures,
        )
        if not ok and not was_paused and fresh.paused_until is not None:
            log.warning(
                "schedule.auto_paused",
                id=fresh.id,
                name=fresh.name,
                paused_until=fresh.paused_until,
                consecutive_failures=fresh.consecutive_failures,
            )
        return _record(fresh)

    @finds(schedule_id=planning.ScheduleId)
    def outcomes(self, schedule_id: str, limit: int = 5) -> builtins.list[ScheduleOutcomeRecord]:
        """The newest ``limit`` outcomes of a schedule, newest first (by when it fired, then
        when it was recorded; those of one millisecond by id, the same order on every call).

        ``schedule_id`` is a schedule's id (its name's history is returned, including runs of
        schedules it replaced); a value that is no schedule's id is read as the key itself, so
        rows Philont wrote under a name, or of a deleted schedule, stay reachable.
        """
        key = inputs.check(planning.ScheduleId, schedule_id, "schedule_id")
        row = self.session.get(Schedule, key)
        name = key if row is None else row.name
        stmt = (
            select(ScheduleOutcome)
            .where(ScheduleOutcome.schedule_id == name)
            .order_by(
                ScheduleOutcome.fired_at.desc(),
                ScheduleOutcome.created_at.desc(),
                ScheduleOutcome.id.desc(),  # runs fired and recorded in one millisecond
            )
            .limit(limit)
        )
        return [_outcome_record(r) for r in self.session.scalars(stmt)]


def _rowcount(result: object) -> int:
    return result.rowcount if isinstance(result, CursorResult) else 0
