"""Every command's --help shows its text as written: brackets (``philont[mcp]``, ``[default]``)
are not taken for Rich markup and dropped."""

from __future__ import annotations

import re

import click
import pytest
from typer.testing import CliRunner

from philont.cli import app
from tests.support import cli_command as _command
from tests.support import cli_paths

runner = CliRunner()


COMMANDS = list(cli_paths(groups=True))


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
