"""Export and import through PostgreSQL: SQLite -> one PostgreSQL agent -> SQLite keeps every
row, and merge, refuse and bad files behave for a PostgreSQL agent as they do on SQLite (the
other agents of the database are never touched)."""

from __future__ import annotations

import io
import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL

from philont import agents, migrate, settings, transfer
from philont.errors import ConflictError, PhilontError
from philont.store import Store
from philont.transfer import (
    ImportFactConflictError,
    ImportForeignKeyError,
    ImportFormatError,
    ImportMergeConflictError,
    ImportReport,
)
from philont.transfer.format import ExportReport
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

CopyFixture = Callable[[str], Path]
FIXTURES = ("v2", "v27", "v31", "empty-v31")


@dataclass(frozen=True)
class PgAgent:
    """One agent of this run's PostgreSQL layout."""

    url: URL
    name: str


NewAgent = Callable[[], PgAgent]


@pytest.fixture(name="pg_agent")
def new_pg_agent(pg_layout: Layout) -> NewAgent:
    return lambda: PgAgent(pg_layout.url, pg_layout.new_agent())


def export(db: Path | PgAgent, out: Path | io.StringIO) -> ExportReport:
    if isinstance(db, PgAgent):
        return transfer.export(db.url, out, agent=db.name)
    return transfer.export(db, out)


def import_(db: Path | PgAgent, src: Path, mode: transfer.Mode = "refuse") -> ImportReport:
    if isinstance(db, PgAgent):
        return transfer.import_(db.url, src, mode=mode, agent=db.name)
    return transfer.import_(db, src, mode=mode)


# --- helpers ---------------------------------------------------------------------------------


@dataclass
class Dump:
    """An export file taken apart: each table's rows as a multiset, the header, the trailer."""

    header: dict[str, Any]
    rows: dict[str, Counter[str]]
    trailer: dict[str, Any]
    has_rowid: bool


def _dump(db: Path | PgAgent) -> Dump:
    """Export ``db`` and read it back. A row is compared as its canonical JSON text without
    ``_rowid`` (PostgreSQL has none; SQLite numbers the rows it gets without one), so the
    comparison keeps types: ``1`` and ``1.0`` differ, and floats compare by their exact repr
    (no rounding or other normalisation is needed)."""
    buf = io.StringIO()
    export(db, buf)
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    rows: dict[str, Counter[str]] = {name: Counter() for name in lines[0]["tables"]}
    has_rowid = False
    for line in lines[1:-1]:
        row = dict(line["row"])
        has_rowid |= row.pop("_rowid", None) is not None
        rows[line["table"]][json.dumps(row, sort_keys=True, ensure_ascii=False)] += 1
    return Dump(header=lines[0], rows=rows, trailer=lines[-1], has_rowid=has_rowid)


def _state(db: Path | PgAgent) -> tuple[dict[str, Counter[str]], dict[str, int]]:
    """Everything an import could change: every row and every id high-water mark."""
    dump = _dump(db)
    return dump.rows, dump.header["sequences"]


def _upgraded(copy_fixture: CopyFixture, name: str) -> Path:
    path = copy_fixture(name)
    migrate.upgrade(path)
    return path


def _export_file(copy_fixture: CopyFixture, tmp_path: Path, name: str) -> Path:
    out = tmp_path / f"{name}.jsonl"
    export(_upgraded(copy_fixture, name), out)
    return out


