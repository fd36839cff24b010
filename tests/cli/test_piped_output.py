"""Output that is not a terminal (a pipe, a file) is plain: no color codes, no line wrapped at
80 columns, no table cell cut with an ellipsis; and every error is one line on stderr."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from philont.cli import app
from philont.memory import Memory

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
LONG = "a rather long value that goes on and on well past eighty columns of any terminal " * 3


def _piped(*args: str) -> subprocess.CompletedProcess[str]:
    """``philont ARGS`` with stdout and stderr pipes and no terminal size in the environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "philont", *args],
        cwd=REPO,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )


def test_piped_text_and_tables_are_neither_wrapped_nor_cut(tool_db: Path) -> None:
    with Memory.open(tool_db) as mem:
        mem.facts.store("user", "motto", LONG)
        mem.timeline.append(LONG, role="user")
    listed = _piped("facts", "list", "user", "--db", str(tool_db))
    assert listed.returncode == 0, listed.stderr
    row = next(line for line in listed.stdout.splitlines() if "user.motto" in line)
    assert "recorded 20" in row and "]" in row, row  # the whole time tag, on the fact's line
    assert "…" not in listed.stdout, listed.stdout
    recalled = _piped("recall", "anything", "--db", str(tool_db))
    assert recalled.returncode == 0, recalled.stderr
    assert any(LONG.strip()[:150] in line for line in recalled.stdout.splitlines())
    assert "\x1b[" not in listed.stdout + recalled.stdout + listed.stderr + recalled.stderr


def test_a_long_error_is_one_line_on_stderr(tool_db: Path) -> None:
    name = "no-such-skill-" + "x" * 150
    done = _piped("skills", "show", name, "--db", str(tool_db))
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error (skill_not_found): ")
    assert name in done.stderr


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=300))
def test_every_error_is_one_line_whatever_the_text(name: str, tool_db: Path) -> None:
    result = runner.invoke(app, ["skills", "show", name, "--db", str(tool_db), "--json"])
    assert result.exit_code in (1, 2, 4), result.output
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error ("), result.stderr


def test_json_output_is_one_document_with_nothing_else(tool_db: Path) -> None:
    with Memory.open(tool_db) as mem:
        mem.timeline.append(LONG, role="user")
    done = _piped("timeline", "--db", str(tool_db), "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[-1]["content"] == LONG
    assert done.stderr == ""
