"""NoteService: free-text notes with an importance, soft forgetting and a safe substring search."""

from __future__ import annotations

import builtins
import uuid
from typing import NoReturn

from sqlalchemy import func, or_, select

from philont.db.models import Note
from philont.db.ordering import code_points
from philont.db.stored_values import record
from philont.domain.kinds import AccessTarget
from philont.domain.query import canonical_spellings, fold_case
from philont.domain.query import like_escape as _like_escape
from philont.errors import ConflictError, InvalidInputError, NoteNotFoundError
from philont.finds import finds
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.inputs import SESSION_SUMMARY_PREFIX
from philont.schemas.notes import NoteRecord
from philont.services.base import Service

__all__ = ["SESSION_SUMMARY_PREFIX", "NoteService"]

log = get_logger(__name__)


def _pattern(token: str) -> str:
    # '%' and '_' typed by the user are literal characters, not wildcards (the original let
    # them through, Q-F4: searching '%' returned every note).
    return f"%{_like_escape(fold_case(token))}%"


def _patterns(token: str) -> builtins.list[str]:
    """The patterns of ``token`` as given and in either normal form
    (:func:`~philont.domain.query.canonical_spellings`): one for ASCII."""
    return builtins.list(dict.fromkeys(_pattern(s) for s in canonical_spellings(token)))


def _record(row: Note) -> NoteRecord:
    return record(NoteRecord.model_validate, row)


_ACTIVE = Note.forgotten_at.is_(None)
_RANKING = (Note.importance.desc(), Note.created_at.desc(), code_points(Note.id))


MAX_SEARCH_TOKENS = 64
"""Distinct words ``NoteService.search`` takes: each is one ``LIKE`` that every note found must
match (SQLite refuses an expression deeper than 1000)."""


def _no_note(id: str) -> NoReturn:
    """A note id that names no note: :class:`~philont.errors.NoteNotFoundError`."""
    raise NoteNotFoundError(f"no note with id {id!r}", id=id)


