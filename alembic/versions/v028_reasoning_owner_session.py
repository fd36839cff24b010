"""Philont schema v28: ``reasoning_sessions.owner_session_id``.

Mirrors Philont's migration 27 -> 28: ``reasoning_sessions`` gains ``owner_session_id TEXT``,
if missing.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v028"
down_revision = "v027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("reasoning_sessions", sa.Column("owner_session_id", sa.Text()))
    mo.set_schema_version(28)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
