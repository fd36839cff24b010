"""Lean reads and the single-row append of ``memory_raw_messages``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, TypeVar

from philont.db.backend import Raw
from philont.db.models import RawMessage
from philont.db.stored_values import register
from philont.db.types import kinds_of

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
    content: str


class Placement(NamedTuple):
    """Where a message sits: its session and time."""

    id: int
    session_id: str
    timestamp: int


R = TypeVar("R", MessageRow, Header, Placement)
for _row_type in (MessageRow, Header, Placement):
    register(_row_type, kinds_of(RawMessage))


def by_ids(raw: Raw, ids: Sequence[int]) -> dict[int, MessageRow]:
    """The messages with these ids, by id (missing ones are absent)."""
    return _by_id(raw, MessageRow, ids)


def headers(raw: Raw, ids: Sequence[int]) -> dict[int, Header]:
    """Session, time, role and text of the messages with these ids, by id."""
    return _by_id(raw, Header, ids)


def placements(raw: Raw, ids: Sequence[int]) -> dict[int, Placement]:
    """Session and time of the messages with these ids, by id."""
    return _by_id(raw, Placement, ids)


def _by_id(raw: Raw, row_type: type[R], ids: Sequence[int]) -> dict[int, R]:
    """The messages with these ids as ``row_type`` (its fields are the columns read), by id."""
    if not ids:
        return {}
    cond, params = raw.in_ids("id", ids)
    columns = ", ".join(row_type._fields)
    rows = raw.named(row_type, f"SELECT {columns} FROM {TABLE}{raw.where(cond)}", params)
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
    where, params = _scope(raw, "role != 'system'" if without_system else "1 = 1", session_id)
    where, params = _until(raw, where, params, until_ms)
    return raw.named(
        MessageRow,
        f"SELECT id, session_id, role, content, timestamp FROM {TABLE}"
        f"{raw.where(where)} ORDER BY timestamp DESC, id DESC LIMIT {raw.mark}",
        [*params, limit],
    )


def count_system(
    raw: Raw, *, since_ms: int, session_id: str | None = None, until_ms: int | None = None
) -> int:
    """System messages stamped in [since_ms, until_ms] (of one session)."""
    where, params = _scope(raw, f"role = 'system' AND timestamp >= {raw.mark}", session_id)
    where, params = _until(raw, where, [since_ms, *params], until_ms)
    rows = raw.rows(f"SELECT count(*) FROM {TABLE}{raw.where(where)}", params)
    return int(rows[0][0]) if rows else 0


def _scope(raw: Raw, condition: str, session_id: str | None) -> tuple[str, list[object]]:
    """``condition``, of one session when given."""
    if session_id is None:
        return condition, []
    return f"{condition} AND session_id = {raw.mark}", [session_id]


def _until(
    raw: Raw, where: str, params: list[object], until_ms: int | None
) -> tuple[str, list[object]]:
    """``where``, up to a time when given."""
    if until_ms is None:
        return where, params
    return f"{where} AND timestamp <= {raw.mark}", [*params, until_ms]


def insert(raw: Raw, *, session_id: str, role: str, content: str, timestamp: int) -> int:
    """Append one message (its FTS triggers fire) and return its id."""
    m = raw.mark
    return raw.insert(
        f"INSERT INTO {TABLE} (session_id, role, content, timestamp) VALUES ({m}, {m}, {m}, {m})",
        (session_id, role, content, timestamp),
    )
