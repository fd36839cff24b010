"""A refusal is held to the size policy of every text a model reads back: a key the client
wrote (an argument's name, a key inside a fact's value) is quoted cut short, as any value a
message quotes. Before, a refusal naming the place of a problem wrote the key whole: an unknown
argument, a NaN or a lone surrogate under a key of 900,000 characters made a refusal of 900,000
characters, from a tool and from the MCP server's protocol errors alike."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont import tools
from philont.errors import InvalidInputError
from philont.mcp.transport import error_line
from philont.store import Store
from philont.tools.dispatch import refused
from philont.tools.registry import MAX_RESULT_CHARS
from tests.tools.helpers import actions, snapshot

BOTH_BACKENDS = True

SHOWN = 400
"""What a refusal of one argument may take: its message, the key cut short, the value too."""


@pytest.fixture
def store(tool_target: Path | URL) -> Iterator[Store]:
    with Store.open(tool_target) as opened:
        yield opened


def _arguments(problem: str, key: str) -> tuple[str, dict[str, Any]]:
    """A call whose one problem lies at ``key``."""
    fact = {"namespace": "user", "key": "k"}
    return {
        "unknown argument": ("list_upcoming", {key: 1}),
        "NaN in a value": ("store_fact", {**fact, "value": {key: [float("nan")]}}),
        "lone surrogate in a value": ("store_fact", {**fact, "value": {"a": {key: "\ud800"}}}),
        "too deep in a value": ("store_fact", {**fact, "value": {key: _nested(101)}}),
    }[problem]


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


PROBLEMS = [
    "unknown argument",
    "NaN in a value",
    "lone surrogate in a value",
    "too deep in a value",
]


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    problem=st.sampled_from(PROBLEMS),
    key=st.text(st.characters(codec="utf-8"), min_size=41, max_size=2_000)
    | st.sampled_from(["k" * 900_000, "window_days" + "x" * 500_000]),
)
@example(problem="unknown argument", key="x" * 900_000)
@example(problem="NaN in a value", key="a" * 900_000)
def test_a_refusal_quotes_a_long_key_cut_short(
    store: Store, tool_target: Path | URL, problem: str, key: str
) -> None:
    tool, arguments = _arguments(problem, key)
    before = snapshot(tool_target)
    logged = len(actions(tool_target))
    result = tools.call(tool, arguments, db=store)
    assert not result.ok and result.error_code == "invalid_arguments", result.text
    assert len(result.text) < SHOWN, (problem, len(result.text), result.text[:200])
    assert result.error is not None and len(result.error) < SHOWN
    # refused whole: nothing written but the call's own row in the action log
    assert snapshot(tool_target) == before
    assert len(actions(tool_target)) == logged + 1


def test_every_refusal_is_capped_as_a_result_is() -> None:
    """Whatever a message holds, the model reads at most the size policy's characters."""
    result = refused("store_fact", InvalidInputError("y" * (10 * MAX_RESULT_CHARS)))
    assert len(result.text) < MAX_RESULT_CHARS + 100
    assert result.error is not None and len(result.error) < MAX_RESULT_CHARS + 100
    line = json.loads(error_line(1, -32602, "Invalid params", "invalid_params", "z" * 10**6))
    assert len(line["error"]["data"]["message"]) < MAX_RESULT_CHARS + 100
