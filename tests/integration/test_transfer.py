"""Export and import as JSON lines on real Philont databases: round trips, refusals, bad files."""

from __future__ import annotations

import io
import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import Store, filewrite, migrate
from philont.db.schema import metadata
from philont.errors import (
    ConflictError,
    FilePathError,
    InvalidInputError,
    SchemaOutOfDateError,
)
from philont.transfer import (
    CHECKING,
    INDEXING,
    ImportForeignKeyError,
    ImportFormatError,
    export,
    export_tables,
    import_,
)
from philont.transfer.export import EXPORT_COPY
from philont.transfer.format import OUTCOMES, ROWID_TABLES
from tests.support import held_by_another_process, in_another_pid_namespace

CopyFixture = Callable[[str], Path]
FIXTURES = ("v2", "v27", "v31", "empty-v31")
BOOTSTRAP = {"memory_raw_sessions": "global", "memory_pursuits": "default"}


# --- helpers ---------------------------------------------------------------------------------


def _upgraded(copy_fixture: CopyFixture, name: str) -> Path:
    path = copy_fixture(name)
    migrate.upgrade(path)
    return path


def _fresh(tmp_path: Path, name: str = "target") -> Path:
    path = tmp_path / name / "memory.sqlite"
    migrate.upgrade(path)
    return path


def _rows(
    path: Path, table: str, *, order: str = "rowid", skip_bootstrap: bool = False
) -> list[tuple[Any, ...]]:
    """Every row by column name (column order differs between fresh and upgraded files), plus
    the rowid where FTS keys on it."""
    cols = [f'"{c.name}"' for c in metadata.tables[table].c]
    if table in ROWID_TABLES:
        cols.insert(0, "rowid")
    where = ""
    if skip_bootstrap and table in BOOTSTRAP:
        where = f" WHERE id != '{BOOTSTRAP[table]}'"
    with closing(sqlite3.connect(str(path))) as conn:
        sql = f"SELECT {', '.join(cols)} FROM {table}{where} ORDER BY {order}"
        return conn.execute(sql).fetchall()


def _pk_order(table: str) -> str:
    return ", ".join(f'"{c.name}"' for c in metadata.tables[table].primary_key.columns)


def _fts_tables(conn: sqlite3.Connection) -> list[str]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%USING fts5(%'"
        )
    ]


def _assert_fts_sound(path: Path) -> None:
    with closing(sqlite3.connect(str(path))) as conn:
        names = _fts_tables(conn)
        assert "memory_raw_messages_fts" in names
        for name in names:
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")


def _dump(path: Path) -> list[str]:
    with closing(sqlite3.connect(str(path))) as conn:
        return list(conn.iterdump())


def _export_lines(path: Path) -> list[str]:
    buf = io.StringIO()
    export(path, buf)
    return buf.getvalue().splitlines(keepends=True)


def _write(tmp_path: Path, lines: list[str]) -> Path:
    out = tmp_path / "edited.jsonl"
    out.write_text("".join(lines), encoding="utf-8")
    return out


# --- round trips -----------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", FIXTURES)
def test_export_then_merge_into_a_new_database_reproduces_every_row(
    fixture: str, copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, fixture)
    out = tmp_path / "export.jsonl"
    exported = export(source, out)
    target = _fresh(tmp_path)

    report = import_(target, out, mode="merge")

    totals = report.totals()
    assert totals["file_rows"] == sum(exported.rows.values())
    assert totals["file_rows"] == sum(totals[o] for o in OUTCOMES)
    assert totals["replaced"] == 0 and totals["not_imported"] == 1  # memory_meta
    for table in export_tables():
        assert _rows(target, table.name, skip_bootstrap=True) == _rows(
            source, table.name, skip_bootstrap=True
        ), table.name
    _assert_fts_sound(target)


