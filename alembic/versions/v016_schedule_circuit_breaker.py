"""Philont schema v16: the schedule circuit breaker.

Mirrors Philont's migration 15 -> 16: ``memory_schedules`` gains ``consecutive_failures INTEGER
NOT NULL DEFAULT 0`` (autonomous-turn failures, cleared on success) and ``paused_until INTEGER``
(soft-pause deadline in ms; while it is in the future the schedule is skipped).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v016"
down_revision = "v015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "memory_schedules",
        sa.Column(
            "consecutive_failures", mo.INTEGER(), nullable=False, server_default=sa.text("0")
        ),
    )
    mo.add_column_if_missing("memory_schedules", sa.Column("paused_until", mo.INTEGER()))
    mo.set_schema_version(16)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
