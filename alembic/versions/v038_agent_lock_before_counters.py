"""Our own revision: on PostgreSQL an agent's id counters are taken after the agent's lock
(schema_version stays 31; on SQLite a no-op).

``philont_next_id(table)`` (revision v036) locked the agent's counter row of the table, and
only at the end of the INSERT did its foreign key take the agent's registry row (KEY SHARE).
An import holds the registry row (``FOR UPDATE``: the agent's inserts wait) and moves the
counters at its end: a write of the agent during an import held a counter while it waited for
the registry row, the import then waited for that counter, and PostgreSQL ended one of them
(SQLSTATE 40P01), the import when the write had waited longer than ``deadlock_timeout``: it was
rolled back whole. The function now first takes the agent's advisory lock, shared
(``hashtextextended('philont.agent.' || agent, 0)``); an import and an agent's delete take it
alone before anything else, so a write waits for them holding no counter. An advisory lock,
not the registry row: ``FOR KEY SHARE`` would need UPDATE on the registry.

The statement is a frozen copy of the function in ``philont.db.pg_layout.statements()`` (the
parity test compares the catalogs).

Forward-only: ``downgrade()`` raises NotImplementedError (philont schema history is forward-only).
"""

from __future__ import annotations

from alembic import op

from philont import migration_ops as mo

revision = "v038"
down_revision = "v037"
branch_labels = None
depends_on = None

NEXT_ID = (
    "CREATE OR REPLACE FUNCTION philont_next_id(counter text) RETURNS bigint LANGUAGE sql"
    " VOLATILE SET search_path FROM CURRENT AS $$ SELECT pg_advisory_xact_lock_shared("
    "hashtextextended('philont.agent.' || philont_current_agent(), 0)); INSERT INTO "
    "philont_agent_ids AS c (agent_id, name, last_value) VALUES (philont_current_agent(), "
    "counter, 1) ON CONFLICT (agent_id, name) DO UPDATE SET last_value = c.last_value + 1 "
    "RETURNING c.last_value $$"
)


def upgrade() -> None:
    if mo.is_sqlite():
        return
    op.get_bind().exec_driver_sql(NEXT_ID)


def downgrade() -> None:
    """Not supported: philont schema history is forward-only."""
    raise NotImplementedError("philont schema history is forward-only")
