"""Philont schema v22: ``memory_plans.persisted_to``.

Mirrors Philont's migration 21 -> 22: ``memory_plans`` gains ``persisted_to TEXT``, the name of
the project whose ``plan.md`` mirrors the plan.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v022"
down_revision = "v021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("memory_plans", sa.Column("persisted_to", sa.Text()))
    mo.set_schema_version(22)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
