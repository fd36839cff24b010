"""Philont schema v17: ``memory_plans``.

Mirrors Philont's migration 16 -> 17: CREATE ``memory_plans`` (without the iteration columns of
v19, the deliverable columns of v20 and ``persisted_to`` of v22) plus the indexes
``idx_plans_session(session_id, created_at)``, the partial
``idx_plans_signature(task_signature, created_at) WHERE task_signature IS NOT NULL`` and
``idx_plans_status(status, updated_at)``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v017"
down_revision = "v016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("memory_plans"):
        op.create_table(
            "memory_plans",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("session_id", sa.Text(), nullable=False),
            sa.Column("task_signature", sa.Text()),
            sa.Column("steps_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")),
            sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'draft'")),
            sa.Column(
                "review_history_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")
            ),
            sa.Column("guide_ref", sa.Text()),
            sa.Column("outcome_summary", sa.Text()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
            sa.Column("completed_at", mo.INTEGER()),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_plans_session ON memory_plans(session_id, created_at)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_plans_signature ON memory_plans(task_signature, created_at)"
        " WHERE task_signature IS NOT NULL"
    )
    op.execute("CREATE INDEX IF NOT EXISTS idx_plans_status ON memory_plans(status, updated_at)")
    mo.set_schema_version(17)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
