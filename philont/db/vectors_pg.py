"""Every PostgreSQL-specific statement of vector search: pgvector, where the server has it.

With the ``vector`` extension installed in the database, message vectors are also kept in
``philont_message_pgvectors`` (made once per database by the first backfill that starts an
index, not per agent): ``agent_id`` (the transaction's, as in every table of the shared
layout) and ``message_id`` as its key, ``embedding`` of type ``vector``, hash-partitioned by
agent like the messages, under the same row-level security. One HNSW index per dimension in
use (``vector_cosine_ops`` over ``embedding::vector(dim)``, partial on that dimension: agents
may use different models) is built on every partition.

The coarse pass is then pgvector's approximate search *then* the agent filter: HNSW cannot
lead with ``agent_id``, so the graph of a partition holds the rows of every agent hashed there
and pgvector filters the agent after walking it (with ``hnsw.iterative_scan`` on pgvector >=
0.8 it keeps walking until enough rows pass). When that returns fewer than the pool (a small
agent among big ones, or a filter that lets few rows through), the same statement runs exactly
over the agent's own rows (no cast, so no HNSW: the agent's partition, by its key). Rescoring
stays the portable exact one. Without the extension the portable path (philont.embed.search)
runs unchanged.

UNTESTED IN CI: the extension cannot be installed on our machines (no Debian package for our
PostgreSQL). The statements follow pgvector's documentation (README: "HNSW", "Filtering",
"Iterative Index Scans", FAQ "Can I store vectors with different dimensions in the same
column?"); only the detection and the path without it are tested here.
"""

from __future__ import annotations

from collections.abc import Sequence

from philont.db.backend import Raw
from philont.db.pg_layout import PGVECTOR_TABLE
from philont.db.queries.vectors import MESSAGE_CODES, MESSAGES
from philont.db.vectors import ExtensionVectors
from philont.log import get_logger
from philont.services.search.scoring import Filter

__all__ = ["PGVECTOR_TABLE", "PgVectors", "pgvector_version"]

log = get_logger(__name__)

HNSW_EF_SEARCH = 200
"""Candidates HNSW keeps while searching (pgvector's default is 40; the pool asks for more)."""
HNSW_EF_SEARCH_MAX = 1000
"""pgvector's upper bound for ``hnsw.ef_search``."""
PARTITIONS = 16
"""As the shared layout's partitioned tables (``philont.db.pg_layout.PARTITIONS``)."""


