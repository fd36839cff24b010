"""Every command's --help shows its text as written: brackets (``philont[mcp]``, ``[default]``)
are not taken for Rich markup and dropped."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click
import pytest
import typer.main
from typer.testing import CliRunner

from philont.cli import app

runner = CliRunner()


def _commands(group: click.Command, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield prefix
    for name, command in sorted(getattr(group, "commands", {}).items()):
        yield from _commands(command, (*prefix, name))


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


COMMANDS = list(_commands(typer.main.get_command(app)))


def _written(command: click.Command) -> str:
    """The help texts as written in the code: the command's and its parameters'."""
    texts = [command.help or ""]
    texts += [getattr(p, "help", None) or "" for p in command.params]
    return "\n".join(texts)


def _bracketed(text: str) -> set[str]:
    """Every ``[...]`` of a help text, as it should read (a Rich escape ``\\[`` unescaped)."""
    return {m.group(0) for m in re.finditer(r"\[[^\[\]\s]*\]", text.replace("\\[", "["))}


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "philont")
def test_every_bracket_in_a_help_text_reaches_the_terminal(path: tuple[str, ...]) -> None:
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    for token in _bracketed(_written(_command(path))):
        assert token in result.output, (path, token, result.output)


def test_mcp_help_names_the_extra_to_install() -> None:
    result = runner.invoke(app, ["mcp", "--help"], env={"COLUMNS": "200"})
    assert "pip install 'philont[mcp]'" in result.output, result.output


def test_help_texts_with_brackets_are_exercised() -> None:
    assert any(_bracketed(_written(_command(p))) for p in COMMANDS)
