"""Messages and tool calls that arrive late: stamped at or before the consolidator's cursor
after the cursor moved past their time (a clock stepped back, a process whose clock runs behind
another's, a host appending what was said or done earlier with ``at=``, an import). The cursor
is a time (Philont's ``system.last_consolidated_ts``), so such a row was never in any batch,
and the consolidator never learned from it: a late message was never read, a late tool call
never judged nor reflected on.

Next to the cursor ``C`` the consolidator keeps two watermarks, a message id ``H`` and a tool
call id ``A``: every message with ``time <= C`` and ``id <= H`` has been in a batch, and none
with ``time <= C`` and ``id > H`` has; the same for tool calls and ``A``. A row with ``time <=
C`` and an id over its watermark is late. Both are written with each batch into its row's
report (``seen_id``, ``seen_action_id``), no column added. Late rows are learned from in a
batch of their own before the batches after the cursor (the cursor stays): at most
``batch_size`` late messages by id and at most ``batch_size`` late tool calls by id; while more
late messages wait than the batch takes, only the late calls stamped before the next of them
(so a request and the calls made about it until the next request, stepped back together, share
a batch: its run is judged whole). ``H`` and ``A`` after it are the last ids it took. A batch
after the cursor reads the newest ids first and then, in the same snapshot, its rows up to
those ids and those that came late since it was claimed; ``H`` and ``A`` after it are those
ids, ``H`` no later than the ``batch_size``-th message that came after its claim (late, or
stamped in its span): the messages after it are late rows for the next batches. Tracking
begins at the first batch of a database that has no watermark yet (one consolidated before, by
Philont or an older philont): what came late before is not known.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from philont.db.models import Action, LearningBatch, RawMessage
from philont.db.types import from_epoch_ms
from philont.learning.window import (
    Left,
    ToolCall,
    Turn,
    Window,
    load_after,
    load_rows,
)

__all__ = [
    "CALLS_KEY",
    "SEEN_KEY",
    "Late",
    "Seen",
    "late_rows",
    "load_batch",
    "load_late",
    "newest_id",
    "watermarks",
]

SEEN_KEY = "seen_id"
"""The key of a batch row's report that holds the message watermark after it."""
CALLS_KEY = "seen_action_id"
"""The key of a batch row's report that holds the tool call watermark after it."""


@dataclass(frozen=True)
class Seen:
    """The watermarks: message id ``messages`` (``H``), tool call id ``calls`` (``A``)."""

    messages: int = 0
    calls: int = 0


@dataclass(frozen=True)
class Late:
    """A batch of late rows (``time <= cursor``): the messages with ``seen.messages < id <=
    until.messages`` (``count`` of them) and the tool calls with ``seen.calls < id <=
    until.calls``."""

    seen: Seen
    until: Seen
    count: int


_MAX_ID: Final = 2**63 - 1


def _seen(report: Any, key: str) -> int | None:
    """A watermark of a batch row's report; one past what an id column holds (a row edited by
    hand) is read as the largest id (as it was, it failed every claim with an OverflowError)."""
    value = report.get(key) if isinstance(report, dict) else None
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    return min(max(value, 0), _MAX_ID)


def watermarks(session: Session, cursor: int) -> tuple[int | None, int | None]:
    """``H`` and ``A`` for the cursor ``cursor``: each from the row of the batch after the
    cursor when a batch of late rows was done there (its report stays while the row is claimed
    again, failed, or retried), else from the batch that moved the cursor there; None when
    none recorded one."""
    after = session.scalar(
        select(LearningBatch.report)
        .where(LearningBatch.after_ts == cursor)
        .execution_options(populate_existing=True)
    )
    messages, calls = _seen(after, SEEN_KEY), _seen(after, CALLS_KEY)
    if messages is not None and calls is not None:
        return messages, calls
    moved_here = list(  # newest first
        session.scalars(
            select(LearningBatch.report)
            .where(LearningBatch.status == "done", LearningBatch.until_ts == cursor)
            .order_by(LearningBatch.id.desc())
            .execution_options(populate_existing=True)
        )
    )
    if messages is None:
        messages = _first_seen(moved_here, SEEN_KEY)
    if calls is None:
        calls = _first_seen(moved_here, CALLS_KEY)
    return messages, calls


def _first_seen(reports: Sequence[Any], key: str) -> int | None:
    """The first watermark ``key`` that one of ``reports`` holds."""
    return next((seen for r in reports if (seen := _seen(r, key)) is not None), None)


def newest_id(
    session: Session, *, until_ms: int | None = None, table: type[RawMessage | Action] = RawMessage
) -> int:
    """The newest message (or tool call) id, of those stamped no later than ``until_ms``; 0 for
    none."""
    if until_ms is None:
        return int(session.scalar(select(func.max(table.id))) or 0)
    newest = session.scalar(  # back from the newest id: the rows there are near the cursor
        select(table.id)
        .where(table.timestamp <= from_epoch_ms(until_ms))
        .order_by(table.id.desc())
        .limit(1)
    )
    return int(newest or 0)


