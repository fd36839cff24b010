"""Philont schema v30: ``reasoning_sessions.auto_advance``.

Mirrors Philont's migration 29 -> 30: ``reasoning_sessions`` gains ``auto_advance INTEGER NOT
NULL DEFAULT 0``, if missing.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v030"
down_revision = "v029"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "reasoning_sessions",
        sa.Column("auto_advance", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.set_schema_version(30)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
