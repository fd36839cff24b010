"""Our own revision: PostgreSQL's word indexes read ASCII separators as spaces (schema_version 31).

PostgreSQL's ``english`` parser keeps some shapes whole as one lexeme (``node.js``,
``v1.2.3``, ``bob@example.com``, ``https://example.com/docs``, ``foo/bar``, ``U.S.``, ``1.5``)
and reads others its own way (``covid-19`` as ``covid`` and ``-19``), so a part of such a shape
(``node``, ``example``) was not found on PostgreSQL where SQLite's word index (unicode61: runs of
letters and digits) finds it. This revision rebuilds the three word indexes of v036
(``philont_pg_raw_messages_words``, ``philont_pg_notes_words``, ``philont_pg_skills_words``)
over the same text with every ASCII punctuation character or symbol read as a space
(``regexp_replace``), so a document's lexemes are those of unicode61's tokens; search reads a query
the same way (``philont.db.fts.pg_words``). An index reads a text's first 200,000 characters: a
tsvector holds at most 1 MB of lexemes, which a long dotted run read as words would pass. The
trigram indexes, the tables and the rows are left as they are; building the indexes takes a
lock that holds writes (not reads) back while it runs, and the three tables are analyzed
after it (the new expressions' statistics).

The statements are a frozen copy of what ``philont.db.pg_layout.statements()`` makes of these
indexes; the parity test builds both and compares the catalogs. On SQLite this revision is a
no-op (its word indexes are v033's FTS5 tables).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v038"
down_revision = "v037"
branch_labels = None
depends_on = None
backends = ("postgresql",)
"""The backends this revision changes; on SQLite it does nothing (``heads_for``)."""

_SEPARATED = (
    r"regexp_replace({}, E'[\\x21\\x22\\x23\\x24\\x25\\x26\\x27\\x28\\x29\\x2a\\x2b"
    r"\\x2c\\x2d\\x2e\\x2f\\x3a\\x3b\\x3c\\x3d\\x3e\\x3f\\x40"
    r"\\x5b\\x5c\\x5d\\x5e\\x5f\\x60\\x7b\\x7c\\x7d\\x7e]+', ' ', 'g')"
)
"""The text with every run of ASCII punctuation and symbols read as a space."""
_SKILLS_TEXT = (
    "(name || ' ' || description || ' ' || trigger_keywords || ' ' || coalesce(when_to_use, ''))"
)
PG_WORD_INDEXES = (
    ("philont_pg_raw_messages_words", "memory_raw_messages", "content"),
    ("philont_pg_notes_words", "memory_notes", "content"),
    ("philont_pg_skills_words", "memory_skills", _SKILLS_TEXT),
)
"""(index, table, the text it reads)."""


def pg_statements() -> list[str]:
    """Every statement of this revision on PostgreSQL, in order: each index rebuilt, then the
    tables analyzed (the planner's statistics of the new expressions: without them it guesses
    every word's share of the rows until autovacuum analyzes the table, which a table no
    longer written may never need)."""
    out: list[str] = []
    for name, table, text in PG_WORD_INDEXES:
        separated = _SEPARATED.format(f"left({text}, 200000)")  # tsvector's 1 MB of lexemes
        words = f"to_tsvector('english'::regconfig, {separated})"
        out.append(f"DROP INDEX {name}")
        out.append(f"CREATE INDEX {name} ON {table} USING gin (agent_id, {words})")
    out.append(f"ANALYZE {', '.join(table for _n, table, _t in PG_WORD_INDEXES)}")
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
