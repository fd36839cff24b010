"""Our own revision: the last characters of a message are each a word of its own (schema 31).

Revision v033's contentless word index ``philont_raw_messages_words_fts`` has a column ``tail``
holding the last two characters of each message, so that a short CJK term is found where no
trigram of Philont's index starts with it (the last two positions). unicode61 reads two CJK
characters, or a CJK character beside a letter or digit, as one token (``只猫``, ``猫a``): a
one-character term in either of the last two positions was not found on SQLite (``猫``
in ``我养了一只猫``, ``丁`` in ``丁山``, ``乮`` in ``乮a``), where PostgreSQL finds it. When
either of the last two characters is CJK (the ranges of ``CJK_RANGES``, a GLOB class), the
column now holds them, then each of them alone (``只猫 只 猫``): a term of one or two characters
in the last two positions is one of its tokens. A tail without CJK is unchanged, so bm25 reads
the same number of tokens in such a message as before.

This revision drops v033's three triggers on ``memory_raw_messages`` (a contentless FTS5 table
is deleted from with the values it was given, so the triggers and the index change together),
creates them with the new ``tail``, and rebuilds the index from the messages. Philont's tables
are untouched, and the triggers still use nothing but SQLite built-ins, so the file stays
openable by Philont schema-31 software. PostgreSQL finds such terms with ``pg_trgm``: there this
revision is a no-op.

The SQL is a frozen copy of the statements in ``philont/db/fts.py``.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v040"
down_revision = "v039"
branch_labels = None
depends_on = None
backends = ("sqlite",)
"""The backends this revision changes; on PostgreSQL it does nothing (``heads_for``)."""

CJK_RANGES = (
    (0x1100, 0x11FF),
    (0x3040, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)
"""The code points read as CJK in a tail (a GLOB character class of their ranges)."""


def tail(text: str) -> str:
    """SQL: the ``tail`` of the message text ``text``."""
    cjk = "".join(f"{chr(low)}-{chr(high)}" for low, high in CJK_RANGES)
    last_two = f"substr({text}, -2)"
    return (
        f"{last_two} || CASE WHEN {last_two} GLOB '*[{cjk}]*'"
        f" THEN ' ' || substr({text}, -2, 1) || ' ' || substr({text}, -1) ELSE '' END"
    )


RAW_MESSAGES_WORDS_FTS_TRIGGERS = (
    f"""CREATE TRIGGER philont_raw_messages_words_ai AFTER INSERT ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)
  VALUES (new.rowid, new.content, {tail("new.content")});
END""",
    f"""CREATE TRIGGER philont_raw_messages_words_ad AFTER DELETE ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rowid, content, tail)
  VALUES ('delete', old.rowid, old.content, {tail("old.content")});
END""",
    f"""CREATE TRIGGER philont_raw_messages_words_au
AFTER UPDATE OF content ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rowid, content, tail)
  VALUES ('delete', old.rowid, old.content, {tail("old.content")});
  INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)
  VALUES (new.rowid, new.content, {tail("new.content")});
END""",
)

OLD_TRIGGERS = (
    "philont_raw_messages_words_ai",
    "philont_raw_messages_words_ad",
    "philont_raw_messages_words_au",
)


def upgrade() -> None:
    if not mo.is_sqlite():
        return
    for name in OLD_TRIGGERS:
        op.execute(f"DROP TRIGGER IF EXISTS {name}")
    for ddl in RAW_MESSAGES_WORDS_FTS_TRIGGERS:
        op.execute(ddl)
    # A contentless table has no 'rebuild': empty it and index every message again.
    op.execute(
        "INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts)"
        " VALUES('delete-all')"
    )
    with mo.fts5_bulk_load("philont_raw_messages_words_fts"):
        op.execute(
            "INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)"
            f" SELECT rowid, content, {tail('content')} FROM memory_raw_messages"
        )


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
