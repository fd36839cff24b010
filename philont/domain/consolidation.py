"""Batching rules of the idle consolidator: where a batch ends, and how long a failed one waits.

Philont's consolidator took at most 1,000 messages after its cursor and moved the cursor to the
last one's timestamp, so messages sharing that millisecond beyond the limit were never processed
(spec §10). Here a batch never ends inside a millisecond: it stops before the last millisecond it
would have split, or, when that millisecond alone is over the limit, takes all of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

__all__ = ["batch_end", "retry_delay"]


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


def retry_delay(attempts: int, *, base: timedelta, cap: timedelta) -> timedelta:
    """How long a batch that failed ``attempts`` times waits before the next try: ``base``
    doubled per earlier failure, at most ``cap``."""
    if attempts < 1:
        return timedelta(0)
    doubled: timedelta = base * (2 ** min(attempts - 1, 30))
    return min(cap, doubled)
