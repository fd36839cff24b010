"""An import's counts add up, against the rows actually in the target afterwards: for generated
export files (any subset of a store's rows, the bootstrap rows and ``memory_meta`` in or out)
imported into a new database, or merged into one that already holds part of them (its own
bootstrap rows, or the file's, or another subset), every row of the file is counted exactly
once under a named outcome, and the target gained exactly the rows counted ``inserted``."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont import agents, migrate
from philont.db.schema import metadata
from philont.store import Store
from philont.transfer import ImportReport, export, export_tables, import_
from philont.transfer.format import BOOTSTRAP_ROWS, OUTCOMES, ROWID_KEY, Mode

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


class Target:
    """Where a case imports: a copy of a new SQLite file, or a new PostgreSQL agent; looked at
    through its own export (the rows it holds, as a file holds them)."""

    def __init__(self, path: Path | None, url: URL | None = None, agent: str | None = None):
        self.db: Path | URL = path if path is not None else url  # type: ignore[assignment]
        self.agent = agent

    def import_(self, file: Path, mode: Mode) -> ImportReport:
        return import_(self.db, file, mode=mode, agent=self.agent)

    def rows(self) -> dict[str, list[dict[str, Any]]]:
        buf = io.StringIO()
        export(self.db, buf, agent=self.agent)
        held: dict[str, list[dict[str, Any]]] = {t.name: [] for t in export_tables()}
        for line in buf.getvalue().splitlines()[1:-1]:
            obj = json.loads(line)
            held[obj["table"]].append(obj["row"])
        return held


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k != ROWID_KEY} == {
        k: v for k, v in b.items() if k != ROWID_KEY
    }


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def new_target(
    request: pytest.FixtureRequest, world: tuple[Source, Path]
) -> Callable[[Path], Target]:
    """A factory of new targets (each holding its own bootstrap rows only)."""
    if request.param == "sqlite":

        def sqlite(base: Path) -> Target:
            shutil.copyfile(world[1], base / "target.sqlite")
            return Target(base / "target.sqlite")

        return sqlite
    layout = request.getfixturevalue("pg_layout")

    def postgres(base: Path) -> Target:
        name = layout.new_agent()
        with Store.open(layout.url, upgrade=False) as store:
            agents.create(store, name)
        return Target(None, layout.url, name)

    return postgres


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), before=st.sampled_from(["new", "refuse", "merge"]))
def test_every_row_of_the_file_is_counted_once_and_the_target_gained_the_inserted(
    data: st.DataObject,
    before: Mode | Literal["new"],
    world: tuple[Source, Path],
    new_target: Callable[[Path], Target],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    source, _ = world
    base = tmp_path_factory.mktemp("case")
    every = set(range(len(source.rows)))
    optional = sorted(i for i in every if source.optional(i))
    subset = st.sets(st.sampled_from(optional)).map(lambda out: every - out)
    target = new_target(base)
    if before != "new":  # the target already holds part of the rows (maybe all, maybe none)
        target.import_(source.write(base / "part.jsonl", data.draw(subset)), before)
    keep = data.draw(subset)
    file = source.write(base / "file.jsonl", keep)
    mode: Mode = "refuse" if before == "new" and data.draw(st.booleans()) else "merge"
    held = target.rows()

    report = target.import_(file, mode)

    after = target.rows()
    rows = [source.rows[i] for i in sorted(keep)]
    in_file: dict[str, int] = {}
    for r in rows:
        in_file[r["table"]] = in_file.get(r["table"], 0) + 1
    assert report.file_rows == in_file
    for table in after:
        outcomes = {o: getattr(report, o).get(table, 0) for o in OUTCOMES}
        assert sum(outcomes.values()) == in_file.get(table, 0), (table, outcomes)
        assert len(after[table]) == len(held[table]) + outcomes["inserted"], (table, outcomes)
    totals = report.totals()
    assert totals["file_rows"] == len(rows) == sum(totals[o] for o in OUTCOMES)
    assert report.not_imported == ({"memory_meta": 1} if "memory_meta" in in_file else {})
    differ: dict[str, int] = {}  # the file's rows the target holds in another version
    for r in rows:
        name, row = r["table"], r["row"]
        theirs = [t for t in after[name] if _key(name, t) == _key(name, row)]
        assert len(theirs) == 1, (name, row)  # nothing dropped
        if name != "memory_meta" and not _same(theirs[0], row):
            differ[name] = differ.get(name, 0) + 1
    assert differ == report.kept
    if mode == "refuse":
        bootstrap = sum(
            1 for r in rows if (r["table"], _key(r["table"], r["row"])) in BOOTSTRAP_ROWS
        )
        assert totals["replaced"] == bootstrap and totals["skipped"] == totals["kept"] == 0
    event(f"before={before} mode={mode}")
    for o in OUTCOMES:
        event(f"{o}: {'some' if totals[o] else 'none'}")
