"""Outcome reflection: credit or blame retrieved skills by what the agent did right after.

This fixes Q-K2 (spec §10, §17.3): Philont's outcome attribution only read the ``linked_skill``
tag of action rows, which production never set, so no skill was ever credited or blamed from
evidence. Here the tag is derived: :func:`philont.domain.attribution.attribute` finds, for every
successful ``use_skill`` call (a *retrieval*), the actions that followed it in its session until
the next retrieval, the next user turn, ``window.max_duration`` or ``window.max_actions``. A
window whose actions all succeeded records ONE success for the skill, a window with any failed
action ONE failure (via :meth:`SkillService.record_outcome`, ``at`` = the time of the last
attributed action), and an empty window nothing. A call refused for its arguments
(``invalid_arguments``, ``invalid_json``, any ``InvalidInputError`` code) is neutral, as a
refused ``use_skill`` is: the caller's malformed call, not the recipe failing (docs/learning.md).

Idempotency, without changing Philont's schema: a retrieval is *processed* when its own
``memory_actions`` row (the ``use_skill`` call) has ``linked_skill`` set to the skill name. A run
only looks at unprocessed retrievals, marks each one it decides on (claiming it with
``UPDATE ... WHERE linked_skill IS NULL``, so two concurrent runs cannot both credit it), and sets
``linked_skill`` on the attributed actions too. Decided means:

* credited (success or failure);
* its window closed with no action in it (``no_actions``), its skill no longer exists
  (``unknown_skill``), or the skill of that name now was made after the retrieval, so the one
  fetched was deleted and the name reused (``remade``; told by the skill's ``created_at``
  against the retrieval's time, so hosts sharing a database need clocks that agree to within
  the time between making a skill and first fetching it): marked, reported in ``skipped``,
  nothing recorded.

A retrieval whose window is still open is *pending*: left unmarked, reported, and looked at again
by the next run. A window is open when, at ``now`` (the clock), all of these hold: the deadline
has not passed (``now - retrieval time <= window.max_duration``), no user turn of the session came
strictly after the retrieval, fewer than ``window.max_actions`` actions were attributed, and no
later action of the session ended the window (every later action was attributed or neutral: a
refused ``use_skill`` call or a call refused for its arguments). Otherwise more actions could
still join the window and change its outcome.

A run reads the log only from its earliest unprocessed retrieval in scope, so once everything is
decided a run costs one query over the ``use_skill`` rows. :meth:`ReflectorService.due` reads
as a run does and counts what it would decide now, writing nothing (the consolidator's idle
tick asks it before it takes the learning lock). (A successful ``use_skill`` row
without a usable ``params.name``, or naming what no skill can be named, is never a retrieval
and never marked; the search for the
earliest passes over it, it changes no outcome. It made every run read the log from it on.)

Caveat: Philont schema-31 software sharing the file would read the ``linked_skill`` tags we set
if its own reflector covered the same time range afterwards (its ``recordLinkedSkillOutcomes``,
spec §10).
"""

from __future__ import annotations

import bisect
import contextlib
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Final

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.orm import InstrumentedAttribute

from philont.db.models import Action, RawMessage
from philont.domain.attribution import (
    ActionEvent,
    AttributionWindow,
    Credit,
    UserTurn,
    attribute,
    failure_code,
    is_neutral,
    retrieved_skill,
)
from philont.domain.kinds import Role
from philont.domain.maturity import Outcome
from philont.domain.timepolicy import clamp
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.finds import PASS_ON, finds
from philont.log import get_logger
from philont.schemas.reflector import (
    CreditRecord,
    ReflectionReport,
    SkippedRetrieval,
    SkipReason,
)
from philont.services.base import Service

if TYPE_CHECKING:
    from philont.learning.config import LearningConfig
    from philont.llm.base import ModelClient
    from philont.schemas.learning import SkillReflectionReport

__all__ = ["DEFAULT_WINDOW", "ReflectorService"]

log = get_logger(__name__)

DEFAULT_WINDOW: Final = AttributionWindow()
"""20 actions, 30 minutes, retrieval tool ``use_skill``."""
_SCAN: Final = 100
"""Rows fetched at a time while looking for the first unprocessed retrieval."""


