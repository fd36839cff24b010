"""Read model of a note (layer 1: free text with an importance)."""

from __future__ import annotations

from datetime import datetime

from philont.schemas.base import ReadModel


class NoteRecord(ReadModel):
    id: str
    content: str
    importance: float
    session_id: str | None
    created_at: datetime
    last_accessed_at: datetime | None
    forgotten_at: datetime | None
