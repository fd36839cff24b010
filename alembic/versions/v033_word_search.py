"""Our own additive revision: word-level search indexes (schema_version stays 31).

Not a Philont schema version: it adds only objects of our own, which Philont schema-31 software
never reads (its inserts and deletes fire our triggers, which use nothing but SQLite built-ins),
so the file stays openable by it and ``memory_meta.schema_version`` is left at 31:

* ``philont_raw_messages_words_fts``: contentless FTS5 (``porter unicode61 remove_diacritics 2``)
  over ``memory_raw_messages``: ``content`` and ``tail`` (the last two characters, so short CJK
  words at the very end of a message are found), triggers ``philont_raw_messages_words_ai`` /
  ``_ad`` / ``_au``; filled from the existing messages;
* ``philont_notes_words_fts`` and ``philont_skills_words_fts``: external-content FTS5 over
  ``memory_notes(content)`` and ``memory_skills(name, description, trigger_keywords,
  when_to_use)`` with ``_ai`` / ``_ad`` / ``_au`` triggers; ``'rebuild'`` indexes existing rows;
* ``philont_raw_messages_fts_trigrams``: an fts5vocab (instance) view of Philont's trigram
  index, through which two-character CJK words are found (every trigram starting with them);
* index ``idx_philont_raw_messages_session_time`` on ``memory_raw_messages(session_id,
  timestamp)``: a session's newest messages without sorting the session (all backends).

The SQL is a frozen copy of the statements in ``philont/db/fts.py``. The FTS objects are SQLite
only: on PostgreSQL only the session/time index is made here (the rest is a documented no-op;
our revision v034 is its PostgreSQL counterpart).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v033"
down_revision = "v032"
branch_labels = None
depends_on = None
backends = ("sqlite",)
"""The backends this revision changes; on PostgreSQL it does nothing (``heads_for``)."""

RAW_MESSAGES_WORDS_FTS_CREATE = """CREATE VIRTUAL TABLE philont_raw_messages_words_fts USING fts5(
  content,
  tail,
  content='',
  tokenize='porter unicode61 remove_diacritics 2'
)"""

RAW_MESSAGES_WORDS_FTS_TRIGGERS = (
    """CREATE TRIGGER philont_raw_messages_words_ai AFTER INSERT ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)
  VALUES (new.rowid, new.content, substr(new.content, -2));
END""",
    """CREATE TRIGGER philont_raw_messages_words_ad AFTER DELETE ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rowid, content, tail)
  VALUES ('delete', old.rowid, old.content, substr(old.content, -2));
END""",
    """CREATE TRIGGER philont_raw_messages_words_au
AFTER UPDATE OF content ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rowid, content, tail)
  VALUES ('delete', old.rowid, old.content, substr(old.content, -2));
  INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)
  VALUES (new.rowid, new.content, substr(new.content, -2));
END""",
)

NOTES_WORDS_FTS_CREATE = """CREATE VIRTUAL TABLE philont_notes_words_fts USING fts5(
  content,
  content='memory_notes',
  content_rowid='rowid',
  tokenize='porter unicode61 remove_diacritics 2'
)"""

NOTES_WORDS_FTS_TRIGGERS = (
    """CREATE TRIGGER philont_notes_words_ai AFTER INSERT ON memory_notes BEGIN
  INSERT INTO philont_notes_words_fts(rowid, content) VALUES (new.rowid, new.content);
END""",
    """CREATE TRIGGER philont_notes_words_ad AFTER DELETE ON memory_notes BEGIN
  INSERT INTO philont_notes_words_fts(philont_notes_words_fts, rowid, content)
  VALUES ('delete', old.rowid, old.content);
END""",
    """CREATE TRIGGER philont_notes_words_au AFTER UPDATE OF content ON memory_notes BEGIN
  INSERT INTO philont_notes_words_fts(philont_notes_words_fts, rowid, content)
  VALUES ('delete', old.rowid, old.content);
  INSERT INTO philont_notes_words_fts(rowid, content) VALUES (new.rowid, new.content);
