"""Schema metadata and the runtime's own bookkeeping tables (routing and config rules,
initiatives, the autonomous budget, push subscriptions, plans, reasoning sessions)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, PrimaryKeyConstraint, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import EpochMillis, Int, IntBool, JsonText, Real

_ZERO = text("0")


class Meta(Base):
    __tablename__ = "memory_meta"

    key: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    value: Mapped[str] = mapped_column(Text, nullable=False)


class RoutingRule(Base):
    __tablename__ = "routing_rules"
    __table_args__ = (
        Index("idx_rr_signature", "task_signature"),
        Index("idx_rr_confidence", "confidence"),
        Index("idx_rr_prefer_skill", "prefer_skill"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    task_signature: Mapped[str] = mapped_column(Text, nullable=False)
    trigger_condition: Mapped[str] = mapped_column(Text, nullable=False)
    prefer_skill: Mapped[str | None] = mapped_column(Text)
    avoid_skills: Mapped[str | None] = mapped_column(Text)
    carveout: Mapped[str] = mapped_column(Text, nullable=False)
    evidence: Mapped[str] = mapped_column(Text, nullable=False)
    confidence: Mapped[str] = mapped_column(
        Text, nullable=False, server_default=text("'provisional'")
    )
    success_count: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    failure_count: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    consecutive_successes: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    consecutive_failures: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    context_keywords: Mapped[str | None] = mapped_column(Text)
    reflection_id: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class Initiative(Base):
    __tablename__ = "memory_initiatives"
    __table_args__ = (
        Index("idx_initiatives_status", "status", "created_at"),
        Index("idx_initiatives_driver", "driver", "completed_at"),
        Index(
            "idx_initiatives_target_recent",
            "target_ref",
            "completed_at",
            sqlite_where=text("status = 'done'"),
            postgresql_where=text("status = 'done'"),
        ),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    driver: Mapped[str] = mapped_column(Text, nullable=False)
    target_ref: Mapped[str] = mapped_column(Text, nullable=False)
    rationale: Mapped[str] = mapped_column(Text, nullable=False)
    utility: Mapped[float] = mapped_column(Real, nullable=False)
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'pending'"))
    budget_estimate: Mapped[int] = mapped_column(Int, nullable=False)
    budget_actual: Mapped[int | None] = mapped_column(Int)
    outcome_summary: Mapped[str | None] = mapped_column(Text)
    outcome_refs: Mapped[str | None] = mapped_column(Text)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    started_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    completed_at: Mapped[datetime | None] = mapped_column(EpochMillis)


class AutonomousBudget(Base):
    __tablename__ = "autonomous_budget"
    __table_args__ = (PrimaryKeyConstraint("user_id", "date"),)

    user_id: Mapped[str] = mapped_column(Text, nullable=False)
    date: Mapped[str] = mapped_column(Text, nullable=False)
    llm_tokens_used: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    tool_calls_used: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    initiatives_run: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)


class PushSubscription(Base):
    __tablename__ = "push_subscriptions"
    __table_args__ = (
        PrimaryKeyConstraint("channel", "peer"),
        Index(
            "idx_push_sub_enabled",
            "enabled",
            "channel",
            sqlite_where=text("enabled = 1"),
            postgresql_where=text("enabled = 1"),
        ),
    )

    channel: Mapped[str] = mapped_column(Text, nullable=False)
    peer: Mapped[str] = mapped_column(Text, nullable=False)
    enabled: Mapped[bool] = mapped_column(IntBool, nullable=False, server_default=text("1"))
    quiet_start_hour: Mapped[int | None] = mapped_column(Int)
    quiet_end_hour: Mapped[int | None] = mapped_column(Int)
    timezone: Mapped[str | None] = mapped_column(Text)
    digest_min_interval_ms: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("14400000")
    )
    urgent_min_interval_ms: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("3600000")
    )
    last_digest_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    last_urgent_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class Plan(Base):
    __tablename__ = "memory_plans"
    __table_args__ = (
        Index("idx_plans_session", "session_id", "created_at"),
        Index(
            "idx_plans_signature",
            "task_signature",
            "created_at",
            sqlite_where=text("task_signature IS NOT NULL"),
            postgresql_where=text("task_signature IS NOT NULL"),
        ),
        Index("idx_plans_status", "status", "updated_at"),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    session_id: Mapped[str] = mapped_column(Text, nullable=False)
    task_signature: Mapped[str | None] = mapped_column(Text)
    steps: Mapped[Any] = mapped_column(
        "steps_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'draft'"))
    review_history: Mapped[Any] = mapped_column(
        "review_history_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    guide_ref: Mapped[str | None] = mapped_column(Text)
    outcome_summary: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    completed_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    inner_iter: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    outer_iter: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    deliverables: Mapped[Any] = mapped_column(
        "deliverables_json", JsonText, nullable=False, server_default=text("'[]'")
    )
    deliverable_status: Mapped[Any] = mapped_column(
        "deliverable_status_json", JsonText, nullable=True
    )
    is_placeholder: Mapped[bool] = mapped_column(IntBool, nullable=False, server_default=_ZERO)
    persisted_to: Mapped[str | None] = mapped_column(Text)


class ConfigRule(Base):
    __tablename__ = "config_rules"
    __table_args__ = (
        Index(
            "idx_config_rules_scope_active",
            "scope",
            "confidence",
            sqlite_where=text("confidence NOT IN ('retired', 'disputed')"),
            postgresql_where=text("confidence NOT IN ('retired', 'disputed')"),
        ),
        Index("idx_config_rules_scope_all", "scope", "updated_at"),
        Index(
            "idx_config_rules_decay",
            "updated_at",
            sqlite_where=text("confidence != 'retired'"),
            postgresql_where=text("confidence != 'retired'"),
        ),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[int] = mapped_column(Int, primary_key=True, autoincrement=True, nullable=True)
    scope: Mapped[str] = mapped_column(Text, nullable=False)
    key: Mapped[str | None] = mapped_column(Text)
    value: Mapped[Any] = mapped_column("value_json", JsonText, nullable=False)
    source: Mapped[str] = mapped_column(Text, nullable=False)
    confidence: Mapped[str] = mapped_column(
        Text, nullable=False, server_default=text("'provisional'")
    )
    evidence: Mapped[str | None] = mapped_column(Text)
    audit_ref: Mapped[str | None] = mapped_column(Text)
    success_count: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    failure_count: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    consecutive_successes: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    consecutive_failures: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class ReasoningSession(Base):
    __tablename__ = "reasoning_sessions"
    __table_args__ = (Index("idx_reasoning_sessions_status", "status", "updated_at"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    goal: Mapped[str] = mapped_column(Text, nullable=False)
    assumptions: Mapped[Any] = mapped_column("assumptions_json", JsonText, nullable=True)
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'active'"))
    owner_session_id: Mapped[str | None] = mapped_column(Text)
    root_node_id: Mapped[str | None] = mapped_column(Text)
    budget_spent: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    no_progress_rounds: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    auto_advance: Mapped[bool] = mapped_column(IntBool, nullable=False, server_default=_ZERO)
    mode: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'formal'"))
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


class ReasoningNode(Base):
    __tablename__ = "reasoning_nodes"
    __table_args__ = (Index("idx_reasoning_nodes_session", "session_id", "status"),)

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    session_id: Mapped[str] = mapped_column(Text, nullable=False)
    parent_id: Mapped[str | None] = mapped_column(Text)
    claim: Mapped[str] = mapped_column(Text, nullable=False)
    kind: Mapped[str] = mapped_column(Text, nullable=False)
    status: Mapped[str] = mapped_column(Text, nullable=False, server_default=text("'open'"))
    result: Mapped[str | None] = mapped_column(Text)
    approaches_tried: Mapped[Any] = mapped_column("approaches_tried_json", JsonText, nullable=True)
    evidence_refs: Mapped[Any] = mapped_column("evidence_refs_json", JsonText, nullable=True)
    depth: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    value: Mapped[float | None] = mapped_column(Real)
    visits: Mapped[int] = mapped_column(Int, nullable=False, server_default=_ZERO)
    technique: Mapped[str | None] = mapped_column(Text)
