"""Layers 1 and 2: notes and facts, plus the access log of reads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import EpochMillis, Int, JsonText, Real, StrEnumText
from philont.domain.kinds import AccessTarget, FactKind


class Note(Base):
    __tablename__ = "memory_notes"
    __table_args__ = (Index("idx_notes_session", "session_id"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    importance: Mapped[float] = mapped_column(Real, nullable=False, server_default=text("0.5"))
    session_id: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    last_accessed_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    forgotten_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    root_pursuit_id: Mapped[str | None] = mapped_column(Text)


Index("idx_notes_importance", Note.importance.desc())
Index(
    "idx_notes_active",
    Note.importance.desc(),
    sqlite_where=text("forgotten_at IS NULL"),
    postgresql_where=text("forgotten_at IS NULL"),
)


class Fact(Base):
    __tablename__ = "memory_facts"
    __table_args__ = (
        Index("idx_facts_namespace", "namespace"),
        Index("idx_facts_ns_key", "namespace", "key"),
        Index(
            "idx_facts_active",
            "namespace",
            "key",
            sqlite_where=text("superseded_by IS NULL AND forgotten_at IS NULL"),
            postgresql_where=text("superseded_by IS NULL AND forgotten_at IS NULL"),
        ),
        Index(
            "idx_facts_validity",
            "valid_until",
            sqlite_where=text("forgotten_at IS NULL"),
            postgresql_where=text("forgotten_at IS NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    namespace: Mapped[str] = mapped_column(Text, nullable=False)
    key: Mapped[str] = mapped_column(Text, nullable=False)
    value: Mapped[Any] = mapped_column("value_json", JsonText, nullable=False)
    confidence: Mapped[float] = mapped_column(Real, nullable=False, server_default=text("1.0"))
    superseded_by: Mapped[str | None] = mapped_column(Text)
    supersedes: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    occurred_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    valid_from: Mapped[datetime | None] = mapped_column(EpochMillis)
    valid_until: Mapped[datetime | None] = mapped_column(EpochMillis)
    last_accessed_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    decay_tau_days: Mapped[float | None] = mapped_column(Real)
    forgotten_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    fact_kind: Mapped[FactKind] = mapped_column(
        StrEnumText(FactKind, fallback=FactKind.STATE),
        nullable=False,
        server_default=text("'state'"),
    )
    root_pursuit_id: Mapped[str | None] = mapped_column(Text)


class AccessLogEntry(Base):
    __tablename__ = "memory_access_log"
    __table_args__ = (
        Index("idx_access_target", "target_type", "target_id"),
        Index("idx_access_time", "accessed_at"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    target_type: Mapped[AccessTarget] = mapped_column(StrEnumText(AccessTarget), nullable=False)
    target_id: Mapped[str] = mapped_column(Text, nullable=False)
    accessed_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    context: Mapped[str | None] = mapped_column(Text)
    root_pursuit_id: Mapped[str | None] = mapped_column(Text)
