"""Philont schema v12: ``routing_rules``.

Mirrors Philont's migration 11 -> 12: CREATE ``routing_rules`` (learned task-signature ->
skill preferences) plus the indexes ``idx_rr_signature(task_signature)``,
``idx_rr_confidence(confidence)`` and ``idx_rr_prefer_skill(prefer_skill)``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v012"
down_revision = "v011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("routing_rules"):
        op.create_table(
            "routing_rules",
            sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
            sa.Column("task_signature", sa.Text(), nullable=False),
            sa.Column("trigger_condition", sa.Text(), nullable=False),
            sa.Column("prefer_skill", sa.Text()),
            sa.Column("avoid_skills", sa.Text()),
            sa.Column("carveout", sa.Text(), nullable=False),
            sa.Column("evidence", sa.Text(), nullable=False),
            sa.Column(
                "confidence", sa.Text(), nullable=False, server_default=sa.text("'provisional'")
            ),
            sa.Column("success_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("failure_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column(
                "consecutive_successes", mo.INTEGER(), nullable=False, server_default=sa.text("0")
            ),
            sa.Column(
                "consecutive_failures", mo.INTEGER(), nullable=False, server_default=sa.text("0")
            ),
            sa.Column("context_keywords", sa.Text()),
            sa.Column("reflection_id", sa.Text()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
            sqlite_autoincrement=True,
        )
    op.execute("CREATE INDEX IF NOT EXISTS idx_rr_signature ON routing_rules(task_signature)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_rr_confidence ON routing_rules(confidence)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_rr_prefer_skill ON routing_rules(prefer_skill)")
    mo.set_schema_version(12)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
