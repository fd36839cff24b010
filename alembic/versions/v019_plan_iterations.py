"""Philont schema v19: plan iteration counters.

Mirrors Philont's migration 18 -> 19: ``memory_plans`` gains ``inner_iter INTEGER NOT NULL
DEFAULT 0`` and ``outer_iter INTEGER NOT NULL DEFAULT 0``. Skipped when the table is missing.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v019"
down_revision = "v018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "memory_plans",
        sa.Column("inner_iter", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.add_column_if_missing(
        "memory_plans",
        sa.Column("outer_iter", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.set_schema_version(19)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
