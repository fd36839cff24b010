"""The `philont` command line through typer's runner: success and failure paths."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont import Memory, migrate, tools
from philont.cli import app

runner = CliRunner()


def run(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


@pytest.fixture
def filled(tool_db: Path) -> Path:
    with Memory.open(tool_db) as mem:
        mem.facts.store("user.home", "city", "Paris")
        mem.facts.store("user.home", "city", "Berlin")
        mem.notes.add("The deposit is three months of rent", importance=0.8)
        mem.skills.create("unzip-archive", "Unpack zip archives", "zip", "1. unzip f.zip")
        mem.timeline.append("What about the Kastanienallee flat?")
    return tool_db


def test_demo_runs_to_completion_on_a_fresh_file(tmp_path: Path) -> None:
    db = tmp_path / "demo.sqlite"
    code, output = run("demo", "--db", str(db), "--seed", "1")
    assert code == 0, output
    for phrase in (
        "never decay",
        "superseded",
        "grade=draft (not confirmed)",
        "grade=confirmed",
        "grade=deprecated",
        "recall trigger fired",
        "the old turn is back in context",
        "reminder due",
    ):
        assert phrase in output, phrase
    assert migrate.status(db).at_head


def test_demo_is_deterministic_for_a_seed(tmp_path: Path) -> None:
    _, first = run("demo", "--db", str(tmp_path / "a.sqlite"), "--seed", "5")
    _, second = run("demo", "--db", str(tmp_path / "b.sqlite"), "--seed", "5")
    strip = lambda text: "\n".join(  # noqa: E731
        line for line in text.splitlines() if ".sqlite" not in line
    )
    assert strip(first) == strip(second)


def test_db_upgrade_current_check_and_history(tmp_path: Path) -> None:
    db = str(tmp_path / "m.sqlite")
    assert run("db", "upgrade", "--db", db)[0] == 0
    code, output = run("db", "current", "--db", db, "--json")
    assert code == 0 and json.loads(output)["at_head"] is True
    assert run("db", "check", "--db", db)[0] == 0
    code, output = run("db", "history", "--json")
    assert code == 0 and json.loads(output)[0]["revision"] == "v001"


def test_db_check_exits_3_with_the_fixing_command_on_an_old_database(copy_fixture) -> None:  # type: ignore[no-untyped-def]
    db = copy_fixture("v27")
    code, output = run("db", "check", "--db", str(db))
    assert code == 3 and "upgrade" in output


def test_db_upgrade_names_what_it_adopted_and_where_the_copy_from_before_is(copy_fixture) -> None:  # type: ignore[no-untyped-def]
    db = copy_fixture("v27")
    code, output = run("db", "upgrade", "--db", str(db))
    assert code == 0, output
    lines = output.splitlines()
    assert lines[1] == "adopted a Philont database at v027"
    copy = Path(lines[2].removeprefix("a copy from before the upgrade: "))
    assert copy.parent == db.parent / "backups" and copy.name.endswith("-pre-upgrade.sqlite")
    assert copy.is_file()

    code, output = run("db", "upgrade", "--db", str(db))
    assert (code, output.splitlines()[1:]) == (0, [])  # nothing to do: no copy, nothing adopted


def test_an_unknown_schema_version_fails_upgrade_with_exit_1(copy_fixture) -> None:  # type: ignore[no-untyped-def]
    db = copy_fixture("v27")
    with closing(sqlite3.connect(str(db))) as conn:
        conn.execute("UPDATE memory_meta SET value='99' WHERE key='schema_version'")
        conn.commit()
    code, output = run("db", "upgrade", "--db", str(db))
    assert code == 1 and "unknown_schema_version" in output


def test_stats_reports_rows_and_fts_health(filled: Path) -> None:
    code, output = run("stats", "--db", str(filled), "--json")
    data = json.loads(output)
    assert code == 0 and data["rows"]["facts"] == 2
    assert set(data["fts"].values()) == {"ok"}


def test_inspection_of_a_missing_database_fails_clearly(tmp_path: Path) -> None:
    code, output = run("stats", "--db", str(tmp_path / "nope.sqlite"))
    assert code == 1 and "philont db upgrade" in output


def test_facts_list_get_and_history_show_scores(filled: Path) -> None:
    code, output = run("facts", "list", "user.*", "--db", str(filled), "--json")
    assert code == 0 and json.loads(output)[0]["score"] == 1.0
    code, output = run("facts", "history", "user.home", "city", "--db", str(filled), "--json")
    assert [r["value"] for r in json.loads(output)] == ["Berlin", "Paris"]
    assert run("facts", "get", "user.home", "city", "--db", str(filled))[0] == 0
    assert run("facts", "get", "user.home", "nope", "--db", str(filled))[0] == 4


def test_notes_search_and_list(filled: Path) -> None:
    code, output = run("notes", "search", "how much deposit?", "--db", str(filled), "--json")
    assert code == 0 and "three months" in output
    assert run("notes", "list", "--db", str(filled))[0] == 0


def test_skills_list_and_show(filled: Path) -> None:
    code, output = run("skills", "list", "--db", str(filled), "--json")
    assert code == 0 and json.loads(output)[0]["name"] == "unzip-archive"
    code, output = run("skills", "show", "unzip-archive", "--db", str(filled), "--json")
    assert code == 0 and json.loads(output)["grade"] == "draft"
    assert run("skills", "show", "missing", "--db", str(filled))[0] == 4


def test_search_finds_messages_best_first_within_the_window(filled: Path) -> None:
    with Memory.open(filled) as mem:
        mem.timeline.start_session("s2")
        mem.timeline.append("The flat on Kastanienallee has a balcony", session_id="s2")
        mem.timeline.append("We talked about the weather")
    code, output = run("search", "Kastanienallee balcony", "--db", str(filled), "--json")
    hits = json.loads(output)
    assert code == 0 and hits[0]["content"] == "The flat on Kastanienallee has a balcony"
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    code, output = run("search", "Kastanienallee", "--session", "s2", "--db", str(filled))
    assert code == 0 and "balcony" in output and "What about" not in output
    code, output = run("search", "Kastanienallee", "--until", "2000-01-01", "--db", str(filled))
    assert code == 0 and "no matching messages" in output
    assert run("search", '"flat* OR', "--db", str(filled))[0] == 0  # never FTS5 syntax


def test_timeline_and_bad_since(filled: Path) -> None:
    code, output = run("timeline", "--db", str(filled), "--json")
    assert code == 0 and "Kastanienallee" in output
    code, _ = run("timeline", "--db", str(filled), "--since", "yesterday")
    assert code == 2


def test_recall_shows_the_split_and_token_counts(filled: Path) -> None:
    code, output = run("recall", "the Kastanienallee flat", "--db", str(filled), "--json")
    data = json.loads(output)
    assert code == 0 and data["recency_count"] >= 1 and "total_tokens" in data


def test_prefix_prints_the_memory_index(filled: Path) -> None:
    code, output = run("prefix", "--db", str(filled))
    assert code == 0 and "user.home.city" in output and "unzip-archive" in output


def test_backup_export_import_and_restore_round_trip(filled: Path, tmp_path: Path) -> None:
    code, output = run("backup", "--db", str(filled), "--keep", "2", "--json")
    backup = Path(json.loads(output)["backup"])
    assert code == 0 and backup.exists()
    dump = tmp_path / "dump.jsonl"
    assert run("export", str(dump), "--db", str(filled))[0] == 0
    target = tmp_path / "copy.sqlite"
    assert run("import", str(dump), "--db", str(target))[0] == 0
    assert run("import", str(dump), "--db", str(target))[0] == 5  # refuses a non-empty db
    assert run("import", str(dump), "--db", str(target), "--merge")[0] == 0
    tools.call("store_fact", {"namespace": "user", "key": "later", "value": 1}, db=filled)
    code, output = run("restore", str(backup), "--db", str(filled), "--json")
    assert code == 0 and json.loads(output)["previous_kept_as"]
    assert not tools.call("get_fact", {"namespace": "user", "key": "later"}, db=filled).ok


@pytest.mark.parametrize("folder", ["[bold]home", "[red]x[/red]", "a [link=y]b", "plain"])
def test_backup_and_restore_print_the_paths_as_they_are(tmp_path: Path, folder: str) -> None:
    """Their lines went through rich markup: a folder named '[bold]home' was printed as
    'home', a path that does not exist, to copy into the next command."""
    db = tmp_path / folder / "memory.sqlite"
    db.parent.mkdir(parents=True)
    migrate.upgrade(db)
    code, output = run("backup", "--db", str(db))
    taken = next((db.parent / "backups").glob("memory-2*.sqlite"))
    assert (code, output) == (0, f"backup written: {taken}\n")

    code, output = run("restore", str(taken), "--db", str(db))
    safety = next((db.parent / "backups").glob("*-pre-restore.sqlite"))
    assert code == 0
    assert output == f"restored {taken} into {db} (previous file kept as {safety})\n"

    fresh = tmp_path / folder / "new.sqlite"
    code, output = run("restore", str(taken), "--db", str(fresh))
    assert (code, output) == (
        0,
        f"restored {taken} into {fresh} (there was no previous database)\n",
    )


def test_a_restored_older_database_is_said_to_need_an_upgrade(
    copy_fixture: Callable[[str], Path], tmp_path: Path
) -> None:
    """A backup from an older release, or a Philont v1 file, is restored as it is: every
    command then refuses it (exit 3) until it is upgraded, so the restore says so."""
    db = tmp_path / "my memory" / "memory.sqlite"
    db.parent.mkdir()
    migrate.upgrade(db)
    old = copy_fixture("v31")
    head = migrate.head_revision()

    code, output = run("restore", str(old), "--db", str(db))
    assert code == 0
    assert output.splitlines()[1] == (
        f"it is at revision v031, head is {head}: run `philont db upgrade --db '{db}'` before "
        "using it (it keeps a -pre-upgrade copy)"
    )
    code, output = run("restore", str(old), "--db", str(db), "--json")
    assert json.loads(output)["at_head"] is False


def test_import_of_a_malformed_file_names_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format":"philont-export","format_version":1}\nnot json\n')
    code, output = run("import", str(bad), "--db", str(tmp_path / "t.sqlite"))
    assert code == 1 and "line" in output


def test_restore_of_a_missing_file_is_a_file_path_error(tmp_path: Path) -> None:
    code, output = run("restore", str(tmp_path / "none.sqlite"), "--db", str(tmp_path / "x"))
    assert code == 1 and "error (file_path)" in output and "no such backup file" in output


@pytest.mark.parametrize(
    "text",
    ["pip install 'philont[postgres]'", "[red]not a style[/red]", "a path /tmp/[x]/m.sqlite"],
)
def test_error_messages_reach_the_terminal_verbatim(text: str) -> None:
    """Messages quote hints, paths and user text: brackets are never read as rich markup."""
    from philont.cli.common import err, fail
    from philont.errors import BackendError

    with err.capture() as captured:
        fail(BackendError(text))
    assert text in captured.get()


def test_a_missing_database_path_with_brackets_is_named_verbatim(tmp_path: Path) -> None:
    missing = tmp_path / "[old]" / "nope.sqlite"
    code, output = run("stats", "--db", str(missing))
    assert code == 1 and str(missing) in output


def test_import_merge_of_a_database_whose_message_ids_collide_refuses_with_its_code(
    filled: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.sqlite"
    with Memory.open(other) as mem:
        mem.timeline.append("Bob: my dog is called Rex")
    dump = tmp_path / "other.jsonl"
    assert run("export", str(dump), "--db", str(other))[0] == 0
    with closing(sqlite3.connect(str(filled))) as conn:
        before = list(conn.iterdump())

    code, output = run("import", str(dump), "--db", str(filled), "--merge")

    assert code == 5 and "import_merge_conflict" in output and "memory_raw_messages" in output
    with closing(sqlite3.connect(str(filled))) as conn:
        assert list(conn.iterdump()) == before


def test_an_import_refused_for_a_non_empty_database_names_the_option_that_merges(
    filled: Path, tmp_path: Path
) -> None:
    dump = tmp_path / "dump.jsonl"
    assert run("export", str(dump), "--db", str(filled))[0] == 0
    code, output = run("import", str(dump), "--db", str(filled))
    assert code == 5 and "--merge" in " ".join(output.split())


@pytest.mark.parametrize("before", [None, "someone-else"])
@pytest.mark.parametrize("command", [["stats"], ["facts", "list"], ["no-such-command"]])
def test_agent_applies_to_its_command_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: str | None, command: list[str]
) -> None:
    # --agent used to stay in os.environ after the command: a command run in-process (a test,
    # a host) then served that agent in every later unit of work of the process
    if before is None:
        monkeypatch.delenv("PHILONT_AGENT", raising=False)
    else:
        monkeypatch.setenv("PHILONT_AGENT", before)
    db = tmp_path / "m.sqlite"
    with Memory.open(db):
        pass
    runner.invoke(app, ["--agent", "alice", *command, "--db", str(db)])
    assert os.environ.get("PHILONT_AGENT") == before
