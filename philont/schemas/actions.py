"""Read model of the action log (layer 0.5: one row per tool call)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from philont.schemas.base import ReadModel


class ActionRecord(ReadModel):
    id: int
    session_id: str
    trigger: str | None
    tool_name: str
    params: dict[str, Any]
    result: str | None
    success: bool
    timestamp: datetime
    linked_skill: str | None
