"""Philont schema v26: value estimates on reasoning nodes.

Mirrors Philont's migration 25 -> 26: ``reasoning_nodes`` gains ``value REAL`` and ``visits
INTEGER NOT NULL DEFAULT 0``. Skipped when the table is missing.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v026"
down_revision = "v025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("reasoning_nodes", sa.Column("value", mo.REAL()))
    mo.add_column_if_missing(
        "reasoning_nodes",
        sa.Column("visits", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.set_schema_version(26)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
