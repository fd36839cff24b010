"""Philont schema v8: the ``global`` raw timeline session.

Mirrors Philont's migration 7 -> 8 (``ensureGlobalTimelineSession``): insert the row
``memory_raw_sessions('global', started_at = now, ended_at = NULL)`` if it is missing. Later code
writes every raw message under this session. No structural change.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v008"
down_revision = "v007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute(
        sa.text(
            "INSERT INTO memory_raw_sessions (id, started_at, ended_at)"
            " SELECT :sid, :now, NULL"
            " WHERE NOT EXISTS (SELECT 1 FROM memory_raw_sessions WHERE id = :sid)"
        ).bindparams(sid="global", now=mo.now_ms())
    )
    mo.set_schema_version(8)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
