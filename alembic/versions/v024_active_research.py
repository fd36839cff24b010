"""Philont schema v24: the active research loop on pursuits.

Mirrors Philont's migration 23 -> 24: ``memory_pursuits`` gains ``is_active_research INTEGER
NOT NULL DEFAULT 0`` and ``research_iterations INTEGER NOT NULL DEFAULT 0``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v024"
down_revision = "v023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "memory_pursuits",
        sa.Column("is_active_research", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.add_column_if_missing(
        "memory_pursuits",
        sa.Column("research_iterations", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.set_schema_version(24)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
