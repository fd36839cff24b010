"""A missing thing is reported by the command line with the same specific code the tools and
services use (fact_not_found, skill_not_found, ...), and exit code 4."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from typer.testing import CliRunner

import philont.cli
from philont import tools
from philont.cli import app
from philont.errors import NotFoundError

runner = CliRunner()
CLI_DIR = Path(philont.cli.__file__).parent

# (command, the tool call that looks the same thing up, or None, the code both must report)
MISSING: list[tuple[list[str], tuple[str, dict[str, str]] | None, str]] = [
    (
        ["facts", "get", "user", "nope"],
        ("get_fact", {"namespace": "user", "key": "nope"}),
        "fact_not_found",
    ),
    (["facts", "history", "user", "nope"], None, "fact_not_found"),
    (["skills", "show", "nope"], ("use_skill", {"name": "nope"}), "skill_not_found"),
    (["calendar", "remove", "nope"], None, "calendar_event_not_found"),
    (["restore", "nope.sqlite"], None, "ENOENT"),
    (["import", "nope.jsonl"], None, "ENOENT"),
]


@pytest.mark.parametrize(("command", "tool", "code"), MISSING, ids=lambda v: str(v))
def test_a_missing_thing_has_its_specific_code_and_exit_4(
    command: list[str],
    tool: tuple[str, dict[str, str]] | None,
    code: str,
    tool_db: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [*command, "--db", str(tool_db)])
    assert result.exit_code == 4, result.output
    assert f"error ({code})" in result.output, result.output
    if tool is not None:
        assert tools.call(*tool, db=tool_db).error_code == code


def _bare_not_found_raised(source: str) -> list[int]:
    """Lines that build the generic NotFoundError itself (not one of its specific kinds)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == NotFoundError.__name__
    ]


@pytest.mark.parametrize("module", sorted(p.name for p in CLI_DIR.glob("*.py")))
def test_no_command_reports_the_generic_not_found(module: str) -> None:
    assert _bare_not_found_raised((CLI_DIR / module).read_text(encoding="utf-8")) == []
