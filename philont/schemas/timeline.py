"""Read and input models of the raw timeline (layer 0: sessions and their messages)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from philont.domain.kinds import Role
from philont.schemas.base import ReadModel


class SessionRecord(ReadModel):
    id: str
    started_at: datetime
    ended_at: datetime | None


class SessionOverview(SessionRecord):
    """A session with the content of its summary note (``session-summary-<id>``, written by the
    learning loop), or None."""

    summary: str | None


class MessageRecord(ReadModel):
    id: int
    session_id: str
    role: Role
    content: str
    timestamp: datetime


class MessageIn(BaseModel):
    """One message to append. Only the shape is checked here; ``TimelineService`` checks the
    content (role vocabulary, blank text, aware time, known session) and raises typed
    ``PhilontError``s, so a batch is refused as a whole before anything is written."""

    model_config = ConfigDict(frozen=True)

    content: str
    role: str = Role.USER.value
    session_id: str = "global"
    at: datetime | None = None