def _edit(path: Path, edit: Callable[[list[str]], object]) -> Path:
    """A copy of the file with ``edit`` applied to its lines (a rewritten line ends with "\n")."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    edit(lines)
    out = path.with_name(f"edited-{path.name}")
    out.write_text("".join(lines), encoding="utf-8")
    return out


def _agent_exists(agent: PgAgent) -> bool:
    with Store.open(agent.url, upgrade=False) as store:
        return any(a.name == agent.name for a in agents.list_agents(store, prefix=agent.name))


def _assert_fts_sound(path: Path) -> None:
    """Every SQLite FTS index agrees with its content table (rowids included)."""
    with closing(sqlite3.connect(str(path))) as conn:
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%USING fts5(%'"
            )
        ]
        assert "memory_notes_fts" in names
        for name in names:
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")


# --- round trip ------------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", FIXTURES)
def test_sqlite_to_postgres_to_sqlite_reproduces_every_row(
    fixture: str, copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, fixture)
    first = tmp_path / "from-sqlite.jsonl"
    export(source, first)
    pg = pg_agent()

    into_pg = import_(pg, first)
    from_pg = tmp_path / "from-pg.jsonl"
    export(pg, from_pg)
    target = tmp_path / "back" / "memory.sqlite"
    into_sqlite = import_(target, from_pg)

    a, b, c = _dump(source), _dump(pg), _dump(target)
    assert a.has_rowid == (sum(a.rows["memory_notes"].values()) > 0)
    assert not b.has_rowid
    for table in a.rows:
        assert b.rows[table] == a.rows[table], table
        assert c.rows[table] == a.rows[table], table
    assert a.trailer == b.trailer == c.trailer
    assert a.header["sequences"] == b.header["sequences"] == c.header["sequences"]
    for h in (b.header, c.header):
        for key in ("format", "format_version", "schema_revision", "schema_version", "tables"):
            assert h[key] == a.header[key], key
    assert (
        set(into_pg.replaced_ids)
        == set(into_sqlite.replaced_ids)
        == {
            "memory_raw_sessions:global",
            "memory_pursuits:default",
        }
    )
    total = sum(a.trailer["rows"].values())
    assert sum(into_pg.inserted.values()) + len(into_pg.replaced_ids) + 1 == total  # + memory_meta
    assert into_pg.not_imported == {"memory_meta": 1}
    assert from_pg.read_text(encoding="utf-8").count("\n") == total + 2
    _assert_fts_sound(target)


def test_a_one_shot_whose_zone_this_machine_lacks_is_imported_into_postgres_with_a_warning(
    pg_agent: NewAgent, tmp_path: Path
) -> None:
    source = tmp_path / "source" / "memory.sqlite"
    with Store.open(source) as store, store.begin() as mem:
        mem.schedules.create("call", message="m", at=store.clock() + timedelta(days=1))
    out = tmp_path / "export.jsonl"
    export(source, out)
    edited = _edit(
        out,
        lambda lines: lines.__setitem__(
            slice(None),
            [line.replace('"cron_expr":null', '"cron_expr":"once@Mars/Olympus"') for line in lines],
        ),
    )
    pg = pg_agent()
    report = import_(pg, edited)
    assert report.warnings_total == 1 and "once@Mars/Olympus" in report.warnings[0]
    (row,) = _dump(pg).rows["memory_schedules"]
    assert json.loads(row)["cron_expr"] == "once@Mars/Olympus"


def test_exporting_postgres_twice_gives_the_same_bytes_but_the_timestamp(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    pg = pg_agent()
    import_(pg, _export_file(copy_fixture, tmp_path, "v31"))
    first, second = io.StringIO(), io.StringIO()

    export(pg, first)
    export(pg, second)

    one, two = first.getvalue().splitlines(), second.getvalue().splitlines()
    assert json.loads(one[0])["exported_at"]
    assert one[1:] == two[1:]
    assert len(one) > 300


def test_new_ids_on_postgres_continue_above_the_imported_high_water_marks(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    def raise_actions_sequence(lines: list[str]) -> None:
        header = json.loads(lines[0])
        header["sequences"]["memory_actions"] = 100  # ids 41..100 were used and deleted
        lines[0] = json.dumps(header) + "\n"

    pg = pg_agent()
    import_(pg, _edit(_export_file(copy_fixture, tmp_path, "v31"), raise_actions_sequence))

    with Store.open(pg.url, agent=pg.name, upgrade=False) as store, store.begin() as mem:
        assert mem.timeline.append("next").id == 202
        assert mem.access.record("note", "n").id == 9
        assert mem.actions.record("t", params={}, success=True).id == 101


# --- merge and refuse ------------------------------------------------------------------------


def _v31_on_a_new_agent(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> tuple[Path, PgAgent, ImportReport]:
    """The v31 fixture's export, and a new agent it was imported into."""
    out = _export_file(copy_fixture, tmp_path, "v31")
    pg = pg_agent()
    return out, pg, import_(pg, out)


