"""What the loop reads: a window of the timeline (turns and tool calls) and the runs in it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, func, select
from sqlalchemy.orm import Session

from philont.db.models import Action, RawMessage
from philont.db.types import from_epoch_ms, to_epoch_ms
from philont.domain.attribution import retrieved_skill
from philont.domain.kinds import Role
from philont.learning.config import LearningConfig
from philont.schemas.inputs import MAX_TEXT_CHARS

__all__ = [
    "Left",
    "Run",
    "ToolCall",
    "Turn",
    "Window",
    "chars_read",
    "load_after",
    "load_range",
    "load_rows",
    "load_session",
    "read_chars",
    "runs_of",
]

RETRIEVAL_TOOL = "use_skill"


@dataclass(frozen=True)
class Turn:
    id: int
    session_id: str
    role: str
    content: str
    timestamp: datetime


@dataclass(frozen=True)
class ToolCall:
    id: int
    session_id: str
    tool_name: str
    params: Any
    result: str | None
    success: bool
    timestamp: datetime


@dataclass(frozen=True)
class Left:
    """Tool calls a window left out: how many, and the time of the newest of them (every
    call after it is in; a run that began at or before it may lack some of its calls)."""

    count: int = 0
    newest: datetime | None = None

    def plus(self, count: int, newest: datetime | None) -> Left:
        if not count:
            return self
        times = [t for t in (self.newest, newest) if t is not None]
        return Left(self.count + count, max(times) if times else None)


NONE_LEFT = Left()


@dataclass(frozen=True)
class Window:
    """Messages and tool calls of one session or time range, oldest first. ``tag`` names it
    (the session id, or ``range:<from ms>-<to ms>``); ``reference`` is its own "now": the time
    relative expressions in it are read against."""

    tag: str
    turns: tuple[Turn, ...]
    calls: tuple[ToolCall, ...]
    session_id: str | None = None
    learned_until: datetime | None = None
    """A consolidator's batch: the cursor before it (messages up to then were learned from
    in earlier batches, the window's late ones excepted); None for a host's window."""
    left: Left = NONE_LEFT
    """A consolidator's batch: its older tool calls not loaded (no prompt shows them)."""

    @property
    def reference(self) -> datetime | None:
        stamps = [t.timestamp for t in self.turns] + [c.timestamp for c in self.calls]
        return max(stamps) if stamps else None

    @property
    def dialogue(self) -> tuple[Turn, ...]:
        return tuple(t for t in self.turns if t.role in (Role.USER, Role.ASSISTANT))

    def sessions(self) -> list[str]:
        return list(dict.fromkeys(t.session_id for t in self.turns))


def _limited(
    session: Session,
    turns_where: Sequence[ColumnElement[bool]],
    calls_where: Sequence[ColumnElement[bool]],
    limit: int,
    chars: int | None = None,
) -> tuple[list[Turn], list[ToolCall]]:
    """The newest ``limit`` messages and the newest ``limit`` tool calls (matching their
    ``where``), oldest first (a window over the limit keeps its end, as the prompts do: the
    latest turns matter most), both from one start: when either limit cut its list, both
    keep only what is newer than the later cut (the newest row a limit left out). Cut apart,
    the messages
    reached back further than the calls (or the other way round), and a run at the edge was
    judged on part of its tool calls. A run whose request is left out has no user turn left:
    no run is made of it. With ``chars``, the first ``chars`` characters of each message."""
    # everything after a list's cut is in it; at the cut's millisecond some may be left out
    turns, turn_cut = _turns(session, turns_where, limit, chars)
    calls, call_cut = _calls(session, calls_where, limit)
    cuts = [cut for cut in (turn_cut, call_cut) if cut is not None]
    if not cuts:
        return turns, calls
    start = max(cuts)
    return [t for t in turns if t.timestamp > start], [c for c in calls if c.timestamp > start]


def _newest(
    session: Session,
    columns: Sequence[Any],
    where: Sequence[ColumnElement[bool]],
    limit: int | None,
) -> tuple[list[Any], datetime | None]:
    """The newest ``limit`` rows matching ``where`` (None: all), oldest first, and where the
    limit cut them: the time of the newest row left out (every later one is in), else None.
    ``columns`` begin with the id and end with the time."""
    row_id, stamp = columns[0], columns[-1]
    query = select(*columns).where(*where).order_by(stamp.desc(), row_id.desc())
    rows = session.execute(query if limit is None else query.limit(limit + 1)).all()
    cut = rows[limit][-1] if limit is not None and len(rows) > limit else None
    return list(reversed(rows[:limit])), cut


