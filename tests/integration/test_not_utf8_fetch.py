"""Every fetch of a philont SQLite connection reads stored text that is not UTF-8 with U+FFFD
(:class:`philont.db.cursors.Cursor`): ``fetchone``, ``fetchmany`` and ``fetchall`` return
every row, in order, wherever the bad rows are, run nothing twice (an ``UPDATE ... RETURNING``
applies once), and leave the connection decoding as sqlite3 does."""

from __future__ import annotations

import sqlite3
import uuid
from contextlib import closing
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from philont.db.engine import create_engine

TEXTS = st.one_of(st.text(max_size=5), st.binary(max_size=5))
"""A stored value: text, or bytes stored as TEXT (not UTF-8 when they do not decode)."""


def _read(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(TEXTS, max_size=12), size=st.integers(1, 5))
def test_every_fetch_reads_every_row_with_replacement(
    tmp_path: Path, values: list[str | bytes], size: int
) -> None:
    path = tmp_path / f"{uuid.uuid4().hex}.sqlite"
    engine = create_engine(path)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE t (n INTEGER PRIMARY KEY, v TEXT)"))
            dbapi = conn.connection.dbapi_connection
            assert dbapi is not None
            dbapi.executemany("INSERT INTO t VALUES (?, CAST(? AS TEXT))", list(enumerate(values)))
        expected = [(n, _read(v)) for n, v in enumerate(values)]
        with engine.begin() as conn:
            dbapi = conn.connection.dbapi_connection
            assert dbapi is not None
            query = "SELECT n, v FROM t ORDER BY n"
            assert dbapi.cursor().execute(query).fetchall() == expected
            cur = dbapi.cursor().execute(query)
            batches = []
            while batch := cur.fetchmany(size):
                assert len(batch) <= size
                batches.extend(batch)
            assert batches == expected
            cur = dbapi.cursor().execute(query)
            assert [cur.fetchone() for _ in values] + [cur.fetchone()] == [*expected, None]
            assert conn.execute(text(query)).all() == expected  # SQLAlchemy's own fetch
            returned = dbapi.cursor().execute("UPDATE t SET n = n + 100 RETURNING v").fetchall()
            assert sorted(returned) == sorted([(v,) for _, v in expected])
            assert dbapi.execute("SELECT min(n) FROM t").fetchone()[0] in (None, 100)
            assert dbapi.text_factory is str
    finally:
        engine.dispose()
    with closing(sqlite3.connect(path)) as raw:  # never rewritten
        raw.text_factory = bytes
        kept = [v for (v,) in raw.execute("SELECT v FROM t ORDER BY n")]
    assert kept == [v if isinstance(v, bytes) else v.encode() for v in values]
