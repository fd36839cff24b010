"""Extraction of facts and notes (Philont's SessionExtractor): the model proposes ``store_fact``
and ``store_note`` actions, and each goes through the same validation as the tools.

``store_fact`` arguments are validated by the tool's own argument model and written by the tool's
own handler (``philont.tools.REGISTRY``), so a fact the model could not store through the tool
cannot be stored this way either, and one it could is (a NUL character in a fact's value too:
its JSON escapes it, on both backends). ``store_note`` has no tool; its arguments are checked
by :class:`StoreNoteArgs` and written by ``NoteService.add`` (a NUL character in its content is
stored on SQLite and refused on PostgreSQL, as that service refuses it). Relative times are the
model's to resolve, against the window's own time (the prompt gives it); an event without
``occurred_at`` happened when the message citing it was said (``said_at``, below), else at the
window's time, never at the (later) time of extraction.

What was forgotten is not written again unless it is said again after the forgetting
(:mod:`philont.domain.forgetting`): each action may cite the message that says it
(``said_at``, the time the prompt shows for it); such a proposal is reported ``forgotten``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, ValidationError
from sqlalchemy import select

from philont.db.models import Fact, Note
from philont.db.ordering import code_points
from philont.db.retry import database_error_of
from philont.db.types import from_epoch_ms, to_epoch_ms
from philont.domain.forgetting import Said, may_write_again, note_key, said_when
from philont.domain.kinds import FactKind
from philont.domain.timeparse import iso, parse_time
from philont.errors import PhilontError
from philont.learning.config import LearningConfig
from philont.learning.lock import hold_learning_lock
from philont.learning.parse import (
    ActionProposal,
    ExtractionAnswer,
    parse_extraction,
    problem_of,
)
from philont.learning.prompts import extract_prompt
from philont.learning.window import Window
from philont.llm.base import ModelClient, ask
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.learning import ExtractionReport, MemoryWrite
from philont.services.base import Service
from philont.tools import REGISTRY
from philont.tools.registry import ToolContext

if TYPE_CHECKING:
    from philont.memory import Memory
    from philont.tools.args import StoreFactArgs

__all__ = ["MemoryWriter", "StoreNoteArgs", "ask_for_memories"]

log = get_logger(__name__)


LOOP_NAMESPACE: Final = inputs.RUNTIME_NAMESPACE_ROOT
"""Where the consolidator keeps its cursor (``system.last_consolidated_ts``): a conversation
that talks the model into storing a fact there would move it (skipping messages for good, or
learning them twice), so extraction, like the model's ``store_fact``, refuses the whole
namespace (the tool's own argument type does)."""


class StoreNoteArgs(BaseModel):
    """A note the extractor may write: the input types ``NoteService.add`` checks with."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: inputs.Content
    importance: inputs.Importance = 0.5


def ask_for_memories(
    model: ModelClient, window: Window, config: LearningConfig
) -> tuple[ExtractionAnswer, int]:
    """The model's store_fact / store_note proposals for a window and the tokens spent; no call
    when the window has no dialogue. Raises :class:`~philont.errors.ModelError`."""
    if not window.dialogue:
        return ExtractionAnswer(), 0
    prompt = extract_prompt(
        window,
        timezone=config.timezone,
        max_chars=config.max_message_chars,
        total=config.max_prompt_chars,
    )
    completion = ask(model, prompt)
    return parse_extraction(completion.text), completion.tokens_used


def _ms(value: datetime | None) -> int | None:
    """A time as stored (epoch milliseconds), for comparing with a stored one."""
    return None if value is None else to_epoch_ms(value)


def _same_json(stored: Any, given: Any) -> bool:
    """Whether two fact values are the same JSON (``True`` is not ``1``, as Python has it)."""
    return json.dumps(stored, sort_keys=True) == json.dumps(given, sort_keys=True)


SAID_AT: Final = "said_at"
"""The key of an action that cites the message saying it (its time, as the prompt shows it)."""


def _cited(value: Any) -> int | None:
    """A ``said_at`` as epoch ms, or None when it is no time (it is then ignored)."""
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    try:
        return _ms(parse_time(value, field=SAID_AT))
    except PhilontError:
        return None


def _same_statement(row: Fact, args: StoreFactArgs, occurred_at: int | None) -> bool:
    """Whether a stored version says what ``args`` says: the same kind and value, and for an
    event the same time (the same value at another time is another event)."""
    if row.fact_kind != args.fact_kind or not _same_json(row.value, args.value):
        return False
    return args.fact_kind != FactKind.EVENT or _ms(row.occurred_at) == occurred_at


def _forgotten(
    gone: Sequence[tuple[str, datetime]], said: Said | None, what: str
) -> tuple[str, str] | None:
    """When the rows forgotten that match a proposal (``(id, forgotten_at)`` each) keep it from
    being written again: the id of the one forgotten last and why; None when it may be
    written."""
    if may_write_again([to_epoch_ms(at) for _, at in gone], said):
        return None
    row_id, at = max(gone, key=lambda pair: pair[1])
    return row_id, (
        f"the same {what} was forgotten at {iso(at)}; no message of the window after that says it"
    )


class MemoryWriter(Service):
    """Writes extraction proposals into one unit of work (flushes, never commits)."""

    def __init__(self, mem: Memory, config: LearningConfig) -> None:
        super().__init__(mem)
        self.config = config
        self._forgotten_notes: dict[str, list[tuple[str, datetime]]] | None = None
        self._active_notes: dict[str, str] | None = None

    def _forgotten_note(self, content: str) -> list[tuple[str, datetime]]:
        """The forgotten notes with ``content``'s :func:`note_key`, as ``(id, forgotten_at)``
        (read once per answer: no index finds them, and writing it forgets no note)."""
        if self._forgotten_notes is None:
            self._forgotten_notes = {}
            rows = self.mem.session.execute(
                select(Note.id, Note.content, Note.forgotten_at).where(
                    Note.forgotten_at.is_not(None)
                )
            )
            for note_id, text, at in rows:
                if at is not None:
                    self._forgotten_notes.setdefault(note_key(text), []).append((note_id, at))
        return self._forgotten_notes.get(note_key(content), [])

    def _active_note(self, content: str) -> str | None:
        """The id of an active note with ``content``'s :func:`note_key` (read once per answer,
        as the forgotten ones: the same note differing in case, spacing or Unicode form was
        stored again, five copies from one answer, while forgetting one of them kept them all
        from being written again)."""
        if self._active_notes is None:
            rows = self.mem.session.execute(
                select(Note.id, Note.content)
                .where(Note.forgotten_at.is_(None))
                .order_by(Note.created_at, code_points(Note.id))
            )
            self._active_notes = {}
            for note_id, text in rows:
                self._active_notes.setdefault(note_key(text), note_id)
        return self._active_notes.get(note_key(content))

    def write(
        self, answer: ExtractionAnswer, window: Window, *, tokens_used: int = 0
    ) -> ExtractionReport:
        """Apply each proposal in its own savepoint; a refused one is reported with the code
        and message the tool would have given."""
        hold_learning_lock(self.mem)
        self._forgotten_notes = self._active_notes = None  # read again (under the lock)
        writes = [
            MemoryWrite(
                index=r.index, action="?", outcome="rejected", code="malformed", detail=r.reason
            )
            for r in answer.rejected
        ]
        dialogue = [to_epoch_ms(turn.timestamp) for turn in window.dialogue]
        for proposal in answer.actions:
            arguments = dict(proposal.arguments)
            said = said_when(dialogue, _cited(arguments.pop(SAID_AT, None)))
            writes.append(self._one(proposal, arguments, window, said))
        report = ExtractionReport(
            tag=window.tag,
            messages=len(window.turns),
            writes=sorted(writes, key=lambda w: w.index),
            problem=problem_of(answer),
            tokens_used=tokens_used,
        )
        log.info(
            "learning.memories_written",
            tag=window.tag,
            facts=report.facts,
            notes=report.notes,
            rejected=report.rejected,
        )
        return report

    def _one(
        self,
        proposal: ActionProposal,
        arguments: dict[str, Any],
        window: Window,
        said: Said | None,
    ) -> MemoryWrite:
        base: dict[str, Any] = {"index": proposal.index, "action": proposal.action}
        try:
            with self.mem.session.begin_nested():
                if proposal.action == "store_fact":
                    return self._fact(base, arguments, window, said)
                return self._note(base, arguments, window, said)
        except ValidationError as exc:
            return MemoryWrite(
                **base, outcome="rejected", code="invalid_arguments", detail=inputs.describe(exc)
            )
        except PhilontError as exc:
            if database_error_of(exc) is not None:
                raise  # the database failed, not the item: the unit of work runs again or fails
            return MemoryWrite(**base, outcome="rejected", code=exc.code, detail=exc.message)

    def _fact(
        self, base: dict[str, Any], arguments: dict[str, Any], window: Window, said: Said | None
    ) -> MemoryWrite:
        reference = window.reference or self.mem.clock()
        arguments.setdefault("timezone", self.config.timezone)
        if arguments.get("fact_kind") == "event" and arguments.get("occurred_at") in (None, ""):
            # when the message that says it was said, when known (it cites one of the window's
            # messages, or the window has one): stamped with the window's end, an event told
            # days before it happened after the message that reported it
            told = None if said is None or said.earliest != said.latest else said.latest
            happened = reference if told is None else from_epoch_ms(told)
            arguments["occurred_at"] = iso(happened)  # as text: epoch ms of 1966-1973 are refused
        tool = REGISTRY["store_fact"]
        args = tool.args_model.model_validate(arguments)
        where = {"namespace": args.namespace, "key": args.key}
        when = {
            name: _ms(parse_time(getattr(args, name), field=name, tz=args.timezone))
            for name in ("occurred_at", "valid_from", "valid_until")
        }
        rows = self.mem.session.scalars(
            select(Fact)
            .where(Fact.namespace == args.namespace, Fact.key == args.key)
            .order_by(Fact.created_at.desc(), Fact.id.desc())
            .execution_options(populate_existing=True)
        ).all()
        known = _recorded(args, [r for r in rows if r.forgotten_at is None], when)
        if known is not None:
            row, detail = known
            return MemoryWrite(**base, **where, id=row.id, outcome="unchanged", detail=detail)
        gone = [
            (r.id, at)
            for r in rows
            if (at := r.forgotten_at) is not None and _same_statement(r, args, when["occurred_at"])
        ]
        kept = _forgotten(gone, said, "fact") if gone else None
        if kept is not None:
            return MemoryWrite(**base, **where, id=kept[0], outcome="forgotten", detail=kept[1])
        context = ToolContext(session_id=window.session_id or window.tag, now=reference)
        output = tool.handler(args, self.mem, context)
        data = output.data if isinstance(output.data, dict) else {}
        return MemoryWrite(**base, **where, id=data.get("id"), outcome="stored", detail=output.text)

    def _note(
        self, base: dict[str, Any], arguments: dict[str, Any], window: Window, said: Said | None
    ) -> MemoryWrite:
        args = StoreNoteArgs.model_validate(arguments)
        # refused as NoteService.add refuses it (a NUL on PostgreSQL), before it is looked up
        self.mem.backend.storable_text(args.content, "content")
        # the first of them as _active_note reads them, not whichever row the database reads
        existing = self.mem.session.scalars(
            select(Note.id)
            .where(Note.content == args.content, Note.forgotten_at.is_(None))
            .order_by(Note.created_at, code_points(Note.id))
            .limit(1)
        ).first() or self._active_note(args.content)
        if existing is not None:
            return MemoryWrite(
                **base, id=existing, outcome="unchanged", detail="the same note exists"
            )
        gone = self._forgotten_note(args.content)
        kept = _forgotten(gone, said, "note") if gone else None
        if kept is not None:
            return MemoryWrite(**base, id=kept[0], outcome="forgotten", detail=kept[1])
        note = self.mem.notes.add(
            args.content, importance=args.importance, session_id=_session_of(window, said)
        )
        if self._active_notes is not None:
            self._active_notes.setdefault(note_key(args.content), note.id)
        return MemoryWrite(**base, id=note.id, outcome="stored", detail="note stored")


def _session_of(window: Window, said: Said | None) -> str | None:
    """The session a note was said in: the window's, or in a window over many sessions (a
    time range, the consolidator's batch) the one session of the messages it may have been
    said in (the one it cites, else any of the window's). None when they are many sessions'."""
    if window.session_id is not None or said is None:
        return window.session_id
    sessions = {
        t.session_id
        for t in window.dialogue
        if said.earliest <= to_epoch_ms(t.timestamp) <= said.latest
    }
    return sessions.pop() if len(sessions) == 1 else None


def _recorded(
    args: StoreFactArgs, active: list[Fact], when: dict[str, int | None]
) -> tuple[Fact, str] | None:
    """The version (of the ``active`` ones, newest first) that already says what ``args``
    would store, and why it is the same: for a state, the current version with the same
    value, kind and validity window; for an event, any version recording the same value at the
    same time (an event told again is not a new one; the same value at another time is).
    None: the write is new."""
    if args.fact_kind == FactKind.EVENT:
        event = next(
            (row for row in active if _same_statement(row, args, when["occurred_at"])), None
        )
        return None if event is None else (event, "the same event is recorded")
    current = next((row for row in active if row.superseded_by is None), None)
    if current is None or current.fact_kind != FactKind.STATE:
        return None
    if not _same_json(current.value, args.value):
        return None
    window = (_ms(current.valid_from), _ms(current.valid_until))
    if window != (when["valid_from"], when["valid_until"]):
        return None
    return current, "the current value is the same"