def _aware_or_none(value: object, field: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInputError.of(field, f"must be a timezone-aware datetime, got {value!r}")
    return value


def _scope(
    session_col: InstrumentedAttribute[str],
    time_col: InstrumentedAttribute[datetime],
    session_id: str | None,
    start: datetime | None,
    end: datetime | None,
) -> list[ColumnElement[bool]]:
    """WHERE clauses: one session (if given), ``start <= time <= end`` (open ends allowed)."""
    clauses: list[ColumnElement[bool]] = []
    if session_id is not None:
        clauses.append(session_col == session_id)
    if start is not None:
        clauses.append(time_col >= start)
    if end is not None:
        clauses.append(time_col <= end)
    return clauses


@dataclass
class _Timeline:
    """The loaded part of the log, indexed for the pending check."""

    events: list[ActionEvent]
    turns: list[UserTurn]
    linked: dict[int, str | None]
    by_id: dict[int, ActionEvent] = field(init=False)
    by_session: dict[str, list[ActionEvent]] = field(init=False)
    position: dict[int, int] = field(init=False)
    turn_stamps: dict[str, list[datetime]] = field(init=False)

    def __post_init__(self) -> None:
        self.by_id = {event.id: event for event in self.events}
        self.by_session = defaultdict(list)
        for event in self.events:  # loaded in (timestamp, id) order
            self.by_session[event.session_id].append(event)
        self.position = {
            event.id: index
            for session_events in self.by_session.values()
            for index, event in enumerate(session_events)
        }
        self.turn_stamps = defaultdict(list)
        for turn in self.turns:
            self.turn_stamps[turn.session_id].append(turn.timestamp)
        for stamps in self.turn_stamps.values():
            stamps.sort()

    def following(self, event: ActionEvent) -> list[ActionEvent]:
        return self.by_session[event.session_id][self.position[event.id] + 1 :]

    def next_turn_after(self, event: ActionEvent) -> datetime | None:
        stamps = self.turn_stamps.get(event.session_id, [])
        index = bisect.bisect_right(stamps, event.timestamp)
        return stamps[index] if index < len(stamps) else None


def _window_is_open(
    retrieval: ActionEvent,
    credit: Credit,
    timeline: _Timeline,
    window: AttributionWindow,
    now: datetime,
) -> bool:
    """Whether more actions could still join the retrieval's window (see the module docstring):
    the deadline has not passed, no user turn of its session came strictly after it, and every
    later action of its session (in ``(timestamp, id)`` order) was attributed or neutral."""
    if now - retrieval.timestamp > window.max_duration:
        return False
    if timeline.next_turn_after(retrieval) is not None:
        return False
    if len(credit.attributed_action_ids) >= window.max_actions:
        return False
    attributed = set(credit.attributed_action_ids)
    return all(
        action.id in attributed or is_neutral(action, window)
        for action in timeline.following(retrieval)
    )


def _run_scope(
    session_id: str | None, since: datetime | None, until: datetime | None, window: object
) -> tuple[datetime | None, datetime | None]:
    """:meth:`ReflectorService.run`'s scope, checked (``since`` and ``until`` aware)."""
    if session_id is not None and (not isinstance(session_id, str) or not session_id.strip()):
        raise InvalidInputError.of("session_id", f"must be a non-blank string, got {session_id!r}")
    since = _aware_or_none(since, "since")
    until = _aware_or_none(until, "until")
    if since is not None and until is not None and until < since:
        raise InvalidTimeRangeError(since, until, names=("since", "until"), what="reflection scope")
    if not isinstance(window, AttributionWindow):
        raise InvalidInputError.of("window", f"must be an AttributionWindow, got {window!r}")
    return since, until


class ReflectorService(Service):
    """Turns the action log into skill outcomes (flushes, never commits); :meth:`reflect` turns
    a conversation into skills with a model (the self-learning loop, :mod:`philont.learning`)."""

    @finds("session_id", absent=PASS_ON)  # the Learner answers for it
    def reflect(
        self,
        model: ModelClient,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        config: LearningConfig | None = None,
    ) -> SkillReflectionReport:
        """Ask ``model`` for the skills and anti-patterns of one session (or the time range
        ``since <= t <= until``) and write them by the learning rules: what was created,
        updated, merged, left unchanged, refused or rejected, each with its reason, and the
        tokens used. A proposal never overwrites a playbook, a stable skill, a recipe or a
        skill from disk or a package."""
        from philont.learning import Learner

        return Learner(self.mem, model, config=config).reflect(
            session_id=session_id, since=since, until=until
        )

    @finds("session_id", absent=lambda service, **scope: service._nothing_to_run(**scope))
    def run(
        self,
        *,
        session_id: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        window: AttributionWindow = DEFAULT_WINDOW,
    ) -> ReflectionReport:
        """Credit or blame the skills retrieved in scope, each retrieval at most once.

        Scope: retrievals of ``session_id`` (default: every session) with ``since <= time <=
        until`` (bounds inclusive, default open). The log is read from the earliest
        unprocessed retrieval in scope (nothing at all when there is none) up to
        ``until + window.max_duration``, so a window is judged whole. Running again credits
        nothing new; pending retrievals are retried. Raises :class:`InvalidInputError` /
        :class:`InvalidTimeRangeError` for a bad scope, before anything is written.
        """
        since, until = _run_scope(session_id, since, until, window)
        now = self.clock()

        credited: list[CreditRecord] = []
        skipped: list[SkippedRetrieval] = []
        for retrieval, credit, timeline in self._unprocessed(session_id, since, until, window):
            decided = self._decide(retrieval, credit, timeline, window, now)
            if isinstance(decided, CreditRecord):
                credited.append(decided)
            elif decided is not None:
                skipped.append(decided)

        report = ReflectionReport(
            credited=credited,
            skipped=skipped,
            successes=sum(1 for c in credited if c.outcome == Outcome.SUCCESS),
            failures=sum(1 for c in credited if c.outcome == Outcome.FAILURE),
            pending=sum(1 for s in skipped if s.reason == SkipReason.PENDING),
        )
        log.info(
            "reflector.run",
            session_id=session_id,
            successes=report.successes,
            failures=report.failures,
            skipped=len(skipped),
            pending=report.pending,
        )
        return report

    def due(self, *, window: AttributionWindow = DEFAULT_WINDOW) -> int:
        """How many retrievals :meth:`run` (every session, no bounds) would decide now: the
        unprocessed ones whose window has closed. It only reads (no lock, nothing written),
        as :meth:`run` reads: one query when every retrieval is decided. The consolidator
        asks it before each idle tick's run, which takes the learning lock and a writing
        unit of work only when this is not 0."""
        if not isinstance(window, AttributionWindow):
            raise InvalidInputError.of("window", f"must be an AttributionWindow, got {window!r}")
        now = self.clock()
        return sum(
            not _window_is_open(retrieval, credit, timeline, window, now)
            for retrieval, credit, timeline in self._unprocessed(None, None, None, window)
        )

    def _unprocessed(
        self,
        session_id: str | None,
        since: datetime | None,
        until: datetime | None,
        window: AttributionWindow,
    ) -> Iterator[tuple[ActionEvent, Credit, _Timeline]]:
        """Each unprocessed retrieval in scope with its credit and the loaded log: read from
        the earliest of them (nothing at all when there is none) up to ``until +
        window.max_duration``, so a window is judged whole."""
        start = self._first_unprocessed_retrieval(session_id, since, until, window)
        if start is None:
            return
        # the last time there is when it reaches past it (an OverflowError, untyped)
        horizon = None if until is None else clamp(until, window.max_duration)
        timeline = self._load(session_id, start, horizon)
        for credit in attribute(timeline.events, timeline.turns, window):
            retrieval = timeline.by_id[credit.retrieval_action_id]
            if timeline.linked[retrieval.id] is not None:
                continue  # processed by an earlier run
            if until is not None and retrieval.timestamp > until:
                continue  # read only as context for an in-scope window
            yield retrieval, credit, timeline

    def _nothing_to_run(
        self,
        *,
        session_id: str,
        since: datetime | None = None,
        until: datetime | None = None,
        window: object = DEFAULT_WINDOW,
    ) -> ReflectionReport:
        """:meth:`run` for a session id this database cannot hold: its scope checked, then
        nothing to credit (no retrieval can be of that session)."""
        _run_scope(session_id, since, until, window)
        return ReflectionReport(credited=[], skipped=[], successes=0, failures=0, pending=0)

    def _first_unprocessed_retrieval(
        self,
        session_id: str | None,
        since: datetime | None,
        until: datetime | None,
        window: AttributionWindow,
    ) -> datetime | None:
        """When the earliest unprocessed retrieval in scope happened (None: nothing to do).

        A ``use_skill`` row naming no skill is never a retrieval, so never marked: it is
        passed over (it ends no window before it). Taken as the start, it made every run read
        the log from it to the end, and the consolidator runs the reflector every tick."""
        stmt = (
            select(Action.timestamp, Action.params)
            .where(
                Action.tool_name == window.retrieval_tool,
                Action.success == True,  # noqa: E712 - SQL comparison (IS 1 is SQLite-only)
                Action.linked_skill.is_(None),
                *_scope(Action.session_id, Action.timestamp, session_id, since, until),
            )
            .order_by(Action.timestamp, Action.id)
            .execution_options(yield_per=_SCAN)
        )
        with contextlib.closing(self.session.execute(stmt)) as rows:
            return next((at for at, params in rows if retrieved_skill(params) is not None), None)

    def _load(self, session_id: str | None, start: datetime, end: datetime | None) -> _Timeline:
        rows = self.session.scalars(
            select(Action)
            .where(*_scope(Action.session_id, Action.timestamp, session_id, start, end))
            .order_by(Action.timestamp, Action.id)
            .execution_options(populate_existing=True)
        ).all()
        turn_rows = self.session.execute(
            select(RawMessage.session_id, RawMessage.timestamp).where(
                RawMessage.role == Role.USER,
                *_scope(RawMessage.session_id, RawMessage.timestamp, session_id, start, end),
            )
        )
        return _Timeline(
            events=[
                ActionEvent(
                    id=row.id,
                    session_id=row.session_id,
                    tool_name=row.tool_name,
                    success=row.success,
                    timestamp=row.timestamp,
                    params=row.params if isinstance(row.params, dict) else None,
                    error_code=None if row.success else failure_code(row.result),
                )
                for row in rows
            ],
            turns=[UserTurn(session_id=sid, timestamp=ts) for sid, ts in turn_rows],
            linked={row.id: row.linked_skill for row in rows},
        )

    def _decide(
        self,
        retrieval: ActionEvent,
        credit: Credit,
        timeline: _Timeline,
        window: AttributionWindow,
        now: datetime,
    ) -> CreditRecord | SkippedRetrieval | None:
        """Credit, skip or leave pending one unprocessed retrieval; None if another run won."""
        name = credit.skill_name
        if _window_is_open(retrieval, credit, timeline, window, now):
            return SkippedRetrieval(
                skill=name,
                retrieval_action_id=retrieval.id,
                reason=SkipReason.PENDING,
                detail="the window is still open; retried next run",
            )
        if not self._claim(retrieval.id, name):
            return None  # a concurrent run decided it first
        if credit.outcome is None:
            return SkippedRetrieval(
                skill=name,
                retrieval_action_id=retrieval.id,
                reason=SkipReason.NO_ACTIONS,
                detail=credit.reason,
            )
        before = self.mem.skills.get(name, record_access=False)
        if before is None:
            return SkippedRetrieval(
                skill=name,
                retrieval_action_id=retrieval.id,
                reason=SkipReason.UNKNOWN_SKILL,
                detail=f"no skill named {name!r}; nothing credited",
            )
        if before.created_at > retrieval.timestamp:
            return SkippedRetrieval(
                skill=name,
                retrieval_action_id=retrieval.id,
                reason=SkipReason.REMADE,
                detail=(
                    f"the skill named {name!r} was made at {before.created_at.isoformat()}, "
                    f"after this retrieval at {retrieval.timestamp.isoformat()}: the one "
                    "fetched was deleted since; nothing credited"
                ),
            )
        self._link(credit.attributed_action_ids, name)
        at = max(timeline.by_id[i].timestamp for i in credit.attributed_action_ids)
        after = self.mem.skills.record_outcome(
            name,
            success=credit.outcome == Outcome.SUCCESS,
            at=at,
            retrieved_at=timeline.by_id[credit.retrieval_action_id].timestamp,
        )
        log.info(
            "reflector.credited",
            skill=name,
            outcome=credit.outcome.value,
            retrieval_action_id=retrieval.id,
            attributed=len(credit.attributed_action_ids),
        )
        return CreditRecord(
            skill=name,
            outcome=credit.outcome,
            retrieval_action_id=retrieval.id,
            attributed_action_ids=list(credit.attributed_action_ids),
            reason=credit.reason,
            grade_before=before.grade,
            grade_after=after.grade,
        )

    def _claim(self, retrieval_id: int, skill_name: str) -> bool:
        """Mark a retrieval processed unless someone already did; True if we marked it."""
        stmt = (
            update(Action)
            .where(Action.id == retrieval_id, Action.linked_skill.is_(None))
            .values(linked_skill=skill_name)
            .returning(Action.id)
            .execution_options(synchronize_session=False)
        )
        return self.session.execute(stmt).scalar_one_or_none() is not None

    def _link(self, action_ids: Sequence[int], skill_name: str) -> None:
        """Tag the attributed actions with the skill (rows already tagged keep their tag)."""
        self.session.execute(
            update(Action)
            .where(Action.id.in_(action_ids), Action.linked_skill.is_(None))
            .values(linked_skill=skill_name)
            .execution_options(synchronize_session=False)
        )
