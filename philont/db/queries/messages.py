"""Lean reads and the single-row append of ``memory_raw_messages``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from philont.db.backend import Raw

TABLE = "memory_raw_messages"


class MessageRow(NamedTuple):
    id: int
    session_id: str
    role: str
    content: str
    timestamp: int  # epoch ms


class Header(NamedTuple):
    """What neighbour context needs of a message."""

    id: int
    session_id: str
    timestamp: int
    role: str


def by_ids(raw: Raw, ids: Sequence[int]) -> dict[int, MessageRow]:
    """The messages with these ids, by id (missing ones are absent)."""
    if not ids:
        return {}
    cond, params = raw.in_ids("id", ids)
    rows = raw.named(
        MessageRow,
        f"SELECT id, session_id, role, content, timestamp FROM {TABLE} WHERE {cond}",
        params,
    )
    return {r.id: r for r in rows}


def headers(raw: Raw, ids: Sequence[int]) -> dict[int, Header]:
    """Session, time and role of the messages with these ids, by id."""
    if not ids:
        return {}
    cond, params = raw.in_ids("id", ids)
    rows = raw.named(
        Header, f"SELECT id, session_id, timestamp, role FROM {TABLE} WHERE {cond}", params
    )
    return {r.id: r for r in rows}


def newest(
    raw: Raw,
    *,
    limit: int,
    session_id: str | None = None,
    until_ms: int | None = None,
    without_system: bool = True,
) -> list[MessageRow]:
    """The newest ``limit`` messages (of one session, up to a time), newest first. With a
    session it reads the (session_id, timestamp) index backwards instead of sorting."""
    m = raw.mark
    parts = ["role != 'system'"] if without_system else ["1 = 1"]
    params: list[object] = []
    if session_id is not None:
        parts.append(f"session_id = {m}")
        params.append(session_id)
    if until_ms is not None:
        parts.append(f"timestamp <= {m}")
        params.append(until_ms)
    return raw.named(
        MessageRow,
        f"SELECT id, session_id, role, content, timestamp FROM {TABLE}"
        f" WHERE {' AND '.join(parts)} ORDER BY timestamp DESC, id DESC LIMIT {m}",
        [*params, limit],
    )


def count_system(
    raw: Raw, *, since_ms: int, session_id: str | None = None, until_ms: int | None = None
) -> int:
    """System messages stamped in [since_ms, until_ms] (of one session)."""
    m = raw.mark
    parts = ["role = 'system'", f"timestamp >= {m}"]
    params: list[object] = [since_ms]
    if session_id is not None:
        parts.append(f"session_id = {m}")
        params.append(session_id)
    if until_ms is not None:
        parts.append(f"timestamp <= {m}")
        params.append(until_ms)
    rows = raw.rows(f"SELECT count(*) FROM {TABLE} WHERE {' AND '.join(parts)}", params)
    return int(rows[0][0]) if rows else 0


def insert(raw: Raw, *, session_id: str, role: str, content: str, timestamp: int) -> int:
    """Append one message (its FTS triggers fire) and return its id."""
    m = raw.mark
    return raw.insert(
        f"INSERT INTO {TABLE} (session_id, role, content, timestamp) VALUES ({m}, {m}, {m}, {m})",
        (session_id, role, content, timestamp),
    )
