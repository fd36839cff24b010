"""Our own revision: PostgreSQL's word indexes cover a stored generated column (schema_version 31).

Revision v038's word indexes were expression indexes (``to_tsvector`` of the text with ASCII
separators read as spaces): a search that the planner answers by reading the primary key
backwards (a common word's newest matches, ``ORDER BY id DESC LIMIT``) evaluated the expression
on every row it scanned, about 100 rows a match. This revision adds to each searchable table
(``memory_raw_messages``, ``memory_notes``, ``memory_skills``) a column ``philont_words``,
``tsvector GENERATED ALWAYS AS (<v038's expression>) STORED``, and rebuilds the three word
indexes (``philont_pg_raw_messages_words``, ``philont_pg_notes_words``,
``philont_pg_skills_words``) over ``(agent_id, philont_words)``; search reads the column, so no
read evaluates ``to_tsvector``. The column holds the words of the text composed
(``normalize(text, NFC)`` of its first 200,000 characters, which needs a UTF8 database; composing
a whole 16M-character text took a second a write), so a text stored in any canonically
equivalent spelling (NFC, NFD, or neither: ``ê`` + U+0323 for ``ệ``) has the words of the
composed text, which a query is read as. The column is declared on the partitioned parent (its
partitions get it). Adding it rewrites each table under a lock that holds reads and writes back
while it runs; the tables are analyzed after it. The rows are kept; no model maps the column and
nothing can write it (every INSERT and COPY names its columns).

The statements are a frozen copy of what ``philont.db.pg_layout.statements()`` makes of these
columns and indexes; the parity test builds both and compares the catalogs. On SQLite this
revision is a no-op (its word indexes are v033's FTS5 tables).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v039"
down_revision = "v038"
branch_labels = None
depends_on = None
backends = ("postgresql",)
"""The backends this revision changes; on SQLite it does nothing (``heads_for``)."""

_WORDS = (
    r"to_tsvector('english'::regconfig, regexp_replace({}, E'[\\x21\\x22\\x23\\x24\\x25\\x26"
    r"\\x27\\x28\\x29\\x2a\\x2b\\x2c\\x2d\\x2e\\x2f\\x3a\\x3b\\x3c\\x3d\\x3e\\x3f\\x40"
    r"\\x5b\\x5c\\x5d\\x5e\\x5f\\x60\\x7b\\x7c\\x7d\\x7e]+', ' ', 'g'))"
)
"""v038's words of a text (the text with every run of ASCII punctuation and symbols read as a
space), given its first 200,000 characters (a tsvector holds at most 1 MB of lexemes), of the
text composed (NFC)."""
_SKILLS_TEXT = (
    "(name || ' ' || description || ' ' || trigger_keywords || ' ' || coalesce(when_to_use, ''))"
)
PG_WORD_COLUMNS = (
    ("philont_pg_raw_messages_words", "memory_raw_messages", "content"),
    ("philont_pg_notes_words", "memory_notes", "content"),
    ("philont_pg_skills_words", "memory_skills", _SKILLS_TEXT),
)
"""(index, table, the text its column holds the words of)."""


def pg_statements() -> list[str]:
    """Every statement of this revision on PostgreSQL, in order: per table, its expression
    index dropped, the column added, the index built over it; then the tables analyzed (the
    planner's statistics of the new column)."""
    out: list[str] = []
    for name, table, text in PG_WORD_COLUMNS:
        out.append(f"DROP INDEX {name}")
        out.append(
            f"ALTER TABLE {table} ADD COLUMN philont_words tsvector"
            " GENERATED ALWAYS AS"
            f" ({_WORDS.format(f'left(normalize(left({text}, 200000), NFC), 200000)')}) STORED"
        )
        out.append(f"CREATE INDEX {name} ON {table} USING gin (agent_id, philont_words)")
    out.append(f"ANALYZE {', '.join(table for _n, table, _t in PG_WORD_COLUMNS)}")
    return out


def upgrade() -> None:
    if mo.is_sqlite():
        return
    conn = op.get_bind()
    for statement in pg_statements():
        conn.exec_driver_sql(statement)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
