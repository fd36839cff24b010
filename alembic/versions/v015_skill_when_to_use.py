"""Philont schema v15: ``memory_skills.when_to_use``.

Mirrors Philont's migration 14 -> 15: ``memory_skills`` gains ``when_to_use TEXT``. It is
deliberately not part of the skills FTS index (the FTS table and its triggers are unchanged).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v015"
down_revision = "v014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("memory_skills", sa.Column("when_to_use", sa.Text()))
    mo.set_schema_version(15)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
