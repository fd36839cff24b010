"""An import's counts add up, against the rows actually in the target afterwards: for generated
export files (any subset of a store's rows, the bootstrap rows and ``memory_meta`` in or out)
imported into a new database, or merged into one that already holds part of them (its own
bootstrap rows, or the file's, or another subset), every row of the file is counted exactly
once under a named outcome, and the target gained exactly the rows counted ``inserted``."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from philont import migrate
from philont.db.schema import metadata
from philont.store import Store
from philont.transfer import export, export_tables, import_
from philont.transfer.format import BOOTSTRAP_ROWS, OUTCOMES
from philont.transfer.merge import same_row_sql

# Rows a subset may leave out without leaving a child without its parent (a message's session
# stays: the sessions are always kept).
OPTIONAL = {"memory_raw_messages", "memory_notes", "memory_facts", "memory_raw_sessions"}


class Source:
    """A store's export, split into lines: header, rows, trailer."""

    def __init__(self, path: Path) -> None:
        lines = path.read_text(encoding="utf-8").splitlines()
        self.header = json.loads(lines[0])
        self.rows: list[dict[str, Any]] = [json.loads(line) for line in lines[1:-1]]

    def write(self, path: Path, keep: set[int]) -> Path:
        """A valid export file of the rows whose index is in ``keep`` (the trailer counted)."""
        rows = [r for i, r in enumerate(self.rows) if i in keep]
        counts = dict.fromkeys(self.header["tables"], 0)
        for r in rows:
            counts[r["table"]] += 1
        lines = [self.header, *rows, {"end": True, "rows": counts}]
        path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
        return path

    def optional(self, i: int) -> bool:
        row = self.rows[i]
        key = _key(row["table"], row["row"])
        if row["table"] == "memory_raw_sessions":  # a session without its messages only
            return (row["table"], key) in BOOTSTRAP_ROWS or row["row"]["id"] == "empty"
        return row["table"] in OPTIONAL | {"memory_meta", "memory_pursuits"}


def _key(table: str, row: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(row[c.name] for c in metadata.tables[table].primary_key.columns)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> tuple[Source, Path]:
    """A source store's export, and a new database (its own bootstrap rows, made at another
    moment than the source's) to copy as a target."""
    base = tmp_path_factory.mktemp("counts")
    template = base / "new.sqlite"
    migrate.upgrade(template)
    source = base / "source.sqlite"
    with Store.open(source) as store, store.begin() as mem:
        mem.timeline.start_session("laptop")
        mem.timeline.start_session("empty")
        for i in range(6):
            mem.timeline.append(f"message {i}", session_id="laptop" if i % 2 else "global")
        for i in range(3):
            mem.notes.add(f"note {i}", id=f"note-{i}")
        for i in range(3):
            mem.facts.store("user", f"k{i}", i)
    out = base / "source.jsonl"
    export(source, out)
    return Source(out), template


def _counts(path: Path) -> dict[str, int]:
    with closing(sqlite3.connect(str(path))) as conn:
        return {
            t.name: conn.execute(f'SELECT count(*) FROM "{t.name}"').fetchone()[0]
            for t in export_tables()
        }


def _holds(path: Path, table: str, row: dict[str, Any], *, exactly: bool) -> bool:
    """Whether the target holds the row's key (``exactly``: the row, every column equal)."""
    pk = [c.name for c in metadata.tables[table].primary_key.columns]
    sql, params = same_row_sql(
        table, pk, row if exactly else {c: row[c] for c in pk}, mark="?", null_safe_eq="IS"
    )
    with closing(sqlite3.connect(str(path))) as conn:
        return conn.execute(sql, params).fetchone() is not None


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), before=st.sampled_from(["new", "refuse", "merge"]))
def test_every_row_of_the_file_is_counted_once_and_the_target_gained_the_inserted(
    data: st.DataObject, before: str, world: tuple[Source, Path], tmp_path_factory: Any
) -> None:
    source, template = world
    base = tmp_path_factory.mktemp("case")
    every = set(range(len(source.rows)))
    optional = sorted(i for i in every if source.optional(i))
    subset = st.sets(st.sampled_from(optional)).map(lambda out: every - out)
    target = base / "target.sqlite"
    shutil.copyfile(template, target)
    if before != "new":  # the target already holds part of the rows (maybe all, maybe none)
        import_(target, source.write(base / "part.jsonl", data.draw(subset)), mode=before)  # type: ignore[arg-type]
    keep = data.draw(subset)
    file = source.write(base / "file.jsonl", keep)
    mode = "refuse" if before == "new" and data.draw(st.booleans()) else "merge"
    held = _counts(target)

    report = import_(target, file, mode=mode)

    after = _counts(target)
    rows = [source.rows[i] for i in sorted(keep)]
    in_file: dict[str, int] = {}
    for r in rows:
        in_file[r["table"]] = in_file.get(r["table"], 0) + 1
    assert report.file_rows == in_file
    for table in {t.name for t in export_tables()}:
        outcomes = {o: getattr(report, o).get(table, 0) for o in OUTCOMES}
        assert sum(outcomes.values()) == in_file.get(table, 0), (table, outcomes)
        assert after[table] == held[table] + outcomes["inserted"], (table, outcomes)
    totals = report.totals()
    assert totals["file_rows"] == len(rows) == sum(totals[o] for o in OUTCOMES)
    assert report.not_imported == ({"memory_meta": 1} if "memory_meta" in in_file else {})
    assert all(_holds(target, r["table"], r["row"], exactly=False) for r in rows)  # none dropped
    # the file's version is there for each row but those kept as the target had them
    differ: dict[str, int] = {}
    for r in rows:
        if r["table"] != "memory_meta" and not _holds(target, r["table"], r["row"], exactly=True):
            differ[r["table"]] = differ.get(r["table"], 0) + 1
    assert differ == report.kept
    if mode == "refuse":
        bootstrap = sum(
            1 for r in rows if (r["table"], _key(r["table"], r["row"])) in BOOTSTRAP_ROWS
        )
        assert totals["replaced"] == bootstrap and totals["skipped"] == totals["kept"] == 0
    event(f"before={before} mode={mode}")
    for o in OUTCOMES:
        event(f"{o}: {'some' if totals[o] else 'none'}")
