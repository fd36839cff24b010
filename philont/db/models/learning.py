"""Our additive tables of the self-learning loop: consolidation batches, verified cases, verdicts.

Philont schema-31 software never reads them (revision v035 only adds tables).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import EpochMillis, Int, JsonText


class LearningBatch(Base):
    """One batch of the idle consolidator: the messages after the cursor value ``after_ts``
    (epoch ms; -1 before the first batch) up to ``until_ts`` inclusive.

    ``after_ts`` is unique: claiming a batch is inserting its row (or taking over a failed or
    abandoned one with a conditional update), so two processes never work on the same batch.
    ``status`` is ``claimed`` (``owner`` works on it until ``lease_until``), ``done`` (the
    cursor moved past it in the same transaction) or ``failed`` (retried from ``retry_at``).
    """

    __tablename__ = "philont_learning_batches"
    __table_args__ = (UniqueConstraint("after_ts"), {"sqlite_autoincrement": True})

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    after_ts: Mapped[int] = mapped_column(Int, nullable=False)
    until_ts: Mapped[int] = mapped_column(Int, nullable=False)
    message_count: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("0"))
    status: Mapped[str] = mapped_column(Text, nullable=False)
    owner: Mapped[str | None] = mapped_column(Text)
    attempts: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("0"))
    claimed_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    lease_until: Mapped[datetime | None] = mapped_column(EpochMillis)
    retry_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    finished_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    tokens_used: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("0"))
    last_error: Mapped[str | None] = mapped_column(Text)
    report: Mapped[Any] = mapped_column("report_json", JsonText, nullable=True)


class LearningCase(Base):
    """A run a judge verified (goal, tool trace, result): the evidence skills are condensed
    from in verify-then-condense mode. ``skill_id`` is the skill condensed from it (NULL until
    then, or when the condensed skill was refused or deleted)."""

    __tablename__ = "philont_cases"
    __table_args__ = (Index("idx_philont_cases_skill", "skill_id"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True)
    goal: Mapped[str] = mapped_column(Text, nullable=False)
    trace: Mapped[Any] = mapped_column("trace_json", JsonText, nullable=False)
    result: Mapped[str] = mapped_column(Text, nullable=False)
    session_id: Mapped[str | None] = mapped_column(Text)
    judge: Mapped[str | None] = mapped_column(Text)
    reason: Mapped[str | None] = mapped_column(Text)
    skill_id: Mapped[str | None] = mapped_column(
        Text, ForeignKey("memory_skills.id", ondelete="SET NULL")
    )
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    condensed_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    condense_note: Mapped[str | None] = mapped_column(Text)


class JudgeVerdict(Base):
    """One verdict of the judge on a run, and what outcome attribution later observed for the
    skill the run retrieved (``retrieval_action_id``, a ``use_skill`` action): ``success``,
    ``failure`` or ``none`` (nothing attributed). The agreement of the two is the judge's
    track record. ``first_action_id`` (the run's first tool call) identifies the run, so the loop
    judges each run once."""

    __tablename__ = "philont_judge_verdicts"
    __table_args__ = (
        Index("idx_philont_judge_verdicts_skill", "skill_name"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    case_id: Mapped[str | None] = mapped_column(
        Text, ForeignKey("philont_cases.id", ondelete="SET NULL")
    )
    session_id: Mapped[str | None] = mapped_column(Text)
    goal: Mapped[str] = mapped_column(Text, nullable=False)
    verdict: Mapped[str] = mapped_column(Text, nullable=False)
    reason: Mapped[str | None] = mapped_column(Text)
    judge: Mapped[str | None] = mapped_column(Text)
    skill_name: Mapped[str | None] = mapped_column(Text)
    retrieval_action_id: Mapped[int | None] = mapped_column(Int)
    first_action_id: Mapped[int | None] = mapped_column(Int)
    judged_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    observed_outcome: Mapped[str | None] = mapped_column(Text)
    observed_at: Mapped[datetime | None] = mapped_column(EpochMillis)
