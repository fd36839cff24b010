"""All current FTS5 DDL (Philont's trigram tables and their triggers), attached to the models
through DDL events so ``metadata.create_all`` builds them. The Alembic revisions hold the same
statements as frozen literals; a parity test keeps the two equal."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import DDL, Index, Table, event

from philont.db.models import Note, RawMessage, Skill


@dataclass(frozen=True)
class FtsIndex:
    """One external-content FTS5 table over ``content_table`` with its sync triggers."""

    name: str
    content_table: Table
    create: str
    triggers: tuple[str, ...]


RAW_MESSAGES_FTS = FtsIndex(
    name="memory_raw_messages_fts",
    content_table=RawMessage.__table__,  # type: ignore[arg-type]  # a Table at runtime
    create="""CREATE VIRTUAL TABLE memory_raw_messages_fts USING fts5(
  content,
  role,
  content='memory_raw_messages',
  content_rowid='rowid',
  tokenize='trigram'
)""",
    triggers=(
        """CREATE TRIGGER memory_raw_messages_ai AFTER INSERT ON memory_raw_messages BEGIN
  INSERT INTO memory_raw_messages_fts(rowid, content, role)
  VALUES (new.rowid, new.content, new.role);
END""",
        """CREATE TRIGGER memory_raw_messages_ad AFTER DELETE ON memory_raw_messages BEGIN
  INSERT INTO memory_raw_messages_fts(memory_raw_messages_fts, rowid, content, role)
  VALUES ('delete', old.rowid, old.content, old.role);
