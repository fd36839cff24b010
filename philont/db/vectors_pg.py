"""Every PostgreSQL-specific statement of vector search: pgvector, where the server has it.

With the ``vector`` extension installed in the database, messages also get a pgvector column
in ``philont_message_pgvectors`` (made when an index is started: its dimension is the model's)
with an HNSW index (``vector_cosine_ops``), and the coarse pass is pgvector's approximate
nearest-neighbour search (``ORDER BY embedding <=> $1``); rescoring stays the portable exact
one. Without the extension, the portable path (philont.embed.search) runs unchanged.

UNTESTED IN CI: the extension cannot be installed on our machines (no Debian package for our
PostgreSQL). The statements follow pgvector's documentation (README: "HNSW", "Filtering",
"Iterative Index Scans"); only the detection and the path without it are tested here.
The layout is today's (one schema per agent, so a table holds one agent's rows); with one
shared schema keyed by ``agent_id`` the table gains that column and every statement its filter.
"""

from __future__ import annotations

from collections.abc import Sequence

from philont.db.backend import Raw
from philont.db.queries.vectors import MESSAGES
from philont.db.vectors import VectorEngine
from philont.services.search.scoring import Filter

__all__ = ["PGVECTOR_TABLE", "PgVectors", "pgvector_version"]

PGVECTOR_TABLE = "philont_message_pgvectors"
HNSW_EF_SEARCH = 200
"""Candidates HNSW keeps while searching (pgvector's default is 40; the pool asks for more)."""


def pgvector_version(raw: Raw) -> str | None:
    """The installed ``vector`` extension's version in this database, or None."""
    rows = raw.rows("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    return str(rows[0][0]) if rows else None


def _vector_literal(vector: Sequence[float]) -> str:
    return "[" + ",".join(repr(float(x)) for x in vector) + "]"


class PgVectors(VectorEngine):
    """pgvector's HNSW search where the extension and our table exist, else the portable path."""

    def __init__(self) -> None:
        self._reason: str | None = "not checked yet"
        self._version: tuple[int, ...] = ()

    @property
    def name(self) -> str:  # type: ignore[override]
        return "pgvector" if self._reason is None else "python"

    def reason(self) -> str | None:
        return self._reason

    def available(self, raw: Raw) -> bool:
        version = pgvector_version(raw)
        if version is None:
            self._reason = "the pgvector extension is not installed in this database"
            return False
        self._version = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
        if not raw.rows(f"SELECT to_regclass('{PGVECTOR_TABLE}') IS NOT NULL")[0][0]:
            self._reason = "pgvector is installed; this index was built before it (rebuild)"
            return False
        self._reason = None
        return True

    def prepare(self, raw: Raw, dimension: int) -> None:
        if pgvector_version(raw) is None:
            return
        raw.run(f"DROP TABLE IF EXISTS {PGVECTOR_TABLE}")
        raw.run(
            f"CREATE TABLE {PGVECTOR_TABLE} (message_id BIGINT PRIMARY KEY,"
            f" embedding vector({int(dimension)}) NOT NULL)"
        )
        raw.run(
            f"CREATE INDEX {PGVECTOR_TABLE}_hnsw ON {PGVECTOR_TABLE}"
            " USING hnsw (embedding vector_cosine_ops)"
        )

    def put_messages(self, raw: Raw, rows: Sequence[tuple[int, Sequence[float]]]) -> None:
        if not rows or not self.available(raw):
            return
        raw.many(
            f"INSERT INTO {PGVECTOR_TABLE} (message_id, embedding) VALUES (%s, %s::vector)"
            " ON CONFLICT (message_id) DO NOTHING",
            [(i, _vector_literal(v)) for i, v in rows],
        )

    def nearest_messages(
        self, raw: Raw, query: Sequence[float], query_code: bytes, flt: Filter, pool: int
    ) -> list[int]:
        literal = _vector_literal(query)
        raw.run(f"SET LOCAL hnsw.ef_search = {max(HNSW_EF_SEARCH, pool)}")
        if flt.sql and self._version >= (0, 8):
            # pgvector >= 0.8: keep scanning the graph until enough rows pass the filter
            raw.run("SET LOCAL hnsw.iterative_scan = relaxed_order")
        join = f" JOIN {MESSAGES} AS b ON b.id = p.message_id" if flt.sql else ""
        where = f" WHERE {flt.sql}" if flt.sql else ""
        rows = raw.rows(
            f"SELECT p.message_id FROM {PGVECTOR_TABLE} AS p{join}{where}"
            " ORDER BY p.embedding <=> %s::vector LIMIT %s",
            [*flt.params, literal, pool],
        )
        return [int(r[0]) for r in rows]
