"""Every command with bad paths: a message and an exit code, never a traceback; `export -` and
`import -` stream through stdout and stdin."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import click
import pytest
from typer.testing import CliRunner

from philont import migrate
from philont.cli import app
from tests.support import cli_command as _command
from tests.support import cli_paths

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
# Commands that would run for long, or serve stdin, on a path they may create.
CREATE_AND_RUN = {"demo", "mcp"}
ONE_ERROR_LINE = re.compile(r"error \([A-Za-z_]+\): [^\n]+\n")


COMMANDS = list(cli_paths())


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    """Bad places: a directory, a missing file, one in a missing directory, one under a plain
    file, and a file that is not a database."""
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 50, encoding="utf-8")
    (tmp_path / "a-directory").mkdir()
    return {
        "directory": tmp_path / "a-directory",
        "missing": tmp_path / "missing.sqlite",
        "missing-directory": tmp_path / "no" / "such" / "dir" / "x.sqlite",
        "under-a-file": text / "x.sqlite",
        "not-a-database": text,
        "device": Path("/dev/null"),
        "kernel-file": Path("/proc/self/status"),  # was database_read_only
    }


def _args(path: tuple[str, ...], place: Path, *, db: Path | None = None) -> list[str] | None:
    """The command with ``place`` in every path it takes (``--db`` and a file argument; ``db``
    instead for ``--db`` when given), and placeholders for its other required arguments; None
    when it takes no such path."""
    command = _command(path)
    args = list(path)
    takes_path = False
    for param in command.params:
        if param.param_type_name == "option" and "--db" in param.opts:
            args += ["--db", str(db or place)]
            takes_path = takes_path or db is None
        elif param.param_type_name == "argument" and param.required:
            if param.name == "file":
                args.append(str(place))
                takes_path = True
            else:
                args.append("x")
    return args if takes_path else None


def _assert_explained(result: click.testing.Result, args: list[str]) -> None:
    shown = f"{args}: {result.output}"
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        shown,
        result.exception,
    )
    assert "Traceback" not in result.output, shown
    if result.exit_code != 0:
        assert result.exit_code in (1, 2, 3, 4, 5), shown
        # one line, `error (<code>): <message>`, and nothing else on stderr (no progress line)
        assert ONE_ERROR_LINE.fullmatch(result.stderr), shown


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
@pytest.mark.parametrize(
    "place",
    [
        "directory",
        "missing",
        "missing-directory",
        "under-a-file",
        "not-a-database",
        "device",
        "kernel-file",
    ],
)
def test_every_command_explains_a_bad_path_without_a_traceback(
    path: tuple[str, ...], place: str, places: dict[str, Path]
) -> None:
    if path[0] in CREATE_AND_RUN and place in ("missing", "missing-directory"):
        pytest.skip("would create the database and run (the demo) or serve stdin (mcp)")
    args = _args(path, places[place])
    if args is None:
        pytest.skip("takes no path")
    result = runner.invoke(app, args)
    _assert_explained(result, args)
    if place in ("directory", "under-a-file", "not-a-database", "device", "kernel-file"):
        assert result.exit_code != 0, (args, result.output)


FILE_COMMANDS = [p for p in COMMANDS if any(a.name == "file" for a in _command(p).params)]


@pytest.mark.parametrize("path", FILE_COMMANDS, ids=lambda p: " ".join(p))
@pytest.mark.parametrize(
    "place", ["directory", "missing", "missing-directory", "under-a-file", "not-a-database"]
)
def test_a_bad_file_argument_beside_a_good_database_is_explained(
    path: tuple[str, ...], place: str, places: dict[str, Path], tool_db: Path
) -> None:
    args = _args(path, places[place], db=tool_db)
    assert args is not None
    result = runner.invoke(app, args)
    _assert_explained(result, args)
    if place in ("directory", "missing-directory", "under-a-file"):
        assert result.exit_code != 0, (args, result.output)


@pytest.mark.parametrize(
    "since",
    [
        "0001-01-01T00:00:00+14:00",
        "9999-12-31T23:59:59-14:00",
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59.999Z",
        "-99999999999999",
        "99999999999999999999",
        "253402300799999",
        "not a time",
    ],
)
def test_timeline_at_the_calendars_edge_is_an_answer_or_a_usage_error(
    since: str, tool_db: Path
) -> None:
    for option in ("--since", "--until"):
        args = ["timeline", option, since, "--db", str(tool_db)]
        result = runner.invoke(app, args)
        _assert_explained(result, args)
        assert result.exit_code in (0, 2), (args, result.output)


def test_every_command_is_exercised() -> None:
    names = {" ".join(p) for p in COMMANDS}
    assert {"import", "export", "timeline", "restore", "backup", "stats", "db upgrade"} <= names
    assert {"agents delete", "agents export-schema"} <= names
    assert {p[0] for p in FILE_COMMANDS} == {"import", "export", "restore", "agents"}


# --- stdout and stdin ------------------------------------------------------------------------


def _philont(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "philont", *args],
        cwd=REPO,
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )


def test_export_dash_writes_to_stdout_and_import_dash_reads_stdin(
    copy_fixture,
    tmp_path: Path,  # type: ignore[no-untyped-def]
) -> None:
    source = copy_fixture("v31")
    migrate.upgrade(source)
    exported = _philont("export", "--db", str(source), "-")
    assert exported.returncode == 0, exported.stderr
    assert not (REPO / "-").exists() and not Path("-").exists()
    lines = exported.stdout.splitlines()
    assert json.loads(lines[0])["format"] == "philont-export"
    assert json.loads(lines[-1])["end"] is True
    assert "exported" in exported.stderr

    target = tmp_path / "copy" / "memory.sqlite"
    imported = _philont("import", "--db", str(target), "-", stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    with closing(sqlite3.connect(str(source))) as a, closing(sqlite3.connect(str(target))) as b:
        query = "SELECT id, content FROM memory_raw_messages ORDER BY id"
        assert a.execute(query).fetchall() == b.execute(query).fetchall()


def test_an_export_to_stdout_with_json_keeps_stdout_for_the_data(tool_db: Path) -> None:
    done = _philont("export", "--db", str(tool_db), "-", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[0])["format"] == "philont-export"
    assert json.loads(done.stderr.strip().splitlines()[-1])["file"] == "-"


def test_a_bad_import_from_stdin_names_the_line(tmp_path: Path) -> None:
    done = _philont("import", "--db", str(tmp_path / "m.sqlite"), "-", stdin="{not json\n")
    assert done.returncode == 1
    assert "line 1" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "m.sqlite").exists()


def test_a_read_only_file_can_still_be_looked_at_and_is_never_written(copy_fixture) -> None:  # type: ignore[no-untyped-def]
    # `db current`, `db check`, `stats` and `facts list` only read, but refused a read-only file
    # (the shared fixtures are read-only, so a plain `cp` of one gave database_read_only
    # everywhere).
    import hashlib

    path = copy_fixture("v31")
    migrate.upgrade(path)
    path.chmod(0o444)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for args in (["db", "current", "--json"], ["db", "check"], ["stats", "--json"]):
        result = runner.invoke(app, [*args, "--db", str(path)])
        assert result.exit_code == 0, (args, result.output)
    current = json.loads(runner.invoke(app, ["db", "current", "--json", "--db", str(path)]).stdout)
    assert current["schema_version"] == "31"
    # a reading command falls back to a read-only Store (it was database_read_only)
    result = runner.invoke(app, ["facts", "list", "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@pytest.mark.parametrize("command", [["facts", "list"], ["db", "upgrade"], ["stats"]])
@pytest.mark.parametrize("place", ["device", "kernel-file"])
def test_a_db_that_is_no_regular_file_is_a_file_path_error(
    command: list[str], place: str, places: dict[str, Path]
) -> None:
    """``--db /proc/self/status`` said database_read_only (and ``facts list``: out of date),
    where ``/dev/null`` was a path that cannot hold a database: both are now."""
    result = runner.invoke(app, [*command, "--db", str(places[place])])
    assert result.exit_code != 0, result.output
    assert result.stderr.startswith("error (file_path):"), result.stderr
    assert "not a regular file" in result.stderr, result.stderr
