"""Rows every memory database carries: the 'global' timeline session and the root pursuit."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, exists, insert, select

from philont import charter
from philont.db.models import Pursuit, RawSession

GLOBAL_SESSION_ID = "global"


def ensure_bootstrap_rows(conn: Connection, *, now: datetime | None = None) -> list[str]:
    """Insert the bootstrap rows that are missing; return what was inserted (idempotent).

    Philont re-ensures both on every start; so do we, after every upgrade.
    """
    now = now or datetime.now(UTC)
    inserted: list[str] = []
    if conn.scalar(select(RawSession.id).where(RawSession.id == GLOBAL_SESSION_ID)) is None:
        conn.execute(insert(RawSession).values(id=GLOBAL_SESSION_ID, started_at=now))
        inserted.append("memory_raw_sessions:global")
    if not conn.scalar(select(exists().where(Pursuit.parent_pursuit_id.is_(None)))):
        conn.execute(
            insert(Pursuit).values(
                id=charter.ROOT_PURSUIT_ID,
                root_pursuit_id=charter.ROOT_PURSUIT_ID,
                parent_pursuit_id=None,
                title=charter.ROOT_TITLE,
                intent=charter.ROOT_INTENT,
                status="active",
                is_evergreen=True,
                stake="medium",
                origin="system",
                open_questions=[],
                evidence_refs=[],
                progress_markers=[],
                last_progress_turn=0,
                constitution_values=charter.ROOT_CHARTER_VALUES,
                constitution_red_lines=charter.ROOT_CHARTER_RED_LINES,
                last_touched_ts=now,
                created_at=now,
                updated_at=now,
            )
        )
        inserted.append(f"memory_pursuits:{charter.ROOT_PURSUIT_ID}")
    return inserted
