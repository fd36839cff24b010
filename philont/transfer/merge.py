"""What an import does with the rows the target already holds, on both backends.

Refuse mode: the target must hold nothing but its bootstrap rows (:func:`refuse_unless_empty`),
which the file's versions replace. Merge mode: a row whose key the target already holds is
skipped only when it is the same row; a different row under that key refuses the whole import
(nothing is dropped). :func:`place_row` is the one rule for every row of the file;
:meth:`Incoming.place_rows` takes every row of the file through it, on either backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import IO, Any, NamedTuple, Protocol

from sqlalchemy import Table

from philont.db.pg_layout import AGENT_COLUMN
from philont.db.schema import metadata
from philont.errors import ConflictError
from philont.transfer.format import (
    BOOTSTRAP_ROWS,
    ROWID_KEY,
    ImportReport,
    Mode,
    Outcome,
    Progress,
    export_tables,
    ident,
    report_empty,
    reported,
)
from philont.transfer.reader import Reader, Reopen

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


class ImportFactConflictError(ConflictError):
    """Merging would leave a fact's key with two current values: the file's current version of
    a ``(namespace, key)`` and a different current version the target holds (the original's
    defect Q-S1: which one a read returns is then arbitrary); nothing was imported."""

    code = "import_merge_conflict"

    def __init__(self, found: list[tuple[int, str, str, str]], total: int) -> None:
        shown = "; ".join(
            f"line {n}: {ns}.{key} (the database's current version is {theirs})"
            for n, ns, key, theirs in found
        )
        super().__init__(
            f"{total} current fact version(s) of the file have a key whose current version in "
            f"the target is another ({shown}); merging would leave each such key with two "
            "current values, so nothing was imported: forget one of the two versions first, "
            "or import the file into a new database (or under a new agent name)",
            conflicts=[
                {"line_number": n, "namespace": ns, "key": key, "current_id": theirs}
                for n, ns, key, theirs in found
            ],
        )
        self.found = found
        self.line_number = found[0][0] if found else None


class _Cursor(Protocol):
    def fetchone(self) -> Any: ...

    def fetchall(self) -> Any: ...


class Connection(Protocol):
    """What the SQLite and the PostgreSQL loaders share: ``execute`` (marks ``?`` or ``%s``)."""

    def execute(self, sql: Any, params: Any = ..., /) -> _Cursor: ...


def refuse_unless_empty(conn: Connection, mark: str = "?", *, agent_id: int | None = None) -> None:
    """Refuse mode's check: :class:`ConflictError` unless the target (the agent ``agent_id`` of
    a PostgreSQL database) holds nothing but its bootstrap rows."""
    for table in export_tables():
        if table.name == "memory_meta":
            continue
        pk = [c.name for c in table.primary_key.columns]
        conditions: list[str] = []
        params: list[Any] = []
        if agent_id is not None:
            conditions.append(f"{AGENT_COLUMN} = {mark}")
            params.append(agent_id)
        for name, key in BOOTSTRAP_ROWS:
            if name == table.name:
                conditions.append("NOT (" + " AND ".join(f"{ident(c)} = {mark}" for c in pk) + ")")
                params.extend(key)
        where = " WHERE " + " AND ".join(conditions) if conditions else ""
        row = conn.execute(f"SELECT count(*) FROM {ident(table.name)}{where}", params).fetchone()
        n = row[0] if row else 0
        if n:
            holder, instead = (
                ("the target", "into a new database")
                if agent_id is None
                else ("the agent", "under a new name")
            )
            raise ConflictError(
                f"{holder} already holds memory ({table.name}: {n} row(s)); import with "
                f"--merge (mode='merge' from Python) to add to it, or {instead}",
                table=table.name,
            )


class FileRow(NamedTuple):
    """A file row as the loaders insert it: its table's key columns, its key, its values."""

    pk: list[str]
    key: tuple[Any, ...]
    values: dict[str, Any]


def file_row(name: str, row: dict[str, Any]) -> FileRow:
    pk = [c.name for c in metadata.tables[name].primary_key.columns]
    return FileRow(pk, tuple(row[c] for c in pk), {k: v for k, v in row.items() if k != ROWID_KEY})


def place_row(
    name: str,
    key: tuple[Any, ...],
    number: int,
    mode: Mode,
    conflicts: MergeConflicts,
    *,
    insert: Callable[[], bool],
    replace: Callable[[], object],
    same: Callable[[], bool],
) -> Outcome | None:
    """The one rule for what an import does with the file row on line ``number``, on both
    backends: its :data:`~philont.transfer.format.Outcome`, or None for a merge conflict
    (recorded in ``conflicts``: the whole import fails). A ``memory_meta`` row is never
    written; else ``insert()`` adds the row unless its key is taken (False). A taken key is,
    in refuse mode, a bootstrap row, which the file's version replaces (``replace()``); in
    merge mode the same row (``same()``) is skipped, a bootstrap row in another version kept
    as the target has it, and any other row a conflict."""
    if name == "memory_meta":
        return "not_imported"
    if insert():
        return "inserted"
    bootstrap = (name, key) in BOOTSTRAP_ROWS
    if mode == "refuse" and bootstrap:
        replace()
        return "replaced"
    if same():
        return "skipped"
    if bootstrap:
        return "kept"
    conflicts.add(name, key, number)
    return None


