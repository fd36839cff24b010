"""The single-row append of ``memory_access_log`` (one per read of a fact, note or skill)."""

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
