"""The access log: one row per read of a fact, note or skill (Philont never wrote it, Q-D4)."""

from __future__ import annotations

from sqlalchemy import func, select

from philont.db.models import AccessLogEntry
from philont.db.queries import access as access_rows
from philont.db.stored_values import record
from philont.db.types import to_epoch_ms
from philont.domain.kinds import AccessTarget
from philont.finds import finds
from philont.schemas import inputs
from philont.schemas.access import AccessRecord
from philont.services.base import Service


def _target(value: object) -> AccessTarget:
    return inputs.check(inputs.AccessTargetName, value, "target_type")  # type: ignore[no-any-return]


class AccessLog(Service):
    """One row per read of a fact, note or skill; counted and listed per target."""

    def record(
        self, target_type: AccessTarget, target_id: str, context: str | None = None
    ) -> AccessRecord:
        kind = _target(target_type)
        target_id = inputs.check(inputs.RecordId, target_id, "target_id")
        at = self._now()
        new_id = access_rows.insert(
            self.mem.raw(),
            target_type=kind.value,
            target_id=target_id,
            accessed_at=to_epoch_ms(at),
            context=context,
        )
        return AccessRecord(
            id=new_id, target_type=kind, target_id=target_id, accessed_at=at, context=context
        )

    @finds("target_id", target_type=inputs.AccessTargetName)
    def count_for(self, target_type: AccessTarget, target_id: str) -> int:
        stmt = select(func.count()).where(
            AccessLogEntry.target_type == _target(target_type),
            AccessLogEntry.target_id == target_id,
        )
        return int(self.session.scalar(stmt) or 0)

    @finds("target_id", target_type=inputs.AccessTargetName)
    def recent_for(
        self, target_type: AccessTarget, target_id: str, limit: int = 20
    ) -> list[AccessRecord]:
        stmt = (
            select(AccessLogEntry)
            .where(
                AccessLogEntry.target_type == _target(target_type),
                AccessLogEntry.target_id == target_id,
            )
            .order_by(AccessLogEntry.accessed_at.desc(), AccessLogEntry.id.desc())
            .limit(limit)
        )
        return [record(AccessRecord.model_validate, r) for r in self.session.scalars(stmt)]
