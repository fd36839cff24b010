"""The access log: one row per read of a fact, note or skill (Philont never wrote it, Q-D4)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm.attributes import set_committed_value
from sqlalchemy.orm.util import identity_key

from philont.db.backend import Raw
from philont.db.cursors import read_undecoded
from philont.db.models import AccessLogEntry, Fact, Note
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


_ACCESS_TIMES: dict[AccessTarget, type[Fact] | type[Note]] = {
    AccessTarget.FACT: Fact,
    AccessTarget.NOTE: Note,
}
"""The targets whose rows keep when they were last read (``last_accessed_at``)."""


class AccessLog(Service):
    """One row per read of a fact, note or skill; counted and listed per target."""

    def record(
        self, target_type: AccessTarget, target_id: str, context: str | None = None
    ) -> AccessRecord:
        kind = _target(target_type)
        target_id = inputs.check(inputs.RecordId, target_id, "target_id")
        return self._log(self.mem.raw(), kind, target_id, self._now(), context)

    def _log(
        self, raw: Raw, kind: AccessTarget, target_id: str, at: datetime, context: str | None
    ) -> AccessRecord:
        """:meth:`record` of arguments already checked."""
        new_id = access_rows.insert(
            raw,
            target_type=kind.value,
            target_id=target_id,
            accessed_at=to_epoch_ms(at),
            context=context,
        )
        return AccessRecord(
            id=new_id, target_type=kind, target_id=target_id, accessed_at=at, context=context
        )

    def refresh(
        self,
        target_type: AccessTarget,
        target_id: str,
        context: str | None = None,
        *,
        touch: bool = True,
    ) -> None:
        """What a read of a fact, note or skill leaves: its access-log row (:meth:`record`)
        and, with ``touch``, ``last_accessed_at = now`` on a fact or note (a skill has none).
        On a read-only Store (``Store.open(read_only=True)``) nothing: a read there changes
        nothing, and cannot. Every read path refreshes through here, so none can forget that
        (a host's own :meth:`record` is a write, refused there like any other). Nor for a row
        whose id is stored as text that is not UTF-8: it was read with U+FFFD, which names no
        row (docs/stored-values.md); the read is answered, the row left as it is."""
        kind = _target(target_type)
        target_id = inputs.check(inputs.RecordId, target_id, "target_id")
        if self.mem.read_only or read_undecoded(self.session.connection(), target_id):
            return
        at = self._now()
        raw = self.mem.raw()
        model = _ACCESS_TIMES.get(kind) if touch else None
        if model is not None:
            # one lean UPDATE by the id as read (no ORM flush on the hot path of every read);
            # the row object, when loaded, says so too, as a value the database holds
            access_rows.touch(raw, model.__tablename__, target_id, to_epoch_ms(at))
            loaded = self.session.identity_map.get(identity_key(model, target_id))
            if loaded is not None:
                set_committed_value(loaded, "last_accessed_at", at)
        self._log(raw, kind, target_id, at, context)

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
