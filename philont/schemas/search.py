"""Read models of keyword search hits and of the timeline retriever's context window."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from philont.domain.kinds import Role, SkillKind
from philont.domain.maturity import Grade
from philont.schemas.base import ReadModel

__all__ = ["ContextMessage", "MessageHit", "NoteHit", "RetrievalResult", "SkillHit"]


class MessageHit(ReadModel):
    """A raw message that matched; ``score`` is relevance (higher is better, not normalised)."""

    id: int
    session_id: str
    role: Role
    content: str
    timestamp: datetime
    score: float


class NoteHit(ReadModel):
    """A note that matched; ``score`` is relevance (higher is better, not normalised)."""

    id: str
    content: str
    importance: float
    session_id: str | None
    created_at: datetime
    forgotten_at: datetime | None
    score: float


class SkillHit(ReadModel):
    """A skill that matched; ``score`` is relevance (higher is better, not normalised)."""

    id: str
    name: str
    description: str
    when_to_use: str
    trigger_keywords: list[str]
    kind: SkillKind
    maturity: Grade
    use_count: int
    created_at: datetime
    score: float


class ContextMessage(ReadModel):
    """One message of the context window, with its role mapped for an LLM.

    ``section`` says where it comes from: ``recall`` (older messages found by keyword),
    ``separator`` (the marker between the two sections, ``message_id`` None) or ``recent``.
    """

    role: Literal["user", "assistant"]
    content: str
    timestamp: datetime
    message_id: int | None
    section: Literal["recall", "separator", "recent"]


class RetrievalResult(ReadModel):
    """The context window and its accounting.

    ``recency_count`` / ``recall_count`` count the messages shown (system messages are neither
    shown nor counted; ``dropped_system`` says how many the recency window skipped). Token
    totals are estimates of the shown messages; the separator is not counted.
    """

    messages: list[ContextMessage]
    recency_count: int
    recall_count: int
    recent_tokens: int
    recall_tokens: int
    total_tokens: int
    dropped_system: int
    recall_channels: tuple[str, ...] = ("keyword",)
    """What answered recall: ``keyword``, and ``vector`` when an embedder is configured and
    stored vectors matched (issue #18); empty when recall found nothing."""
    unembedded: int = 0
    """Recent messages without a vector yet (recall still finds them by keyword)."""
