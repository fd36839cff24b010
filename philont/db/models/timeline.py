"""Layer 0: the raw timeline (sessions and append-only messages) and the action log."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import OBJECT, EpochMillis, Int, IntBool, JsonText, StrEnumText
from philont.domain.kinds import Role


class RawSession(Base):
    __tablename__ = "memory_raw_sessions"

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    started_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    ended_at: Mapped[datetime | None] = mapped_column(EpochMillis)


class RawMessage(Base):
    __tablename__ = "memory_raw_messages"
    __table_args__ = (
        Index("idx_raw_messages_session", "session_id"),
        Index("idx_raw_messages_timestamp", "timestamp"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    session_id: Mapped[str] = mapped_column(
        Text, ForeignKey("memory_raw_sessions.id"), nullable=False
    )
    # Search and the retriever read a role they do not know as a user's (the column's reads too).
    role: Mapped[Role] = mapped_column(StrEnumText(Role, fallback=Role.USER), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    timestamp: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class Action(Base):
    """Layer 0.5: one tool call."""

    __tablename__ = "memory_actions"
    __table_args__ = (
        Index("idx_actions_session", "session_id"),
        Index("idx_actions_tool", "tool_name"),
        Index("idx_actions_timestamp", "timestamp"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    session_id: Mapped[str] = mapped_column(Text, nullable=False)
    trigger: Mapped[str | None] = mapped_column(Text)
    tool_name: Mapped[str] = mapped_column(Text, nullable=False)
    params: Mapped[Any] = mapped_column("params_json", JsonText, nullable=False, info=OBJECT)
    result: Mapped[str | None] = mapped_column(Text)
    success: Mapped[bool] = mapped_column(IntBool, nullable=False)
    timestamp: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    linked_skill: Mapped[str | None] = mapped_column(Text)


Index(
    "idx_actions_skill",
    Action.linked_skill,
    sqlite_where=text("linked_skill IS NOT NULL"),
    postgresql_where=text("linked_skill IS NOT NULL"),
)
