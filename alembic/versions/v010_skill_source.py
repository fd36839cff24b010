"""Philont schema v10: ``memory_skills.source``.

Mirrors Philont's migration 9 -> 10: ``memory_skills`` gains ``source TEXT``. NULL means written
locally or made by reflection; other values are tags such as ``clawhub:<slug>@<ver>``,
``github:...``, ``self:reflect-...``, ``self:doc-to-skill:...``, ``plan-failure:...``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v010"
down_revision = "v009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("memory_skills", sa.Column("source", sa.Text()))
    mo.set_schema_version(10)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
