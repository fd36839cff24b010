"""Session summaries (Philont's compactor): a long session gets a rolling summary note,
``session-summary-<session id>``, importance 1.0, extended with each new window of it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import func, select

from philont.db.models import Note, RawMessage
from philont.db.ordering import code_points
from philont.db.retry import database_error_of
from philont.errors import PhilontError
from philont.learning.config import LearningConfig
from philont.learning.lock import hold_learning_lock
from philont.learning.parse import parse_summary
from philont.learning.prompts import summary_prompt
from philont.learning.window import Window
from philont.llm.base import ModelClient, ask
from philont.log import get_logger
from philont.schemas.learning import SummaryReport
from philont.services.notes import SESSION_SUMMARY_PREFIX

if TYPE_CHECKING:
    from datetime import datetime

    from sqlalchemy.orm import Session

    from philont.memory import Memory

__all__ = ["SUMMARY_IMPORTANCE", "Summary", "ask_for_summaries", "long_sessions", "write_summaries"]

log = get_logger(__name__)

SUMMARY_IMPORTANCE = 1.0


@dataclass(frozen=True)
class Summary:
    """A summary the model wrote for one session (``text`` None: nothing usable came back)."""

    session_id: str
    text: str | None
    tokens_used: int


def _from_start(session: Session, window: Window, sid: str, stamps: list[datetime]) -> bool:
    """Whether the window's messages of a session (their times, oldest first) are every
    message of it up to the last of them, and up to the cursor before a consolidator's batch
    (what earlier batches learned): a batch of late messages may hold a session's first
    message and none of the others a summary covers."""
    bound = stamps[-1]
    if window.learned_until is not None:
        bound = max(bound, window.learned_until)
    count = session.scalar(
        select(func.count())
        .select_from(RawMessage)
        .where(RawMessage.session_id == sid, RawMessage.timestamp <= bound)
    )
    return count == len(stamps)


def long_sessions(
    session: Session, window: Window, config: LearningConfig
) -> dict[str, str | None]:
    """The sessions of the window with at least ``summary_min_messages`` messages in all, with
    the summary to extend: the current one unless the window holds the session from its start
    (its first message and every one after it up to the window's last, and up to the cursor
    before a consolidator's batch), else None — such a window is summarized afresh, so
    summarizing a session again never counts its turns twice. A session whose summary was
    forgotten is left out: its text was sent to the model as the summary to extend at every
    window of the session, and the answer overwrote a note no one reads (a forgotten note
    stays forgotten), a model call spent on it. Sessions come in code point order of their
    ids."""
    ids = window.sessions()
    if not ids:
        return {}
    counts = session.execute(
        select(RawMessage.session_id, func.count(), func.min(RawMessage.timestamp))
        .where(RawMessage.session_id.in_(ids))
        .group_by(RawMessage.session_id)
        # one order on both backends, the model asked in it (an unordered GROUP BY gave
        # PostgreSQL's hash or locale order)
        .order_by(code_points(RawMessage.session_id))
    )
    starts = {sid: first for sid, n, first in counts if n >= config.summary_min_messages}
    held: dict[str, list[datetime]] = {}
    for turn in window.turns:  # oldest first
        held.setdefault(turn.session_id, []).append(turn.timestamp)
    from_start = {
        sid
        for sid, first in starts.items()
        if held[sid][0] <= first and _from_start(session, window, sid, held[sid])
    }
    previous: dict[str, str] = {}
    forgotten: set[str] = set()
    for note_id, content, forgotten_at in session.execute(
        select(Note.id, Note.content, Note.forgotten_at).where(
            Note.id.in_([SESSION_SUMMARY_PREFIX + sid for sid in starts])
        )
    ):
        previous[note_id] = content
        if forgotten_at is not None:
            forgotten.add(note_id)
    return {
        sid: None if sid in from_start else previous.get(SESSION_SUMMARY_PREFIX + sid)
        for sid in starts
        if SESSION_SUMMARY_PREFIX + sid not in forgotten
    }


def ask_for_summaries(
    model: ModelClient, window: Window, sessions: dict[str, str | None], config: LearningConfig
) -> list[Summary]:
    """One model call per long session of the window: its previous summary extended with the
    window's part of it. Raises :class:`~philont.errors.ModelError`."""
    summaries = []
    for sid, previous in sessions.items():
        turns = [t for t in window.dialogue if t.session_id == sid]
        if not turns:
            continue
        prompt = summary_prompt(
            turns, previous, max_chars=config.max_message_chars, total=config.max_prompt_chars
        )
        completion = ask(model, prompt)
        summaries.append(Summary(sid, parse_summary(completion.text), completion.tokens_used))
    return summaries


def write_summaries(mem: Memory, summaries: list[Summary]) -> list[SummaryReport]:
    """Upsert each summary note (a forgotten summary stays forgotten: ``NoteService.upsert``)."""
    hold_learning_lock(mem)
    reports = []
    for summary in summaries:
        note_id = SESSION_SUMMARY_PREFIX + summary.session_id
        problem = _write(mem, note_id, summary)
        reports.append(
            SummaryReport(
                session_id=summary.session_id,
                note_id=note_id if problem is None else None,
                written=problem is None,
                detail=problem or "",
                tokens_used=summary.tokens_used,
            )
        )
        if problem is None:
            log.info("learning.summary_written", session_id=summary.session_id, note_id=note_id)
    return reports


def _write(mem: Memory, note_id: str, summary: Summary) -> str | None:
    """Upsert the summary's note: None, or why it was not written."""
    if summary.text is None:
        return "the model gave no usable summary"
    try:
        with mem.session.begin_nested():
            mem.notes.upsert(
                note_id, summary.text, importance=SUMMARY_IMPORTANCE, session_id=summary.session_id
            )
    except PhilontError as exc:
        if database_error_of(exc) is not None:
            raise  # the database failed, not the summary: the unit of work runs again or fails
        return f"{exc.code}: {exc.message}"
    return None
