"""Philont schema v23: ``memory_schedules.project``.

Mirrors Philont's migration 22 -> 23: ``memory_schedules`` gains ``project TEXT``, the project a
scheduled session belongs to (its ``plan.md`` is injected into the memory prefix); NULL for a
plain reminder.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v023"
down_revision = "v022"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("memory_schedules", sa.Column("project", sa.Text()))
    mo.set_schema_version(23)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
