"""The single-row append of ``memory_actions`` (one per tool call: a hot path)."""

from __future__ import annotations

from philont.db.backend import Raw

TABLE = "memory_actions"


def insert(
    raw: Raw,
    *,
    session_id: str,
    trigger: str | None,
    tool_name: str,
    params_json: str,
    result: str | None,
    success: bool,
    timestamp: int,
    linked_skill: str | None,
) -> int:
    """Log one action (values as stored: JSON text, epoch ms) and return its id."""
    m = raw.mark
    return raw.insert(
        f"INSERT INTO {TABLE} (session_id, trigger, tool_name, params_json, result, success,"
        f" timestamp, linked_skill) VALUES ({m}, {m}, {m}, {m}, {m}, {m}, {m}, {m})",
        (
            session_id,
            trigger,
            tool_name,
            params_json,
            result,
            int(success),
            timestamp,
            linked_skill,
        ),
    )
