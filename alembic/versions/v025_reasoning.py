"""Philont schema v25: ``reasoning_sessions`` and ``reasoning_nodes``.

Mirrors Philont's migration 24 -> 25:

* CREATE ``reasoning_sessions`` plus ``idx_reasoning_sessions_status(status, updated_at)``;
* CREATE ``reasoning_nodes`` (without ``value``/``visits`` of v26 and ``technique`` of v27) plus
  ``idx_reasoning_nodes_session(session_id, status)``.

Deviation from the spec's table, following the real database: the spec says v25 created
``reasoning_sessions`` already including ``owner_session_id``, ``no_progress_rounds``,
``auto_advance`` and ``mode``, but the v27 fixture written by the original code (v27.sqlite)
lacks all four. They are added by v028..v031, as Philont's 27 -> 31 migrations do.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v025"
down_revision = "v024"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("reasoning_sessions"):
        op.create_table(
            "reasoning_sessions",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("goal", sa.Text(), nullable=False),
            sa.Column("assumptions_json", sa.Text()),
            sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'active'")),
            sa.Column("root_node_id", sa.Text()),
            sa.Column("budget_spent", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_reasoning_sessions_status"
        " ON reasoning_sessions(status, updated_at)"
    )

    if not mo.has_table("reasoning_nodes"):
        op.create_table(
            "reasoning_nodes",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("session_id", sa.Text(), nullable=False),
            sa.Column("parent_id", sa.Text()),
            sa.Column("claim", sa.Text(), nullable=False),
            sa.Column("kind", sa.Text(), nullable=False),
            sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'open'")),
            sa.Column("result", sa.Text()),
            sa.Column("approaches_tried_json", sa.Text()),
            sa.Column("evidence_refs_json", sa.Text()),
            sa.Column("depth", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_reasoning_nodes_session"
        " ON reasoning_nodes(session_id, status)"
    )
    mo.set_schema_version(25)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
