"""Philont schema v31: ``reasoning_sessions.mode``.

Mirrors Philont's migration 30 -> 31: ``reasoning_sessions`` gains ``mode TEXT NOT NULL DEFAULT
'formal'`` (``formal`` | ``deliberate``), if missing. This is Philont's current schema
(``SCHEMA_VERSION = 31``; compare empty-v31.sqlite).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v031"
down_revision = "v030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "reasoning_sessions",
        sa.Column("mode", sa.Text(), nullable=False, server_default=sa.text("'formal'")),
    )
    mo.set_schema_version(31)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
