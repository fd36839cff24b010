"""`philont import` says what became of every row of the file, each kind by its name, in totals
that add up (the human line and ``--json``)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

from typer.testing import CliRunner

from philont import migrate
from philont.cli import app
from philont.store import Store
from philont.transfer.format import OUTCOMES

runner = CliRunner()


def _export(tmp_path: Path) -> Path:
    source = tmp_path / "source.sqlite"
    with Store.open(source) as store, store.begin() as mem:
        mem.timeline.start_session("laptop")
        mem.timeline.append("Alice: my cat is called Miso", session_id="laptop")
    out = tmp_path / "source.jsonl"
    assert runner.invoke(app, ["export", str(out), "--db", str(source)]).exit_code == 0
    return out


def _import(*args: str) -> dict[str, object]:
    result = runner.invoke(app, ["import", *args, "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.stdout)
    totals = data["totals"]
    assert isinstance(totals, dict)
    assert totals["file_rows"] == sum(totals[o] for o in OUTCOMES)
    tables = data["tables"]
    assert isinstance(tables, dict)
    for name, counts in tables.items():
        assert counts["file_rows"] == sum(counts[o] for o in OUTCOMES), name
    for o in ("file_rows", *OUTCOMES):
        assert totals[o] == sum(c[o] for c in tables.values()), o
    return data


def test_a_new_database_then_a_merge_name_every_row(tmp_path: Path) -> None:
    out = _export(tmp_path)
    target = tmp_path / "target.sqlite"

    first = _import(str(out), "--db", str(target))
    again = _import(str(out), "--db", str(target), "--merge")

    assert first["totals"] == {
        "file_rows": 5,  # memory_meta, root pursuit, 'global' and 'laptop' sessions, a message
        "inserted": 2,
        "replaced": 2,  # the bootstrap rows the new database was created with
        "skipped": 0,
        "kept": 0,
        "not_imported": 1,  # memory_meta: the database keeps its own
    }
    assert again["totals"] == {**first["totals"], "inserted": 0, "replaced": 0, "skipped": 4}
    assert sorted(first["replaced_ids"]) == [
        "memory_pursuits:default",
        "memory_raw_sessions:global",
    ]  # type: ignore[arg-type]


def test_the_human_line_names_each_kind_and_adds_up(tmp_path: Path) -> None:
    out = _export(tmp_path)
    target = tmp_path / "target.sqlite"
    migrate.upgrade(target)  # its own bootstrap rows, made at another moment than the file's

    result = runner.invoke(app, ["import", str(out), "--db", str(target), "--merge"])

    assert result.exit_code == 0, result.output
    line = " ".join(result.stdout.split())
    found = re.fullmatch(
        r"imported (\d+) of (\d+) rows: (\d+) added; (\d+) bootstrap rows kept as the "
        r"database has them; (\d+) memory_meta rows not imported \(schema record\)",
        line,
    )
    assert found, line
    imported, in_file, added, kept, meta = map(int, found.groups())
    assert (imported, in_file, added, kept, meta) == (2, 5, 2, 2, 1)
    assert "skipped" not in line  # nothing was already there: no row is called skipped


def test_a_warning_of_the_import_is_shown_with_its_line(tmp_path: Path) -> None:
    source = tmp_path / "source.sqlite"
    with Store.open(source) as store, store.begin() as mem:
        mem.schedules.create(
            "call", message="m", at=store.clock() + timedelta(days=1), timezone="Asia/Tokyo"
        )
    out = tmp_path / "source.jsonl"
    assert runner.invoke(app, ["export", str(out), "--db", str(source)]).exit_code == 0
    out.write_text(out.read_text(encoding="utf-8").replace("Asia/Tokyo", "Mars/Olympus"))

    shown = runner.invoke(app, ["import", str(out), "--db", str(tmp_path / "a.sqlite")])
    data = _import(str(out), "--db", str(tmp_path / "b.sqlite"))

    assert shown.exit_code == 0, shown.output
    assert re.search(
        r"warning: line \d+: memory_schedules: cron_expr 'once@Mars/Olympus'", shown.stderr
    )
    assert data["warnings_total"] == 1
    assert [f"warning: {w}" for w in data["warnings"]] == shown.stderr.splitlines()  # type: ignore[union-attr]
