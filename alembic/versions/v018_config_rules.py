"""Philont schema v18: ``config_rules``.

Mirrors Philont's migration 17 -> 18: CREATE ``config_rules`` plus the partial index
``idx_config_rules_scope_active(scope, confidence) WHERE confidence NOT IN ('retired',
'disputed')``, ``idx_config_rules_scope_all(scope, updated_at)`` and the partial
``idx_config_rules_decay(updated_at) WHERE confidence != 'retired'``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v018"
down_revision = "v017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("config_rules"):
        op.create_table(
            "config_rules",
            sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
            sa.Column("scope", sa.Text(), nullable=False),
            sa.Column("key", sa.Text()),
            sa.Column("value_json", sa.Text(), nullable=False),
            sa.Column("source", sa.Text(), nullable=False),
            sa.Column(
                "confidence", sa.Text(), nullable=False, server_default=sa.text("'provisional'")
            ),
            sa.Column("evidence", sa.Text()),
            sa.Column("audit_ref", sa.Text()),
            sa.Column("success_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("failure_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column(
                "consecutive_successes", mo.INTEGER(), nullable=False, server_default=sa.text("0")
            ),
            sa.Column(
                "consecutive_failures", mo.INTEGER(), nullable=False, server_default=sa.text("0")
            ),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
            sqlite_autoincrement=True,
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_config_rules_scope_active"
        " ON config_rules(scope, confidence) WHERE confidence NOT IN ('retired', 'disputed')"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_config_rules_scope_all ON config_rules(scope, updated_at)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_config_rules_decay"
        " ON config_rules(updated_at) WHERE confidence != 'retired'"
    )
    mo.set_schema_version(18)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
