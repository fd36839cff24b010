"""Where the consolidator's next batch ends: at most ``limit`` messages after the cursor, never
inside a millisecond (:func:`~philont.domain.consolidation.batch_end`) and, when the limit cuts
it, never inside a run (:func:`~philont.domain.consolidation.whole_runs_end`): the judge and the
reflection see each request with all that was done about it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db.models import Action, RawMessage
from philont.db.types import from_epoch_ms, to_epoch_ms
from philont.domain.consolidation import Step, batch_end, last_calls, whole_runs_end
from philont.domain.kinds import Role

__all__ = ["Bounds", "next_batch"]

_CALLS_PER_FETCH = 2_000


@dataclass(frozen=True)
class Bounds:
    """The next batch: its last millisecond (``until``, epoch ms), its messages, and whether
    its limit ended it (``cut``: more messages are waiting, so it is not too small to take)."""

    until: int
    count: int
    cut: bool


def next_batch(session: Session, after: int, now: datetime, limit: int) -> Bounds:
    """The batch of the messages after ``after`` (epoch ms) stamped no later than ``now``
    (there is at least one)."""
    lo = from_epoch_ms(after)
    stamps = [
        to_epoch_ms(ts)
        for ts in session.scalars(
            select(RawMessage.timestamp)
            .where(RawMessage.timestamp > lo, RawMessage.timestamp <= now)
            .order_by(RawMessage.timestamp)
            .limit(limit + 1)
        )
    ]
    until = batch_end(stamps, limit)
    assert until is not None  # there is a message
    cut = stamps[-1] > until
    if cut:
        until = whole_runs_end(_steps(session, lo, from_epoch_ms(until), now), until, stamps[0])
    count = session.scalar(
        select(func.count())
        .select_from(RawMessage)
        .where(RawMessage.timestamp > lo, RawMessage.timestamp <= from_epoch_ms(until))
    )
    return Bounds(until, int(count or 0), cut)


def _steps(session: Session, lo: datetime, hi: datetime, now: datetime) -> list[Step]:
    """The messages and tool calls with ``lo < time <= hi``, and the first of each after
    ``hi`` (until ``now``) of every session with a user turn among them (whether its run goes
    on past ``hi``)."""
    messages = session.execute(
        select(RawMessage.timestamp, RawMessage.session_id, RawMessage.role).where(
            RawMessage.timestamp > lo, RawMessage.timestamp <= hi
        )
    ).all()
    steps = [Step(to_epoch_ms(at), sid, role == Role.USER) for at, sid, role in messages]
    calls = session.execute(  # read in parts, only the last of each gap kept (last_calls)
        select(Action.timestamp, Action.session_id)
        .where(Action.timestamp > lo, Action.timestamp <= hi)
        .execution_options(yield_per=_CALLS_PER_FETCH)
    )
    steps += last_calls(steps, ((to_epoch_ms(at), sid) for at, sid in calls))
    for sid in sorted({step.session for step in steps if step.user}):
        steps += _next_steps(session, sid, hi, now)
    return steps


def _next_steps(session: Session, sid: str, hi: datetime, now: datetime) -> list[Step]:
    """The session's first message and first tool call after ``hi`` (until ``now``)."""
    message = session.execute(
        select(RawMessage.timestamp, RawMessage.role)
        .where(RawMessage.session_id == sid, RawMessage.timestamp > hi, RawMessage.timestamp <= now)
        .order_by(RawMessage.timestamp, RawMessage.role != Role.USER)  # a turn first, as runs
        .limit(1)
    ).first()
    call = session.scalar(
        select(func.min(Action.timestamp)).where(
            Action.session_id == sid, Action.timestamp > hi, Action.timestamp <= now
        )
    )
    found = [] if message is None else [Step(to_epoch_ms(message[0]), sid, message[1] == Role.USER)]
    return found if call is None else [*found, Step(to_epoch_ms(call), sid)]
