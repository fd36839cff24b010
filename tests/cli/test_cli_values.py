"""A bad value on the command line is bad usage, for every option and argument of every command:
one line, ``error (usage): Invalid value for '<option>': <why>``, and exit 2, before anything
is opened (the values are checked while click parses them, by the input types the services
and tools check them with: ``philont.cli.values``). What goes wrong with a file's contents or
the database keeps its own code and exit (1, 3, 4, 5), never 2."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from philont import migrate
from philont.cli import app
from philont.cli.values import Value, _time
from philont.domain.timeparse import parse_time
from philont.errors import InvalidInputError
from philont.memory import Memory
from tests.support import cli_command, cli_paths

runner = CliRunner()

# Options typer adds to every program itself (shell completion), not philont's.
TYPERS_OWN = {"install_completion", "show_completion"}

# Values a person may mistype: empty, blank, not a number, a number out of every range, text
# a store could not hold, a name no rule takes, a time that is none.
BAD = [
    "",
    " ",
    "x",
    "-1",
    "0",
    "1.5",
    "nan",
    "inf",
    "1e999",
    "99999999999999999999",
    "١٢",
    "A B",
    "BAD%NS",
    "\udc80 lone surrogate",
    "x" * 300,
    ":memory:",
    "sqlite://",
    "notaurl",
    "bogus",
    "Mars/Olympus",
    'a"b',
    "2026-13-45",
    "hash:3",
    "-",
]
HUGE = "x" * 1_000_001  # for the values that take any text: longer than any takes
GOOD = ["user", "city", "x", "1", "global", "unzip-archive", "a.jsonl", "-", "UTC", "hash:64"]


def _takes_value(param: click.Parameter) -> bool:
    return param.name not in TYPERS_OWN and not getattr(param, "is_flag", False)


def _parser(param: click.Parameter) -> Any:
    return param.type_descriptor.parameter_info.parser  # type: ignore[attr-defined]


PARAMS = [
    (path, param)
    for path in [(), *cli_paths()]
    for param in cli_command(path).params
    if _takes_value(param)
]


def _id(item: Any) -> str:
    return " ".join(item) if isinstance(item, tuple) else getattr(item, "name", str(item))


def test_every_value_on_the_command_line_names_the_type_it_must_pass() -> None:
    missing = [
        f"{' '.join(path) or 'philont'} {param.name}"
        for path, param in PARAMS
        if not isinstance(_parser(param), Value)
    ]
    assert missing == []
    assert len(PARAMS) > 40  # every command's options and arguments, the root's --agent


def _good(param: click.Parameter) -> str:
    parser = _parser(param)
    return next(text for text in GOOD if not parser.refuses(text))


def _args(path: tuple[str, ...], tested: click.Parameter, bad: str, db: Path) -> list[str]:
    """The command with ``bad`` for ``tested`` and a good value for every other required
    argument; options first, then ``--`` and the arguments (a bad value may start with -)."""
    command = cli_command(path)
    if not path:  # the root group's own options, before a command
        return [tested.opts[0], bad, "stats", "--db", str(db)]
    options = [] if tested.name == "db" else ["--db", str(db)]
    positional: list[str] = []
    for param in command.params:
        this = param.name == tested.name
        if this and param.param_type_name == "option":
            options += [param.opts[0], bad]
        elif param.param_type_name == "argument" and (this or param.required):
            positional.append(bad if this else _good(param))
    return [*path, *options, "--", *positional]


def _bad_values(param: click.Parameter) -> list[str]:
    parser = _parser(param)
    refused = [text for text in BAD if parser.refuses(text)]
    return refused or ([HUGE] if parser.refuses(HUGE) else [])


@pytest.mark.parametrize(("path", "param"), PARAMS, ids=_id)
def test_a_bad_value_is_one_usage_line_naming_its_option(
    path: tuple[str, ...], param: click.Parameter, tool_db: Path
) -> None:
    bad_values = _bad_values(param)
    assert bad_values, "no value is refused: is the rule missing?"
    names = {n for n in (*param.opts, param.name, param.metavar) if n}
    before = tool_db.read_bytes()
    for bad in bad_values:
        args = _args(path, param, bad, tool_db)
        result = runner.invoke(app, args)
        shown = f"{args[:8]!r}: {result.output[-500:]!r}"
        assert result.exit_code == 2, shown
        assert result.stdout == "", shown
        lines = result.stderr.splitlines()
        assert len(lines) == 1, shown
        assert lines[0].startswith("error (usage): Invalid value for '"), shown
        assert any(f"'{name}'" in lines[0] for name in names), shown
    assert tool_db.read_bytes() == before  # nothing was opened for writing


# --- what is not a command line's fault keeps its own code ------------------------------------


def test_a_file_whose_contents_are_wrong_is_not_bad_usage(tool_db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"format": "philont-export", "format_version": 99}\n', encoding="utf-8")
    result = runner.invoke(app, ["import", str(bad), "--db", str(tmp_path / "new.sqlite")])
    assert result.exit_code == 1, result.output
    assert result.stderr.startswith("error (import_format): line 1: ")


def test_what_the_database_holds_is_not_bad_usage(tool_db: Path, tmp_path: Path) -> None:
    with Memory.open(tool_db) as mem:
        mem.facts.store("user", "city", "Berlin")
    export = tmp_path / "e.jsonl"
    assert runner.invoke(app, ["export", str(export), "--db", str(tool_db)]).exit_code == 0
    missing = runner.invoke(app, ["facts", "get", "user", "no_such_key", "--db", str(tool_db)])
    refused = runner.invoke(app, ["import", str(export), "--db", str(tool_db)])
    assert (missing.exit_code, refused.exit_code) == (4, 5), (missing.output, refused.output)


def test_a_database_below_head_is_not_bad_usage(copy_fixture: Any) -> None:
    old = copy_fixture("v31")
    result = runner.invoke(app, ["timeline", "--since", "2026-01-01", "--db", str(old)])
    assert result.exit_code == 3, result.output
    assert not migrate.status(old).at_head


# --- values that were refused or crashed before ----------------------------------------------


def test_epoch_milliseconds_are_a_time_as_the_help_says(tool_db: Path) -> None:
    shown = runner.invoke(app, ["timeline", "--since", "0", "--json", "--db", str(tool_db)])
    assert shown.exit_code == 0, shown.output
    everything = runner.invoke(app, ["timeline", "--json", "--db", str(tool_db)])
    assert json.loads(shown.stdout) == json.loads(everything.stdout)


@pytest.mark.parametrize("seconds", ["nan", "inf", "1e308", "-1", "0"])
def test_a_duration_no_wait_can_take_is_bad_usage_not_a_traceback(
    seconds: str, tool_db: Path
) -> None:
    args = ["consolidate", "--once", "--model", "scripted:x.json", "--interval", seconds]
    result = runner.invoke(app, [*args, "--db", str(tool_db)])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error (usage): Invalid value for '--interval': ")


def test_a_window_that_ends_before_it_starts_is_bad_usage(tool_db: Path) -> None:
    args = ["timeline", "--since", "2026-02-01", "--until", "2026-01-01", "--db", str(tool_db)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error (usage): --since, --until: the time window ends")


@pytest.mark.parametrize("option", ["--since", "--until"])
@pytest.mark.parametrize(
    "text", ["2026-06-01 CET", "2026-W23 CET", "2026-06-01 utc+2", "2026-W23T09:00 CET"]
)
def test_a_zone_named_after_a_date_is_bad_usage_saying_what_to_give(
    option: str, text: str, tool_db: Path
) -> None:
    """A date alone and a zone's name (``2026-06-01 CET``) was the generic 'is not an ISO-8601
    time'; a week without its day and a zone gave two texts behind a second reason. Now one
    line naming the zone, one time to give (with its offset: the command line takes no zone),
    which is read."""
    result = runner.invoke(app, ["timeline", option, text, "--db", str(tool_db)])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert "\n" not in line, line
    reason = line.split(" (see `")[0]
    assert reason.startswith(f"error (usage): Invalid value for '{option}': {text!r} names a zone")
    assert "refused too" not in reason and "`" not in reason, reason
    times = re.findall(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}[+-]\d{2}:\d{2}", reason)
    assert len(times) == 1, reason
    shown = runner.invoke(app, ["timeline", option, times[0], "--db", str(tool_db)])
    assert shown.exit_code == 0, shown.output


def _as_the_domain_reads(text: str) -> object:
    """What the time readers make of whole-number text: a date where they read it as date
    text (taken, or refused naming the form: ``20261204``, ``2026123``, ``20261399``), else
    epoch milliseconds, as a tool given the number."""
    try:
        return parse_time(text, field="--since", zone_field=None)
    except InvalidInputError as exc:
        if "is not an ISO-8601 time" not in exc.message:
            return exc.message
    try:
        return parse_time(int(text), field="--since", zone_field=None)
    except InvalidInputError as exc:
        return exc.message


@given(
    digits=st.integers(min_value=0, max_value=10**12).map(str)
    | st.text(alphabet="0123456789", min_size=1, max_size=10),
    sign=st.sampled_from(["", "+", "-"]),
    space=st.sampled_from(["", " "]),
)
def test_whole_number_text_is_a_date_exactly_where_the_domain_reads_a_date(
    digits: str, sign: str, space: str
) -> None:
    """--since reads digits as a date (seven or eight: ``20261204``, the ordinal ``2026123``)
    or as epoch milliseconds: by the domain's one definition of date text, not a shape of its
    own."""
    text = f"{space}{sign}{digits}{space}"
    try:
        read: object = _time(field="--since")(text)
    except InvalidInputError as exc:
        read = exc.message
    assert read == _as_the_domain_reads(text), text