def _turns(
    session: Session,
    where: Sequence[ColumnElement[bool]],
    limit: int | None,
    chars: int | None = None,
) -> tuple[list[Turn], datetime | None]:
    """The newest ``limit`` messages matching ``where`` (None: all), oldest first, and where
    the limit cut them (:func:`_newest`); with ``chars``, the first ``chars`` characters of
    each message only."""
    content: Any = RawMessage.content
    if chars is not None:
        content = func.substr(RawMessage.content, 1, chars)
    columns = (
        RawMessage.id,
        RawMessage.session_id,
        RawMessage.role,
        content,
        RawMessage.timestamp,
    )
    rows, cut = _newest(session, columns, where, limit)
    return [Turn(i, s, str(r), c, t) for i, s, r, c, t in rows], cut


def _calls(
    session: Session, where: Sequence[ColumnElement[bool]], limit: int | None
) -> tuple[list[ToolCall], datetime | None]:
    """The newest ``limit`` tool calls matching ``where`` (None: all), oldest first, and
    where the limit cut them (:func:`_newest`)."""
    columns = (
        Action.id,
        Action.session_id,
        Action.tool_name,
        Action.params,
        Action.result,
        Action.success,
        Action.timestamp,
    )
    rows, cut = _newest(session, columns, where, limit)
    return [ToolCall(*row) for row in rows], cut


def load_rows(
    session: Session,
    turns_where: Sequence[ColumnElement[bool]],
    calls_where: Sequence[ColumnElement[bool]],
    *,
    max_calls: int | None = None,
    max_chars: int | None = None,
) -> tuple[list[Turn], list[ToolCall], Left]:
    """Every message matching ``turns_where`` (no limit: a consolidator's batch was sized by
    its messages when it was claimed) and the newest ``max_calls`` tool calls matching
    ``calls_where`` (None: all), oldest first, with the calls left out. A batch's span may
    hold any number of tool calls (an agent in a loop): all were loaded, 50,000 of them took
    1.3 s and 56 MB, though no prompt shows more than a few hundred. With ``max_chars``, the
    first ``max_chars`` characters of each message only (:func:`read_chars`)."""
    turns = _turns(session, turns_where, None, max_chars)[0]
    calls, cut = _calls(session, calls_where, max_calls)
    if cut is None or max_calls is None:
        return turns, calls, NONE_LEFT
    count = session.scalar(select(func.count()).select_from(Action).where(*calls_where))
    return turns, calls, Left(int(count or 0) - max_calls, cut)


def read_chars(shown: int) -> int | None:
    """How much of a message to read for a prompt that shows ``shown`` characters of it on one
    line: a line break of two characters (CR LF) is shown as one ``⏎``, and one more
    says whether it goes on (``…``). A batch read each message whole (up to 16 MiB each, a
    thousand to a batch) to show 2,000 characters of it. None (all of it) when that is no
    less than a message can hold: PostgreSQL's ``substr`` takes a 32-bit count."""
    chars = 2 * shown + 2
    return None if chars > MAX_TEXT_CHARS else chars


def chars_read(config: LearningConfig, *, judged: bool) -> int | None:
    """How much of each message a window reads (a host's and a consolidator's batch alike):
    what the prompts show of it (:func:`read_chars` of ``max_message_chars``), and all of it
    when a judge judges the window's runs (their goals and answers are the judge's, and a
    verified case keeps them)."""
    return None if judged else read_chars(config.max_message_chars)


def load_session(
    session: Session, session_id: str, *, limit: int, chars: int | None = None
) -> Window:
    """Every message and tool call of one session (the newest ``limit`` of each, from one
    start: :func:`_limited`; with ``chars``, the first ``chars`` characters of each message)."""
    turns, calls = _limited(
        session,
        [RawMessage.session_id == session_id],
        [Action.session_id == session_id],
        limit,
        chars,
    )
    return Window(session_id, tuple(turns), tuple(calls), session_id)