END""",
)

SKILLS_WORDS_FTS_CREATE = """CREATE VIRTUAL TABLE philont_skills_words_fts USING fts5(
  name,
  description,
  trigger_keywords,
  when_to_use,
  content='memory_skills',
  content_rowid='rowid',
  tokenize='porter unicode61 remove_diacritics 2'
)"""

SKILLS_WORDS_FTS_TRIGGERS = (
    """CREATE TRIGGER philont_skills_words_ai AFTER INSERT ON memory_skills BEGIN
  INSERT INTO philont_skills_words_fts(rowid, name, description, trigger_keywords, when_to_use)
  VALUES (new.rowid, new.name, new.description, new.trigger_keywords, new.when_to_use);
END""",
    """CREATE TRIGGER philont_skills_words_ad AFTER DELETE ON memory_skills BEGIN
  INSERT INTO philont_skills_words_fts(
    philont_skills_words_fts, rowid, name, description, trigger_keywords, when_to_use
  )
  VALUES ('delete', old.rowid, old.name, old.description, old.trigger_keywords, old.when_to_use);
END""",
    """CREATE TRIGGER philont_skills_words_au
AFTER UPDATE OF name, description, trigger_keywords, when_to_use ON memory_skills BEGIN
  INSERT INTO philont_skills_words_fts(
    philont_skills_words_fts, rowid, name, description, trigger_keywords, when_to_use
  )
  VALUES ('delete', old.rowid, old.name, old.description, old.trigger_keywords, old.when_to_use);
  INSERT INTO philont_skills_words_fts(rowid, name, description, trigger_keywords, when_to_use)
  VALUES (new.rowid, new.name, new.description, new.trigger_keywords, new.when_to_use);
END""",
)

VOCAB_CREATES = (
    "CREATE VIRTUAL TABLE philont_raw_messages_fts_trigrams"
    " USING fts5vocab(memory_raw_messages_fts, instance)",
)


def _if_not_exists(ddl: str) -> str:
    """The frozen DDL in its idempotent form (SQLite stores it without ``IF NOT EXISTS``)."""
    for head in ("CREATE VIRTUAL TABLE ", "CREATE TRIGGER "):
        if ddl.startswith(head):
            return head + "IF NOT EXISTS " + ddl[len(head) :]
    raise ValueError(f"unexpected DDL: {ddl[:40]!r}")


def upgrade() -> None:
    mo.create_index_if_missing(
        "CREATE INDEX IF NOT EXISTS idx_philont_raw_messages_session_time"
        " ON memory_raw_messages (session_id, timestamp)"
    )
    if not mo.is_sqlite():
        return
    for ddl in (
        RAW_MESSAGES_WORDS_FTS_CREATE,
        *RAW_MESSAGES_WORDS_FTS_TRIGGERS,
        NOTES_WORDS_FTS_CREATE,
        *NOTES_WORDS_FTS_TRIGGERS,
        SKILLS_WORDS_FTS_CREATE,
        *SKILLS_WORDS_FTS_TRIGGERS,
        *VOCAB_CREATES,
    ):
        op.execute(_if_not_exists(ddl))
    # Index what the database already holds. The contentless message index has no 'rebuild':
    # empty it (harmless on a fresh table, and makes a re-run after a crash exact) and refill.
    op.execute(
        "INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts)"
        " VALUES('delete-all')"
    )
    with mo.fts5_bulk_load("philont_raw_messages_words_fts"):
        op.execute(
            "INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)"
            " SELECT rowid, content, substr(content, -2) FROM memory_raw_messages"
        )
    op.execute("INSERT INTO philont_notes_words_fts(philont_notes_words_fts) VALUES('rebuild')")
    op.execute("INSERT INTO philont_skills_words_fts(philont_skills_words_fts) VALUES('rebuild')")


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
