"""Read models of a reflection run: which retrievals were credited or blamed, which were not."""

from __future__ import annotations

import enum

from philont.domain.maturity import Grade, Outcome
from philont.schemas.base import ReadModel


class SkipReason(enum.StrEnum):
    """Why a retrieval got no outcome in this run."""

    PENDING = "pending"
    """Its window is still open; it is left unmarked and looked at again next run."""
    NO_ACTIONS = "no_actions"
    """Its window closed with no action in it; marked processed, nothing credited."""
    UNKNOWN_SKILL = "unknown_skill"
    """No skill has that name (deleted since, or never existed); marked processed."""
    REMADE = "remade"
    """The skill of that name was made after the retrieval: the one fetched was deleted and
    another made under its name since, which the outcome says nothing about; marked processed."""


class CreditRecord(ReadModel):
    """One outcome recorded for a skill on the strength of the actions after its retrieval."""

    skill: str
    outcome: Outcome
    retrieval_action_id: int
    attributed_action_ids: list[int]
    reason: str
    grade_before: Grade
    grade_after: Grade


class SkippedRetrieval(ReadModel):
    """A retrieval that got no outcome in this run, and why."""

    skill: str
    retrieval_action_id: int
    reason: SkipReason
    detail: str


class ReflectionReport(ReadModel):
    """What one :meth:`~philont.services.reflector.ReflectorService.run` did.

    Retrievals an earlier run had already decided are not reported again.
    """

    credited: list[CreditRecord]
    skipped: list[SkippedRetrieval]
    successes: int
    failures: int
    pending: int
