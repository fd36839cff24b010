"""Merge mode's rule for a row whose key the target already holds: skipped only when it is the
same row; a different row under that key refuses the whole import (nothing is dropped)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from philont.errors import ConflictError
from philont.transfer.format import BOOTSTRAP_ROWS, ROWID_KEY, ident

SHOWN = 5  # conflicts named in the message (all are counted)


class ImportMergeConflictError(ConflictError):
    """Merging would drop rows: the file holds rows whose primary key the target already uses
    for a different row (autoincrement ids of two databases collide); nothing was imported."""

    code = "import_merge_conflict"

    def __init__(self, counts: dict[str, int], first: list[tuple[str, Any, int]]) -> None:
        total = sum(counts.values())
        per_table = ", ".join(f"{t}: {n}" for t, n in counts.items())
        shown = "; ".join(f"line {n}: {t} id {key!r}" for t, key, n in first)
        super().__init__(
            f"{total} row(s) of the file have the id of a different row in the target "
            f"({per_table}; {shown}); merging would drop them, so nothing was imported: "
            "import the file into a new database (or under a new agent name) instead",
            counts=counts,
            conflicts=[{"table": t, "id": key, "line_number": n} for t, key, n in first],
        )
        self.counts = counts
        self.first = first
        self.line_number = first[0][2] if first else None


def keeps_target(table: str, key: tuple[Any, ...]) -> bool:
    """Rows every database carries (its schema's ``memory_meta``, the bootstrap rows): a merge
    keeps the target's own versions of them."""
    return table == "memory_meta" or (table, key) in BOOTSTRAP_ROWS


def same_row_sql(
    table: str, pk: list[str], row: dict[str, Any], *, mark: str, null_safe_eq: str, where: str = ""
) -> tuple[str, tuple[Any, ...]]:
    """A query that finds the target's row under the file row's key only when every column of
    the file row is equal to it (the database compares, with its own column types)."""
    values = {k: v for k, v in row.items() if k != ROWID_KEY}
    checks = [f"{ident(c)} = {mark}" for c in pk]
    checks += [f"{ident(c)} {null_safe_eq} {mark}" for c in values if c not in pk]
    sql = f"SELECT 1 FROM {ident(table)} WHERE {where}{' AND '.join(checks)}"
    return sql, (*(row[c] for c in pk), *(v for c, v in values.items() if c not in pk))


@dataclass
class MergeConflicts:
    """The file's rows that differ from the target's row under the same key."""

    counts: dict[str, int] = field(default_factory=dict)
    first: list[tuple[str, Any, int]] = field(default_factory=list)

    def add(self, table: str, key: tuple[Any, ...], line_number: int) -> None:
        self.counts[table] = self.counts.get(table, 0) + 1
        if len(self.first) < SHOWN:
            self.first.append((table, key[0] if len(key) == 1 else key, line_number))

    def raise_if_any(self) -> None:
        if self.counts:
            raise ImportMergeConflictError(self.counts, self.first)
