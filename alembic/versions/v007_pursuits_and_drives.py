"""Philont schema v7: pursuits, drives, ``root_pursuit_id`` and the bootstrap root pursuit.

Mirrors Philont's migration 6 -> 7:

* new tables ``memory_pursuits`` (at its v7 shape: ``last_touched_ts`` and ``stake_weight``
  arrive in v9, ``is_active_research`` and ``research_iterations`` in v24),
  ``memory_drive_configs`` and ``memory_drive_outcomes``, with their indexes;
* ``root_pursuit_id TEXT`` added to ``memory_facts``, ``memory_notes``, ``memory_skills``,
  ``memory_schedules``, ``memory_calendar`` and ``memory_access_log``;
* ``memory_notes_fts`` and ``memory_skills_fts`` are rebuilt BEFORE any UPDATE: the AFTER UPDATE
  triggers issue an FTS ``'delete'``, which fails (SQLITE_CORRUPT_VTAB) on an FTS table that
  was created empty next to existing rows;
* every NULL ``root_pursuit_id`` in those six tables becomes ``'default'``;
* ``ensureBootstrapRoot``: if no pursuit has ``parent_pursuit_id IS NULL``, insert the root
  pursuit ``'default'`` (spec 2.6). Its texts are our charter (``philont.charter``), not
  Philont's ``constitution_defaults.ts``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import charter
from philont import migration_ops as mo

revision = "v007"
down_revision = "v006"
branch_labels = None
depends_on = None

ROOT_SCOPED_TABLES = (
    "memory_facts",
    "memory_notes",
    "memory_skills",
    "memory_schedules",
    "memory_calendar",
    "memory_access_log",
)


def _create_tables() -> None:
    if not mo.has_table("memory_pursuits"):
        op.create_table(
            "memory_pursuits",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("parent_pursuit_id", sa.Text()),
            # redundant: the root's own root_pursuit_id points to its own id
            sa.Column("root_pursuit_id", sa.Text(), nullable=False),
            sa.Column("title", sa.Text(), nullable=False),
            sa.Column("intent", sa.Text(), nullable=False),
            sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'active'")),
            sa.Column("is_evergreen", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
            sa.Column("stake", sa.Text(), nullable=False, server_default=sa.text("'medium'")),
            sa.Column("deadline", mo.INTEGER()),
            sa.Column("origin", sa.Text(), nullable=False),
            sa.Column(
                "open_questions_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")
            ),
            sa.Column("resolution_criteria", sa.Text()),
            sa.Column(
                "evidence_refs_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")
            ),
            sa.Column(
                "progress_markers_json", sa.Text(), nullable=False, server_default=sa.text("'[]'")
            ),
            sa.Column(
                "last_progress_turn", mo.INTEGER(), nullable=False, server_default=sa.text("0")
            ),
            # constitution fields: set on the root only
            sa.Column("constitution_values", sa.Text()),
            sa.Column("constitution_red_lines", sa.Text()),
            sa.Column("constitution_drive_bounds", sa.Text()),
            sa.Column("constitution_governance", sa.Text()),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_pursuits_parent ON memory_pursuits(parent_pursuit_id)"
    )
    op.execute("CREATE INDEX IF NOT EXISTS idx_pursuits_root ON memory_pursuits(root_pursuit_id)")
    op.execute("CREATE INDEX IF NOT EXISTS idx_pursuits_status ON memory_pursuits(status)")

    if not mo.has_table("memory_drive_configs"):
        op.create_table(
            "memory_drive_configs",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("kind", sa.Text(), nullable=False),
            sa.Column("status", sa.Text(), nullable=False, server_default=sa.text("'shadow'")),
            sa.Column("trigger_expr_json", sa.Text(), nullable=False),
            sa.Column("action_template_json", sa.Text(), nullable=False),
            sa.Column("params_json", sa.Text(), nullable=False, server_default=sa.text("'{}'")),
            sa.Column(
                "effectiveness_json",
                sa.Text(),
                nullable=False,
                # colons escaped so text() does not read them as bind parameters
                server_default=sa.text("""'{"samples"\\:0,"ewma"\\:0,"lastFired"\\:null}'"""),
            ),
            sa.Column("root_pursuit_id", sa.Text(), nullable=False),
            sa.Column("created_at", mo.INTEGER(), nullable=False),
            sa.Column("updated_at", mo.INTEGER(), nullable=False),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_drive_configs_root ON memory_drive_configs(root_pursuit_id)"
    )
    op.execute("CREATE INDEX IF NOT EXISTS idx_drive_configs_kind ON memory_drive_configs(kind)")
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_drive_configs_status ON memory_drive_configs(status)"
    )

    if not mo.has_table("memory_drive_outcomes"):
        op.create_table(
            "memory_drive_outcomes",
            sa.Column("id", sa.Text(), primary_key=True, nullable=True),
            sa.Column("drive_id", sa.Text(), nullable=False),
            sa.Column("fired_at", mo.INTEGER(), nullable=False),
            sa.Column("trigger_snapshot_json", sa.Text(), nullable=False),
            sa.Column("injected_action_json", sa.Text(), nullable=False),
            sa.Column(
                "subsequent_tool_calls_json",
                sa.Text(),
                nullable=False,
                server_default=sa.text("'[]'"),
            ),
            sa.Column(
                "memory_delta_json", sa.Text(), nullable=False, server_default=sa.text("'{}'")
            ),
            sa.Column("served_pursuit_id", sa.Text()),
            # NULL when the drive fires; the reflector fills it in later
            sa.Column("effectiveness_score", mo.REAL()),
            sa.Column("root_pursuit_id", sa.Text(), nullable=False),
        )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_drive_outcomes_drive ON memory_drive_outcomes(drive_id)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_drive_outcomes_fired ON memory_drive_outcomes(fired_at)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_drive_outcomes_root"
        " ON memory_drive_outcomes(root_pursuit_id)"
    )
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_drive_outcomes_pursuit"
        " ON memory_drive_outcomes(served_pursuit_id) WHERE served_pursuit_id IS NOT NULL"
    )


def _ensure_bootstrap_root() -> None:
    """Philont's ``ensureBootstrapRoot``: insert the root pursuit unless a root exists."""
    op.execute(
        sa.text(
            "INSERT INTO memory_pursuits ("
            "id, parent_pursuit_id, root_pursuit_id, title, intent, status, is_evergreen,"
            " stake, deadline, origin, open_questions_json, resolution_criteria,"
            " evidence_refs_json, progress_markers_json, last_progress_turn,"
            " constitution_values, constitution_red_lines, constitution_drive_bounds,"
            " constitution_governance, created_at, updated_at)"
            " SELECT :root_id, NULL, :root_id, :title, :intent, 'active', 1,"
            " 'medium', NULL, 'system', '[]', NULL,"
            " '[]', '[]', 0,"
            " :charter_values, :charter_red_lines, NULL,"
            " NULL, :now, :now"
            " WHERE NOT EXISTS"
            " (SELECT 1 FROM memory_pursuits WHERE parent_pursuit_id IS NULL)"
        ).bindparams(
            root_id=charter.ROOT_PURSUIT_ID,
            title=charter.ROOT_TITLE,
            intent=charter.ROOT_INTENT,
            charter_values=charter.ROOT_CHARTER_VALUES,
            charter_red_lines=charter.ROOT_CHARTER_RED_LINES,
            now=mo.now_ms(),
        )
    )


def upgrade() -> None:
    _create_tables()

    for table in ROOT_SCOPED_TABLES:
        mo.add_column_if_missing(table, sa.Column("root_pursuit_id", sa.Text()))

    # FTS5 is SQLite's: on PostgreSQL the rebuild is a documented no-op (its GIN indexes, from
    # v034, stay in step by themselves). The rebuild must precede the UPDATEs below.
    if mo.is_sqlite():
        if mo.has_table("memory_notes_fts"):
            op.execute("INSERT INTO memory_notes_fts(memory_notes_fts) VALUES('rebuild')")
        if mo.has_table("memory_skills_fts"):
            op.execute("INSERT INTO memory_skills_fts(memory_skills_fts) VALUES('rebuild')")

    for table in ROOT_SCOPED_TABLES:
        if mo.has_table(table):
            op.execute(
                sa.text(
                    f"UPDATE {table} SET root_pursuit_id = :root_id WHERE root_pursuit_id IS NULL"
                ).bindparams(root_id=charter.ROOT_PURSUIT_ID)
            )

    _ensure_bootstrap_root()
    mo.set_schema_version(7)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
