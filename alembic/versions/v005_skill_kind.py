"""Philont schema v5: ``memory_skills.kind`` (skill polarity).

Mirrors Philont's migration 4 -> 5: ``memory_skills`` gains ``kind TEXT NOT NULL DEFAULT
'positive'`` (``positive`` = forward template, ``negative`` = anti-pattern lesson). Existing rows
become positive through the default.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v005"
down_revision = "v004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "memory_skills",
        sa.Column("kind", sa.Text(), nullable=False, server_default=sa.text("'positive'")),
    )
    mo.set_schema_version(5)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
