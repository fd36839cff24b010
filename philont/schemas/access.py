"""Read model of the access log."""

from __future__ import annotations

from datetime import datetime

from philont.domain.kinds import AccessTarget
from philont.schemas.base import ReadModel


class AccessRecord(ReadModel):
    id: int
    target_type: AccessTarget
    target_id: str
    accessed_at: datetime
    context: str | None