def pgvector_version(raw: Raw) -> str | None:
    """The installed ``vector`` extension's version in this database, or None."""
    rows = raw.rows("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    return str(rows[0][0]) if rows else None


def _vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


def _table_statements() -> list[str]:
    """The table, its partitions and their row-level security (once per database)."""
    t = PGVECTOR_TABLE
    out = [
        f"CREATE TABLE {t} (agent_id BIGINT DEFAULT philont_current_agent() NOT NULL,"
        " message_id BIGINT NOT NULL, embedding vector NOT NULL,"
        " PRIMARY KEY (agent_id, message_id),"
        " FOREIGN KEY (agent_id) REFERENCES philont_agents (id)) PARTITION BY HASH (agent_id)"
    ]
    names = [t]
    for r in range(PARTITIONS):
        out.append(
            f"CREATE TABLE {t}_p{r:02d} PARTITION OF {t}"
            f" FOR VALUES WITH (MODULUS {PARTITIONS}, REMAINDER {r})"
        )
        names.append(f"{t}_p{r:02d}")
    for name in names:
        out += [
            f"ALTER TABLE {name} ENABLE ROW LEVEL SECURITY",
            f"ALTER TABLE {name} FORCE ROW LEVEL SECURITY",
            f"CREATE POLICY philont_agent_rows ON {name} USING (agent_id = philont_agent())"
            " WITH CHECK (agent_id = philont_agent())",
        ]
    return out


def _index_statement(dimension: int) -> str:
    d = int(dimension)
    return (
        f"CREATE INDEX IF NOT EXISTS {PGVECTOR_TABLE}_hnsw_{d} ON {PGVECTOR_TABLE}"
        f" USING hnsw ((embedding::vector({d})) vector_cosine_ops)"
        f" WHERE vector_dims(embedding) = {d}"
    )


def _exists(raw: Raw) -> bool:
    return bool(raw.rows(f"SELECT to_regclass('{PGVECTOR_TABLE}') IS NOT NULL")[0][0])


class PgVectors(ExtensionVectors):
    """pgvector's HNSW search where the extension and the agent's copy exist, else the
    portable path."""

    extension = "pgvector"

    def __init__(self) -> None:
        self._reason = "not checked yet"
        self._version: tuple[int, ...] = ()

    def available(self, raw: Raw) -> bool:
        version = pgvector_version(raw)
        if version is None:
            self._reason = "the pgvector extension is not installed in this database"
            return False
        self._version = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
        if not _exists(raw) or not self._complete(raw):
            self._reason = "pgvector is installed; this agent's index was built before it (rebuild)"
            return False
        self._reason = None
        return True

    def _complete(self, raw: Raw) -> bool:
        """Whether the agent's pgvector copy spans its codes (both written in one transaction
        by every backfill once the table exists): first and last ids, by the agents' keys."""
        ours = raw.rows(
            f"SELECT min(message_id), max(message_id) FROM {MESSAGE_CODES}{raw.where()}"
        )
        copy = raw.rows(
            f"SELECT min(message_id), max(message_id) FROM {PGVECTOR_TABLE}{raw.where()}"
        )
        return tuple(ours[0]) == tuple(copy[0])

    def prepare(self, raw: Raw, dimension: int) -> None:
        """The table (once per database) and the index of this dimension; the agent's old
        copy is dropped. Refused DDL (a role without CREATE) leaves the portable path."""
        if pgvector_version(raw) is None:
            return
        raw.run("SAVEPOINT philont_pgvector")
        try:
            if not _exists(raw):
                for statement in _table_statements():
                    raw.run(statement)
            raw.run(_index_statement(dimension))
        except Exception as exc:  # privileges, a concurrent creator: keep the portable path
            raw.run("ROLLBACK TO SAVEPOINT philont_pgvector")
            log.warning("vectors.pgvector_setup_failed", error=str(exc))
            return
        raw.run("RELEASE SAVEPOINT philont_pgvector")
        raw.run(f"DELETE FROM {PGVECTOR_TABLE}{raw.where()}")

    def put_messages(self, raw: Raw, rows: Sequence[tuple[int, Sequence[float]]]) -> None:
        if not rows or pgvector_version(raw) is None or not _exists(raw):
            return
        raw.many(
            f"INSERT INTO {PGVECTOR_TABLE} (message_id, embedding) VALUES (%s, %s::vector)"
            f" ON CONFLICT ({raw.key('message_id')}) DO NOTHING",
            [(i, _vector_literal(v)) for i, v in rows],
        )

    def nearest_messages(
        self, raw: Raw, query: Sequence[float], query_code: bytes, flt: Filter, pool: int
    ) -> list[int]:
        d = len(query)
        raw.run(f"SET LOCAL hnsw.ef_search = {min(HNSW_EF_SEARCH_MAX, max(HNSW_EF_SEARCH, pool))}")
        if self._version >= (0, 8):
            # keep walking the graph until enough rows pass the agent's (and any) filter
            raw.run("SET LOCAL hnsw.iterative_scan = relaxed_order")
        ids = self._nearest(raw, query, flt, pool, f"p.embedding::vector({d})")
        if len(ids) < pool:  # approximate-then-filter came back short: exact, the agent's rows
            ids = self._nearest(raw, query, flt, pool, "p.embedding")
        return ids

    def _nearest(
        self, raw: Raw, query: Sequence[float], flt: Filter, pool: int, column: str
    ) -> list[int]:
        d = len(query)
        join = (
            f" JOIN {MESSAGES} AS b ON b.id = p.message_id{raw.same_agent('b', 'p')}"
            if flt.sql
            else ""
        )
        rows = raw.rows(
            f"SELECT p.message_id FROM {PGVECTOR_TABLE} AS p{join}"
            f"{raw.where(f'vector_dims(p.embedding) = {d}', flt.sql, alias='p')}"
            f" ORDER BY {column} <=> %s::vector({d}) LIMIT %s",
            [*flt.params, _vector_literal(query), pool],
        )
        return [int(r[0]) for r in rows]
