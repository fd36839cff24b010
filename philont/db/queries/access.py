"""The single-row append of ``memory_access_log`` (one per read of a fact, note or skill), and
the read's ``last_accessed_at`` on the row read."""

from __future__ import annotations

from philont.db.backend import Raw

TABLE = "memory_access_log"


def insert(
    raw: Raw, *, target_type: str, target_id: str, accessed_at: int, context: str | None
) -> int:
    """Log one access (``accessed_at`` in epoch ms) and return its id."""
    m = raw.mark
    return raw.insert(
        f"INSERT INTO {TABLE} (target_type, target_id, accessed_at, context)"
        f" VALUES ({m}, {m}, {m}, {m})",
        (target_type, target_id, accessed_at, context),
    )


def touch(raw: Raw, table: str, target_id: str, accessed_at: int) -> None:
    """``last_accessed_at = accessed_at`` (epoch ms) on the row ``target_id`` of ``table`` (a
    table of ours with that column)."""
    m = raw.mark
    raw.run(
        f"UPDATE {table} SET last_accessed_at = {m}{raw.where(f'id = {m}')}",
        (accessed_at, target_id),
    )
