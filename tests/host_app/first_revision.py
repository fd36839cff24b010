"""host: philont's schema, then the host's first table (one transaction)

The revision a host writes when philont's chain should run inside its own ``alembic upgrade
head`` rather than from env.py. Copied into a test's versions/ directory.
"""

from __future__ import annotations

import os

import sqlalchemy as sa
from alembic import op

import philont.migrate

revision = "h001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    philont.migrate.upgrade(op.get_bind())
    # the host's own operations go on after philont's chain: Alembic's `op` is still the host's
    op.create_table(
        "customers",
        sa.Column("id", sa.Integer(), primary_key=True),
        sa.Column("name", sa.Text(), nullable=False),
    )
    if os.environ.get("HOST_APP_FAIL_AFTER_PHILONT") == "1":
        raise RuntimeError("the host's revision failed after philont's chain")


def downgrade() -> None:
    op.drop_table("customers")