def load_range(
    session: Session, since: datetime, until: datetime, *, limit: int, chars: int | None = None
) -> Window:
    """Messages and tool calls with ``since <= time <= until`` (the newest ``limit`` of each,
    from one start: :func:`_limited`; with ``chars``, the first ``chars`` characters of each
    message)."""
    turns, calls = _limited(
        session,
        [RawMessage.timestamp >= since, RawMessage.timestamp <= until],
        [Action.timestamp >= since, Action.timestamp <= until],
        limit,
        chars,
    )
    tag = f"range:{to_epoch_ms(since)}-{to_epoch_ms(until)}"
    return Window(tag, tuple(turns), tuple(calls))


def load_after(
    session: Session,
    after_ms: int,
    until_ms: int,
    *,
    max_id: int | None = None,
    max_call_id: int | None = None,
    max_calls: int | None = None,
    max_chars: int | None = None,
) -> Window:
    """The consolidator's batch: every message with ``after < time <= until`` (epoch ms, no
    limit: the batch was sized when it was claimed; with ``max_id``, none with a later id) and
    the newest ``max_calls`` tool calls of the same span (with ``max_call_id``, none with a
    later id; :func:`load_rows`), the first ``max_chars`` characters of each message."""
    lo, hi = from_epoch_ms(after_ms), from_epoch_ms(until_ms)
    where = [RawMessage.timestamp > lo, RawMessage.timestamp <= hi]
    if max_id is not None:
        where.append(RawMessage.id <= max_id)
    calls_where = [Action.timestamp > lo, Action.timestamp <= hi]
    if max_call_id is not None:
        calls_where.append(Action.id <= max_call_id)
    turns, calls, left = load_rows(
        session, where, calls_where, max_calls=max_calls, max_chars=max_chars
    )
    tag = f"range:{after_ms + 1}-{until_ms}"
    return Window(tag, tuple(turns), tuple(calls), None, lo, left)


# --- runs (verify-then-condense) ----------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One request and what the agent did about it: a user turn (``goal``), the tool calls
    until the next user turn of the session (``trace``) and the last assistant reply in that
    span (``result``). ``skill_name`` / ``retrieval_action_id``: the first skill it fetched."""

    goal: str
    trace: tuple[ToolCall, ...]
    result: str
    session_id: str | None = None
    skill_name: str | None = None
    retrieval_action_id: int | None = None


def _retrieval(trace: Sequence[ToolCall]) -> tuple[str | None, int | None]:
    """The first skill a run fetched and its call: a successful ``use_skill`` call naming what
    a skill can be named (:func:`~philont.domain.attribution.retrieved_skill`, as attribution
    takes it)."""
    for call in trace:
        if call.tool_name == RETRIEVAL_TOOL and call.success:
            name = retrieved_skill(call.params)
            if name is not None:
                return name, call.id
    return None, None


def runs_of(window: Window) -> list[Run]:
    """The runs of a window that used at least one tool, in time order. A user turn of blank
    text (another program's row: the timeline refuses one) requests nothing to judge and makes
    no run: taken for one, its verdict was refused (a run needs a goal) and every judged batch
    holding it failed, retried without end."""
    calls_by_session: dict[str, list[ToolCall]] = defaultdict(list)
    for call in window.calls:
        calls_by_session[call.session_id].append(call)
    runs: list[tuple[datetime, Run]] = []
    cut = window.left.newest  # a run begun by then may lack calls left out: not made
    for sid in window.sessions():
        turns = [t for t in window.turns if t.session_id == sid]
        starts = [i for i, t in enumerate(turns) if t.role == Role.USER]
        for n, i in enumerate(starts):
            begin = turns[i].timestamp
            if cut is not None and begin <= cut:
                continue
            end = turns[starts[n + 1]].timestamp if n + 1 < len(starts) else None
            span = turns[i + 1 : starts[n + 1]] if n + 1 < len(starts) else turns[i + 1 :]
            trace = tuple(
                c
                for c in calls_by_session[sid]
                if c.timestamp >= begin and (end is None or c.timestamp < end)
            )
            if not trace or not turns[i].content.strip():
                continue  # no tool used, or a request of no text (another program's): none
            replies = [t.content for t in span if t.role == Role.ASSISTANT]
            skill, retrieval = _retrieval(trace)
            run = Run(
                turns[i].content, trace, replies[-1] if replies else "", sid, skill, retrieval
            )
            runs.append((begin, run))
    return [run for _, run in sorted(runs, key=lambda item: item[0])]
