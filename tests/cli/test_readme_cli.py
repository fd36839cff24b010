"""The README's command-line section and the command line agree: every command and option it
shows exists, and the options it says commands take (``--db``, ``--json``) are taken."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import click
import pytest
import typer.main
from typer.testing import CliRunner

from philont.cli import app

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
SECTION = README.split("## Command line", 1)[1].split("\n## ", 1)[0]
ROOT: click.Command = typer.main.get_command(app)
runner = CliRunner()


def _leaves(group: click.Command, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    children = getattr(group, "commands", None)
    if children is None:
        return [prefix]
    return [leaf for name, c in sorted(children.items()) for leaf in _leaves(c, (*prefix, name))]


LEAVES = _leaves(ROOT)


def _walk(words: list[str], node: click.Command) -> tuple[tuple[str, ...], click.Command]:
    """The longest command path ``words`` starts with, and its command."""
    path: list[str] = []
    for word in words:
        children = getattr(node, "commands", None)
        if children is None or word not in children:
            break
        path.append(word)
        node = children[word]
    return tuple(path), node


def _options(command: click.Command) -> set[str]:
    return {opt for p in command.params for opt in p.opts if opt.startswith("--")}


def _documented() -> list[tuple[tuple[str, ...], set[str]]]:
    """(command path, options shown) for every ``philont ...`` form in the section's table;
    ``philont facts list | get NS KEY`` is two forms, ``get`` under ``facts``."""
    forms = []
    rows = [line for line in SECTION.splitlines() if line.startswith("| `philont ")]
    for row in rows:
        cell = re.split(r"(?<!\\)\|", row)[1]  # the first column; "\|" separates forms
        for usage in re.findall(r"`(philont [^`]*)`", cell):
            alternatives = usage.split("\\|")
            first, _ = _walk(alternatives[0].split()[1:], ROOT)
            group, group_node = first[:-1], _command(first[:-1])
            forms.append((first, set(re.findall(r"--[a-z][a-z-]*", alternatives[0]))))
            for alt in alternatives[1:]:
                path, _ = _walk(alt.split(), group_node)
                forms.append(((*group, *path), set(re.findall(r"--[a-z][a-z-]*", alt))))
    return forms


def _command(path: tuple[str, ...]) -> click.Command:
    return _walk(list(path), ROOT)[1]


DOCUMENTED = _documented()


def _named_in(sentence: str) -> set[tuple[str, ...]]:
    return {tuple(m.split()[1:]) for m in re.findall(r"`(philont [a-z -]+)`", sentence)}


def _exceptions(option: str) -> set[tuple[str, ...]]:
    """The commands the section names as not taking ``option`` ("every command but ...")."""
    said = {
        m.group(2): _named_in(m.group(1))
        for m in re.finditer(r"every command but (.*?) takes `(--[a-z]+)", SECTION, re.I | re.S)
    }
    assert option in said, f"the section no longer says which commands take {option}"
    return said[option]


def test_every_command_the_readme_shows_exists_with_the_options_it_shows() -> None:
    assert len(DOCUMENTED) >= 25
    for path, options in DOCUMENTED:
        command = _command(path)
        assert getattr(command, "commands", None) is None, (path, "is a group, not a command")
        assert path in LEAVES, path
        assert options <= _options(command), (path, options - _options(command))


def test_every_command_is_in_the_readmes_table() -> None:
    assert set(LEAVES) == {path for path, _options in DOCUMENTED}


@pytest.mark.parametrize("option", ["--db", "--json"])
def test_exactly_the_commands_the_readme_excepts_lack_an_option(option: str) -> None:
    lacking = {leaf for leaf in LEAVES if option not in _options(_command(leaf))}
    assert lacking == _exceptions(option)


def test_db_check_and_history_answer_in_json(tmp_path: Path) -> None:
    db = str(tmp_path / "memory.sqlite")
    assert runner.invoke(app, ["db", "upgrade", "--db", db]).exit_code == 0
    checked = runner.invoke(app, ["db", "check", "--db", db, "--json"])
    assert checked.exit_code == 0, checked.output
    assert json.loads(checked.output)["at_head"] is True
    history = runner.invoke(app, ["db", "history", "--json"])
    assert history.exit_code == 0, history.output
    assert json.loads(history.output)[-1]["revision"] == json.loads(checked.output)["head"]


def _params(command: click.Command) -> list[click.Parameter]:
    children = getattr(command, "commands", {})
    return [*command.params, *(p for c in children.values() for p in _params(c))]


def test_every_environment_variable_an_option_reads_is_in_the_readme() -> None:
    """An option that falls back to an environment variable says so in ``--help``; the README
    names the variable too (``$PHILONT_MODEL`` was only in ``--help``)."""
    envvars = {
        name
        for param in _params(ROOT)
        for name in ([param.envvar] if isinstance(param.envvar, str) else param.envvar or [])
    }
    assert {"PHILONT_MODEL", "PHILONT_EMBEDDER"} <= envvars
    assert {name for name in envvars if f"${name}" not in README} == set()


REPO = Path(__file__).resolve().parents[2]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


USAGE = re.compile(r"\bphilont (?:--agent \S+ )?([a-z][a-z -]*)(.*)")


def _check_command_lines(spans: list[str], where: str) -> int:
    """Each span that writes ``philont <words> ...`` names a command by its words, and every
    ``--option`` in it is one of that command's options (or the root's); how many did."""
    checked = 0
    for words, rest in (m.groups() for span in spans if (m := USAGE.search(span))):
        path, command = _walk(words.split(), ROOT)
        if not path:
            continue  # prose such as "philont is ..."
        given = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", words + rest))
        assert given <= _options(command) | _options(ROOT) | {"--help"}, (where, words, rest)
        checked += 1
    return checked


def test_every_command_line_written_in_the_docs_names_a_command_and_its_options() -> None:
    """Beyond the table: ``philont agents list [--prefix P]``, ``philont --agent alice export
    FILE --db URL``, ``philont consolidate --model SPEC`` ... anywhere in README.md or docs/:
    the words after ``philont`` name a command, and every ``--option`` written up to the end
    of that code span is one of its options (or the root's)."""
    checked = 0
    for doc in DOCS:
        text = doc.read_text("utf-8")
        shell = re.findall(r"```sh\n(.*?)```", text, re.S)
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        spans = re.findall(r"`([^`]+)`", prose) + [ln for b in shell for ln in b.splitlines()]
        checked += _check_command_lines(spans, doc.name)
    assert checked > 30


def test_every_command_line_a_message_of_the_library_names_exists() -> None:
    """An error message that tells the user what to run names a real command and options:
    one told a user of the old per-agent layout to run ``philont export --from-schema``, an
    option no command has (the command is ``philont agents export-schema``). Every string in
    philont/ (f-strings' text parts too), each `code span` in it."""
    strings: list[str] = []
    for source in sorted((REPO / "philont").rglob("*.py")):
        for node in ast.walk(ast.parse(source.read_text("utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                strings.append(node.value)
    spans = [span for text in strings for span in re.findall(r"`([^`]+)`", text)]
    assert _check_command_lines(spans, "philont/") > 10
