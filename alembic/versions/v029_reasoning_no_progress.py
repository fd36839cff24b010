"""Philont schema v29: ``reasoning_sessions.no_progress_rounds``.

Mirrors Philont's migration 28 -> 29: ``reasoning_sessions`` gains ``no_progress_rounds INTEGER
NOT NULL DEFAULT 0``, if missing.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v029"
down_revision = "v028"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "reasoning_sessions",
        sa.Column("no_progress_rounds", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.set_schema_version(29)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