@pytest.mark.parametrize("fixture", FIXTURES)
def test_import_into_an_empty_database_is_an_exact_copy_including_bootstrap_rows(
    fixture: str, copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, fixture)
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = _fresh(tmp_path)

    report = import_(target, out)

    assert set(report.replaced_ids) == {"memory_raw_sessions:global", "memory_pursuits:default"}
    assert report.replaced == {"memory_raw_sessions": 1, "memory_pursuits": 1}
    for table in export_tables():
        order = _pk_order(table.name)
        assert _rows(target, table.name, order=order) == _rows(source, table.name, order=order), (
            table.name
        )
    _assert_fts_sound(target)


@pytest.mark.parametrize("fixture", ("v2", "v27", "v31"))
def test_full_text_search_finds_an_imported_message_in_the_new_database(
    fixture: str, copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, fixture)
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = _fresh(tmp_path)
    import_(target, out, mode="merge")
    with closing(sqlite3.connect(str(source))) as conn:
        msg_id, content = conn.execute(
            "SELECT id, content FROM memory_raw_messages ORDER BY id LIMIT 1"
        ).fetchone()
    word = max(content.split(), key=len).strip(".,!?;:'\"—")

    with closing(sqlite3.connect(str(target))) as conn:
        hits = conn.execute(
            "SELECT rowid FROM memory_raw_messages_fts WHERE memory_raw_messages_fts MATCH ?",
            (f'"{word}"',),
        ).fetchall()

    assert (msg_id,) in hits


def test_notes_keep_their_rowids_so_note_search_matches_the_source(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, "v31")
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = _fresh(tmp_path)
    import_(target, out)
    query = (
        "SELECT n.id FROM memory_notes_fts f JOIN memory_notes n ON n.rowid = f.rowid "
        "WHERE memory_notes_fts MATCH '\"Kaution\"' ORDER BY n.id"
    )

    with closing(sqlite3.connect(str(source))) as a, closing(sqlite3.connect(str(target))) as b:
        found = b.execute(query).fetchall()
        assert found == a.execute(query).fetchall()
        assert found
        seq = "SELECT name, seq FROM sqlite_sequence ORDER BY name"
        assert b.execute(seq).fetchall() == a.execute(seq).fetchall()


def test_exporting_the_same_database_twice_gives_the_same_bytes_but_the_timestamp(
    copy_fixture: CopyFixture,
) -> None:
    source = _upgraded(copy_fixture, "v31")

    first, second = _export_lines(source), _export_lines(source)

    head1, head2 = json.loads(first[0]), json.loads(second[0])
    assert head1.pop("exported_at") and head2.pop("exported_at")
    assert head1 == head2
    assert first[1:] == second[1:]


def _without_moment(lines: list[str]) -> list[str]:
    header = json.loads(lines[0])
    assert header.pop("exported_at")
    return [json.dumps(header), *lines[1:]]


