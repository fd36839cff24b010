"""Philont schema v4: ``memory_schedules.created_by``.

Mirrors Philont's migration 3 -> 4: ``memory_schedules`` gains ``created_by TEXT NOT NULL
DEFAULT 'llm_external'``, who created the schedule (``user``, ``llm_external``, ``extractor``,
``reflector``, ``compactor``, ``system``, ``drive:<name>``).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v004"
down_revision = "v003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "memory_schedules",
        sa.Column(
            "created_by", sa.Text(), nullable=False, server_default=sa.text("'llm_external'")
        ),
    )
    mo.set_schema_version(4)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
