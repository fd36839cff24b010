"""A command line click refuses (an unknown option or command, a missing argument, a number out
of range or not a number) is one line on stderr, ``error (usage): ...`` naming the help to read,
and exit 2, for every command; a closed pipe ends a command quietly."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from philont.cli import app
from philont.memory import Memory
from philont.schemas.inputs import MAX_LIMIT
from tests.support import cli_command as _command
from tests.support import cli_paths

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]


COMMANDS = list(cli_paths())


def _whole_number(param: click.Parameter) -> bool:
    annotation = param.type_descriptor.annotation  # type: ignore[attr-defined]
    return annotation is int or annotation == int | None


# (command, option) for every option that takes a whole number
INT_OPTIONS = [
    (path, param.opts[0])
    for path in COMMANDS
    for param in _command(path).params
    if param.param_type_name == "option" and _whole_number(param)
]


def _assert_usage(result: click.testing.Result, path: tuple[str, ...]) -> None:
    shown = f"{path}: {result.output!r}"
    assert result.exit_code == 2, shown
    assert result.stdout == "", shown
    lines = result.stderr.splitlines()
    assert len(lines) == 1, shown
    assert lines[0].startswith("error (usage): "), shown
    assert "--help`)" in lines[0], shown


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_an_unknown_option_is_one_usage_line(path: tuple[str, ...], tool_db: Path) -> None:
    result = runner.invoke(app, [*path, "--no-such-option", "--db", str(tool_db)])
    _assert_usage(result, path)
    assert "--no-such-option" in result.stderr


def test_an_unknown_command_or_top_level_option_is_one_usage_line() -> None:
    _assert_usage(runner.invoke(app, ["no-such-command"]), ("no-such-command",))
    _assert_usage(runner.invoke(app, ["--no-such-option", "stats"]), ("--no-such-option",))
    _assert_usage(runner.invoke(app, ["facts", "get"]), ("facts", "get"))


def test_a_group_without_its_command_still_shows_its_help() -> None:
    result = runner.invoke(app, ["facts"])
    assert "Usage:" in result.output and "history" in result.output


def test_whole_number_options_are_exercised() -> None:
    assert {("notes", "list"), ("backup",), ("timeline",), ("prefix",)} <= {
        p for p, _ in INT_OPTIONS
    }


@pytest.mark.parametrize(
    ("path", "option"), INT_OPTIONS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v
)
@pytest.mark.parametrize("value", ["x", "1.5", "", "١٢"])
def test_a_whole_number_option_given_text_is_one_usage_line(
    path: tuple[str, ...], option: str, value: str, tool_db: Path
) -> None:
    args = [*path, *(["x"] * _required_arguments(path)), option, value, "--db", str(tool_db)]
    _assert_usage(runner.invoke(app, args), path)


def _required_arguments(path: tuple[str, ...]) -> int:
    return sum(1 for p in _command(path).params if p.param_type_name == "argument" and p.required)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(limit=st.one_of(st.integers(max_value=0), st.integers(min_value=MAX_LIMIT + 1)))
def test_a_number_out_of_range_is_one_usage_line(limit: int, tool_db: Path) -> None:
    result = runner.invoke(app, ["notes", "list", "--limit", str(limit), "--db", str(tool_db)])
    _assert_usage(result, ("notes", "list"))


def test_a_closed_pipe_ends_the_command_quietly(tool_db: Path) -> None:
    with Memory.open(tool_db) as mem:
        for i in range(3000):
            mem.timeline.append(f"message {i} " + "x" * 200, role="user")
    command = [sys.executable, "-m", "philont", "timeline", "--limit", "3000", "--db", str(tool_db)]
    with subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.readline()
        proc.stdout.close()  # the reader goes away, as `| head -1` does
        stderr = proc.stderr.read()
    assert proc.returncode == 1, stderr
    assert stderr == "", stderr
