"""Our own additive revision: tables for optional semantic recall (schema_version stays 31).

Not a Philont schema version. It adds plain tables of our own, filled only by philont's
backfill (never by triggers), so Philont schema-31 software, which never reads them, keeps
opening, appending to and searching the file; no object here depends on a loadable extension
(sqlite-vec is used as a function library at query time, never in the schema):

* ``philont_vector_index``: one row, the model and dimension that built every stored vector
  (``generation`` grows whenever vectors are removed, so caches know to reload);
* ``philont_message_vectors``: ``message_id`` → unit-length float32 vector (little-endian);
* ``philont_message_codes``: ``message_id`` → the vector's sign bits (the coarse search pass
  reads this narrow table only);
* ``philont_note_vectors`` / ``philont_skill_vectors``: ``note_id`` / ``skill_id`` → vector,
  with ``text_hash`` of the text embedded (an edited note or skill is embedded again).

No foreign keys to the rows: Philont deletes notes and skills with plain SQL; a vector whose
row is gone is ignored by search and removed by the next backfill.

On PostgreSQL the same tables join the shared layout of revision v036 (a frozen copy of what
``philont.db.pg_layout.statements()`` makes of them; the parity test compares the two): one
record per agent, ``agent_id`` leading every primary key (its DEFAULT is the transaction's
agent) and referencing the registry, the message vectors and codes hash-partitioned by agent
like the messages, row-level security on every table and partition. A pgvector column and its
HNSW index are made at run time, only where the server has the extension.

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v037"
down_revision = "v036"
branch_labels = None
depends_on = None


def _index() -> None:
    op.create_table(
        "philont_vector_index",
        sa.Column("id", mo.INTEGER(), primary_key=True, autoincrement=False),
        sa.Column("model_id", sa.Text(), nullable=False),
        sa.Column("dimension", mo.INTEGER(), nullable=False),
        sa.Column("generation", mo.INTEGER(), nullable=False, server_default=sa.text("1")),
        sa.Column("created_at", mo.INTEGER(), nullable=False),
    )


def _by_message(name: str, column: str) -> None:
    op.create_table(
        name,
        sa.Column("message_id", mo.INTEGER(), primary_key=True, autoincrement=False),
        sa.Column(column, sa.LargeBinary(), nullable=False),
    )


def _by_text_id(name: str, key: str) -> None:
    op.create_table(
        name,
        sa.Column(key, sa.Text(), primary_key=True),
        sa.Column("text_hash", sa.Text(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
    )


# --- PostgreSQL: the shared layout (frozen; see the module docstring) ------------------------

_AGENT = "agent_id BIGINT DEFAULT philont_current_agent() NOT NULL, "
_REGISTRY = "FOREIGN KEY(agent_id) REFERENCES philont_agents (id)"
PARTITIONS = 16
PG_TABLES = (
    (
        "philont_message_codes",
        "message_id BIGINT NOT NULL, code BYTEA NOT NULL, PRIMARY KEY (agent_id, message_id)",
        True,
    ),
    (
        "philont_message_vectors",
        "message_id BIGINT NOT NULL, vector BYTEA NOT NULL, PRIMARY KEY (agent_id, message_id)",
        True,
    ),
    (
        "philont_note_vectors",
        "note_id TEXT NOT NULL, text_hash TEXT NOT NULL, vector BYTEA NOT NULL,"
        " PRIMARY KEY (agent_id, note_id)",
        False,
    ),
    (
        "philont_skill_vectors",
        "skill_id TEXT NOT NULL, text_hash TEXT NOT NULL, vector BYTEA NOT NULL,"
        " PRIMARY KEY (agent_id, skill_id)",
        False,
    ),
    (
        "philont_vector_index",
        "id BIGINT NOT NULL, model_id TEXT NOT NULL, dimension BIGINT NOT NULL,"
        " generation BIGINT DEFAULT 1 NOT NULL, created_at BIGINT NOT NULL,"
        " PRIMARY KEY (agent_id, id)",
        False,
    ),
)
"""(table, its columns and key after ``agent_id``, hash-partitioned by agent)."""


def pg_statements() -> list[str]:
    """Every statement of this revision on PostgreSQL, in order."""
    out: list[str] = []
    secured: list[str] = []
    for name, body, partitioned in PG_TABLES:
        tail = " PARTITION BY HASH (agent_id)" if partitioned else ""
        out.append(f"CREATE TABLE {name} ( {_AGENT}{body}, {_REGISTRY} ){tail}")
        secured.append(name)
        if partitioned:
            for r in range(PARTITIONS):
                out.append(
                    f"CREATE TABLE {name}_p{r:02d} PARTITION OF {name}"
                    f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {r})"
                )
                secured.append(f"{name}_p{r:02d}")
    for name in secured:
        out.append(f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY")
        out.append(f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY")
        out.append(
            f"CREATE POLICY philont_agent_rows ON {name}"
            " USING (agent_id = philont_agent()) WITH CHECK (agent_id = philont_agent())"
        )
    return out


def upgrade() -> None:
    if not mo.is_sqlite():
        conn = op.get_bind()
        for statement in pg_statements():
            conn.exec_driver_sql(statement)
        return
    if not mo.has_table("philont_vector_index"):
        _index()
    if not mo.has_table("philont_message_vectors"):
        _by_message("philont_message_vectors", "vector")
    if not mo.has_table("philont_message_codes"):
        _by_message("philont_message_codes", "code")
    if not mo.has_table("philont_note_vectors"):
        _by_text_id("philont_note_vectors", "note_id")
    if not mo.has_table("philont_skill_vectors"):
        _by_text_id("philont_skill_vectors", "skill_id")


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
