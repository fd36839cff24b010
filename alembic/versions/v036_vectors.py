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

No foreign keys: Philont deletes notes and skills with plain SQL; a vector whose row is gone
is ignored by search and removed by the next backfill. On PostgreSQL the same tables hold
``BYTEA``; a pgvector column and its HNSW index are made at run time, only where the server
has the extension (their dimension is the model's).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from philont import migration_ops as mo

revision = "v036"
down_revision = "v035"
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


def upgrade() -> None:
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
