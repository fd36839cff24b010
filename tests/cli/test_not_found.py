"""A missing thing is reported by the command line with the same specific code the tools and
services use (fact_not_found, skill_not_found, ...), and exit code 4."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
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
]
# A missing file you named is no missing memory: `file_path`, exit 1 (tests/cli/test_file_paths.py).


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


# --- a bad namespace or key: refused by the command line exactly as by the tools ---------------

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=120)
SAMPLES = ["", " ", ".*", "*", "user.*", "user", "BAD%NS", "self", "a" * 101, "a" * 200 + ".*"]


_BAD_VALUE = re.compile(r"error \(usage\): Invalid value for '(\w+)': (.*) \(see `[^`]*`\)")


def _refused(result: Any) -> str | None:
    """The refusal of a command's value (``namespace: <why>``, as a tool says it; bad usage,
    exit 2), or None when it was not refused."""
    for line in result.output.splitlines():
        found = _BAD_VALUE.fullmatch(line)
        if found:
            assert result.exit_code == 2, result.output
            return f"{found[1]}: {found[2]}"
    return None


def _same_refusal(tool_result: tools.ToolResult, cli_result: Any) -> None:
    refused = tool_result.error_code == "invalid_arguments"
    assert (_refused(cli_result) is not None) == refused, (tool_result, cli_result.output)
    if refused:  # the tool names every bad argument, the command the first one
        assert (_refused(cli_result) or "?") in (tool_result.error or ""), cli_result.output


@pytest.mark.parametrize("namespace", SAMPLES)
def test_facts_list_refuses_a_namespace_as_the_list_facts_tool_does(
    namespace: str, tool_db: Path
) -> None:
    tool = tools.call("list_facts", {"namespace": namespace}, db=tool_db)
    _same_refusal(tool, runner.invoke(app, ["facts", "list", namespace, "--db", str(tool_db)]))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(namespace=st.one_of(st.sampled_from(SAMPLES), TEXT), key=st.one_of(st.just(""), TEXT))
def test_facts_get_and_history_refuse_what_get_fact_refuses(
    namespace: str, key: str, tool_db: Path
) -> None:
    tool = tools.call("get_fact", {"namespace": namespace, "key": key}, db=tool_db)
    for command in ("get", "history"):
        args = ["facts", command, "--db", str(tool_db), "--", namespace, key]
        _same_refusal(tool, runner.invoke(app, args))


def test_a_namespace_with_no_facts_is_said_so_not_shown_as_an_empty_table(tool_db: Path) -> None:
    result = runner.invoke(app, ["facts", "list", "nothing.here", "--db", str(tool_db)])
    assert result.exit_code == 0
    assert result.output.strip() == "no facts in nothing.here"
