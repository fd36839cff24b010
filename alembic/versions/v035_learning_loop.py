"""Our own additive revision: the self-learning loop's tables (schema_version stays 31).

Not a Philont schema version. It only adds three tables of our own, which Philont schema-31
software never reads, so the file stays openable by it and ``memory_meta.schema_version`` is left
at 31 (this revision does not call ``set_schema_version``):

* ``philont_learning_batches``: one row per batch of the idle consolidator, unique per cursor
  value ``after_ts`` (the atomic claim), with its status, owner, lease, attempts and retry time;
* ``philont_cases``: runs a judge verified (goal, tool trace, result), and the skill condensed
  from each (``skill_id`` → ``memory_skills.id`` ON DELETE SET NULL; index
  ``idx_philont_cases_skill``);
* ``philont_judge_verdicts``: every verdict of the judge, next to the outcome attribution later
  observed for the skill the run used (index ``idx_philont_judge_verdicts_skill``).

The consolidator's cursor stays Philont's fact ``system.last_consolidated_ts``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v035"
down_revision = "v034"
branch_labels = None
depends_on = None


def _batches() -> None:
    op.create_table(
        "philont_learning_batches",
        sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
        sa.Column("after_ts", mo.INTEGER(), nullable=False),
        sa.Column("until_ts", mo.INTEGER(), nullable=False),
        sa.Column("message_count", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
        sa.Column("status", sa.Text(), nullable=False),
        sa.Column("owner", sa.Text()),
        sa.Column("attempts", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
        sa.Column("claimed_at", mo.INTEGER()),
        sa.Column("lease_until", mo.INTEGER()),
        sa.Column("retry_at", mo.INTEGER()),
        sa.Column("finished_at", mo.INTEGER()),
        sa.Column("tokens_used", mo.INTEGER(), nullable=False, server_default=sa.text("0")),
        sa.Column("last_error", sa.Text()),
        sa.Column("report_json", sa.Text()),
        sa.UniqueConstraint("after_ts"),
        sqlite_autoincrement=True,
    )


def _cases() -> None:
    op.create_table(
        "philont_cases",
        sa.Column("id", sa.Text(), primary_key=True),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("trace_json", sa.Text(), nullable=False),
        sa.Column("result", sa.Text(), nullable=False),
        sa.Column("session_id", sa.Text()),
        sa.Column("judge", sa.Text()),
        sa.Column("reason", sa.Text()),
        sa.Column("skill_id", sa.Text(), sa.ForeignKey("memory_skills.id", ondelete="SET NULL")),
        sa.Column("created_at", mo.INTEGER(), nullable=False),
        sa.Column("condensed_at", mo.INTEGER()),
        sa.Column("condense_note", sa.Text()),
    )


def _verdicts() -> None:
    op.create_table(
        "philont_judge_verdicts",
        sa.Column("id", mo.INTEGER(), primary_key=True, nullable=True),
        sa.Column("case_id", sa.Text(), sa.ForeignKey("philont_cases.id", ondelete="SET NULL")),
        sa.Column("session_id", sa.Text()),
        sa.Column("goal", sa.Text(), nullable=False),
        sa.Column("verdict", sa.Text(), nullable=False),
        sa.Column("reason", sa.Text()),
        sa.Column("judge", sa.Text()),
        sa.Column("skill_name", sa.Text()),
        sa.Column("retrieval_action_id", mo.INTEGER()),
        sa.Column("first_action_id", mo.INTEGER()),
        sa.Column("judged_at", mo.INTEGER(), nullable=False),
        sa.Column("observed_outcome", sa.Text()),
        sa.Column("observed_at", mo.INTEGER()),
        sqlite_autoincrement=True,
    )


def upgrade() -> None:
    if not mo.has_table("philont_learning_batches"):
        _batches()
    if not mo.has_table("philont_cases"):
        _cases()
    if not mo.has_table("philont_judge_verdicts"):
        _verdicts()
    op.execute("CREATE INDEX IF NOT EXISTS idx_philont_cases_skill ON philont_cases(skill_id)")
    op.execute(
        "CREATE INDEX IF NOT EXISTS idx_philont_judge_verdicts_skill "
        "ON philont_judge_verdicts(skill_name)"
    )


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
