"""A time the command line refuses says what to write on the command line: every option that
takes a time (found by walking the commands, not listed by hand) is read without a zone
argument (text without an offset is read in UTC), so its refusal never tells the user to put
the zone in the tools' `timezone` argument, which no command has; what it suggests instead is
taken by the same option and means the time that was given."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import click
import pytest
from typer import BadParameter
from typer.testing import CliRunner

from philont.cli import app
from philont.cli.values import Value
from tests.support import cli_command, cli_paths

runner = CliRunner()


def _parser(param: click.Parameter) -> Any:
    return param.type_descriptor.parameter_info.parser  # type: ignore[attr-defined]


def _takes_a_time(param: click.Parameter) -> bool:
    parser = getattr(getattr(param, "type_descriptor", None), "parameter_info", None)
    if not isinstance(getattr(parser, "parser", None), Value):
        return False
    try:
        return isinstance(_parser(param)("2026-06-01T09:00Z"), datetime)
    except BadParameter:
        return False


TIME_PARAMS = [
    (path, param)
    for path in cli_paths()
    for param in cli_command(path).params
    if param.param_type_name == "option" and _takes_a_time(param)
]

# Refusals that say where a zone or an offset goes: a zone's name in the text (IANA, an
# abbreviation, in brackets, none), an offset no place uses or with 75 minutes.
REFUSED = [
    "2026-06-01T09:00 CET",
    "2026-06-01T09:00 Europe/Berlin",
    "2026-06-01T09:00[America/New_York]",
    "2026-06-01T09:00+02:00 CET",
    "2026-06-01T09:00 PST",
    "2026-06-01T09:00 UTC+2",
    "2026-06-01T09:00+05:75",
    "2026-06-01T09:00+15:00",
]
MEANT = {
    "2026-06-01T09:00 CET": datetime(2026, 6, 1, 9, tzinfo=ZoneInfo("CET")),
    "2026-06-01T09:00 Europe/Berlin": datetime(2026, 6, 1, 9, tzinfo=ZoneInfo("Europe/Berlin")),
    "2026-06-01T09:00[America/New_York]": datetime(
        2026, 6, 1, 9, tzinfo=ZoneInfo("America/New_York")
    ),
    "2026-06-01T09:00+02:00 CET": datetime(2026, 6, 1, 7, tzinfo=UTC),
}


def test_the_times_are_found() -> None:
    assert {(path, param.name) for path, param in TIME_PARAMS} >= {
        (("timeline",), "since"),
        (("timeline",), "until"),
    }


@pytest.mark.parametrize(
    ("path", "param"),
    TIME_PARAMS,
    ids=lambda item: " ".join(item) if isinstance(item, tuple) else str(item.name),
)
def test_a_refused_time_names_only_what_the_command_takes(
    path: tuple[str, ...], param: click.Parameter, tool_db: Path
) -> None:
    command = cli_command(path)
    options = {opt for p in command.params for opt in p.opts}
    for text in REFUSED:
        result = runner.invoke(app, [*path, param.opts[0], text, "--db", str(tool_db)])
        shown = f"{text!r}: {result.stderr!r}"
        assert result.exit_code == 2, shown
        message = result.stderr.split(" (see `")[0]
        assert "timezone" not in message, shown
        named = set(re.findall(r"`([^`]*)`", message))
        assert named <= options, shown
        if text in MEANT:  # the text it says to give is taken, and means that time
            suggested = re.findall(r"(\d{4}-\d{2}-\d{2}T[\d:]+[+-]\d{2}:\d{2})", message)
            assert suggested, shown
            assert _parser(param)(suggested[0]) == MEANT[text], shown
