"""Philont schema v20: plan deliverables; ``reviewed`` plans become ``executing``.

Mirrors Philont's migration 19 -> 20:

* ``memory_plans`` gains ``deliverables_json TEXT NOT NULL DEFAULT '[]'``,
  ``deliverable_status_json TEXT`` and ``is_placeholder INTEGER NOT NULL DEFAULT 0``;
* data change: ``UPDATE memory_plans SET status='executing' WHERE status='reviewed'``.

Both are skipped when the table is missing.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v020"
down_revision = "v019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "memory_plans",
        sa.Column("deliverables_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")),
    )
    mo.add_column_if_missing("memory_plans", sa.Column("deliverable_status_json", sa.Text()))
    mo.add_column_if_missing(
        "memory_plans",
        sa.Column("is_placeholder", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    if mo.has_table("memory_plans"):
        op.execute("UPDATE memory_plans SET status='executing' WHERE status='reviewed'")
    mo.set_schema_version(20)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