def late_rows(session: Session, cursor: int, seen: Seen, limit: int) -> Late | None:
    """The next batch of late rows (see the module docstring), or None when none is late."""
    stamp = from_epoch_ms(cursor)
    messages = session.execute(
        select(RawMessage.id, RawMessage.timestamp)
        .where(RawMessage.id > seen.messages, RawMessage.timestamp <= stamp)
        .order_by(RawMessage.id)
        .limit(limit + 1)
    ).all()
    taken = messages[:limit]
    where = [Action.id > seen.calls, Action.timestamp <= stamp]
    if len(messages) > limit:  # more wait: the calls made before the next one only
        where.append(Action.timestamp < messages[limit][1])
    calls = list(session.scalars(select(Action.id).where(*where).order_by(Action.id).limit(limit)))
    if not taken and not calls:
        return None
    until = Seen(taken[-1][0] if taken else seen.messages, calls[-1] if calls else seen.calls)
    return Late(seen, until, len(taken))


def _between(
    session: Session,
    cursor: int,
    seen: Seen,
    until: Seen,
    max_calls: int | None,
    max_chars: int | None = None,
) -> tuple[list[Turn], list[ToolCall], Left]:
    """The rows stamped at or before the cursor whose id is over the watermark ``seen`` and at
    most ``until`` (messages by :attr:`Seen.messages`, tool calls by :attr:`Seen.calls`; the
    newest ``max_calls`` of those), oldest first, and the tool calls left out."""
    stamp = from_epoch_ms(cursor)

    def where(table: type[RawMessage | Action], lo: int, hi: int) -> list[ColumnElement[bool]]:
        return [table.id > lo, table.id <= hi, table.timestamp <= stamp]

    return load_rows(
        session,
        where(RawMessage, seen.messages, until.messages),
        where(Action, seen.calls, until.calls),
        max_calls=max_calls,
        max_chars=max_chars,
    )


def load_late(
    session: Session,
    late: Late,
    cursor: int,
    *,
    max_calls: int | None = None,
    max_chars: int | None = None,
) -> tuple[Window, Seen]:
    """A batch of late rows as a window, oldest first (the newest ``max_calls`` tool calls),
    and the watermarks after it."""
    turns, calls, left = _between(session, cursor, late.seen, late.until, max_calls, max_chars)
    tag = (
        f"late:{late.seen.messages + 1}-{late.until.messages}"
        f"/calls:{late.seen.calls + 1}-{late.until.calls}"
    )
    window = Window(tag, tuple(turns), tuple(calls), None, from_epoch_ms(cursor), left)
    return window, late.until


def _merged(early: Sequence[Any], late: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(sorted((*late, *early), key=lambda row: (row.timestamp, row.id)))


def _joined_until(session: Session, until: int, claimed: int, newest: int, most: int) -> int:
    """The newest message id a batch reads: ``newest``, or, when more than ``most`` messages
    of its time (``time <= until``) came after its claim (id over ``claimed``, the newest at the
    claim), the ``most``-th of them. Two ids are read, however many came."""
    ids = session.scalars(
        select(RawMessage.id)
        .where(
            RawMessage.id > claimed,
            RawMessage.id <= newest,
            RawMessage.timestamp <= from_epoch_ms(until),
        )
        .order_by(RawMessage.id)
        .offset(most - 1)
        .limit(2)
    ).all()
    return ids[0] if len(ids) > 1 else newest


def load_batch(
    session: Session,
    after: int,
    until: int,
    seen: Seen,
    *,
    max_calls: int | None = None,
    max_chars: int | None = None,
    claimed: int | None = None,
    max_joining: int | None = None,
) -> tuple[Window, Seen]:
    """The batch after the cursor ``after`` up to ``until`` (epoch ms) as a window, with the
    rows that came late since it was claimed (``time <= after``, id over its watermark), and
    the watermarks after it: the newest ids, read first, in the same snapshot (on SQLite one
    unit of work is one snapshot; on PostgreSQL one agent's ids are handed out in commit
    order); every row the window holds is no newer. Of its tool calls, the newest
    ``max_calls`` (the others counted in :attr:`Window.left`); the first ``max_chars``
    characters of each message. Of the messages that came after its claim (``claimed``: the
    newest id then), late or stamped in its span, at most ``max_joining`` join it, the first
    by id: the watermark after it is the last of them, and the others are late rows for the
    next batches (they joined it unbounded: a flood of them was read whole). Of the tool calls
    that came late, all older than the span's, only as many are read as the span's leave room
    for (a flood of them was read up to ``max_calls`` and then left out)."""
    newest = Seen(newest_id(session), newest_id(session, table=Action))
    if claimed is not None and max_joining is not None:
        joined = _joined_until(session, until, claimed, newest.messages, max_joining)
        newest = dataclasses.replace(newest, messages=joined)
    window = load_after(
        session,
        after,
        until,
        max_id=newest.messages,
        max_call_id=newest.calls,
        max_calls=max_calls,
        max_chars=max_chars,
    )
    # the late calls are older than every call of the span: read only as many as the span's
    # leave room for among the newest max_calls (none when its own were cut), the rest counted
    room = None if max_calls is None else max_calls - len(window.calls)
    turns, calls, left = _between(session, after, seen, newest, room, max_chars)
    if turns or calls or left.count:
        window = dataclasses.replace(
            window,
            turns=_merged(window.turns, turns),
            calls=_merged(window.calls, calls),
            left=window.left.plus(left.count, left.newest),
        )
    return window, Seen(max(seen.messages, newest.messages), max(seen.calls, newest.calls))
