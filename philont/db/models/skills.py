"""Layer 3: skills with their maturity ladder."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import COUNT, EpochMillis, Int, JsonText, StrEnumText
from philont.domain.kinds import SkillKind
from philont.domain.maturity import Grade


class Skill(Base):
    __tablename__ = "memory_skills"
    __table_args__ = (Index("idx_skills_name", "name"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    name: Mapped[str] = mapped_column(Text, nullable=False, unique=True)
    description: Mapped[str] = mapped_column(Text, nullable=False)
    trigger_keywords: Mapped[Any] = mapped_column(JsonText, nullable=False)
    action_template: Mapped[str] = mapped_column(Text, nullable=False)
    use_count: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    last_used_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    success_count: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    failure_count: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    last_failure_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    kind: Mapped[SkillKind] = mapped_column(
        StrEnumText(SkillKind, fallback=SkillKind.POSITIVE),
        nullable=False,
        server_default=text("'positive'"),
    )
    source: Mapped[str | None] = mapped_column(Text)
    root_pursuit_id: Mapped[str | None] = mapped_column(Text)
    maturity: Mapped[Grade] = mapped_column(
        StrEnumText(Grade, fallback=Grade.DRAFT), nullable=False, server_default=text("'draft'")
    )
    last_success_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    consecutive_failures: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    when_to_use: Mapped[str | None] = mapped_column(Text)


Index("idx_skills_use_count", Skill.use_count.desc())
