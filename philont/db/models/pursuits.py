"""Pursuits (the agent's goals, rooted at the 'default' charter) and the drives serving them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import EpochMillis, Int, IntBool, JsonText, Real


class Pursuit(Base):
    __tablename__ = "memory_pursuits"
    __table_args__ = (
        Index("idx_pursuits_parent", "parent_pursuit_id"),
        Index("idx_pursuits_root", "root_pursuit_id"),
        Index("idx_pursuits_status", "status"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    parent_pursuit_id: Mapped[str | None] = mapped_column(Text)
    root_pursuit_id: Mapped[str] = mapped_column(Text, nullable=False)
    title: Mapped[str] = mapped_column(Text, nullable=False)
    intent: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'active'"))
    is_evergreen: Mapped[bool] = mapped_column(IntBool, nullable=False, server_default=text("0"))
    stake: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'medium'"))
    deadline: Mapped[datetime | None] = mapped_column(EpochMillis)
    origin: Mapped[str] = mapped_column(Text, nullable=False)
    open_questions: Mapped[Any] = mapped_column(
        "open_questions_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    resolution_criteria: Mapped[str | None] = mapped_column(Text)
    evidence_refs: Mapped[Any] = mapped_column(
        "evidence_refs_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    progress_markers: Mapped[Any] = mapped_column(
        "progress_markers_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    last_progress_turn: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("0"))
    constitution_values: Mapped[str | None] = mapped_column(Text)
    constitution_red_lines: Mapped[str | None] = mapped_column(Text)
    constitution_drive_bounds: Mapped[str | None] = mapped_column(Text)
    constitution_governance: Mapped[str | None] = mapped_column(Text)
    last_touched_ts: Mapped[datetime | None] = mapped_column(EpochMillis)
    stake_weight: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("5"))
    is_active_research: Mapped[bool] = mapped_column(
        IntBool, nullable=False, server_default=text("0")
    )
    research_iterations: Mapped[int] = mapped_column(Int, nullable=False, server_default=text("0"))
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class DriveConfig(Base):
    __tablename__ = "memory_drive_configs"
    __table_args__ = (
        Index("idx_drive_configs_root", "root_pursuit_id"),
        Index("idx_drive_configs_kind", "kind"),
        Index("idx_drive_configs_status", "status"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'shadow'"))
    trigger_expr: Mapped[Any] = mapped_column("trigger_expr_json", JsonText, nullable=False)
    action_template: Mapped[Any] = mapped_column("action_template_json", JsonText, nullable=False)
    params: Mapped[Any] = mapped_column(
        "params_json", JsonText, nullable=False, server_default=text("'{}'")
    )
    effectiveness: Mapped[Any] = mapped_column(
        "effectiveness_json",
        JsonText,
        nullable=False,
        server_default=text(r"""'{"samples"\:0,"ewma"\:0,"lastFired"\:null}'"""),
    )
    root_pursuit_id: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class DriveOutcome(Base):
    __tablename__ = "memory_drive_outcomes"
    __table_args__ = (
        Index("idx_drive_outcomes_drive", "drive_id"),
        Index("idx_drive_outcomes_fired", "fired_at"),
        Index("idx_drive_outcomes_root", "root_pursuit_id"),
        Index(
            "idx_drive_outcomes_pursuit",
            "served_pursuit_id",
            sqlite_where=text("served_pursuit_id IS NOT NULL"),
            postgresql_where=text("served_pursuit_id IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    drive_id: Mapped[str] = mapped_column(Text, nullable=False)
    fired_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    trigger_snapshot: Mapped[Any] = mapped_column("trigger_snapshot_json", JsonText, nullable=False)
    injected_action: Mapped[Any] = mapped_column("injected_action_json", JsonText, nullable=False)
    subsequent_tool_calls: Mapped[Any] = mapped_column(
        "subsequent_tool_calls_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    memory_delta: Mapped[Any] = mapped_column(
        "memory_delta_json", JsonText, nullable=False, server_default=text("'{}'")
    )
    served_pursuit_id: Mapped[str | None] = mapped_column(Text)
    effectiveness_score: Mapped[float | None] = mapped_column(Real)
    root_pursuit_id: Mapped[str] = mapped_column(Text, nullable=False)
