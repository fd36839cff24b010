"""Philont schema v3: temporal facts, feedback fields, calendar/schedules/access log, FTS.

Mirrors Philont's migration 2 -> 3 ("five-layer memory + time-aware extension (v3)"):

* ``memory_facts`` gains ``occurred_at``, ``valid_from``, ``valid_until``, ``last_accessed_at``,
  ``decay_tau_days``, ``forgotten_at`` and ``fact_kind`` (NOT NULL DEFAULT 'state');
* ``memory_notes`` gains ``last_accessed_at`` and ``forgotten_at``;
* ``memory_skills`` gains ``success_count``, ``failure_count`` and ``last_failure_at``;
* ``memory_actions`` gains ``linked_skill``;
* new tables ``memory_calendar``, ``memory_schedules`` (at their v3 shape: ``created_by`` comes
  in v4, the circuit-breaker columns in v16, ``project`` in v23) and ``memory_access_log``
  (``root_pursuit_id`` comes in v7), with their indexes;
* the "v3-dependent" partial indexes ``idx_notes_active``, ``idx_facts_active``,
  ``idx_facts_validity`` and ``idx_actions_skill`` (spec 2.4).

INFERRED placement: where ``memory_notes_fts`` and ``memory_skills_fts`` first appeared is
unknowable (spec 2.5): v2.sqlite has neither, v27.sqlite has both. We create them here, with
their insert/delete/update triggers, and ``'rebuild'`` them at once so existing notes and skills
are indexed. The SQL is a frozen copy of Philont's DDL (identical to ``philont/db/fts.py``).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v003"
down_revision = "v002"
branch_labels = None
depends_on = None

NOTES_FTS_CREATE = """CREATE VIRTUAL TABLE memory_notes_fts USING fts5(
  content,
  content='memory_notes',
  content_rowid='rowid',
  tokenize='trigram'
)"""

NOTES_FTS_TRIGGERS = (
    """CREATE TRIGGER memory_notes_ai AFTER INSERT ON memory_notes BEGIN
  INSERT INTO memory_notes_fts(rowid, content) VALUES (new.rowid, new.content);
