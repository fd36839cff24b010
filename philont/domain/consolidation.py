"""Batching rules of the idle consolidator: where a batch ends, and how long a failed one waits.

Philont's consolidator took at most 1,000 messages after its cursor and moved the cursor to the
last one's timestamp, so messages sharing that millisecond beyond the limit were never processed
(spec §10). Here a batch never ends inside a millisecond: it stops before the last millisecond it
would have split, or, when that millisecond alone is over the limit, takes all of it.

Nor does a batch its limit cut end inside a run (a user turn and what the agent did until the
session's next user turn, :func:`philont.learning.window.runs_of`): the judge and the reflection
would see a request with half of what was done about it, and the rest, in the next batch
without its request, would never be judged. :func:`whole_runs_end` moves the end back to just
before the earliest run that would be split; a run longer than a whole batch is still cut, so
every batch makes progress.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta

__all__ = ["Step", "batch_end", "last_calls", "retry_delay", "whole_runs_end"]


def batch_end(timestamps: Sequence[int], limit: int) -> int | None:
    """The last timestamp (epoch ms, inclusive) of the next batch.

    ``timestamps`` are those of the messages after the cursor, ascending, at least the first
    ``limit + 1`` of them when there are that many (the one past the limit shows whether the
    limit falls inside a millisecond). None when there are none.
    """
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    if not timestamps:
        return None
    if len(timestamps) <= limit:
        return timestamps[-1]
    last = timestamps[limit - 1]
    if timestamps[limit] != last:
        return last
    earlier = [ts for ts in timestamps[:limit] if ts < last]
    return earlier[-1] if earlier else last


@dataclass(frozen=True)
class Step:
    """A message or tool call of a session: its time (epoch ms) and whether it is a user turn
    (which starts a run; at one millisecond, it comes before the session's other steps)."""

    at: int
    session: str
    user: bool = False


def _open_run(steps: Sequence[Step], end: int) -> int | None:
    """The start of the session's run that goes on past ``end`` (``steps``: one session's, in
    order), or None: no run has started by ``end``, or the next step after it begins one."""
    start = None
    for step in steps:
        if step.at > end:
            return None if step.user else start
        if step.user:
            start = step.at
    return None


def last_calls(messages: Sequence[Step], calls: Iterable[tuple[int, str]]) -> list[Step]:
    """Of ``calls`` (time in epoch ms, session), the steps :func:`whole_runs_end` needs: the
    last call of each session between two of its ``messages`` (and before the first, after the
    last), a call at a message's millisecond coming after it. Whether a run goes on past an end
    is whether the first step after it is no user turn: a call there, or any later one before
    the next message, says the same. A batch's span may hold any number of tool calls (an
    agent in a loop): 50,000 were each a step, 14 MB at every claim its limit cut."""
    times: dict[str, list[int]] = defaultdict(list)
    for step in messages:
        times[step.session].append(step.at)
    for stamps in times.values():
        stamps.sort()
    last: dict[tuple[str, int], int] = {}
    for at, session in calls:
        gap = (session, bisect_right(times.get(session, ()), at))
        if last.get(gap, at) <= at:
            last[gap] = at
    return [Step(at, session) for (session, _gap), at in last.items()]


def whole_runs_end(steps: Sequence[Step], until: int, first: int) -> int:
    """The end (epoch ms, inclusive) of a batch its limit cut at ``until`` that splits no run:
    the latest end at or before ``until`` that no run goes on past, if the batch then still
    holds its first message (at ``first``); otherwise ``until`` (a run longer than the batch
    is cut).

    ``steps``: the batch's messages and tool calls, and, for each session, its first step after
    ``until`` (whether its run goes on past the cut). A step before the session's first user
    turn in them belongs to no run (one cut before; it cannot be mended here)."""
    sessions: dict[str, list[Step]] = defaultdict(list)
    for step in sorted(steps, key=lambda s: (s.at, not s.user)):
        sessions[step.session].append(step)
    end = until
    while True:
        starts = [s for s in (_open_run(seq, end) for seq in sessions.values()) if s is not None]
        if not starts:
            return end
        end = min(starts) - 1
        if end < first:
            return until


def retry_delay(attempts: int, *, base: timedelta, cap: timedelta) -> timedelta:
    """How long a batch that failed ``attempts`` times waits before the next try: ``base``
    doubled per earlier failure, at most ``cap``."""
    if attempts < 1:
        return timedelta(0)
    # in whole microseconds: base * 2**30 may be past timedelta's range (an OverflowError)
    micro = timedelta(microseconds=1)
    doubled = base // micro * 2 ** min(attempts - 1, 30)
    return timedelta(microseconds=min(cap // micro, doubled))
