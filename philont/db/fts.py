"""All current FTS5 DDL (Philont's trigram tables and their triggers), attached to the models
through DDL events so ``metadata.create_all`` builds them. The Alembic revisions hold the same
statements as frozen literals; a parity test keeps the two equal."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import DDL, Table, event

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
