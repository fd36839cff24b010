"""Philont schema v6: full-text search over the raw timeline.

Mirrors Philont's migration 5 -> 6: the FTS5 table ``memory_raw_messages_fts`` (trigram,
external content over ``memory_raw_messages``, indexing ``content`` and ``role``) with its
insert/delete triggers ``memory_raw_messages_ai`` / ``memory_raw_messages_ad``, then a
``'rebuild'`` to index the messages that already exist. The SQL is a frozen copy of Philont's
DDL (identical to ``philont/db/fts.py``).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v006"
down_revision = "v005"
branch_labels = None
depends_on = None

RAW_MESSAGES_FTS_CREATE = """CREATE VIRTUAL TABLE memory_raw_messages_fts USING fts5(
  content,
  role,
  content='memory_raw_messages',
  content_rowid='rowid',
  tokenize='trigram'
)"""

RAW_MESSAGES_FTS_TRIGGERS = (
    """CREATE TRIGGER memory_raw_messages_ai AFTER INSERT ON memory_raw_messages BEGIN
  INSERT INTO memory_raw_messages_fts(rowid, content, role)
  VALUES (new.rowid, new.content, new.role);
END""",
    """CREATE TRIGGER memory_raw_messages_ad AFTER DELETE ON memory_raw_messages BEGIN
  INSERT INTO memory_raw_messages_fts(memory_raw_messages_fts, rowid, content, role)
  VALUES ('delete', old.rowid, old.content, old.role);
END""",
)


def _if_not_exists(ddl: str) -> str:
    """The frozen DDL in its idempotent form (SQLite stores it without ``IF NOT EXISTS``)."""
    for head in ("CREATE VIRTUAL TABLE ", "CREATE TRIGGER "):
        if ddl.startswith(head):
            return head + "IF NOT EXISTS " + ddl[len(head) :]
    raise ValueError(f"unexpected DDL: {ddl[:40]!r}")


def upgrade() -> None:
    # FTS5 is SQLite's: on PostgreSQL this revision only records the version (a documented
    # no-op); its counterpart (GIN word and trigram indexes) is our revision v034.
    if mo.is_sqlite():
        for ddl in (RAW_MESSAGES_FTS_CREATE, *RAW_MESSAGES_FTS_TRIGGERS):
            op.execute(_if_not_exists(ddl))
        with mo.fts5_bulk_load("memory_raw_messages_fts"):
            op.execute(
                "INSERT INTO memory_raw_messages_fts(memory_raw_messages_fts) VALUES('rebuild')"
            )
    mo.set_schema_version(6)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
