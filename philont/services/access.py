"""The access log: one row per read of a fact, note or skill (Philont never wrote it, Q-D4)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.clock import Clock, utc_now
from philont.db.models import AccessLogEntry
from philont.domain.kinds import AccessTarget
from philont.schemas.access import AccessRecord


class AccessLog:
    def __init__(self, session: Session, *, clock: Clock = utc_now) -> None:
        self.session = session
        self.clock = clock

    def record(
        self, target_type: AccessTarget, target_id: str, context: str | None = None
    ) -> AccessRecord:
        row = AccessLogEntry(
            target_type=target_type,
            target_id=target_id,
            accessed_at=self.clock(),
            context=context,
        )
        self.session.add(row)
        self.session.flush()
        return AccessRecord.model_validate(row)

    def count_for(self, target_type: AccessTarget, target_id: str) -> int:
        stmt = select(func.count()).where(
            AccessLogEntry.target_type == target_type, AccessLogEntry.target_id == target_id
        )
        return int(self.session.scalar(stmt) or 0)

    def recent_for(
        self, target_type: AccessTarget, target_id: str, limit: int = 20
    ) -> list[AccessRecord]:
        stmt = (
            select(AccessLogEntry)
            .where(AccessLogEntry.target_type == target_type, AccessLogEntry.target_id == target_id)
            .order_by(AccessLogEntry.accessed_at.desc(), AccessLogEntry.id.desc())
            .limit(limit)
        )
        return [AccessRecord.model_validate(r) for r in self.session.scalars(stmt)]
