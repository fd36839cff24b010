"""Philont schema v1: the base layers (raw timeline, notes, facts, actions, skills, meta).

Mirrors Philont schema version 1. Versions 1 and 2 are implicit in Philont: no code defines them,
and nothing distinguishes a v1 database from a v2 one (spec 2.2, 2.5). What follows is therefore
INFERRED from the only concrete picture of an old database, the v2 fixture (``v2.sqlite``): this
revision builds the base layers exactly in the shape that fixture has them, with its indexes:

* ``memory_raw_sessions`` (3 columns) and ``memory_raw_messages`` (5 columns, FK to sessions),
  without any FTS (the raw-messages FTS arrives in v6);
* ``memory_notes`` (5 columns), ``memory_facts`` (8), ``memory_actions`` (8), ``memory_skills``
  (8, ``name`` UNIQUE) and ``memory_meta``.

Notes/skills FTS tables are not part of this shape (v2.sqlite has none); see v003.
Every table is created only if missing, like Philont's ``CREATE TABLE IF NOT EXISTS``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    if not mo.has_table("memory_raw_sessions"):
        op.create_table(
            "memory_raw_sessions",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("started_at", mo.INTEGER(), nullable=False),
            sa.Column("ended_at", mo.INTEGER()),
        )
    if not mo.has_table("memory_raw_messages"):
        op.create_table(
            "memory_raw_messages",
            sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
            sa.Column(
                "session_id",
                sa.Text(),
                sa.ForeignKey("memory_raw_sessions.id"),
                nullable=False,
            ),
            sa.Column("role", sa.Text(), nullable=False),
            sa.Column("content", sa.Text(), nullable=False),
            sa.Column("timestamp", mo.INTEGER(), nullable=False),
            sqlite_autoincrement=True,
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_raw_messages_session ON memory_raw_messages(session_id)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_raw_messages_timestamp ON memory_raw_messages(timestamp)"
    )

    if not mo.has_table("memory_notes"):
        op.create_table(
            "memory_notes",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("content", sa.Text(), nullable=False),
            sa.Column("importance", mo.REAL(), nullable=False, server_default=sa.text("0.5")),
            sa.Column("session_id", sa.Text()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
        )
    op.execute("CREATE INDEX IF NOT EXISTS idx_notes_importance ON memory_notes(importance DESC)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_notes_session ON memory_notes(session_id)")

    if not mo.has_table("memory_facts"):
        op.create_table(
            "memory_facts",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("namespace", sa.Text(), nullable=False),
            sa.Column("key", sa.Text(), nullable=False),
            sa.Column("value_json", sa.Text(), nullable=False),
            sa.Column("confidence", mo.REAL(), nullable=False, server_default=sa.text("1.0")),
            sa.Column("superseded_by", sa.Text()),
            sa.Column("supersedes", sa.Text()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
        )
    op.execute("CREATE INDEX IF NOT EXISTS idx_facts_namespace ON memory_facts(namespace)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_facts_ns_key ON memory_facts(namespace, key)")

    if not mo.has_table("memory_actions"):
        op.create_table(
            "memory_actions",
            sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
            sa.Column("session_id", sa.Text(), nullable=False),
            sa.Column("trigger", sa.Text()),
            sa.Column("tool_name", sa.Text(), nullable=False),
            sa.Column("params_json", sa.Text(), nullable=False),
            sa.Column("result", sa.Text()),
            sa.Column("success", mo.INTEGER(), nullable=False),
            sa.Column("timestamp", mo.INTEGER(), nullable=False),
            sqlite_autoincrement=True,
        )
    op.execute("CREATE INDEX IF NOT EXISTS idx_actions_session ON memory_actions(session_id)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_actions_tool ON memory_actions(tool_name)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_actions_timestamp ON memory_actions(timestamp)")

    if not mo.has_table("memory_skills"):
        op.create_table(
            "memory_skills",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("name", sa.Text(), nullable=False, unique=True),
            sa.Column("description", sa.Text(), nullable=False),
            sa.Column("trigger_keywords", sa.Text(), nullable=False),
            sa.Column("action_template", sa.Text(), nullable=False),
            sa.Column("use_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("last_used_at", mo.INTEGER()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
        )
    op.execute("CREATE INDEX IF NOT EXISTS idx_skills_use_count ON memory_skills(use_count DESC)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_skills_name ON memory_skills(name)")

    if not mo.has_table("memory_meta"):
        op.create_table(
            "memory_meta",
            sa.Column("key", sa.Text(), primary_key=True, nullable=True),
            sa.Column("value", sa.Text(), nullable=False),
        )

    mo.set_schema_version(1)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
