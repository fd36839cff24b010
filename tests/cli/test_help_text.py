"""Every command's --help shows its text as written: brackets (``philont[mcp]``, ``[default]``)
are not taken for Rich markup and dropped."""

from __future__ import annotations

import ast
import re
import subprocess
import sys

import click
import click.testing
import pytest
import typer.main
from typer.testing import CliRunner

from philont.cli import app, root
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


def _root_help(*, loaded: bool) -> str:
    group = typer.main.get_command(app)
    if loaded:
        dict(group.commands.items())  # type: ignore[attr-defined]  # every command made
    result = click.testing.CliRunner().invoke(
        group, ["--help"], prog_name="philont", env={"COLUMNS": "100"}
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_philont_help_lists_each_command_as_its_own_help_says() -> None:
    """``philont --help`` lists the commands from a table (it loads none): the table is the
    commands' own first help paragraphs, in their order."""
    assert _root_help(loaded=False) == _root_help(loaded=True)
    assert set(root.COMMANDS) | set(root.GROUPS) == {p[0] for p in COMMANDS if len(p) == 1}


HEAVY = ("sqlalchemy", "alembic", "pydantic", "numpy", "structlog", "philont.store", "mcp")


def _loaded_by(args: list[str]) -> list[str]:
    code = (
        "import sys\n"
        f"sys.argv = ['philont', *{args!r}]\n"
        "from philont.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return ast.literal_eval(done.stderr.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_philont_help_loads_no_database_or_model_library() -> None:
    assert _loaded_by(["--help"]) == []


@pytest.mark.parametrize("name", [*root.COMMANDS, *root.GROUPS])
def test_a_commands_help_loads_no_database_library(name: str) -> None:
    # pydantic: the values' input types; structlog: the group's callback sets up logging
    assert [m for m in _loaded_by([name, "--help"]) if m not in ("pydantic", "structlog")] == []


GROUPS = [p for p in COMMANDS if getattr(_command(p), "commands", None)]


@pytest.mark.parametrize("path", GROUPS, ids=lambda p: " ".join(p) or "philont")
def test_a_listing_shows_each_commands_first_paragraph_on_one_line(path: tuple[str, ...]) -> None:
    """On a terminal wide enough, a group's list of commands gives each its first help
    paragraph on one row (typer's Rich listing kept the help's own line breaks: ``philont
    --help`` broke "consolidate" after "summaries from")."""
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "1000"})
    assert result.exit_code == 0, result.output
    rows = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("│ ")}
    for name, command in _command(path).commands.items():
        first = " ".join((command.help or "").split("\n\n")[0].split())
        assert first and first.replace("\\[", "[") in rows[name], (path, name, result.output)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "philont")
def test_a_flag_is_not_shown_as_taking_a_value(path: tuple[str, ...]) -> None:
    """``--once``, ``--help``: a flag takes no value, so its help shows no type (typer 0.29
    shows ``<bool>`` beside every flag as if it took a value)."""
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "<bool>" not in result.output, (path, result.output)


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p) or "philont")
def test_a_help_shows_no_docstring_markup(path: tuple[str, ...]) -> None:
    """A help text is read on a terminal: a docstring's reST literal (````name````) reaches it
    with both backquotes (`philont search --help` showed ````mem.search.messages````)."""
    result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "``" not in result.output, (path, result.output)