@pytest.mark.parametrize("fixture", FIXTURES)
def test_exporting_the_imported_database_gives_the_file_again_but_the_timestamp(
    fixture: str, copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    """docs/cli.md: exporting the imported SQLite file gives the same bytes but ``exported_at``.
    v2's 'global' session came after its other sessions (the upgrade made it): the import left
    it first, where the target had made it, and the second export listed it there."""
    source = _upgraded(copy_fixture, fixture)
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = _fresh(tmp_path)

    import_(target, out)

    assert _without_moment(_export_lines(target)) == _without_moment(
        out.read_text("utf-8").splitlines(keepends=True)
    )


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    before=st.integers(0, 3),
    after=st.integers(0, 3),
    root_last=st.booleans(),
)
def test_bootstrap_rows_keep_their_place_among_the_rows_through_export_and_import(
    before: int, after: int, root_last: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Wherever a source holds its bootstrap rows among the others (a database that had rows
    before the bootstrap rows were made, as v2 did), the imported database lists them there
    too: its export is the file again but ``exported_at``."""
    tmp_path = tmp_path_factory.mktemp("order")
    source = tmp_path / "source.sqlite"
    with Store.open(source) as store:
        with store.begin() as mem:
            for i in range(before):
                mem.timeline.start_session(f"before-{i}")
        with closing(sqlite3.connect(str(source))) as conn, conn:  # no service writes these
            conn.execute(
                "INSERT INTO memory_pursuits (id, parent_pursuit_id, root_pursuit_id, title,"
                " intent, origin, created_at, updated_at) VALUES ('move', 'default', 'default',"
                " 'help with the move', 'a flat in Berlin', 'user', 1, 1)"
            )
            for table, key in BOOTSTRAP.items():
                if table == "memory_raw_sessions" or root_last:
                    conn.execute(
                        f"UPDATE {table} SET rowid = (SELECT max(rowid) + 1 FROM {table})"
                        " WHERE id = ?",
                        (key,),
                    )
        with store.begin() as mem:
            for i in range(after):
                mem.timeline.start_session(f"after-{i}")
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = tmp_path / "target.sqlite"

    import_(target, out)

    assert _without_moment(_export_lines(target)) == _without_moment(
        out.read_text("utf-8").splitlines(keepends=True)
    )


def _database_files(path: Path) -> dict[str, bytes]:
    """The bytes of the database file and of what SQLite keeps beside it."""
    files = [path, *(Path(f"{path}{s}") for s in filewrite.COMPANIONS)]
    return {f.name: f.read_bytes() for f in files if f.exists()}


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    suffix=st.sampled_from(["", *filewrite.COMPANIONS]),
    naming=st.sampled_from(["as given", "relative", "through a linked folder", "db is a link"]),
    open_meanwhile=st.booleans(),
)
def test_an_export_over_the_database_it_reads_is_refused_and_changes_nothing(
    suffix: str, naming: str, open_meanwhile: bool, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """``philont export memory.sqlite --db memory.sqlite`` renamed its file over the database:
    the memory was gone, replaced by its export (over the ``-wal``: the transactions in it).
    However the two are named, the export is refused (``file_path``) and no file changes."""
    base = tmp_path_factory.mktemp("self")
    real = base / "data" / "memory.sqlite"
    with Store.open(real) as store, store.begin() as mem:
        mem.notes.add("the rent is warm")
    (base / "linked").symlink_to(base / "data")
    (base / "link.sqlite").symlink_to(real)
    db = base / "link.sqlite" if naming == "db is a link" else real
    out = {
        "as given": Path(f"{real}{suffix}"),
        "relative": Path(os.path.relpath(f"{real}{suffix}")),
        "through a linked folder": base / "linked" / f"memory.sqlite{suffix}",
        "db is a link": Path(f"{real}{suffix}"),
    }[naming]
    with Store.open(real) as store:
        if open_meanwhile:  # a -wal and -shm beside it, as while the agent runs
            with store.begin() as mem:
                mem.notes.add("written, not checkpointed yet")
        before = _database_files(real)

        with pytest.raises(FilePathError) as caught:
            export(db, out)

        assert caught.value.code == "file_path"
        assert "the database being exported" in str(caught.value)
        assert _database_files(real) == before
    assert sorted(p.name for p in real.parent.iterdir() if "export" in p.name) == []


def test_an_export_to_a_link_to_the_database_replaces_the_link_alone(tmp_path: Path) -> None:
    """The control: the rename replaces the name it is given; through a link the database
    stays as it was (the link now names the export)."""
    real = tmp_path / "memory.sqlite"
    with Store.open(real) as store, store.begin() as mem:
        mem.notes.add("the rent is warm")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    before = real.read_bytes()

    export(real, link)

    assert not link.is_symlink() and link.read_text("utf-8").startswith('{"format"')
    assert real.read_bytes() == before


def test_an_export_stores_raw_values_and_ends_with_a_trailer(copy_fixture: CopyFixture) -> None:
    source = _upgraded(copy_fixture, "v31")

    lines = [json.loads(line) for line in _export_lines(source)]

    header, trailer = lines[0], lines[-1]
    assert header["format"] == "philont-export"
    assert header["format_version"] == 1
    assert header["schema_revision"] == migrate.head_revision()
    assert header["schema_version"] == "31"
    assert "philont_alembic_version" not in header["tables"]
    assert not [t for t in header["tables"] if "_fts" in t]
    assert trailer["end"] is True
    assert trailer["rows"]["memory_raw_messages"] == 201
    facts = [r["row"] for r in lines[1:-1] if r["table"] == "memory_facts"]
    assert isinstance(facts[0]["created_at"], int)
    assert isinstance(facts[0]["value_json"], str)
    notes = [r["row"] for r in lines[1:-1] if r["table"] == "memory_notes"]
    assert all(isinstance(n["_rowid"], int) for n in notes)


def test_an_export_to_a_path_is_private(copy_fixture: CopyFixture, tmp_path: Path) -> None:
    out = tmp_path / "export.jsonl"
    export(_upgraded(copy_fixture, "v31"), out)
    assert out.stat().st_mode & 0o777 == 0o600


EXPORT_KILLED_MID_WAY = """
import os, signal, sys
from pathlib import Path
from philont.transfer import export

def progress(table, done, total):  # the header and some rows are written
    os.kill(os.getpid(), signal.SIGKILL)

export(sys.argv[1], Path(sys.argv[2]), progress=progress)
"""


def test_the_file_an_export_killed_mid_way_left_is_removed_by_the_next(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    """An export killed while it wrote left its hidden file beside the one it was to write,
    for ever (as big as the export: one more each time); the next export there removes it,
    never the file of an export still running."""
    source = _upgraded(copy_fixture, "v31")
    out = tmp_path / "export ?#[x].jsonl"
    killed = subprocess.run(
        [sys.executable, "-c", EXPORT_KILLED_MID_WAY, str(source), str(out)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert killed.returncode == -signal.SIGKILL
    left = [p.name for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}")]
    assert len(left) == 1 and not out.exists(), left
    # a file its writer holds stays, one nobody holds goes
    running = tmp_path / f".{out.name}.export-{filewrite.temp_id()}.tmp"
    running.write_text("an export being written")
    unheld = tmp_path / f".{out.name}.export-{filewrite.temp_id()}.tmp"
    unheld.write_text("an export nobody writes")

    with held_by_another_process(running):
        export(source, out)

    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(f".{out.name}")) == [
        running.name
    ]
    assert out.is_file()


SWEEP_BESIDE = """
import sys
from pathlib import Path
from philont import filewrite
filewrite.temp_beside(Path(sys.argv[1]), sys.argv[2])  # sweeps what it takes for leftovers
"""


def test_an_export_keeps_its_file_while_a_process_of_another_pid_namespace_sweeps(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    """An export in another container sharing the volume sweeps leftovers beside the file
    while this export writes it: this process looked dead to it (its pid is none of that
    namespace's) and the file being written was deleted under it."""
    source = _upgraded(copy_fixture, "v31")
    out = tmp_path / "export.jsonl"
    swept: list[str] = []

    def sweep_mid_way(table: str, _done: int, _total: int) -> None:
        if not swept:
            swept.append(table)
            in_another_pid_namespace(SWEEP_BESIDE, str(out), EXPORT_COPY)

    export(source, out, progress=sweep_mid_way)

    assert swept and out.is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    assert json.loads(out.read_text().splitlines()[-1])["end"] is True


def test_exporting_a_database_below_head_is_refused(copy_fixture: CopyFixture) -> None:
    with pytest.raises(SchemaOutOfDateError):
        export(copy_fixture("v31"), io.StringIO())


def test_progress_reports_every_table_up_to_its_total(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, "v31")
    out = tmp_path / "export.jsonl"
    seen_out: list[tuple[str, int, int]] = []
    seen_in: list[tuple[str, int, int]] = []

    export(source, out, progress=lambda *a: seen_out.append(a))
    import_(_fresh(tmp_path), out, progress=lambda *a: seen_in.append(a))

    assert ("memory_raw_messages", 201, 201) in seen_out
    assert ("memory_raw_messages", 201, 201) in seen_in
    assert {t for t, _, _ in seen_out} == {t.name for t in export_tables()}
    tables = {t.name for t in export_tables()}
    assert {t for t, _, _ in seen_in} == tables | {CHECKING, INDEXING}
    # the first pass (checking, nothing written) comes first, in bytes of the file, to its end
    checking = [(done, total) for t, done, total in seen_in if t == CHECKING]
    assert seen_in[: len(checking)] == [(CHECKING, *c) for c in checking]
    assert checking[-1] == (out.stat().st_size, out.stat().st_size)
    assert [d for d, _ in checking] == sorted(d for d, _ in checking)
    assert [t for t, _, _ in seen_in][-1] == INDEXING


def test_import_reads_from_a_text_stream(copy_fixture: CopyFixture, tmp_path: Path) -> None:
    lines = _export_lines(_upgraded(copy_fixture, "v31"))
    report = import_(_fresh(tmp_path), io.StringIO("".join(lines)))
    assert report.inserted["memory_raw_messages"] == 201


# --- refusing and merging --------------------------------------------------------------------


def test_import_refuses_a_database_that_already_holds_memory_and_writes_nothing(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, "v31")
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = _upgraded(copy_fixture, "v27")
    before = _dump(target)

    with pytest.raises(ConflictError):
        import_(target, out)

    assert _dump(target) == before


def test_merge_skips_rows_whose_id_exists_and_adds_the_missing_ones(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, "v31")
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = tmp_path / "target.sqlite"
    target.write_bytes(source.read_bytes())
    with closing(sqlite3.connect(str(target))) as conn, conn:
        conn.execute("DELETE FROM memory_raw_messages WHERE id IN (3, 50, 201)")
        conn.execute(
            "DELETE FROM memory_notes WHERE rowid IN (SELECT rowid FROM memory_notes "
            "ORDER BY rowid LIMIT 2)"
        )

    report = import_(target, out, mode="merge")

    assert report.inserted == {"memory_raw_messages": 3, "memory_notes": 2}
    assert report.skipped["memory_raw_messages"] == 198
    assert report.skipped["memory_raw_sessions"] == 4
    assert report.not_imported == {"memory_meta": 1}
    for table in ("memory_raw_messages", "memory_notes", "memory_raw_sessions"):
        assert _rows(target, table) == _rows(source, table)
    _assert_fts_sound(target)


def test_merging_a_file_into_its_own_source_changes_nothing(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    source = _upgraded(copy_fixture, "v31")
    out = tmp_path / "export.jsonl"
    export(source, out)
    before = {t.name: _rows(source, t.name) for t in export_tables()}

    report = import_(source, out, mode="merge")

    assert report.inserted == {}
    assert {t.name: _rows(source, t.name) for t in export_tables()} == before


def test_rows_pointing_at_missing_parents_are_refused_as_a_whole(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    lines = _export_lines(_upgraded(copy_fixture, "v31"))
    kept = [
        line
        for line in lines
        if not (line.startswith('{"table":"memory_raw_sessions"') and '"id":"global"' not in line)
    ]
    trailer = json.loads(kept[-1])
    trailer["rows"]["memory_raw_sessions"] = 1
    kept[-1] = json.dumps(trailer) + "\n"
    target = _fresh(tmp_path)
    before = _dump(target)

    with pytest.raises(ImportForeignKeyError):
        import_(target, _write(tmp_path, kept))

    assert _dump(target) == before


# --- malformed files -------------------------------------------------------------------------


def _bad_json_on_line_7(lines: list[str]) -> int:
    lines[6] = lines[6][: len(lines[6]) // 2] + "\n"
    return 7


def _unknown_table(lines: list[str]) -> int:
    lines[4] = '{"table":"memory_secrets","row":{"id":"x"}}\n'
    return 5


def _unknown_column(lines: list[str]) -> int:
    obj = json.loads(lines[9])
    obj["row"]["bogus"] = 1
    lines[9] = json.dumps(obj) + "\n"
    return 10


def _missing_trailer(lines: list[str]) -> int:
    del lines[-1]
    return len(lines) + 1


def _count_mismatch(lines: list[str]) -> int:
    trailer = json.loads(lines[-1])
    trailer["rows"]["memory_facts"] += 1
    lines[-1] = json.dumps(trailer) + "\n"
    return len(lines)


def _wrong_format_version(lines: list[str]) -> int:
    header = json.loads(lines[0])
    header["format_version"] = 2
    lines[0] = json.dumps(header) + "\n"
    return 1


def _data_after_trailer(lines: list[str]) -> int:
    lines.append(lines[3])
    return len(lines)


def _missing_primary_key(lines: list[str]) -> int:
    obj = json.loads(lines[12])
    obj["row"].pop(next(iter(obj["row"])) if "_rowid" not in obj["row"] else "id")
    lines[12] = json.dumps(obj) + "\n"
    return 13


@pytest.mark.parametrize(
    "damage",
    [
        _bad_json_on_line_7,
        _unknown_table,
        _unknown_column,
        _missing_trailer,
        _count_mismatch,
        _wrong_format_version,
        _data_after_trailer,
        _missing_primary_key,
    ],
)
def test_a_malformed_file_names_the_line_and_imports_nothing(
    damage: Callable[[list[str]], int], copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    lines = _export_lines(_upgraded(copy_fixture, "v31"))
    line_number = damage(lines)
    target = _fresh(tmp_path)
    before = _dump(target)

    with pytest.raises(ImportFormatError) as err:
        import_(target, _write(tmp_path, lines))

    assert err.value.line_number == line_number
    assert f"line {line_number}" in str(err.value)
    assert _dump(target) == before


def test_a_malformed_file_does_not_even_create_a_missing_target(
    copy_fixture: CopyFixture, tmp_path: Path
) -> None:
    lines = _export_lines(_upgraded(copy_fixture, "v31"))
    del lines[-1]
    target = tmp_path / "nowhere" / "memory.sqlite"

    with pytest.raises(ImportFormatError):
        import_(target, _write(tmp_path, lines))

    assert not target.exists()


LINE_BREAKS = "\x85\u2028\u2029\x0b\x0c\x1c\x1d\x1e\r"  # str.splitlines breaks at each


def test_text_with_characters_readers_break_lines_at_stays_on_one_line(tmp_path: Path) -> None:
    """Every character some line reader splits at (``str.splitlines``, JavaScript's old
    parsers) is escaped in the file, so every reader sees one row per line."""
    source = tmp_path / "source.sqlite"
    text = "before" + LINE_BREAKS.join("abcdefghij") + "after"
    with Store.open(source) as store, store.begin() as mem:
        mem.timeline.append(text)
        mem.notes.add(text)
        mem.facts.store("user", "motto", {text: [text]})
    out = tmp_path / "export.jsonl"
    export(source, out)
    raw = out.read_text(encoding="utf-8")

    assert raw.splitlines() == raw.split("\n")[:-1]
    target = tmp_path / "target.sqlite"
    import_(target, out)
    with Store.open(target) as store, store.begin() as mem:
        assert [m.content for m in mem.timeline.query()] == [text]
        assert mem.notes.list()[0].content == text
        assert mem.facts.get("user", "motto").value == {text: [text]}  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", ["replace", "", "MERGE"])
def test_an_unknown_import_mode_is_refused_by_name_and_creates_nothing(
    tmp_path: Path, mode: str
) -> None:
    source = tmp_path / "source.sqlite"
    with Store.open(source):
        pass
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = tmp_path / "target.sqlite"
    with pytest.raises(InvalidInputError, match=r"^mode: must be 'refuse' or 'merge'") as raised:
        import_(target, out, mode=mode)  # type: ignore[arg-type]
    assert raised.value.details["argument"] == "mode"  # named, as every argument's refusal
    assert not target.exists()


def test_a_one_shot_keeps_its_zone_through_export_and_import(tmp_path: Path) -> None:
    # cron_expr 'once@<zone>' is ours (Philont has no timezone column on schedules): the import
    # gate reads it as the schedule service does, so an export of ours imports.
    source = _fresh(tmp_path, "source")
    with Store.open(source) as store, store.begin() as mem:
        made = mem.schedules.create(
            "call", message="m", at=datetime(2030, 1, 1, tzinfo=UTC), timezone="Asia/Tokyo"
        )
    out = tmp_path / "export.jsonl"
    export(source, out)
    target = _fresh(tmp_path)
    import_(target, out)
    with Store.open(target) as store, store.begin(write=False) as mem:
        got = mem.schedules.get(made.id)
    assert got is not None and (got.cron_expr, got.timezone) == ("once@Asia/Tokyo", "Asia/Tokyo")


def _export_with_zone(tmp_path: Path, zone: str, **when: Any) -> tuple[Path, str]:
    """An export holding a reminder in Asia/Tokyo (``at`` or ``cron``), that zone's name
    replaced by ``zone`` (one a newer tzdata could name); and the reminder's id."""
    source = _fresh(tmp_path, "source")
    with Store.open(source) as store, store.begin() as mem:
        made = mem.schedules.create("call", message="m", timezone="Asia/Tokyo", **when)
    out = tmp_path / "export.jsonl"
    export(source, out)
    out.write_text(out.read_text(encoding="utf-8").replace("Asia/Tokyo", zone), encoding="utf-8")
    return out, made.id


def test_a_one_shot_whose_zone_this_machine_lacks_is_imported_as_it_is_with_a_warning(
    tmp_path: Path,
) -> None:
    # Its zone only says where its time is shown: Philont runs the row as the one-shot it is,
    # and so does the schedule service; refusing the whole file for it helped nobody.
    at = datetime(2030, 1, 1, tzinfo=UTC)
    out, once_id = _export_with_zone(tmp_path, "Mars/Olympus_Mons", at=at)
    line = next(
        n
        for n, text in enumerate(out.read_text(encoding="utf-8").splitlines(), 1)
        if once_id in text
    )
    target = _fresh(tmp_path)
    report = import_(target, out)
    assert report.warnings_total == 1
    (warning,) = report.warnings
    assert warning.startswith(f"line {line}: memory_schedules: cron_expr 'once@Mars/Olympus_Mons'")
    assert "not one this machine knows" in warning
    with Store.open(target) as store, store.begin() as mem:
        got = mem.schedules.get(once_id)
        assert got is not None
        assert (got.cron_expr, got.kind, got.timezone) == ("once@Mars/Olympus_Mons", "once", None)
        (claim,) = mem.schedules.claim_due(at)
        assert claim.schedule.enabled is False  # fired once, as Philont fires it


def test_a_cron_reminder_whose_zone_this_machine_lacks_is_still_refused(tmp_path: Path) -> None:
    # Its zone decides when it fires: read as a one-shot it would silently stop repeating.
    out, _ = _export_with_zone(tmp_path, "Mars/Olympus", cron="0 9 * * *")
    target = _fresh(tmp_path)
    with pytest.raises(ImportFormatError, match="Mars/Olympus"):
        import_(target, out)