END""",
    """CREATE TRIGGER memory_notes_ad AFTER DELETE ON memory_notes BEGIN
  INSERT INTO memory_notes_fts(memory_notes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
END""",  # noqa: E501
    """CREATE TRIGGER memory_notes_au AFTER UPDATE ON memory_notes BEGIN
  INSERT INTO memory_notes_fts(memory_notes_fts, rowid, content) VALUES ('delete', old.rowid, old.content);
  INSERT INTO memory_notes_fts(rowid, content) VALUES (new.rowid, new.content);
END""",  # noqa: E501
)

SKILLS_FTS_CREATE = """CREATE VIRTUAL TABLE memory_skills_fts USING fts5(
  name,
  description,
  trigger_keywords,
  content='memory_skills',
  content_rowid='rowid',
  tokenize='trigram'
)"""

SKILLS_FTS_TRIGGERS = (
    """CREATE TRIGGER memory_skills_ai AFTER INSERT ON memory_skills BEGIN
  INSERT INTO memory_skills_fts(rowid, name, description, trigger_keywords)
  VALUES (new.rowid, new.name, new.description, new.trigger_keywords);
END""",
    """CREATE TRIGGER memory_skills_ad AFTER DELETE ON memory_skills BEGIN
  INSERT INTO memory_skills_fts(memory_skills_fts, rowid, name, description, trigger_keywords)
  VALUES ('delete', old.rowid, old.name, old.description, old.trigger_keywords);
END""",
    """CREATE TRIGGER memory_skills_au AFTER UPDATE ON memory_skills BEGIN
  INSERT INTO memory_skills_fts(memory_skills_fts, rowid, name, description, trigger_keywords)
  VALUES ('delete', old.rowid, old.name, old.description, old.trigger_keywords);
  INSERT INTO memory_skills_fts(rowid, name, description, trigger_keywords)
  VALUES (new.rowid, new.name, new.description, new.trigger_keywords);
END""",
)


def _if_not_exists(ddl: str) -> str:
    """The frozen DDL in its idempotent form (SQLite stores it without ``IF NOT EXISTS``)."""
    for head in ("CREATE VIRTUAL TABLE ", "CREATE TRIGGER "):
        if ddl.startswith(head):
            return head + "IF NOT EXISTS " + ddl[len(head) :]
    raise ValueError(f"unexpected DDL: {ddl[:40]!r}")


def upgrade() -> None:
    mo.add_column_if_missing("memory_facts", sa.Column("occurred_at", mo.INTEGER()))
    mo.add_column_if_missing("memory_facts", sa.Column("valid_from", mo.INTEGER()))
    mo.add_column_if_missing("memory_facts", sa.Column("valid_until", mo.INTEGER()))
    mo.add_column_if_missing("memory_facts", sa.Column("last_accessed_at", mo.INTEGER()))
    mo.add_column_if_missing("memory_facts", sa.Column("decay_tau_days", mo.REAL()))
    mo.add_column_if_missing("memory_facts", sa.Column("forgotten_at", mo.INTEGER()))
    mo.add_column_if_missing(
        "memory_facts",
        sa.Column("fact_kind", sa.Text(), nullable=False, server_default=sa.text("'state'")),
    )
    mo.add_column_if_missing("memory_notes", sa.Column("last_accessed_at", mo.INTEGER()))
    mo.add_column_if_missing("memory_notes", sa.Column("forgotten_at", mo.INTEGER()))
    mo.add_column_if_missing(
        "memory_skills",
        sa.Column("success_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.add_column_if_missing(
        "memory_skills",
        sa.Column("failure_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
    )
    mo.add_column_if_missing("memory_skills", sa.Column("last_failure_at", mo.INTEGER()))
    mo.add_column_if_missing("memory_actions", sa.Column("linked_skill", sa.Text()))

    if not mo.has_table("memory_calendar"):
        op.create_table(
            "memory_calendar",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("title", sa.Text(), nullable=False),
            sa.Column("starts_at", mo.INTEGER(), nullable=False),
            sa.Column("ends_at", mo.INTEGER()),
            sa.Column("rrule", sa.Text()),
            sa.Column("timezone", sa.Text(), nullable=False),
            # deliberately no FK: a soft-deleted fact must not block the event
            sa.Column("related_fact_id", sa.Text()),
            sa.Column("external_ref", sa.Text()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
        )
    op.execute("CREATE INDEX IF NOT EXISTS idx_calendar_starts ON memory_calendar(starts_at)")
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_calendar_external ON memory_calendar(external_ref)"
        " WHERE external_ref IS NOT NULL"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_calendar_fact ON memory_calendar(related_fact_id)"
        " WHERE related_fact_id IS NOT NULL"
    )

    if not mo.has_table("memory_schedules"):
        op.create_table(
            "memory_schedules",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("name", sa.Text(), nullable=False),
            sa.Column("cron_expr", sa.Text()),
            sa.Column("next_run_at", mo.INTEGER(), nullable=False),
            sa.Column("last_run_at", mo.INTEGER()),
            sa.Column("action_type", sa.Text(), nullable=False),
            sa.Column("payload_json", sa.Text(), nullable=False),
            sa.Column("enabled", mo.INTEGER(), nullable=False, server_default=sa.text("1")),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_schedules_next_run ON memory_schedules(next_run_at)"
        " WHERE enabled = 1"
    )

    if not mo.has_table("memory_access_log"):
        op.create_table(
            "memory_access_log",
            sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
            sa.Column("target_type", sa.Text(), nullable=False),
            sa.Column("target_id", sa.Text(), nullable=False),
            sa.Column("accessed_at", mo.INTEGER(), nullable=False),
            sa.Column("context", sa.Text()),
            sqlite_autoincrement=True,
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_access_target ON memory_access_log(target_type, target_id)"
    )
    op.execute("CREATE INDEX IF NOT EXISTS idx_access_time ON memory_access_log(accessed_at)")

    # Philont's "v3-dependent" partial indexes (spec 2.4): they need the columns added above.
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_notes_active ON memory_notes(importance DESC)"
        " WHERE forgotten_at IS NULL"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_facts_active ON memory_facts(namespace, key)"
        " WHERE superseded_by IS NULL AND forgotten_at IS NULL"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_facts_validity ON memory_facts(valid_until)"
        " WHERE forgotten_at IS NULL"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_actions_skill ON memory_actions(linked_skill)"
        " WHERE linked_skill IS NOT NULL"
    )

    # FTS5 is SQLite's: on PostgreSQL this block is a documented no-op; its counterpart (GIN
    # word and trigram indexes) is our revision v034.
    if mo.is_sqlite():
        for ddl in (NOTES_FTS_CREATE, *NOTES_FTS_TRIGGERS, SKILLS_FTS_CREATE, *SKILLS_FTS_TRIGGERS):
            op.execute(_if_not_exists(ddl))
        # Index the notes and skills that already exist (external content starts empty).
        op.execute("INSERT INTO memory_notes_fts(memory_notes_fts) VALUES('rebuild')")
        op.execute("INSERT INTO memory_skills_fts(memory_skills_fts) VALUES('rebuild')")

    mo.set_schema_version(3)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