def test_merge_into_postgres_skips_existing_rows_and_adds_the_missing_ones(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    out, pg, _ = _v31_on_a_new_agent(copy_fixture, pg_agent, tmp_path)
    complete = _state(pg)
    with Store.open(pg.url, agent=pg.name, upgrade=False) as store, store.begin() as mem:
        raw = mem.raw()
        raw.rows(f"DELETE FROM memory_raw_messages{raw.where('id IN (3, 50, 201)')} RETURNING 1")
        raw.rows(
            f"DELETE FROM memory_notes{raw.where()} AND id IN (SELECT id FROM memory_notes"
            f"{raw.where()} ORDER BY id LIMIT 2) RETURNING 1"
        )

    report = import_(pg, out, mode="merge")

    assert report.inserted == {"memory_raw_messages": 3, "memory_notes": 2}
    assert report.skipped["memory_raw_messages"] == 198
    assert report.skipped["memory_raw_sessions"] == 4
    assert report.not_imported == {"memory_meta": 1}
    assert report.replaced == {} and report.kept == {}
    assert _state(pg) == complete


def test_merging_another_agents_export_whose_ids_collide_is_refused_and_changes_nothing(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    pg = pg_agent()
    import_(pg, _export_file(copy_fixture, tmp_path, "v2"))
    before = _state(pg)
    out = _export_file(copy_fixture, tmp_path, "v31")

    with pytest.raises(ImportMergeConflictError) as caught:
        import_(pg, out, mode="merge")

    # v2 and v31 are different agents: the same message and action ids are different rows
    assert caught.value.counts == {"memory_actions": 8, "memory_raw_messages": 20}
    table, key, line_number = caught.value.first[0]
    row = json.loads(out.read_text(encoding="utf-8").splitlines()[line_number - 1])
    assert (row["table"], row["row"]["id"]) == (table, key)
    assert _state(pg) == before


def test_merging_an_agents_own_export_again_skips_every_row_on_postgres(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    out, pg, first = _v31_on_a_new_agent(copy_fixture, pg_agent, tmp_path)
    before = _state(pg)

    again = import_(pg, out, mode="merge")

    assert again.inserted == {}
    assert sum(again.skipped.values()) == sum(first.inserted.values()) + len(
        first.replaced_ids
    ) + sum(first.skipped.values())
    assert again.not_imported == first.not_imported == {"memory_meta": 1}
    assert _state(pg) == before


EDITS = {
    "memory_raw_messages": "content = content || ' (edited)'",
    "memory_actions": "tool_name = tool_name || '_edited'",
    "memory_notes": "importance = CASE WHEN importance > 0.5 THEN importance - 0.25"
    " ELSE importance + 0.25 END",
    "memory_facts": "confidence = CASE WHEN confidence > 0.5 THEN confidence - 0.25"
    " ELSE confidence + 0.25 END",
}


def test_an_edited_row_in_several_postgres_tables_refuses_the_merge_and_changes_nothing(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    out, pg, _ = _v31_on_a_new_agent(copy_fixture, pg_agent, tmp_path)
    with Store.open(pg.url, agent=pg.name, upgrade=False) as store, store.begin() as mem:
        raw = mem.raw()
        for table, change in EDITS.items():
            first = f"(SELECT min(id) FROM {table}{raw.where()})"
            raw.rows(f"UPDATE {table} SET {change}{raw.where(f'id = {first}')} RETURNING 1")
    before = _state(pg)

    with pytest.raises(ImportMergeConflictError) as caught:
        import_(pg, out, mode="merge")

    assert caught.value.counts == dict.fromkeys(EDITS, 1)
    assert _state(pg) == before


def test_refuse_mode_on_a_non_empty_postgres_agent_raises_and_changes_nothing(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    pg = pg_agent()
    import_(pg, _export_file(copy_fixture, tmp_path, "v27"))
    before = _state(pg)
    assert sum(before[0]["memory_raw_messages"].values()) == 201

    with pytest.raises(ConflictError):
        import_(pg, _export_file(copy_fixture, tmp_path, "v31"))

    assert _state(pg) == before


def test_rows_pointing_at_missing_parents_roll_back_the_whole_postgres_import(
    copy_fixture: CopyFixture, pg_agent: NewAgent, tmp_path: Path
) -> None:
    def drop_sessions(lines: list[str]) -> None:
        kept = [
            line
            for line in lines
            if not (
                line.startswith('{"table":"memory_raw_sessions"') and '"id":"global"' not in line
            )
        ]
        trailer = json.loads(kept[-1])
        trailer["rows"]["memory_raw_sessions"] = 1
        kept[-1] = json.dumps(trailer) + "\n"
        lines[:] = kept

    pg = pg_agent()
    with Store.open(pg.url, agent=pg.name, upgrade=False) as store, store.begin():
        pass  # the agent, created with its bootstrap rows
    before = _state(pg)

    with pytest.raises(ImportForeignKeyError):
        import_(pg, _edit(_export_file(copy_fixture, tmp_path, "v31"), drop_sessions))

    assert _state(pg) == before  # the facts, notes, ... inserted before the failure are gone


# --- bad files -------------------------------------------------------------------------------


def _line_of(lines: list[str], table: str) -> int:
    return next(i for i, line in enumerate(lines) if line.startswith(f'{{"table":"{table}"'))


def _nul_in_text(lines: list[str]) -> int:
    i = _line_of(lines, "memory_raw_messages")
    obj = json.loads(lines[i])
    obj["row"]["content"] = "before\x00after"
    lines[i] = json.dumps(obj) + "\n"
    return i + 1


def _float_in_integer_column(lines: list[str]) -> int:
    i = _line_of(lines, "memory_facts")
    obj = json.loads(lines[i])
    obj["row"]["created_at"] += 0.5  # PostgreSQL would round it into the BIGINT
    lines[i] = json.dumps(obj) + "\n"
    return i + 1


def _text_in_integer_column(lines: list[str]) -> int:
    i = _line_of(lines, "memory_raw_messages")
    obj = json.loads(lines[i])
    obj["row"]["timestamp"] = str(obj["row"]["timestamp"])  # PostgreSQL would cast it
    lines[i] = json.dumps(obj) + "\n"
    return i + 1


def _missing_trailer(lines: list[str]) -> int:
    del lines[-1]
    return len(lines) + 1


def _count_mismatch(lines: list[str]) -> int:
    trailer = json.loads(lines[-1])
    trailer["rows"]["memory_notes"] += 1
    lines[-1] = json.dumps(trailer) + "\n"
    return len(lines)


DAMAGES = [
    _nul_in_text,
    _float_in_integer_column,
    _text_in_integer_column,
    _missing_trailer,
    _count_mismatch,
]


@pytest.mark.parametrize("damage", DAMAGES)
def test_an_invalid_file_names_the_line_and_leaves_the_postgres_agent_unchanged(
    damage: Callable[[list[str]], int],
    copy_fixture: CopyFixture,
    pg_agent: NewAgent,
    tmp_path: Path,
) -> None:
    pg = pg_agent()
    import_(pg, _export_file(copy_fixture, tmp_path, "v2"))
    before = _state(pg)
    line_numbers: list[int] = []
    bad = _edit(
        _export_file(copy_fixture, tmp_path, "v31"),
        lambda lines: line_numbers.append(damage(lines)),
    )

    with pytest.raises(ImportFormatError) as err:
        import_(pg, bad, mode="merge")

    assert err.value.line_number == line_numbers[0]
    assert _state(pg) == before


@pytest.mark.parametrize("damage", DAMAGES)
def test_an_invalid_file_does_not_even_create_the_agent_schema(
    damage: Callable[[list[str]], int],
    copy_fixture: CopyFixture,
    pg_agent: NewAgent,
    tmp_path: Path,
) -> None:
    pg = pg_agent()
    bad = _edit(_export_file(copy_fixture, tmp_path, "v31"), damage)

    with pytest.raises(ImportFormatError):
        import_(pg, bad)

    assert not _agent_exists(pg)


def test_a_key_current_in_the_file_and_in_the_postgres_agent_refuses_the_merge(
    pg_agent: NewAgent, tmp_path: Path
) -> None:
    source = tmp_path / "b.sqlite"
    with Store.open(source) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Rome")
        mem.facts.store("user", "city", "Paris")
    out = tmp_path / "b.jsonl"
    export(source, out)
    pg = pg_agent()
    with Store.open(pg.url, agent=pg.name, upgrade=False) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    before = _state(pg)

    with pytest.raises(ImportFactConflictError) as caught:
        import_(pg, out, mode="merge")

    assert [(ns, key) for _, ns, key, _ in caught.value.found] == [("user", "city")]
    assert _state(pg) == before
    again = pg_agent()  # the same file into an agent that does not hold the key: imported
    assert import_(again, out, mode="merge").inserted["memory_facts"] == 2


class _Unread(io.StringIO):
    """An export file that records whether a line of it was read."""

    read_from = False

    def readline(self, size: int | None = -1) -> str:
        self.read_from = True
        return super().readline(size)

    def read(self, size: int | None = -1) -> str:
        self.read_from = True
        return super().read(size)

    def __iter__(self) -> Any:
        self.read_from = True
        return super().__iter__()

    def __next__(self) -> str:
        self.read_from = True
        return super().__next__()


@pytest.mark.parametrize(
    ("agent", "code"),
    [(None, "agent_required"), ("", "invalid_input"), ("Bad Name", "invalid_input"),
     (".dot", "invalid_input"), ("x" * 64, "invalid_input"), ("a\x00b", "invalid_input")],
)  # fmt: skip
def test_an_import_names_its_agent_before_reading_the_file(
    pg_layout: Layout, monkeypatch: pytest.MonkeyPatch, agent: str | None, code: str
) -> None:
    """A bad or missing agent name was refused only after a whole first pass over the file
    (which a malformed file's own error then hid)."""
    monkeypatch.delenv(settings.AGENT_ENV, raising=False)
    src = _Unread("not an export file\n" * 1000)
    with pytest.raises(PhilontError) as caught:
        transfer.import_(pg_layout.url, src, agent=agent)
    assert caught.value.code == code, caught.value
    assert not src.read_from
