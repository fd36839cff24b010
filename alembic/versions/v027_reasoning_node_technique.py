"""Philont schema v27: ``reasoning_nodes.technique``.

Mirrors Philont's migration 26 -> 27: ``reasoning_nodes`` gains ``technique TEXT``. This is the
schema of Philont's initial public release (compare v27.sqlite).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa

from philont import migration_ops as mo

revision = "v027"
down_revision = "v026"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("reasoning_nodes", sa.Column("technique", sa.Text()))
    mo.set_schema_version(27)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
