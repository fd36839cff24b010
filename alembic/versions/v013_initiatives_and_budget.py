"""Philont schema v13: ``memory_initiatives`` and ``autonomous_budget``.

Mirrors Philont's migration 12 -> 13:

* CREATE ``memory_initiatives`` plus ``idx_initiatives_status(status, created_at)``,
  ``idx_initiatives_driver(driver, completed_at)`` and the partial
  ``idx_initiatives_target_recent(target_ref, completed_at) WHERE status = 'done'``;
* CREATE ``autonomous_budget`` with the composite primary key ``(user_id, date)``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v013"
down_revision = "v012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("memory_initiatives"):
        op.create_table(
            "memory_initiatives",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("kind", sa.Text(), nullable=False),
            sa.Column("driver", sa.Text(), nullable=False),
            sa.Column("target_ref", sa.Text(), nullable=False),
            sa.Column("rationale", sa.Text(), nullable=False),
            sa.Column("utility", mo.REAL(), nullable=False),
            sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'pending'")),
            sa.Column("budget_estimate", mo.INTEGER(), nullable=False),
            sa.Column("budget_actual", mo.INTEGER()),
            sa.Column("outcome_summary", sa.Text()),
            sa.Column("outcome_refs", sa.Text()),
            sa.Column("error", sa.Text()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("started_at", mo.INTEGER()),
            sa.Column("completed_at", mo.INTEGER()),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_initiatives_status"
        " ON memory_initiatives(status, created_at)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_initiatives_driver"
        " ON memory_initiatives(driver, completed_at)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_initiatives_target_recent"
        " ON memory_initiatives(target_ref, completed_at) WHERE status = 'done'"
    )

    if not mo.has_table("autonomous_budget"):
        op.create_table(
            "autonomous_budget",
            sa.Column("user_id", sa.Text(), nullable=False),
            sa.Column("date", sa.Text(), nullable=False),
            sa.Column("llm_tokens_used", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("tool_calls_used", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("initiatives_run", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.PrimaryKeyConstraint("user_id", "date"),
        )
    mo.set_schema_version(13)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
