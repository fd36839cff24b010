"""One rule for a path you named that cannot be used, on every command that takes one (a file
argument, ``--db``, ``--model scripted:FILE``): ``error (file_path): cannot use '<path>'...:
<reason>`` on one line, exit 1, and nothing written anywhere. It used to be ``ENOENT`` exit 4 for
a missing import or restore file, ``file_path`` exit 1 for a directory given instead, and
``database_path`` for the same refusal of ``--db``."""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont import migrate
from philont.cli import app
from philont.transfer import export
from tests.support import cli_command, cli_paths, file_permissions_apply

runner = CliRunner()
PLACES = ("missing", "missing-directory", "directory", "under-a-file", "no-permission", "link-loop")
IRREGULAR = ("device", "fifo", "kernel-file")
"""Places that are no regular file: said so by the one check (``filewrite.regular``), never
opened: a pipe was waited on, ``/proc/self/status`` was "the database itself" to a restore, a
device was replaced by an export's file."""
LINE = re.compile(r"error \(file_path\): cannot use '([^\n]+)'[^\n]*: [^\n]+\n")


class World:
    """A directory holding a good database, an export of it and a model script, beside the bad
    places a command is given."""

    def __init__(self, base: Path, good: Path) -> None:
        self.base = base
        self.good = good
        self.export = base / "good.jsonl"
        self.script = base / "script.json"

    def place(self, kind: str, *, output: bool = False) -> Path:
        """The bad place of ``kind`` (made on disk where it must exist)."""
        if kind == "missing":
            return self.base / "missing.x"
        if kind == "missing-directory":
            return self.base / "no" / "such" / "dir" / "x.x"
        if kind == "directory":
            (self.base / "a-directory").mkdir(exist_ok=True)
            return self.base / "a-directory"
        if kind == "under-a-file":
            (self.base / "plain.txt").write_text("text\n", encoding="utf-8")
            return self.base / "plain.txt" / "x.x"
        if kind in IRREGULAR:
            return _irregular(self.base, kind)
        if kind == "link-loop":  # two symbolic links naming each other
            for name, other in (("loop-a", "loop-b"), ("loop-b", "loop-a")):
                if not (self.base / name).is_symlink():
                    (self.base / name).symlink_to(other)
            return self.base / "loop-a"
        assert kind == "no-permission"
        locked = self.base / "locked"
        locked.mkdir(exist_ok=True)
        if output:  # a file in a directory that cannot be written
            locked.chmod(0o500)
            return locked / "x.x"
        unreadable = self.base / "unreadable.x"  # a file that cannot be read
        unreadable.write_text("{}\n", encoding="utf-8")
        unreadable.chmod(0)
        return unreadable


def _irregular(base: Path, kind: str) -> Path:
    """A place of ``kind`` in :data:`IRREGULAR`: a null device of our own where we may make one
    (root: an export's rename would replace the system's), a fifo, a ``/proc`` file (one of no
    ``/proc/self`` link: ``--db`` names the path it resolves)."""
    if kind == "kernel-file":
        return Path("/proc/version")
    node = base / kind
    if kind == "device" and os.geteuid() != 0:
        return Path("/dev/null")
    if not node.exists():
        if kind == "device":
            os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        else:
            os.mkfifo(node)
    return node


@pytest.fixture
def world(tmp_path: Path, tool_db: Path) -> Iterator[World]:
    good = tmp_path / "good.sqlite"
    good.write_bytes(tool_db.read_bytes())
    migrate.upgrade(good)
    w = World(tmp_path, good)
    export(good, w.export)
    w.script.write_text("{}", encoding="utf-8")
    yield w
    for path in (tmp_path / "locked",):
        if path.exists():
            path.chmod(0o700)


def _tree(base: Path) -> dict[str, tuple[int, int, int]]:
    """Every file and directory under ``base``: size, modification time, mode."""
    found = {}
    for root, dirs, files in os.walk(base):
        for name in dirs + files:
            st = os.lstat(os.path.join(root, name))
            found[os.path.relpath(os.path.join(root, name), base)] = (
                st.st_size,
                st.st_mtime_ns,
                st.st_mode,
            )
    return found


# A file argument: (its name, the command with the place in it, whether the file is written)
FileCommand = tuple[str, Callable[[World, Path], list[str]], bool]
FILE_COMMANDS: list[FileCommand] = [
    ("import FILE", lambda w, p: ["import", str(p), "--db", str(w.base / "new.sqlite")], False),
    ("import --merge FILE", lambda w, p: ["import", str(p), "--merge", "--db", str(w.good)], False),
    ("export FILE", lambda w, p: ["export", str(p), "--db", str(w.good)], True),
    ("restore FILE", lambda w, p: ["restore", str(p), "--db", str(w.good)], False),
    (
        "agents export-schema SCHEMA FILE",
        lambda w, p: ["agents", "export-schema", "agent_old", str(p), "--db", str(w.good)],
        True,
    ),
    (
        "consolidate --model scripted:FILE",
        lambda w, p: ["consolidate", "--once", "--model", f"scripted:{p}", "--db", str(w.good)],
        False,
    ),
]