class NoteService(Service):
    """Notes: free text with an importance in [0, 1], optionally tied to a session."""

    def add(
        self,
        content: str,
        *,
        importance: float = 0.5,
        session_id: str | None = None,
        id: str | None = None,
    ) -> NoteRecord:
        """Insert a new note (a new UUID unless ``id`` is given; an existing id is a
        :class:`~philont.errors.ConflictError` — use :meth:`upsert` to overwrite)."""
        content = inputs.check(inputs.Content, content, "content")
        imp = inputs.check(inputs.Importance, importance, "importance")
        sid = inputs.optional(inputs.SessionId, session_id, "session_id")
        note_id = str(uuid.uuid4()) if id is None else inputs.check(inputs.RecordId, id, "id")
        if id is not None:
            self.mem.backend.serialize(self.session, "note", note_id)
        if id is not None and self.session.get(Note, note_id) is not None:
            raise ConflictError(f"a note with id {note_id!r} already exists", id=note_id)
        row = Note(
            id=note_id, content=content, importance=imp, session_id=sid, created_at=self._now()
        )
        self.session.add(row)
        self.session.flush()
        log.info("note.added", id=note_id, importance=imp, session_id=sid)
        return _record(row)

    def upsert(
        self,
        id: str,
        content: str,
        *,
        importance: float = 0.5,
        session_id: str | None = None,
    ) -> NoteRecord:
        """Create the note ``id`` or overwrite its content, importance and session.

        ``created_at``, ``last_accessed_at`` and ``forgotten_at`` of an existing note are kept:
        a forgotten note stays forgotten when an automated writer (the compactor) rewrites it,
        because forgetting is a deliberate decision a rewrite should not undo.
        """
        note_id = inputs.check(inputs.RecordId, id, "id")
        content = inputs.check(inputs.Content, content, "content")
        imp = inputs.check(inputs.Importance, importance, "importance")
        sid = inputs.optional(inputs.SessionId, session_id, "session_id")
        self.mem.backend.serialize(self.session, "note", note_id)
        row = self.session.get(Note, note_id)
        if row is None:
            row = Note(
                id=note_id, content=content, importance=imp, session_id=sid, created_at=self._now()
            )
            self.session.add(row)
            event = "note.added"
        else:
            row.content, row.importance, row.session_id = content, imp, sid
            event = "note.updated"
        self.session.flush()
        log.info(event, id=note_id, importance=imp, session_id=sid)
        return _record(row)

    @finds("id")
    def get(self, id: str) -> NoteRecord | None:
        """The note, or ``None`` if it is missing or forgotten. A hit refreshes
        ``last_accessed_at`` and writes one access-log row (not on a read-only Store); a miss
        writes nothing."""
        row = self.session.get(Note, id) if isinstance(id, str) else None
        if row is None or row.forgotten_at is not None:
            return None
        self.mem.access.refresh(AccessTarget.NOTE, row.id, context="get")
        return _record(row)

    def list(self, limit: int = 10, include_forgotten: bool = False) -> builtins.list[NoteRecord]:
        """The most important notes: importance desc, then newest first.

        Forgotten notes are left out unless asked for (the original listed them, Q-F6).
        No access refresh.
        """
        stmt = select(Note).order_by(*_RANKING).limit(limit)
        if not include_forgotten:
            stmt = stmt.where(_ACTIVE)
        return [_record(r) for r in self.session.scalars(stmt)]

    def _row(self, id: str) -> Note:
        row = self.session.get(Note, id) if isinstance(id, str) else None
        if row is None:
            _no_note(id)
        return row

    @finds("id", absent=lambda _service, id: _no_note(id))
    def forget(self, id: str) -> bool:
        """Soft-forget a note; True if it was not forgotten before (the first
        ``forgotten_at`` is kept). Unknown id: :class:`~philont.errors.NoteNotFoundError`."""
        row = self._row(id)
        if row.forgotten_at is not None:
            return False
        row.forgotten_at = self._now()
        self.session.flush()
        log.info("note.forgotten", id=row.id)
        return True

    @finds("id", absent=lambda _service, id: _no_note(id))
    def unforget(self, id: str) -> bool:
        """Bring a forgotten note back; True if it was forgotten."""
        row = self._row(id)
        if row.forgotten_at is None:
            return False
        row.forgotten_at = None
        self.session.flush()
        log.info("note.unforgotten", id=row.id)
        return True

    @finds(
        "exclude_session_id",
        absent=lambda service, **_: service.latest_session_summary(),  # excludes nothing
    )
    def latest_session_summary(self, exclude_session_id: str | None = None) -> NoteRecord | None:
        """The newest non-forgotten ``session-summary-*`` note, skipping the one of
        ``exclude_session_id`` (normally the session in progress). No access refresh."""
        stmt = (
            select(Note)
            .where(
                _ACTIVE,
                # compared as text, not by LIKE: SQLite's LIKE ignores ASCII case, so a note
                # 'SESSION-SUMMARY-todo' was the latest summary there and not on PostgreSQL
                func.substr(Note.id, 1, len(SESSION_SUMMARY_PREFIX)) == SESSION_SUMMARY_PREFIX,
            )
            .order_by(Note.created_at.desc(), code_points(Note.id))
            .limit(1)
        )
        if exclude_session_id is not None:
            stmt = stmt.where(or_(Note.session_id.is_(None), Note.session_id != exclude_session_id))
        row = self.session.scalars(stmt).first()
        return None if row is None else _record(row)

    def search(self, query: str, limit: int = 5) -> builtins.list[NoteRecord]:
        """Active notes containing every whitespace-separated token of ``query`` (at most
        :data:`MAX_SEARCH_TOKENS` distinct ones), ordered by importance then newest. A NUL
        character separates tokens too, as in every search query (``mem.search``'s plan), on
        both backends.

        Each token is an escaped ``LIKE`` substring (``%`` and ``_`` are literal), matched
        without case by one rule on both backends (:func:`~philont.domain.query.fold_case`:
        ``ärger`` finds ``Ärger``, ``istanbul`` ``İstanbul``, ``ｆｏｏ`` ``ＦＯＯ``; accents
        and ``ς``/``σ`` stay apart), in either normal form: a token is looked for as given,
        composed (NFC) and decomposed (NFD), so ``é`` finds ``e`` + U+0301 and the other way
        round (:func:`~philont.domain.query.canonical_spellings`). A blank query finds
        nothing, and so does a token no stored text can hold (a lone surrogate). No access
        refresh. Ranked search with stems, substrings and time windows is ``mem.search.notes``.
        """
        query = inputs.check(inputs.Query, query, "query")
        # SQLite's LIKE reads its pattern up to a NUL ('Berlin\x00' found '... Berlin'), and
        # PostgreSQL's text holds none: a NUL is a separator, as in search plans.
        tokens = list(dict.fromkeys(query.replace("\x00", " ").split()))
        if len(tokens) > MAX_SEARCH_TOKENS:
            raise InvalidInputError(
                f"query: {len(tokens)} distinct words; at most {MAX_SEARCH_TOKENS} (every one"
                " must be in a note; mem.search.notes ranks notes by any of them)",
                argument="query",
            )
        if not tokens or any(inputs.unstorable(t) is not None for t in tokens):
            return []
        like = self.mem.backend.folded_like
        contains = [or_(*(like(Note.content, p) for p in _patterns(t))) for t in tokens]
        stmt = select(Note).where(_ACTIVE, *contains).order_by(*_RANKING).limit(limit)
        return [_record(r) for r in self.session.scalars(stmt)]

    def count(self, include_forgotten: bool = False) -> int:
        """How many notes there are (forgotten ones only when asked)."""
        stmt = select(func.count()).select_from(Note)
        if not include_forgotten:
            stmt = stmt.where(_ACTIVE)
        return int(self.session.scalar(stmt) or 0)
