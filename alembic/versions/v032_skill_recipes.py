"""Our own additive revision: skill recipes and their revision history (schema_version stays 31).

Not a Philont schema version. It only adds two tables of our own, which Philont schema-31
software never reads, so the file stays openable by it and ``memory_meta.schema_version`` is left
at 31 (this revision does not call ``set_schema_version``):

* ``philont_skill_recipes``: one row per skill with a recipe (steps, verification, tool policy,
  current revision) or with a stored disuse anchor (``revision = 0``, no recipe);
* ``philont_skill_revisions``: replaced revisions (content plus the success/failure counts
  recorded while each was current), unique per ``(skill_id, revision)``, with index
  ``idx_philont_skill_revisions_skill``.

Both reference ``memory_skills.id`` ON DELETE CASCADE, so deleting a skill (also from Philont,
which opens its database with ``foreign_keys = ON``) removes its recipe and history.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v032"
down_revision = "v031"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("philont_skill_recipes"):
        op.create_table(
            "philont_skill_recipes",
            sa.Column(
                "skill_id",
                sa.Text(),
                sa.ForeignKey("memory_skills.id", ondelete="CASCADE"),
                primary_key=True,
                nullable=True,
            ),
            sa.Column("steps_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")),
            sa.Column("verification", sa.Text()),
            sa.Column(
                "tool_policy_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")
            ),
            sa.Column("revision", mo.INTEGER(), nullable=False, server_default=sa.text("1")),
            sa.Column("grade_anchor_at", mo.INTEGER()),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
        )
    if not mo.has_table("philont_skill_revisions"):
        op.create_table(
            "philont_skill_revisions",
            sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
            sa.Column(
                "skill_id",
                sa.Text(),
                sa.ForeignKey("memory_skills.id", ondelete="CASCADE"),
                nullable=False,
            ),
            sa.Column("revision", mo.INTEGER(), nullable=False),
            sa.Column("description", sa.Text(), nullable=False),
            sa.Column("action_template", sa.Text(), nullable=False),
            sa.Column("trigger_keywords", sa.Text(), nullable=False),
            sa.Column("steps_json", sa.Text(), nullable=False),
            sa.Column("verification", sa.Text()),
            sa.Column("tool_policy_json", sa.Text(), nullable=False),
            sa.Column("success_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("failure_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("replaced_at", mo.INTEGER(), nullable=False),
            sa.UniqueConstraint("skill_id", "revision"),
            sqlite_autoincrement=True,
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_philont_skill_revisions_skill "
        "ON philont_skill_revisions(skill_id, revision)"
    )


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