def _assert_refused(world: World, args: list[str], place: Path) -> str:
    """The one line of the refusal (after checking it and that nothing was written)."""
    before = _tree(world.base)
    with file_permissions_apply():  # "no-permission" refuses root too
        result = runner.invoke(app, args)
    shown = f"{args}: {result.output}"
    assert result.exit_code == 1, shown
    found = LINE.fullmatch(result.stderr)
    assert found, shown
    assert found[1] == str(place), shown  # the path as it was named
    assert result.stdout == "", shown
    assert _tree(world.base) == before, shown  # nothing written, nothing created
    return result.stderr


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("place", PLACES)
def test_a_file_argument_that_cannot_be_used_is_file_path_exit_1(
    command: FileCommand, place: str, world: World
) -> None:
    _, build, output = command
    if output and place == "missing":
        pytest.skip("an output file that does not exist yet is written")
    if output and place == "link-loop":
        pytest.skip("an output file replaces what is at its path, a link too")
    where = world.place(place, output=output)
    line = _assert_refused(world, build(world, where), where)
    if place == "under-a-file":  # the plain file is the reason, not "no such file"
        assert "not a directory" in line.lower(), line


@pytest.mark.parametrize("command", FILE_COMMANDS, ids=lambda c: c[0])
@pytest.mark.parametrize("place", IRREGULAR)
def test_a_file_argument_that_is_no_regular_file_says_so(
    command: FileCommand, place: str, world: World
) -> None:
    _, build, _output = command
    where = world.place(place)
    kind = os.stat(where).st_mode
    line = _assert_refused(world, build(world, where), where)
    assert "it is not a regular file" in line, line
    assert stat.S_IFMT(os.stat(where).st_mode) == stat.S_IFMT(kind)  # never replaced


@pytest.mark.parametrize("place", IRREGULAR)
def test_a_restore_onto_a_db_that_is_no_regular_file_says_so(place: str, world: World) -> None:
    where = world.place(place)
    kind = os.stat(where).st_mode
    line = _assert_refused(world, ["restore", str(world.good), "--db", str(where)], where)
    assert "it is not a regular file" in line, line
    assert stat.S_IFMT(os.stat(where).st_mode) == stat.S_IFMT(kind)


# Commands that create a database where none is (a missing --db is theirs to make).
CREATES = {("db", "upgrade"), ("import",), ("restore",), ("demo",), ("mcp",)}
DB_COMMANDS = [p for p in cli_paths() if any("--db" in o.opts for o in cli_command(p).params)]


def _db_args(path: tuple[str, ...], world: World, db: Path) -> list[str]:
    """The command with ``db`` as ``--db`` and good values for everything else it needs."""
    args = [*path, "--db", str(db)]
    for param in cli_command(path).params:
        if param.param_type_name == "argument" and param.required:
            args.append(
                {("import",): str(world.export), ("restore",): str(world.good)}.get(path, "x")
            )
    if path == ("export",):
        args[-1] = str(world.base / "out.jsonl")
    if path == ("embed",):
        args += ["--embedder", "hash:8"]
    if path == ("consolidate",):
        args += ["--once", "--model", f"scripted:{world.script}"]
    return args


@pytest.mark.parametrize("path", DB_COMMANDS, ids=lambda p: " ".join(p))
@pytest.mark.parametrize("place", PLACES)
def test_a_db_path_that_cannot_be_used_is_file_path_exit_1(
    path: tuple[str, ...], place: str, world: World
) -> None:
    if path == ("agents", "export-schema"):
        pytest.skip("its --db must be a PostgreSQL URL: an SQLite path is refused as such")
    if path in CREATES and place in ("missing", "missing-directory"):
        pytest.skip("creates the database there")
    where = world.place(place)
    if place == "no-permission":  # a database in a directory that cannot be entered
        where = world.base / "locked" / "memory.sqlite"
        (world.base / "locked").chmod(0)
    line = _assert_refused(world, _db_args(path, world, where), where)
    if place == "under-a-file":  # the reason is the plain file, never advice that cannot work
        assert "a parent is not a directory" in line, line  # was "create it with db upgrade"


def test_the_table_covers_every_command_that_takes_a_file() -> None:
    named = {c[0].split(" FILE")[0].split(" SCHEMA")[0].split(" --")[0] for c in FILE_COMMANDS}
    takes_file = {
        " ".join(p) for p in cli_paths() if any(a.name == "file" for a in cli_command(p).params)
    }
    assert takes_file <= named
    assert {"backup", "restore", "db upgrade", "db current", "db check", "mcp", "stats"} <= {
        " ".join(p) for p in DB_COMMANDS
    }


def test_json_output_is_not_printed_for_a_refused_path(world: World) -> None:
    result = runner.invoke(app, ["import", str(world.base / "nope.jsonl"), "--json"])
    assert result.exit_code == 1 and result.stdout == ""
    assert "error (file_path)" in result.stderr
    with pytest.raises(json.JSONDecodeError):
        json.loads(result.stderr)
