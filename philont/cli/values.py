"""Command-line values, checked before a command runs.

Every option and argument that takes a value names what its value must be, with
:func:`value`: one of the input types the services and tools check the same value with
(:mod:`philont.schemas.inputs`, :mod:`philont.schemas.planning`), or a rule of philont's own
(:data:`DB`, :data:`AGENT`, ...). Click calls it while it parses the command line, so a value
it refuses is a usage error like any other click finds (``error (usage): Invalid value for
'--limit': ...``, exit 2, by :class:`philont.cli.common.Commands`), before anything is opened;
what goes wrong later, in a file's contents or in the database, keeps its own code and exit.
A refusal that only the combination of several values makes (``--until`` before ``--since``)
is raised from the command with :func:`usage_error`, to the same effect.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import Field, StrictFloat, StrictInt

# typer (0.26+) vendors click as the private typer._click and exports none of these names (only
# BadParameter, Context, Exit, Abort); the `click` package, not a dependency of ours, has other
# classes and another context stack, which typer's parser never raises nor pushes.
from typer._click.exceptions import UsageError
from typer._click.globals import get_current_context

from philont.cli.parsers import AGENT, DB, Value
from philont.errors import PhilontError
from philont.schemas import inputs

__all__ = [
    "AGENT",
    "AGENT_PREFIX",
    "DB",
    "EMBEDDER",
    "FILE",
    "LEASE",
    "MAX_HOLD",
    "MAX_SECONDS",
    "MODEL",
    "PATH",
    "SCHEMA",
    "SINCE",
    "UNTIL",
    "URL",
    "Positive",
    "PositiveSeconds",
    "Seconds",
    "Setting",
    "Value",
    "usage_error",
    "value",
]

_WHOLE = re.compile(r"[+-]?[0-9]+")
MAX_SECONDS: Final = int(inputs.MAX_SETTING_DURATION.total_seconds())
"""The longest duration an option takes, in seconds (a year: what a wait can be)."""


def _whole(text: str) -> int:
    """A whole number written in ASCII digits (``int()`` would take '١٢' and '1_000' too)."""
    if _WHOLE.fullmatch(text.strip()) is None:
        raise ValueError(f"{text!r} is not a whole number")
    return int(text)


def _number(text: str) -> float:
    """A finite decimal number (``float()`` would take 'nan', 'inf' and '1e999')."""
    try:
        number = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(number):
        raise ValueError(f"{text!r} is not a finite number")
    return number


def value(kind: Any = None, *, rule: Callable[[Any], Any] | None = None) -> Value:
    """The parser of an option or argument whose value is ``kind`` (read as a whole number when
    ``kind`` is one, as a number when it is a real) or must pass ``rule``."""
    return Value(kind, rule=rule, read=_reader(kind))


def _reader(kind: Any) -> Callable[[str], Any]:
    base = getattr(kind, "__origin__", kind)
    while hasattr(base, "__origin__"):  # Annotated[Annotated[int, ...], ...]
        base = base.__origin__
    if base is int:
        return _whole
    if base is float:
        return _number
    return str


def usage_error(exc: PhilontError) -> UsageError:
    """A refusal of the command line that only the command can see (a combination of values),
    as the usage error that :class:`philont.cli.common.Commands` reports with exit 2."""
    return UsageError(exc.message, ctx=get_current_context(silent=True))


# --- the rules of values no service input type describes --------------------------------------


_AGENT_CHARS = re.compile(r"[a-z0-9_.\-]{0,63}")


def _agent_prefix(text: str) -> str:
    if _AGENT_CHARS.fullmatch(text) is None:
        raise ValueError(f"{text!r} cannot begin an agent name (a-z, 0-9, _, . and -)")
    return text


def _file(text: str) -> str:
    if not text.strip():
        raise ValueError("the file name is empty")
    if "\x00" in text:
        raise ValueError("a file name cannot hold a NUL character")
    problem = inputs.unstorable(text)
    if problem is not None:
        raise ValueError(problem)
    return text


def _path(text: str) -> Path:
    return Path(_file(text))


_SCHEMA = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}")


def _schema(text: str) -> str:
    """A PostgreSQL schema name as the old layout made them (an identifier, at most 63
    characters; it is quoted, so no quoting of its own)."""
    if _SCHEMA.fullmatch(text) is None:
        raise ValueError(f"{text!r} is not a schema name (a letter or _, then letters, digits, _)")
    return text


def _time(*, field: str, end_of_day: bool = False) -> Callable[[str], datetime | None]:
    """ISO-8601 text (a bare date: that day, its end with ``end_of_day``) or epoch
    milliseconds (a whole number not written as a date: seven or eight digits are a date in
    ISO-8601's basic form, ``20261204`` or the ordinal ``2026123``, as the domain reads that
    text, :func:`philont.domain.timeforms.written_as_date`; as epoch milliseconds they would
    be the size of epoch seconds, refused), as the time tools take them; text
    without an offset is read in UTC (the command line takes no zone: a refusal says so and
    suggests the offset, never a ``timezone`` argument the command does not have)."""
    from philont.domain.timeforms import written_as_date
    from philont.domain.timeparse import parse_time

    def rule(text: str) -> datetime | None:
        number = _WHOLE.fullmatch(text.strip()) and not written_as_date(text)
        given: str | int = int(text) if number else text
        if isinstance(given, str) and not given.strip():
            raise ValueError("the time is empty")
        return parse_time(given, field=field, end_of_day=end_of_day, zone_field=None)

    return rule


def _consolidator_seconds(name: str) -> Callable[[float], float]:
    """Seconds of the consolidator's duration setting ``name`` (``lease``, ``max_hold``),
    checked by that setting's own rule (:class:`philont.learning.ConsolidatorConfig`: its
    message, ``must be a duration from 1 second to 366 days, got 0.5 seconds``; a number of
    seconds no ``timedelta`` holds is refused in the same words)."""

    def rule(seconds: float) -> float:
        from philont.learning.config import CONSOLIDATOR_RULES, ConsolidatorConfig

        try:
            setting: dict[str, Any] = {name: timedelta(seconds=seconds)}
            ConsolidatorConfig(**setting)
        except OverflowError:
            must = next(must for setting, _, _, must in CONSOLIDATOR_RULES if setting == name)
            raise ValueError(f"must be {must}, got {seconds:g} seconds") from None
        return seconds

    return rule


def _model_spec(text: str) -> str:
    """The spec's form; a script's file is the command's to read, with its own errors."""
    from philont.llm import check_spec

    check_spec(text)
    return text


