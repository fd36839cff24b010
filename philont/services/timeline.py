"""TimelineService: the append-only raw timeline (layer 0) of sessions and their messages."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final, NoReturn

from sqlalchemy import and_, bindparam, func, insert, literal, select
from sqlalchemy.exc import IntegrityError

from philont.db.models import Note, RawMessage, RawSession
from philont.db.ordering import code_points
from philont.db.queries import messages as message_rows
from philont.db.stored_values import UNREADABLE, cleaned, record
from philont.db.types import kinds_of, to_epoch_ms
from philont.domain.kinds import Role
from philont.errors import (
    ConflictError,
    InvalidInputError,
    SessionNotFoundError,
)
from philont.finds import finds
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.inputs import SESSION_SUMMARY_PREFIX
from philont.schemas.timeline import MessageIn, MessageRecord, SessionOverview, SessionRecord
from philont.services.base import Service

__all__ = ["GLOBAL_SESSION", "TimelineService"]

log = get_logger(__name__)

GLOBAL_SESSION = "global"
"""The pseudo-session every database carries; the server appends all chat turns to it."""


_ROLES = {r.value: r for r in Role}


def _no_sessions(missing: list[str]) -> NoReturn:
    raise SessionNotFoundError(
        f"no timeline session {missing[0]!r} (start it first)", session_ids=missing
    )


def _no_session(id: str) -> NoReturn:
    """A session id that names no session: :class:`~philont.errors.SessionNotFoundError`."""
    raise SessionNotFoundError(f"no timeline session {id!r}", session_id=id)


def _no_messages(
    _service: Any,
    *,
    since: datetime | None = None,
    until: datetime | None = None,
    order: object = "desc",
    roles: Sequence[Role | str] | None = None,
    **_: Any,
) -> list[MessageRecord]:
    """``query`` of sessions none of which can exist: its arguments checked as it checks
    them, then no messages."""
    inputs.window(since, until)
    inputs.check(inputs.Order, order, "order")
    for role in roles or ():
        inputs.check(inputs.RoleName, role, "roles")
    return []


_OVERVIEWS: Final = (
    select(RawSession.id, RawSession.started_at, RawSession.ended_at, Note.content)
    .outerjoin(
        Note,
        and_(
            Note.id == literal(SESSION_SUMMARY_PREFIX) + RawSession.id,
            Note.forgotten_at.is_(None),
        ),
    )
    .where(RawSession.id.in_(bindparam("wanted", expanding=True)))
)
"""Sessions by id with the content of their summary note: four columns (no ORM objects to
load), the statement built once (building it per call was most of the ORM read's time). Its
columns are the mapped classes', so on PostgreSQL the agent's condition reaches the outer
join's ON clause too (:mod:`philont.db.agents`: loader criteria reach ORM entities only)."""
_SESSION_KINDS: Final = kinds_of(RawSession)


def _overview(row: Any) -> SessionOverview:
    """A row of :data:`_OVERVIEWS` as its read model (a value of the wrong kind is read again
    as its column's kind: :mod:`philont.db.stored_values`)."""
    try:
        return _read_overview(row)
    except UNREADABLE:
        return _read_overview(cleaned(row, _SESSION_KINDS, raw=False))


def _read_overview(row: Any) -> SessionOverview:
    return SessionOverview(
        id=row.id,
        started_at=row.started_at,
        ended_at=row.ended_at,
        summary=row.content if isinstance(row.content, str) else None,
    )


class TimelineService(Service):
    """Layer 0: sessions and the verbatim messages appended to them.

    Append-only by design: there is no API to edit or delete a message.
    """

    GLOBAL_SESSION = GLOBAL_SESSION

    # --- sessions -----------------------------------------------------------------------

    def start_session(self, id: str | None = None) -> SessionRecord:
        """Open a session (a new UUID unless ``id`` is given; an existing id is a
        :class:`~philont.errors.ConflictError`)."""
        sid = str(uuid.uuid4()) if id is None else inputs.check(inputs.SessionId, id, "id")
        if id is not None:
            self.mem.backend.serialize(self.session, "session", sid)
        if self.session.get(RawSession, sid) is not None:
            raise ConflictError(f"session {sid!r} already exists", session_id=sid)
        row = RawSession(id=sid, started_at=self._now())
        self.session.add(row)
        self.session.flush()
        log.info("timeline.session_started", session_id=sid)
        return record(SessionRecord.model_validate, row)

    @finds("id", absent=lambda _service, id: _no_session(id))
    def end_session(self, id: str) -> SessionRecord:
        """Mark a session ended. Idempotent: the first ``ended_at`` is kept (the original
        overwrote it on every call). Unknown id:
        :class:`~philont.errors.SessionNotFoundError` (the original silently did nothing)."""
        row = self._session_row(id)
        if row.ended_at is None:
            row.ended_at = self._now()
            self.session.flush()
            log.info("timeline.session_ended", session_id=row.id)
        return record(SessionRecord.model_validate, row)

    def _session_row(self, id: str) -> RawSession:
        row = self.session.get(RawSession, id) if isinstance(id, str) else None
        if row is None:
            _no_session(id)
        return row

    @finds("id")
    def get_session(self, id: str) -> SessionRecord | None:
        row = self.session.get(RawSession, id) if isinstance(id, str) else None
        return None if row is None else record(SessionRecord.model_validate, row)

    @finds("session_ids", absent=lambda *_, **__: {})
    def overviews(self, session_ids: Sequence[str]) -> dict[str, SessionOverview]:
        """The sessions of ``session_ids`` that exist, by id, each with the content of its
        summary note (``session-summary-<id>``; None without one or when it is forgotten), in
        one query (:data:`_OVERVIEWS`). Unknown ids are left out."""
        wanted = list(set(session_ids))
        if not wanted:
            return {}
        rows = self.session.execute(_OVERVIEWS, {"wanted": wanted})
        return {row.id: _overview(row) for row in rows}

    def list_sessions(
        self,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 20,
        offset: int = 0,
    ) -> list[SessionRecord]:
        """Sessions started within ``[since, until]`` (inclusive), newest first."""
        start, end = inputs.window(since, until)
        offset = inputs.check(inputs.Offset, offset, "offset")
        stmt = (
            select(RawSession)
            .order_by(RawSession.started_at.desc(), code_points(RawSession.id).desc())
            .limit(limit)
            .offset(offset)
        )
        if start is not None:
            stmt = stmt.where(RawSession.started_at >= start)
        if end is not None:
            stmt = stmt.where(RawSession.started_at <= end)
        return [record(SessionRecord.model_validate, r) for r in self.session.scalars(stmt)]

    # --- appending ----------------------------------------------------------------------

    @finds("session_id", absent=lambda service, **given: service._append_unheld(**given))
    def append(
        self,
        content: str,
        *,
        role: Role | str = Role.USER,
        session_id: str = GLOBAL_SESSION,
        at: datetime | None = None,
    ) -> MessageRecord:
        """Append one message (``at`` defaults to now) and return it with its id.

        The hot path of every turn: one INSERT, no ORM unit of work, and no separate
        session lookup — the foreign key refuses an unknown session, which is reported as
        :class:`SessionNotFoundError` (the failed statement writes nothing).
        """
        row = self._fields(content, role, session_id, at, None)
        try:
            # Straight on the DB-API connection, inside the session's transaction:
            # SQLAlchemy's per-statement work would cost more than the INSERT with its FTS
            # triggers.
            new_id = message_rows.insert(
                self.mem.raw(),
                session_id=row["session_id"],
                role=row["role"].value,
                content=row["content"],
                timestamp=to_epoch_ms(row["timestamp"]),
            )
        except IntegrityError:
            self._require_sessions([row["session_id"]])
            raise  # pragma: no cover - an integrity failure other than the session FK
        log.debug("timeline.appended", count=1)
        return MessageRecord(id=new_id, **row)

    def _fields(
        self, content: object, role: object, session_id: object, at: object, now: datetime | None
    ) -> dict[str, Any]:
        """A message's checked column values; ``at`` defaults to ``now``, else the clock."""
        return {
            "session_id": inputs.check(inputs.SessionId, session_id, "session_id"),
            "role": inputs.check(inputs.RoleName, role, "role"),
            "content": self.mem.backend.storable_text(
                inputs.check(inputs.Content, content, "content"), "content"
            ),
            "timestamp": inputs.check(inputs.AwareTime, at, "at")
            if at is not None
            else now or self._now(),
        }

    def _row(self, index: int, msg: MessageIn, now: datetime) -> dict[str, Any]:
        """One message of ``append_many``'s batch as column values; a refusal names the
        argument ``messages`` and the message's ``index``."""
        if not isinstance(msg, MessageIn):
            raise InvalidInputError.of(
                "messages", f"message {index} is not a MessageIn: {msg!r:.80}", index=index
            )
        try:
            return self._fields(msg.content, msg.role, msg.session_id, msg.at, now)
        except InvalidInputError as exc:
            raise InvalidInputError.of(
                "messages", f"message {index}: {exc.message}", index=index
            ) from exc

    def append_many(self, messages: Sequence[MessageIn]) -> list[MessageRecord]:
        """Append a batch in order, with one multi-row INSERT.

        Every message is checked first (role, non-blank content, aware time, known session);
        one bad message refuses the whole batch with nothing written. Messages without ``at``
        share one timestamp; their ids keep the batch order.
        """
        now = self._now()
        rows = [self._row(i, msg, now) for i, msg in enumerate(messages)]
        if not rows:
            return []
        self._require_sessions(r["session_id"] for r in rows)
        # One executemany (SQLAlchemy batches it into multi-row INSERT ... RETURNING). The id
        # column cannot serve as a sort sentinel (it is declared nullable, as in Philont's DDL),
        # but AUTOINCREMENT hands out strictly increasing ids in insertion order, so the sorted
        # ids line up with the batch.
        ids = sorted(self.session.scalars(insert(RawMessage).returning(RawMessage.id), rows))
        log.info("timeline.appended", count=len(rows))
        return [MessageRecord(id=i, **r) for i, r in zip(ids, rows, strict=True)]

    def _require_sessions(self, ids: Iterable[str]) -> None:
        wanted = set(ids)
        found = set(self.session.scalars(select(RawSession.id).where(RawSession.id.in_(wanted))))
        missing = sorted(wanted - found)
        if missing:
            _no_sessions(missing)

    def _append_unheld(
        self, *, content: object, role: object, session_id: str, at: object
    ) -> NoReturn:
        """``append`` to a session id this database cannot hold: its fields checked as
        ``append`` checks them, then the session is not found (no session can have it)."""
        self._fields(content, role, session_id, at, None)
        _no_sessions([session_id])

    # --- reading ------------------------------------------------------------------------

    @finds("session_id", absent=lambda _service, session_id, **_: _no_session(session_id))
    def messages(self, session_id: str, limit: int | None = None) -> list[MessageRecord]:
        """Messages of a session, oldest first (then by id). Unknown session:
        :class:`~philont.errors.SessionNotFoundError`."""
        self._session_row(session_id)
        stmt = (
            select(RawMessage)
            .where(RawMessage.session_id == session_id)
            .order_by(RawMessage.timestamp, RawMessage.id)
        )
        if limit is not None:
            stmt = stmt.limit(limit)
        return [record(MessageRecord.model_validate, r) for r in self.session.scalars(stmt)]

    @finds("session_ids", absent=_no_messages)
    def query(
        self,
        *,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 200,
        order: inputs.Order = "desc",
        session_ids: Sequence[str] | None = None,
        roles: Sequence[Role | str] | None = None,
    ) -> list[MessageRecord]:
        """Messages with ``since <= timestamp <= until`` (a missing bound is open), ordered by
        timestamp then id in ``order``, at most ``limit`` (1..10000).

        ``session_ids`` / ``roles`` filter when non-empty; an empty sequence means no filter,
        as in the original. ``until < since`` raises
        :class:`~philont.errors.InvalidTimeRangeError`.
        """
        start, end = inputs.window(since, until)
        direction = inputs.check(inputs.Order, order, "order")
        role_filter = [inputs.check(inputs.RoleName, r, "roles") for r in roles or ()]
        stmt = select(RawMessage)
        if start is not None:
            stmt = stmt.where(RawMessage.timestamp >= start)
        if end is not None:
            stmt = stmt.where(RawMessage.timestamp <= end)
        if session_ids:
            stmt = stmt.where(RawMessage.session_id.in_(list(session_ids)))
        if role_filter:
            stmt = stmt.where(RawMessage.role.in_(role_filter))
        if direction == "desc":
            stmt = stmt.order_by(RawMessage.timestamp.desc(), RawMessage.id.desc())
        else:
            stmt = stmt.order_by(RawMessage.timestamp, RawMessage.id)
        return [
            record(MessageRecord.model_validate, r) for r in self.session.scalars(stmt.limit(limit))
        ]

    def last_message(self, role: Role | str) -> MessageRecord | None:
        """The newest message with ``role``, or ``None``."""
        stmt = (
            select(RawMessage)
            .where(RawMessage.role == inputs.check(inputs.RoleName, role, "role"))
            .order_by(RawMessage.timestamp.desc(), RawMessage.id.desc())
            .limit(1)
        )
        row = self.session.scalars(stmt).first()
        return None if row is None else record(MessageRecord.model_validate, row)

    @finds("session_id")
    def count(self, session_id: str | None = None) -> int:
        """How many messages there are (in one session when given)."""
        stmt = select(func.count()).select_from(RawMessage)
        if session_id is not None:
            stmt = stmt.where(RawMessage.session_id == session_id)
        return int(self.session.scalar(stmt) or 0)
