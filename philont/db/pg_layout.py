"""PostgreSQL's shared layout for many agents, derived from the (SQLite-shaped) models.

On PostgreSQL every agent lives in the same tables: each model table gets an ``agent_id`` column
that leads its primary key, its unique constraints, its foreign keys and its indexes, and that
references the agents registry (``philont_agents``). The rules, applied to every model table:

* ``agent_id bigint NOT NULL DEFAULT philont_current_agent()``: an INSERT takes the agent of
  the transaction (``set_config('philont.agent_id', ..., true)``, see ``philont.db.agents``);
* an integer id (an AUTOINCREMENT table on SQLite) is numbered per agent from 1, as in the
  agent's own SQLite file (``DEFAULT philont_next_id('<table>')``, a counter row per agent and
  table in ``philont_agent_ids``): search's neighbour context and bm25's document count read
  message ids as SQLite numbers them;
* the append-only tables (:data:`PARTITIONED`) are hash-partitioned by agent into
  :data:`PARTITIONS` partitions (a fixed number, never one per agent);
* row-level security (enabled and forced, so the tables' owner is held to it too): a row is
  visible and writable only while its agent is the transaction's (``philont_agent()``);
* the search indexes are GIN over ``(agent_id, expression)`` (``btree_gin``), so a word's
  look-up reads only the agent's part of its posting list; the word indexes read the text with
  ASCII separators as spaces (``philont.db.fts.pg_words``), as SQLite's unicode61 tokenizer does.

Nothing here is per agent: creating an agent is a row in ``philont_agents``. Revisions v036,
v037 and v038 (the word indexes rebuilt) hold a frozen copy of :func:`statements`' output; a
parity test builds both and compares them.
Everything keys, joins and partitions by ``agent_id``, so the layout can be distributed by it
(Citus, README).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKeyConstraint,
    Identity,
    Index,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.schema import CreateIndex, CreateTable
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.elements import UnaryExpression

from philont.db.fts import PG_MESSAGES_TEXT, PG_NOTES_TEXT, PG_SKILLS_TEXT, pg_words
from philont.db.schema import metadata as model_metadata

__all__ = [
    "AGENTS_TABLE",
    "AGENT_COLUMN",
    "AGENT_LOCK",
    "AGENT_SETTING",
    "COUNTERS_TABLE",
    "PARTITIONED",
    "PARTITIONS",
    "PGVECTOR_TABLE",
    "agent_lock",
    "counter_tables",
    "layout_metadata",
    "layout_only",
    "statements",
]

AGENT_COLUMN = "agent_id"
AGENT_SETTING = "philont.agent_id"
"""The per-transaction setting that names the agent (its id in the registry)."""
AGENTS_TABLE = "philont_agents"
COUNTERS_TABLE = "philont_agent_ids"
AGENT_LOCK = "philont.agent."
"""The prefix of an agent's advisory lock (``hashtextextended(AGENT_LOCK || id, 0)``): a unit
of work takes it shared as it enters its agent, in the statement that sets the agent
(``philont.db.agents.set_local``), so before anything else of the agent; an import, a rename
and an agent's delete take it alone (:func:`agent_lock`, ``philont.db.agents.hold``) before
that."""
PARTITIONS = 16
PARTITIONED = (
    "memory_raw_messages",
    "memory_actions",
    "memory_access_log",
    # revision v037 (semantic recall): a message's vector and code sit in the partition number
    # of its message (same key, same modulus), so one agent's rows stay together
    "philont_message_vectors",
    "philont_message_codes",
)
PGVECTOR_TABLE = "philont_message_pgvectors"
"""Made at run time where the server has pgvector (``philont.db.vectors_pg``), not by a
revision: its column type exists only with the extension."""

_PG = postgresql.dialect()  # type: ignore[no-untyped-call]  # SQLAlchemy leaves it untyped

FUNCTIONS = (
    # The transaction's agent, NULL when none is set: row-level security's test (a plain SQL
    # expression PostgreSQL inlines, so the planner sees it as a stable value).
    "CREATE OR REPLACE FUNCTION philont_agent() RETURNS bigint LANGUAGE sql STABLE"
    f" AS $$ SELECT NULLIF(current_setting('{AGENT_SETTING}', true), '')::bigint $$",
    # The same for writes, refusing loudly when no agent is set (an INSERT's DEFAULT).
    "CREATE OR REPLACE FUNCTION philont_current_agent() RETURNS bigint LANGUAGE plpgsql STABLE"
    " AS $$ BEGIN IF philont_agent() IS NULL THEN RAISE EXCEPTION"
    f" 'philont: no agent is set for this transaction ({AGENT_SETTING})'"
    " USING ERRCODE = '42501'; END IF; RETURN philont_agent(); END $$",
    # The next id of a table for the transaction's agent: 1, 2, 3, ... as SQLite's AUTOINCREMENT
    # numbers them in the agent's own file (never reused). The counter row is locked until the
    # commit, so one agent's appends to one table queue as SQLite's writers do; other agents
    # never wait.
    "CREATE OR REPLACE FUNCTION philont_next_id(counter text) RETURNS bigint LANGUAGE sql"
    f" VOLATILE SET search_path FROM CURRENT AS $$ INSERT INTO {COUNTERS_TABLE} AS c"
    " (agent_id, name, last_value) VALUES (philont_current_agent(), counter, 1)"
    " ON CONFLICT (agent_id, name) DO UPDATE SET last_value = c.last_value + 1"
    " RETURNING c.last_value $$",
)

_SEARCH_INDEXES = (
    ("philont_pg_raw_messages_words", "memory_raw_messages", pg_words(PG_MESSAGES_TEXT)),
    ("philont_pg_raw_messages_trgm", "memory_raw_messages", f"{PG_MESSAGES_TEXT} gin_trgm_ops"),
    ("philont_pg_notes_words", "memory_notes", pg_words(PG_NOTES_TEXT)),
    ("philont_pg_notes_trgm", "memory_notes", f"{PG_NOTES_TEXT} gin_trgm_ops"),
    ("philont_pg_skills_words", "memory_skills", pg_words(PG_SKILLS_TEXT)),
    ("philont_pg_skills_trgm", "memory_skills", f"{PG_SKILLS_TEXT} gin_trgm_ops"),
)


def agent_lock(mark: str, *, shared: bool = False, wait: bool = True) -> str:
    """The call that takes an agent's lock (:data:`AGENT_LOCK`) until the transaction ends,
    the agent's id bound to ``mark``: alone (an import, an agent's delete) or ``shared`` (a
    unit of work entering the agent). Without ``wait``, true when taken, false at once when
    another transaction holds it alone."""
    function = f"pg_{'' if wait else 'try_'}advisory_xact_lock{'_shared' if shared else ''}"
    return f"{function}(hashtextextended('{AGENT_LOCK}' || {mark}, 0))"


def layout_only(name: str) -> bool:
    """A table of PostgreSQL's layout that is no model: the registry, the id counters, the
    pgvector copy of message vectors, and the hash partitions of :data:`PARTITIONED` (for
    autogenerate filters)."""
    if name in (AGENTS_TABLE, COUNTERS_TABLE, PGVECTOR_TABLE):
        return True
    base, _, part = name.rpartition("_p")
    return base in PARTITIONED and len(part) == 2 and part.isdigit()


def counter_tables() -> list[str]:
    """Model tables whose integer id is numbered per agent (AUTOINCREMENT on SQLite)."""
    return [
        t.name
        for t in model_metadata.sorted_tables
        if t.dialect_options["sqlite"].get("autoincrement")
    ]


def _registry(md: MetaData) -> None:
    Table(
        AGENTS_TABLE,
        md,
        Column("id", BigInteger, Identity(always=True), primary_key=True),
        Column("name", Text, nullable=False, unique=True),
        Column("created_at", BigInteger, nullable=False),
    )
    Table(
        COUNTERS_TABLE,
        md,
        Column(AGENT_COLUMN, BigInteger, nullable=False),
        Column("name", Text, nullable=False),
        Column("last_value", BigInteger, nullable=False),
        PrimaryKeyConstraint(AGENT_COLUMN, "name"),
        ForeignKeyConstraint([AGENT_COLUMN], [f"{AGENTS_TABLE}.id"]),
    )


def _index_expression(expr: object, table: Table) -> ColumnElement[object]:
    """A model index's expression (a column, or a column DESC) on the layout's table."""
    if isinstance(expr, Column):
        return table.c[expr.name]
    if isinstance(expr, UnaryExpression) and isinstance(expr.element, Column):
        return table.c[expr.element.name].desc()
    raise TypeError(f"index expression {expr!r} has no PostgreSQL layout rule")


def _scoped(model: Table, md: MetaData) -> Table:
    """The layout table of one model table (see the module docstring's rules)."""
    counters = model.dialect_options["sqlite"].get("autoincrement")
    columns = [
        Column(
            AGENT_COLUMN,
            BigInteger,
            nullable=False,
            server_default=text("philont_current_agent()"),
        )
    ]
    for c in model.columns:
        default = c.server_default
        if counters and c.primary_key:
            default = text(f"philont_next_id('{model.name}')")  # type: ignore[assignment]
        columns.append(
            Column(
                c.name,
                c.type,
                nullable=c.nullable and not c.primary_key,
                server_default=default,
                autoincrement=False,
            )
        )
    constraints: list[Any] = [
        PrimaryKeyConstraint(AGENT_COLUMN, *[c.name for c in model.primary_key]),
        ForeignKeyConstraint([AGENT_COLUMN], [f"{AGENTS_TABLE}.id"]),
    ]
    for fk in model.foreign_key_constraints:
        target = fk.referred_table.name
        own = [c.name for c in fk.columns]
        ondelete = fk.ondelete
        if ondelete and ondelete.upper() == "SET NULL":  # never agent_id (PostgreSQL 15+)
            ondelete = f"SET NULL ({', '.join(own)})"
        constraints.append(
            ForeignKeyConstraint(
                [AGENT_COLUMN, *own],
                [f"{target}.{AGENT_COLUMN}", *[f"{target}.{e.column.name}" for e in fk.elements]],
                ondelete=ondelete,
            )
        )
    for uc in model.constraints:
        if isinstance(uc, UniqueConstraint):
            constraints.append(UniqueConstraint(AGENT_COLUMN, *[c.name for c in uc.columns]))
    kwargs: dict[str, Any] = {}
    if model.name in PARTITIONED:
        kwargs["postgresql_partition_by"] = f"HASH ({AGENT_COLUMN})"
    table = Table(model.name, md, *columns, *constraints, **kwargs)
    for index in model.indexes:
        where = index.dialect_options["postgresql"].get("where")
        exprs = [_index_expression(e, table) for e in index.expressions]
        Index(index.name, table.c[AGENT_COLUMN], *exprs, postgresql_where=where)
    return table


def layout_metadata() -> MetaData:
    """The shared layout as SQLAlchemy tables (registry, counters, every model table)."""
    md = MetaData()
    _registry(md)
    for model in model_metadata.sorted_tables:
        _scoped(model, md)
    return md


def _ddl(element: object) -> str:
    """One statement on one line."""
    return " ".join(str(element.compile(dialect=_PG)).split())  # type: ignore[attr-defined]


def statements() -> list[str]:
    """Every statement that builds the shared layout on an empty schema, in order."""
    md = layout_metadata()
    out = [
        "CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public",
        "CREATE EXTENSION IF NOT EXISTS btree_gin WITH SCHEMA public",
    ]
    first = [md.tables[AGENTS_TABLE], md.tables[COUNTERS_TABLE]]
    tables = first + [t for t in md.sorted_tables if t not in first]
    for table in tables:
        out.append(_ddl(CreateTable(table)))
        if table.name == COUNTERS_TABLE:
            out.extend(FUNCTIONS)
        if table.name in PARTITIONED:
            out.extend(
                f"CREATE TABLE {table.name}_p{r:02d} PARTITION OF {table.name}"
                f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {r})"
                for r in range(PARTITIONS)
            )
        for index in sorted(table.indexes, key=lambda i: str(i.name)):
            out.append(_ddl(CreateIndex(index)))
    for name, table_name, expression in _SEARCH_INDEXES:
        out.append(f"CREATE INDEX {name} ON {table_name} USING gin ({AGENT_COLUMN}, {expression})")
    for table in tables:
        if table.name == AGENTS_TABLE:
            continue
        names = [table.name]
        if table.name in PARTITIONED:
            names += [f"{table.name}_p{r:02d}" for r in range(PARTITIONS)]
        for name in names:
            out.append(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY")
            out.append(f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY")
            out.append(
                f"CREATE POLICY philont_agent_rows ON {name}"
                f" USING ({AGENT_COLUMN} = philont_agent())"
                f" WITH CHECK ({AGENT_COLUMN} = philont_agent())"
            )
    return out