def _embedder_spec(text: str) -> str:
    """The spec's form (and a hash embedder's dimension); a model's files are the command's
    to read, with their own errors."""
    from philont.embed.adapters import check_embedder_spec

    check_embedder_spec(text)
    return text


def _url(text: str) -> str:
    if re.fullmatch(r"https?://[^\s/?#]+\S*", text) is None:
        raise ValueError(f"{text!r} is not an http(s):// URL")
    return text


AGENT_PREFIX = value(rule=_agent_prefix)
FILE = value(rule=_file)
PATH = value(rule=_path)
SCHEMA = value(rule=_schema)
SINCE = value(rule=_time(field="--since"))
UNTIL = value(rule=_time(field="--until", end_of_day=True))
LEASE = Value(rule=_consolidator_seconds("lease"), read=_number)
MAX_HOLD = Value(rule=_consolidator_seconds("max_hold"), read=_number)
MODEL = value(rule=_model_spec)
EMBEDDER = value(rule=_embedder_spec)
URL = value(rule=_url)

Positive = Annotated[StrictInt, Field(ge=1, le=2**63 - 1)]
"""A whole number, 1 or more, that a database holds."""
Setting = Annotated[StrictInt, Field(ge=1, le=inputs.MAX_SETTING)]
"""A count setting of the learning loop (``inputs.MAX_SETTING``)."""
Seconds = Annotated[StrictFloat, Field(ge=0, le=MAX_SECONDS)]
"""A duration in seconds, 0 to a year."""
PositiveSeconds = Annotated[StrictFloat, Field(gt=0, le=MAX_SECONDS)]
"""A duration in seconds, more than 0, at most a year."""
