"""Philont schema v21: ``schedule_outcomes``.

Mirrors Philont's migration 20 -> 21, which is a no-op in code: ``schedule_outcomes`` and its
index ``idx_schedule_outcomes_sid_time(schedule_id, fired_at DESC)`` "already come from the base
DDL" (spec 2.2). No earlier version's change mentions the table, and a version bump whose
migration body is empty because the base DDL now creates the table is how Philont introduced
every base-DDL table (calendar/schedules/access log in v3, pursuits and drives in v7). So v21 is
the earliest version at which the table can be placed, and this revision creates it (INFERRED;
v27.sqlite has it, v2.sqlite does not).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v021"
down_revision = "v020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("schedule_outcomes"):
        op.create_table(
            "schedule_outcomes",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("schedule_id", sa.Text(), nullable=False),
            sa.Column("fired_at", mo.INTEGER(), nullable=False),
            sa.Column("duration_ms", mo.INTEGER(), nullable=False),
            sa.Column("outcome", sa.Text(), nullable=False),
            sa.Column("http_ok_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("http_fail_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column(
                "http_status_json", sa.Text(), nullable=False, server_default=sa.text("'{}'")
            ),
            sa.Column(
                "failure_signatures", sa.Text(), nullable=False, server_default=sa.text("'[]'")
            ),
            sa.Column("text_summary", sa.Text(), nullable=False),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_schedule_outcomes_sid_time"
        " ON schedule_outcomes(schedule_id, fired_at DESC)"
    )
    mo.set_schema_version(21)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
