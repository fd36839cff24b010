"""Philont schema v11: skill maturity.

Mirrors Philont's migration 10 -> 11:

* ``memory_skills`` gains ``maturity TEXT NOT NULL DEFAULT 'draft'``, ``last_success_at
  INTEGER`` and ``consecutive_failures INTEGER NOT NULL DEFAULT 0``;
* backfill ``maturity = 'stable'`` where ``maturity = 'draft' AND (source IS NULL OR source NOT
  LIKE 'self:%')``, then ``last_success_at = last_used_at`` where ``last_success_at`` is NULL
  and ``last_used_at`` is not.

The first backfill marks every historical non-``self:`` skill stable, even one never used. That
is a known defect of Philont (Q-K8), reproduced on purpose so that migrated databases agree with
the ones the original wrote.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v011"
down_revision = "v010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    mo.add_column_if_missing(
        "memory_skills",
        sa.Column("maturity", sa.Text(), nullable=False, server_default=sa.text("'draft'")),
    )
    mo.add_column_if_missing("memory_skills", sa.Column("last_success_at", mo.INTEGER()))
    mo.add_column_if_missing(
        "memory_skills",
        sa.Column(
            "consecutive_failures", mo.INTEGER(), nullable=False, server_default=sa.text("0")
        ),
    )
    # Q-K8, reproduced for compatibility: every pre-v11 non-self skill becomes stable.
    op.execute(
        "UPDATE memory_skills SET maturity = 'stable'"
        " WHERE maturity = 'draft' AND (source IS NULL OR source NOT LIKE 'self:%')"
    )
    op.execute(
        "UPDATE memory_skills SET last_success_at = last_used_at"
        " WHERE last_success_at IS NULL AND last_used_at IS NOT NULL"
    )
    mo.set_schema_version(11)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