def count_row(
    report: ImportReport, name: str, key: tuple[Any, ...], outcome: Outcome | None
) -> None:
    """Count a row :func:`place_row` placed in the report (a conflict is counted by its
    :class:`MergeConflicts`)."""
    if outcome is None:
        return
    report.count(name, outcome)
    if outcome == "replaced":
        report.replaced_ids.append(f"{name}:{':'.join(map(str, key))}")


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


class CurrentFacts:
    """Merge mode's check of facts (one current version per key, on both backends): each of
    the file's current fact versions is looked up by its key in the target; a current version
    there that is not one of the file's own rows (the file may repeat a row the target holds,
    and a legacy file may hold two current versions of a key, as its source did) is a
    conflict, raised by :meth:`raise_if_any` once the whole file is seen."""

    def __init__(self, conn: Connection, mark: str = "?", *, agent_id: int | None = None):
        self.conn = conn
        where = f"{AGENT_COLUMN} = {mark} AND " if agent_id is not None else ""
        self.sql = (
            f"SELECT id FROM memory_facts WHERE {where}namespace = {mark} AND key = {mark}"
            " AND superseded_by IS NULL AND forgotten_at IS NULL"
        )
        self.scope: tuple[Any, ...] = () if agent_id is None else (agent_id,)
        self.ours: set[str] = set()
        self.found: list[tuple[int, str, str, list[str]]] = []

    def see(self, number: int, name: str, row: dict[str, Any]) -> None:
        """Before the file row on line ``number`` is inserted."""
        if name != "memory_facts":
            return
        self.ours.add(row["id"])
        if row.get("superseded_by") is not None or row.get("forgotten_at") is not None:
            return
        params = (*self.scope, row["namespace"], row["key"])
        current = [r[0] for r in self.conn.execute(self.sql, params).fetchall()]
        if any(i != row["id"] for i in current):
            self.found.append((number, row["namespace"], row["key"], current))

    def raise_if_any(self) -> None:
        conflicts = []
        for number, ns, key, current in self.found:
            theirs = [i for i in current if i not in self.ours]
            if theirs:
                conflicts.append((number, ns, key, theirs[0]))
        if conflicts:
            raise ImportFactConflictError(conflicts[:SHOWN], len(conflicts))


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


PlaceRow = Callable[[MergeConflicts, int, str, dict[str, Any]], None]
"""A backend's placing of the file row ``(conflicts, line number, table, row)`` in its target:
:func:`place_row` with the backend's statements, the outcome counted in the report."""


@dataclass(frozen=True)
class Incoming:
    """What an import carries from its check of the file into the target's transaction, the
    same for both backends: how to read the file again, the tables it may hold, the mode, the
    rows per table the check counted, the report the load fills in, whom to tell the progress."""

    reopen: Reopen
    known: dict[str, Table]
    mode: Mode
    totals: dict[str, int]
    report: ImportReport
    progress: Progress | None

    def place_rows(
        self,
        conn: Connection,
        fh: IO[str],
        place: PlaceRow,
        mark: str = "?",
        *,
        agent_id: int | None = None,
    ) -> dict[str, int]:
        """Every row of the file read again from ``fh`` through ``place``, into the target
        ``conn`` (of the agent ``agent_id``, on PostgreSQL), ``progress`` told: in refuse mode
        once the target is found empty (:func:`refuse_unless_empty`), in merge mode each current
        fact seen by :class:`CurrentFacts` first; then the merge's conflicts, raised once the
        whole file is seen (inside the transaction: the rollback undoes every row), and
        ``progress(table, 0, 0)`` for the file's empty tables. Returns the file's id high-water
        marks (its header's ``sequences``)."""
        if self.mode == "refuse":
            refuse_unless_empty(conn, mark, agent_id=agent_id)
        facts = CurrentFacts(conn, mark, agent_id=agent_id)
        reader = Reader(fh, self.known)
        conflicts = MergeConflicts()
        for number, name, row in reported(reader, self.totals, self.progress):
            if self.mode == "merge":
                facts.see(number, name, row)
            place(conflicts, number, name, row)
        conflicts.raise_if_any()
        facts.raise_if_any()
        assert reader.header is not None  # validated before
        report_empty(reader.header.tables, self.totals, self.progress)
        return reader.header.sequences
