"""Rows every memory database carries: the 'global' timeline session and the root pursuit."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, exists, insert, select

from philont import charter
from philont.db.models import Pursuit, RawSession

GLOBAL_SESSION_ID = "global"


def bootstrap_rows(now: datetime | None = None) -> list[tuple[Any, dict[str, Any]]]:
    """(model, column values) of the rows every memory database carries."""
    now = now or datetime.now(UTC)
    pursuit: dict[str, Any] = {
        "id": charter.ROOT_PURSUIT_ID,
        "root_pursuit_id": charter.ROOT_PURSUIT_ID,
        "parent_pursuit_id": None,
        "title": charter.ROOT_TITLE,
        "intent": charter.ROOT_INTENT,
        "status": "active",
        "is_evergreen": True,
        "stake": "medium",
        "origin": "system",
        "open_questions": [],
        "evidence_refs": [],
        "progress_markers": [],
        "last_progress_turn": 0,
        "constitution_values": charter.ROOT_CHARTER_VALUES,
        "constitution_red_lines": charter.ROOT_CHARTER_RED_LINES,
        "last_touched_ts": now,
        "created_at": now,
        "updated_at": now,
    }
    return [(RawSession, {"id": GLOBAL_SESSION_ID, "started_at": now}), (Pursuit, pursuit)]


def ensure_bootstrap_rows(conn: Connection, *, now: datetime | None = None) -> list[str]:
    """Insert the bootstrap rows that are missing; return what was inserted (idempotent).

    Philont re-ensures both on every start; so do we, after every upgrade.
    """
    (session_model, session_row), (pursuit_model, pursuit_row) = bootstrap_rows(now)
    inserted: list[str] = []
    if conn.scalar(select(RawSession.id).where(RawSession.id == GLOBAL_SESSION_ID)) is None:
        conn.execute(insert(session_model).values(**session_row))
        inserted.append("memory_raw_sessions:global")
    if not conn.scalar(select(exists().where(Pursuit.parent_pursuit_id.is_(None)))):
        conn.execute(insert(pursuit_model).values(**pursuit_row))
        inserted.append(f"memory_pursuits:{charter.ROOT_PURSUIT_ID}")
    return inserted
