"""Messages that arrive late: stamped at or before the consolidator's cursor after the cursor
moved past their time (a clock stepped back, a process whose clock runs behind another's, a
host appending what was said earlier with ``at=``, an import). The cursor is a time (Philont's
``system.last_consolidated_ts``), so such a message was never in any batch, and the consolidator
never learned from it.

Next to the cursor ``C`` the consolidator keeps a watermark ``H``, a message id: every message
with ``time <= C`` and ``id <= H`` has been in a batch, and none with ``time <= C`` and
``id > H`` has. A message with ``time <= C`` and ``id > H`` is late. ``H`` is written with each
batch into its row's report (``seen_id``), no column added. Late messages are learned from in a
batch of their own before the batches after the cursor (at most ``batch_size`` of them, by id;
the cursor stays; ``H`` after it is the last id it took). A batch after the cursor reads the
newest id first and then, in the same snapshot, its messages up to that id and those that came
late since it was claimed; ``H`` after it is that id. Tracking begins at the first batch of a
database that has no watermark yet (one consolidated before, by Philont or an older philont):
what came late before is not known.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db.models import LearningBatch, RawMessage
from philont.db.types import from_epoch_ms
from philont.learning.window import Turn, Window, _turns, load_after

__all__ = ["SEEN_KEY", "Late", "late_messages", "load_batch", "load_late", "newest_id", "watermark"]

SEEN_KEY = "seen_id"
"""The key of a batch row's report that holds the watermark after it."""


@dataclass(frozen=True)
class Late:
    """A batch of late messages: those with ``time <= cursor`` and ``after < id <= until``."""

    after: int
    until: int
    count: int


def _seen(report: Any) -> int | None:
    value = report.get(SEEN_KEY) if isinstance(report, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def watermark(session: Session, cursor: int) -> int | None:
    """``H`` for the cursor ``cursor``: from the row of the batch after the cursor when a batch
    of late messages was done there (its report stays while the row is claimed again, failed,
    or retried), else from the batch that moved the cursor there; None when none recorded one."""
    after = session.scalar(
        select(LearningBatch.report)
        .where(LearningBatch.after_ts == cursor)
        .execution_options(populate_existing=True)
    )
    seen = _seen(after)
    if seen is not None:
        return seen
    reports = session.scalars(
        select(LearningBatch.report)
        .where(LearningBatch.status == "done", LearningBatch.until_ts == cursor)
        .order_by(LearningBatch.id.desc())
        .execution_options(populate_existing=True)
    )
    return next((s for s in map(_seen, reports) if s is not None), None)


def newest_id(session: Session, *, until_ms: int | None = None) -> int:
    """The newest message id (of those stamped no later than ``until_ms``), 0 for none."""
    if until_ms is None:
        return int(session.scalar(select(func.max(RawMessage.id))) or 0)
    newest = session.scalar(  # back from the newest id: the messages there are near the cursor
        select(RawMessage.id)
        .where(RawMessage.timestamp <= from_epoch_ms(until_ms))
        .order_by(RawMessage.id.desc())
        .limit(1)
    )
    return int(newest or 0)


def late_messages(session: Session, cursor: int, seen: int, limit: int) -> Late | None:
    """The next batch of late messages (the first ``limit`` by id), or None."""
    ids = list(
        session.scalars(
            select(RawMessage.id)
            .where(RawMessage.id > seen, RawMessage.timestamp <= from_epoch_ms(cursor))
            .order_by(RawMessage.id)
            .limit(limit)
        )
    )
    return Late(seen, ids[-1], len(ids)) if ids else None


def _late_turns(session: Session, cursor: int, after_id: int, until_id: int) -> list[Turn]:
    turns, _ = _turns(
        session,
        [
            RawMessage.id > after_id,
            RawMessage.id <= until_id,
            RawMessage.timestamp <= from_epoch_ms(cursor),
        ],
        10**9,
    )
    return turns


def load_late(session: Session, late: Late, cursor: int) -> tuple[Window, int]:
    """A batch of late messages as a window, oldest first (no tool calls: the calls of their
    time were in the batches that read it), and ``H`` after it."""
    turns = _late_turns(session, cursor, late.after, late.until)
    tag = f"late:{late.after + 1}-{late.until}"
    return Window(tag, tuple(turns), (), None, from_epoch_ms(cursor)), late.until


def load_batch(session: Session, after: int, until: int, seen: int) -> tuple[Window, int]:
    """The batch after the cursor ``after`` up to ``until`` (epoch ms) as a window, with the
    messages that came late since it was claimed (``time <= after``, ``id > seen``), and ``H``
    after it: the newest id, read first, in the same snapshot (on SQLite one unit of work is
    one snapshot); every message the window holds is no newer."""
    newest = newest_id(session)
    window = load_after(session, after, until, max_id=newest)
    late = _late_turns(session, after, seen, newest)
    if late:
        turns = sorted((*late, *window.turns), key=lambda t: (t.timestamp, t.id))
        window = dataclasses.replace(window, turns=tuple(turns))
    return window, max(seen, newest)
