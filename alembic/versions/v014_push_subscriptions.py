"""Philont schema v14: ``push_subscriptions``.

Mirrors Philont's migration 13 -> 14: CREATE ``push_subscriptions`` (composite primary key
``(channel, peer)``) plus the partial index ``idx_push_sub_enabled(enabled, channel)
WHERE enabled = 1``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v014"
down_revision = "v013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("push_subscriptions"):
        op.create_table(
            "push_subscriptions",
            sa.Column("channel", sa.Text(), nullable=False),
            sa.Column("peer", sa.Text(), nullable=False),
            sa.Column("enabled", mo.INTEGER(), nullable=False, server_default=sa.text("1")),
            sa.Column("quiet_start_hour", mo.INTEGER()),
            sa.Column("quiet_end_hour", mo.INTEGER()),
            sa.Column("timezone", sa.Text()),
            sa.Column(
                "digest_min_interval_ms",
                mo.INTEGER(),
                nullable=False,
                server_default=sa.text("14400000"),
            ),
            sa.Column(
                "urgent_min_interval_ms",
                mo.INTEGER(),
                nullable=False,
                server_default=sa.text("3600000"),
            ),
            sa.Column("last_digest_at", mo.INTEGER()),
            sa.Column("last_urgent_at", mo.INTEGER()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
            sa.PrimaryKeyConstraint("channel", "peer"),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_push_sub_enabled ON push_subscriptions(enabled, channel)"
        " WHERE enabled = 1"
    )
    mo.set_schema_version(14)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
