"""Philont schema v9: ``memory_pursuits.last_touched_ts`` and ``stake_weight``.

Mirrors Philont's migration 8 -> 9 (inputs of the commitment-pressure signal):

* ``memory_pursuits`` gains ``last_touched_ts INTEGER`` and ``stake_weight INTEGER NOT NULL
  DEFAULT 5``;
* backfill: ``last_touched_ts = COALESCE(last_touched_ts, updated_at, created_at)`` where NULL;
  ``stake_weight = 3`` where ``stake = 'low'`` and ``8`` where ``stake = 'high'`` (medium keeps
  the default 5).

On a fresh database the bootstrap root inserted by v007 therefore gets
``last_touched_ts = updated_at``, as in Philont.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v009"
down_revision = "v008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing("memory_pursuits", sa.Column("last_touched_ts", mo.INTEGER()))
    mo.add_column_if_missing(
        "memory_pursuits",
        sa.Column("stake_weight", mo.INTEGER(), nullable=False, server_default=sa.text("5")),
    )
    if mo.has_table("memory_pursuits"):
        op.execute(
            "UPDATE memory_pursuits SET last_touched_ts = COALESCE(last_touched_ts, updated_at,"
            " created_at) WHERE last_touched_ts IS NULL"
        )
        op.execute("UPDATE memory_pursuits SET stake_weight = 3 WHERE stake = 'low'")
        op.execute("UPDATE memory_pursuits SET stake_weight = 8 WHERE stake = 'high'")
    mo.set_schema_version(9)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
