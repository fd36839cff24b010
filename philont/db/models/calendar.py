"""Calendar events, schedules and what each schedule run produced."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from philont.db.base import Base
from philont.db.types import COUNT, EpochMillis, Int, IntBool, JsonText, choices


class CalendarEvent(Base):
    __tablename__ = "memory_calendar"
    __table_args__ = (
        Index("idx_calendar_starts", "starts_at"),
        Index(
            "idx_calendar_external",
            "external_ref",
            sqlite_where=text("external_ref IS NOT NULL"),
            postgresql_where=text("external_ref IS NOT NULL"),
        ),
        Index(
            "idx_calendar_fact",
            "related_fact_id",
            sqlite_where=text("related_fact_id IS NOT NULL"),
            postgresql_where=text("related_fact_id IS NOT NULL"),
        ),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    title: Mapped[str] = mapped_column(Text, nullable=False)
    starts_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    ends_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    rrule: Mapped[str | None] = mapped_column(Text)
    timezone: Mapped[str] = mapped_column(Text, nullable=False)
    # Deliberately no foreign key: facts are soft-deleted and superseded.
    related_fact_id: Mapped[str | None] = mapped_column(Text)
    external_ref: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    root_pursuit_id: Mapped[str | None] = mapped_column(Text)


class Schedule(Base):
    __tablename__ = "memory_schedules"
    __table_args__ = (
        Index(
            "idx_schedules_next_run",
            "next_run_at",
            sqlite_where=text("enabled = 1"),
            postgresql_where=text("enabled = 1"),
        ),
    )

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    name: Mapped[str] = mapped_column(Text, nullable=False)
    cron_expr: Mapped[str | None] = mapped_column(Text)
    next_run_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    last_run_at: Mapped[datetime | None] = mapped_column(EpochMillis)
    action_type: Mapped[str] = mapped_column(Text, nullable=False)
    payload: Mapped[Any] = mapped_column("payload_json", JsonText, nullable=False)
    enabled: Mapped[bool] = mapped_column(IntBool, nullable=False, server_default=text("1"))
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    created_by: Mapped[str] = mapped_column(
        Text, nullable=False, server_default=text("'llm_external'")
    )
    consecutive_failures: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    paused_until: Mapped[datetime | None] = mapped_column(EpochMillis)
    project: Mapped[str | None] = mapped_column(Text)
    root_pursuit_id: Mapped[str | None] = mapped_column(Text)


class ScheduleOutcome(Base):
    __tablename__ = "schedule_outcomes"

    id: Mapped[str] = mapped_column(Text, primary_key=True, nullable=True)
    schedule_id: Mapped[str] = mapped_column(Text, nullable=False)
    fired_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)
    duration_ms: Mapped[int] = mapped_column(Int, nullable=False)
    outcome: Mapped[str] = mapped_column(
        Text, nullable=False, info=choices(("ok", "partial", "failed"), "partial")
    )
    http_ok_count: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    http_fail_count: Mapped[int] = mapped_column(
        Int, nullable=False, server_default=text("0"), info=COUNT
    )
    http_status: Mapped[Any] = mapped_column(
        "http_status_json", JsonText, nullable=False, server_default=text("'{}'")
    )
    failure_signatures: Mapped[Any] = mapped_column(
        JsonText, nullable=False, server_default=text("'[]'")
    )
    text_summary: Mapped[str] = mapped_column(Text, nullable=False)
    created_at: Mapped[datetime] = mapped_column(EpochMillis, nullable=False)


Index(
    "idx_schedule_outcomes_sid_time", ScheduleOutcome.schedule_id, ScheduleOutcome.fired_at.desc()
)
