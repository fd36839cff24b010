"""Our additive skill tables: the structured recipe of a skill and its replaced revisions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import COUNT, EpochMillis, Int, JsonText

NO_RECIPE_REVISION = 0
"""``revision`` of a row that only carries ``grade_anchor_at`` for a skill without a recipe."""


class SkillRecipe(Base):
    """One row per skill that has a recipe, or whose grade anchor had to be stored.

    Philont schema-31 software never reads this table. ``revision`` is 1 for the first recipe
    and grows by one per revision; :data:`NO_RECIPE_REVISION` (0) marks an anchor-only row (the
    skill has no recipe, we only remember when its grade was last set by hand or by disuse).
    ``grade_anchor_at`` together with the skill's own use and outcome times is the starting point
    of disuse decay.
    """

    __tablename__ = "philont_skill_recipes"

    skill_id: Mapped[str] = mapped_column(
        Text,
        ForeignKey("memory_skills.id", ondelete="CASCADE"),
        primary_key=True,
        nullable=True,
    )
    steps: Mapped[Any] = mapped_column(
        "steps_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    verification: Mapped[str | None] = mapped_column(Text)
    tool_policy: Mapped[Any] = mapped_column(
        "tool_policy_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    revision: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("1"), info=COUNT)
    grade_anchor_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class SkillRevision(Base):
    """A replaced revision of a skill: its content, and the outcomes recorded while it was current.

    The current revision is not stored here: its counts are the skill's totals minus the sum of
    the counts of its snapshots (counters only ever grow, so the difference is exact).
    """

    __tablename__ = "philont_skill_revisions"
    __table_args__ = (
        UniqueConstraint("skill_id", "revision"),
        Index("idx_philont_skill_revisions_skill", "skill_id", "revision"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    skill_id: Mapped[str] = mapped_column(
        Text, ForeignKey("memory_skills.id", ondelete="CASCADE"), nullable=False
    )
    revision: Mapped[int] = mapped_column(Int, nullable=False, info=COUNT)
    description: Mapped[str] = mapped_column(Text, nullable=False)
    action_template: Mapped[str] = mapped_column(Text, nullable=False)
    trigger_keywords: Mapped[Any] = mapped_column(JsonText, nullable=False)
    steps: Mapped[Any] = mapped_column("steps_json", JsonText, nullable=False)
    verification: Mapped[str | None] = mapped_column(Text)
    tool_policy: Mapped[Any] = mapped_column("tool_policy_json", JsonText, nullable=False)
    success_count: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    failure_count: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    replaced_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
