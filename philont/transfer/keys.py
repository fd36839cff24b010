"""Unique keys inside one import file: a row whose key an earlier line already holds is refused,
naming both lines (the database would keep one of them, silently or with a vague error)."""

from __future__ import annotations

import functools
import json
from types import TracebackType
from typing import Any

from sqlalchemy import UniqueConstraint

from philont.db import connections
from philont.db.schema import metadata
from philont.transfer.format import ROWID_KEY, ROWID_TABLES, ImportFormatError

BATCH = 1000


@functools.cache
def unique_keys(table: str) -> tuple[tuple[str, ...], ...]:
    """Each set of columns whose values must be unique in ``table``: the primary key, unique
    constraints and columns, and the kept rowid of the tables full-text indexes key on."""
    t = metadata.tables[table]
    keys = [tuple(c.name for c in t.primary_key.columns)]
    keys += [
        tuple(c.name for c in con.columns)
        for con in t.constraints
        if isinstance(con, UniqueConstraint)
    ]
    keys += [(c.name,) for c in t.c if c.unique]
    if table in ROWID_TABLES:
        keys.append((ROWID_KEY,))
    return tuple(dict.fromkeys(keys))


class SeenKeys:
    """Every unique key of the file so far, kept in a private temporary SQLite database (not in
    memory: a file of millions of rows has millions of keys). Checked in batches; a batch with
    a repeated key is read again to name the first repeat and the line it repeats."""

    def __init__(self) -> None:
        self._db = connections.connect("")  # a temporary file, deleted when closed
        self._db.execute(
            "CREATE TABLE seen (what TEXT, key TEXT, line INTEGER, PRIMARY KEY (what, key))"
            " WITHOUT ROWID"
        )
        self._batch: list[tuple[str, str, int]] = []

    def add(self, number: int, table: str, row: dict[str, Any]) -> None:
        for columns in unique_keys(table):
            values = [row.get(c) for c in columns]
            if any(v is None for v in values):
                continue  # NULLs are never equal to each other in a unique constraint
            what = f"{table}({', '.join(columns)})"
            self._batch.append((what, json.dumps(values, ensure_ascii=False), number))
        if len(self._batch) >= BATCH:
            self.flush()

    def flush(self) -> None:
        batch, self._batch = self._batch, []
        if not batch:
            return
        before = self._db.total_changes
        with self._db:
            self._db.executemany("INSERT OR IGNORE INTO seen VALUES (?, ?, ?)", batch)
        if self._db.total_changes - before == len(batch):
            return
        for what, key, number in batch:
            (first,) = self._db.execute(
                "SELECT line FROM seen WHERE what = ? AND key = ?", (what, key)
            ).fetchone()
            if first != number:
                raise ImportFormatError(
                    number, f"{what} {key} is already on line {first}: one row per key"
                )

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SeenKeys:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
