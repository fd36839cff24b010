"""Our own additive revision: PostgreSQL search indexes (schema_version stays 31).

PostgreSQL has no FTS5: the SQLite-only steps of v003 (notes/skills FTS5), v006 (raw-messages
FTS5), v007 (FTS5 rebuilds) and v033 (word-level FTS5) are documented no-ops there, and this
revision is their PostgreSQL counterpart. It adds GIN expression indexes only (no table changes,
so Philont's layout stays as it is), which PostgreSQL keeps in step by itself:

* ``philont_pg_raw_messages_words`` / ``philont_pg_notes_words`` / ``philont_pg_skills_words``:
  ``to_tsvector('english', ...)`` over messages' and notes' ``content`` and over the skills'
  name, description, trigger keywords and when-to-use (word search, stemmed);
* ``philont_pg_raw_messages_trgm`` / ``philont_pg_notes_trgm`` / ``philont_pg_skills_trgm``:
  ``pg_trgm`` over the same text (substrings and short CJK words by escaped LIKE).

The ``pg_trgm`` extension is created with the agent's schema (``philont.db.engine``). On SQLite
this revision is a documented no-op: its search objects come from v006, v003 and v033.
The SQL is a frozen copy of ``philont/db/fts.py``'s ``PG_SEARCH_INDEXES``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v034"
down_revision = "v033"
branch_labels = None
depends_on = None
backends = ("postgresql",)
"""The backends this revision changes; on SQLite it does nothing (``heads_for``)."""

_SKILLS_TEXT = (
    "(name || ' ' || description || ' ' || trigger_keywords || ' ' || coalesce(when_to_use, ''))"
)

PG_SEARCH_INDEXES = (
    "CREATE INDEX IF NOT EXISTS philont_pg_raw_messages_words ON memory_raw_messages"
    " USING gin (to_tsvector('english'::regconfig, content))",
    "CREATE INDEX IF NOT EXISTS philont_pg_raw_messages_trgm ON memory_raw_messages"
    " USING gin (content gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS philont_pg_notes_words ON memory_notes"
    " USING gin (to_tsvector('english'::regconfig, content))",
    "CREATE INDEX IF NOT EXISTS philont_pg_notes_trgm ON memory_notes"
    " USING gin (content gin_trgm_ops)",
    "CREATE INDEX IF NOT EXISTS philont_pg_skills_words ON memory_skills"
    f" USING gin (to_tsvector('english'::regconfig, {_SKILLS_TEXT}))",
    "CREATE INDEX IF NOT EXISTS philont_pg_skills_trgm ON memory_skills"
    f" USING gin ({_SKILLS_TEXT} gin_trgm_ops)",
)


def upgrade() -> None:
    if mo.is_sqlite():
        return
    for statement in PG_SEARCH_INDEXES:
        op.execute(statement)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