END""",
    ),
)

NOTES_FTS = FtsIndex(
    name="memory_notes_fts",
    content_table=Note.__table__,  # type: ignore[arg-type]
    create="""CREATE VIRTUAL TABLE memory_notes_fts USING fts5(
  content,
  content='memory_notes',
  content_rowid='rowid',
  tokenize='trigram'
)""",
    triggers=(
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
    ),
)

SKILLS_FTS = FtsIndex(
    name="memory_skills_fts",
    content_table=Skill.__table__,  # type: ignore[arg-type]
    create="""CREATE VIRTUAL TABLE memory_skills_fts USING fts5(
  name,
  description,
  trigger_keywords,
  content='memory_skills',
  content_rowid='rowid',
  tokenize='trigram'
)""",
    triggers=(
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
    ),
)

FTS_INDEXES: tuple[FtsIndex, ...] = (RAW_MESSAGES_FTS, NOTES_FTS, SKILLS_FTS)


def _attach(index: FtsIndex) -> None:
    # Listeners go on each model's own Table object (never the Table class), and only for SQLite:
    # FTS5 is SQLite's; other backends get their own search objects.
    for statement in (index.create, *index.triggers):
        ddl = DDL(statement)  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it untyped
        event.listen(index.content_table, "after_create", ddl.execute_if(dialect="sqlite"))
    drop = DDL(f"DROP TABLE IF EXISTS {index.name}")  # type: ignore[no-untyped-call]
    event.listen(index.content_table, "before_drop", drop.execute_if(dialect="sqlite"))


for _index in FTS_INDEXES:
    _attach(_index)


# --- our own search support (revision v033; additive, Philont schema-31 software ignores it) ----
#
# Philont's trigram tables cannot find terms shorter than three characters and stem nothing, so
# keyword recall uses word-level indexes of our own (porter over unicode61, diacritics folded).
# The raw-message index is contentless and has a second column, ``tail``, holding the last two
# characters of each message, and each alone if either is CJK (``raw_messages_tail``, revision
# v040): with an fts5vocab view of Philont's trigram index (every trigram that starts with a
# short CJK word) it finds short CJK words anywhere in a message, index-backed.

WORD_TOKENIZER = "porter unicode61 remove_diacritics 2"

TAIL_CJK_RANGES = (
    (0x1100, 0x11FF),
    (0x3040, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x3134F),
)
"""Code points whose presence in a message's last two characters makes ``tail`` hold each of
them alone too: every character a query reads as CJK (:func:`philont.domain.query._is_cjk`;
a few neighbouring blocks with it)."""


def raw_messages_tail(text: str) -> str:
    """SQL: what the ``tail`` column holds of the message text ``text`` (revision v040): its
    last two characters, and if either is CJK, each of them alone after them. unicode61 reads
    two CJK characters (or one beside a letter or digit) as one token, so a one-character term
    in the last two positions, where no trigram starts with it, is found as a token of its own.
    A tail without CJK is as v033 made it (the token count bm25 reads is unchanged)."""
    cjk = "".join(f"{chr(low)}-{chr(high)}" for low, high in TAIL_CJK_RANGES)
    last_two = f"substr({text}, -2)"
    return (
        f"{last_two} || CASE WHEN {last_two} GLOB '*[{cjk}]*'"
        f" THEN ' ' || substr({text}, -2, 1) || ' ' || substr({text}, -1) ELSE '' END"
    )


def raw_messages_tail_text(text: str) -> str:
    """What :func:`raw_messages_tail` makes of the message ``text``, in Python (PostgreSQL's
    scorer counts its tokens in bm25's document length, as FTS5 does)."""
    last_two = text[-2:]
    if not any(low <= ord(c) <= high for c in last_two for low, high in TAIL_CJK_RANGES):
        return last_two
    second = text[-2] if len(text) >= 2 else ""  # substr(text, -2, 1) of one character: ''
    return f"{last_two} {second} {text[-1]}"


RAW_MESSAGES_WORDS_FTS = FtsIndex(
    name="philont_raw_messages_words_fts",
    content_table=RawMessage.__table__,  # type: ignore[arg-type]
    create="""CREATE VIRTUAL TABLE philont_raw_messages_words_fts USING fts5(
  content,
  tail,
  content='',
  tokenize='porter unicode61 remove_diacritics 2'
)""",
    triggers=(
        f"""CREATE TRIGGER philont_raw_messages_words_ai AFTER INSERT ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)
  VALUES (new.rowid, new.content, {raw_messages_tail("new.content")});
END""",
        f"""CREATE TRIGGER philont_raw_messages_words_ad AFTER DELETE ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rowid, content, tail)
  VALUES ('delete', old.rowid, old.content, {raw_messages_tail("old.content")});
END""",
        f"""CREATE TRIGGER philont_raw_messages_words_au
AFTER UPDATE OF content ON memory_raw_messages BEGIN
  INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rowid, content, tail)
  VALUES ('delete', old.rowid, old.content, {raw_messages_tail("old.content")});
  INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)
  VALUES (new.rowid, new.content, {raw_messages_tail("new.content")});
END""",
    ),
)

NOTES_WORDS_FTS = FtsIndex(
    name="philont_notes_words_fts",
    content_table=Note.__table__,  # type: ignore[arg-type]
    create="""CREATE VIRTUAL TABLE philont_notes_words_fts USING fts5(
  content,
  content='memory_notes',
  content_rowid='rowid',
  tokenize='porter unicode61 remove_diacritics 2'
)""",
    triggers=(
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
    ),
)

SKILLS_WORDS_FTS = FtsIndex(
    name="philont_skills_words_fts",
    content_table=Skill.__table__,  # type: ignore[arg-type]
    create="""CREATE VIRTUAL TABLE philont_skills_words_fts USING fts5(
  name,
  description,
  trigger_keywords,
  when_to_use,
  content='memory_skills',
  content_rowid='rowid',
  tokenize='porter unicode61 remove_diacritics 2'
)""",
    triggers=(
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
    ),
)

WORD_INDEXES: tuple[FtsIndex, ...] = (RAW_MESSAGES_WORDS_FTS, NOTES_WORDS_FTS, SKILLS_WORDS_FTS)


@dataclass(frozen=True)
class VocabTable:
    """An fts5vocab table (the terms of an FTS5 index and where they occur), made after it."""

    name: str
    content_table: Table
    create: str


RAW_MESSAGES_TRIGRAMS = VocabTable(
    name="philont_raw_messages_fts_trigrams",
    content_table=RawMessage.__table__,  # type: ignore[arg-type]
    create="CREATE VIRTUAL TABLE philont_raw_messages_fts_trigrams"
    " USING fts5vocab(memory_raw_messages_fts, instance)",
)
VOCAB_TABLES: tuple[VocabTable, ...] = (RAW_MESSAGES_TRIGRAMS,)


for _index in WORD_INDEXES:
    _attach(_index)

# The timeline of one session, newest first, without sorting it: the retriever's recency window
# restricted to a session (Philont's own index covers session_id alone, so a large session was
# read whole and sorted).
RAW_MESSAGES_SESSION_TIME = Index(
    "idx_philont_raw_messages_session_time",
    RawMessage.__table__.c.session_id,
    RawMessage.__table__.c.timestamp,
)

for _vocab in VOCAB_TABLES:
    _create = DDL(_vocab.create)  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it untyped
    event.listen(_vocab.content_table, "after_create", _create.execute_if(dialect="sqlite"))
    _drop = DDL(f"DROP TABLE IF EXISTS {_vocab.name}")  # type: ignore[no-untyped-call]
    event.listen(_vocab.content_table, "before_drop", _drop.execute_if(dialect="sqlite"))


# --- PostgreSQL: the same searches through GIN indexes (revisions v034, v038, v039) -----------
# Word search uses to_tsvector('english', ...) (snowball stemming, as porter here) over the text
# with ASCII separators read as spaces (revision v038), held in a stored generated column of the
# shared layout (revision v039, PG_WORDS_COLUMN); substrings and short CJK words use pg_trgm.
# Queries must repeat the trigram expressions exactly for PostgreSQL to use the indexes.
# PG_SEARCH_INDEXES below are the expression indexes of the old per-agent layout (create_all).

PG_MESSAGES_TEXT = "content"
PG_NOTES_TEXT = "content"
PG_SKILLS_TEXT = (
    "(name || ' ' || description || ' ' || trigger_keywords || ' ' || coalesce(when_to_use, ''))"
)


PG_SEPARATORS = "".join(c for c in map(chr, range(0x21, 0x7F)) if not c.isalnum())
"""The ASCII characters (punctuation and symbols) FTS5's unicode61 tokenizer reads as
separators, which PostgreSQL's parser may keep inside one lexeme: ``node.js``, ``v1.2.3``,
``bob@example.com``, ``https://example.com/docs``, ``foo/bar``, ``U.S.`` (and ``covid-19`` it
reads as ``covid``, ``-19``). PostgreSQL's word indexes read each of them as a space, so a
document's lexemes are those of unicode61's tokens (``node``, ``js``) and a part is found as
on SQLite; a query is read the same way (:data:`PG_SPACES`)."""

PG_SPACES = str.maketrans(PG_SEPARATORS, " " * len(PG_SEPARATORS))
"""``str.translate`` table: a query's text as the word indexes read a document's."""


def pg_separated(expression: str) -> str:
    """SQL: ``expression`` with every run of :data:`PG_SEPARATORS` read as a space (a regular
    expression of their code points, so no quote or ``%`` is in the statement's text; it adds
    about a fifth to ``to_tsvector``'s cost a row, where ``translate`` doubled it)."""
    codes = "".join(f"\\\\x{ord(c):02x}" for c in PG_SEPARATORS)
    return f"regexp_replace({expression}, E'[{codes}]+', ' ', 'g')"


PG_WORDS_CHARS = 200_000
"""How many characters of a text PostgreSQL's word index reads (the rest is found by its
trigram index, and on SQLite by both). A tsvector holds at most 1 MB of lexemes, and every
separator read as a space makes a long dotted run (minified code, a path) thousands of words:
a text over that failed to be stored, and failed v038 / v039's upgrade of a database holding
one. At most 4 bytes a character, 200,000 characters are 800 kB of lexemes at the worst."""


def pg_words(expression: str) -> str:
    """The tsvector a PostgreSQL word index holds for ``expression``: the words of its first
    :data:`PG_WORDS_CHARS` characters."""
    text = pg_separated(f"left({expression}, {PG_WORDS_CHARS})")
    return f"to_tsvector('english'::regconfig, {text})"


def pg_composed(expression: str) -> str:
    """SQL: the first :data:`PG_WORDS_CHARS` characters of ``expression`` composed (NFC), so
    that every canonically equivalent spelling of a text (NFC, NFD, or neither: ``ê`` + U+0323
    for ``ệ``) has the words of the composed text, as a query is read
    (:func:`philont.domain.query.build_plan`). Cut first: composing a whole 16M-character text
    took a second a write (5 s for one of Greek letters that decompose to four). Needs a UTF8
    database (:func:`philont.db.engine.refuse_non_utf8`)."""
    return f"normalize(left({expression}, {PG_WORDS_CHARS}), NFC)"


PG_WORDS_COLUMN = "philont_words"
"""PostgreSQL's shared layout (revision v039): a stored generated column of each searchable
table, ``GENERATED ALWAYS AS (pg_words(pg_composed(text))) STORED``, that the word index covers
and search reads, so no read evaluates ``to_tsvector`` (a common word's newest matches, read by
a backward scan of the primary key, evaluated it on every row scanned). No model maps it and
nothing can write it; SQLite has no such column (its word indexes are FTS5 tables)."""

PG_WORDS_TEXTS = {
    RawMessage.__tablename__: pg_composed(PG_MESSAGES_TEXT),
    Note.__tablename__: pg_composed(PG_NOTES_TEXT),
    Skill.__tablename__: pg_composed(PG_SKILLS_TEXT),
}
"""Per table of :data:`PG_WORDS_COLUMN`, the text it holds the words of (composed)."""


PG_SEARCH_INDEXES: tuple[tuple[Any, str], ...] = (
    (
        RawMessage.__table__,
        "CREATE INDEX IF NOT EXISTS philont_pg_raw_messages_words ON memory_raw_messages"
        f" USING gin ({pg_words(PG_MESSAGES_TEXT)})",
    ),
    (
        RawMessage.__table__,
        "CREATE INDEX IF NOT EXISTS philont_pg_raw_messages_trgm ON memory_raw_messages"
        f" USING gin ({PG_MESSAGES_TEXT} gin_trgm_ops)",
    ),
    (
        Note.__table__,
        "CREATE INDEX IF NOT EXISTS philont_pg_notes_words ON memory_notes"
        f" USING gin ({pg_words(PG_NOTES_TEXT)})",
    ),
    (
        Note.__table__,
        "CREATE INDEX IF NOT EXISTS philont_pg_notes_trgm ON memory_notes"
        f" USING gin ({PG_NOTES_TEXT} gin_trgm_ops)",
    ),
    (
        Skill.__table__,
        "CREATE INDEX IF NOT EXISTS philont_pg_skills_words ON memory_skills"
        f" USING gin ({pg_words(PG_SKILLS_TEXT)})",
    ),
    (
        Skill.__table__,
        "CREATE INDEX IF NOT EXISTS philont_pg_skills_trgm ON memory_skills"
        f" USING gin ({PG_SKILLS_TEXT} gin_trgm_ops)",
    ),
)

for _table, _statement in PG_SEARCH_INDEXES:
    _pg_ddl = DDL(_statement)  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it untyped
    event.listen(_table, "after_create", _pg_ddl.execute_if(dialect="postgresql"))
