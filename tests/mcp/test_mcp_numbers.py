"""Numbers a tool cannot take, sent to the MCP server: ``NaN``, ``Infinity``, ``1e400`` (an
overflowing double) and integers too long to read. The SDK re-reads every request through its
JSON form, where a number that is not finite becomes ``null``: an optional argument was then
silently "not given" (``confidence: 1e400`` stored the fact with confidence 1.0, an
``occurred_at`` was dropped) and a fact's value was refused as "must not be null"; an integer
of 5,000 digits was answered as unreadable JSON without the request's id, so its client
waited forever. Each is now refused with the request's id, naming the argument, writing
nothing."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("mcp")

from philont.mcp.transport import check_line
from tests.mcp_client import RawClient, error_of

FACT = {"namespace": "user", "key": "k", "value": 1}
BIG = "9" * 5000

# (request id, tool, the arguments' JSON text, the argument the refusal names)
LINES: list[tuple[str, str, str, str]] = [
    ("conf", "store_fact", json.dumps(FACT)[:-1] + ', "confidence": 1e400}', "confidence"),
    ("nan", "store_fact", '{"namespace": "user", "key": "k", "value": NaN}', "value"),
    (
        "inf",
        "store_fact",
        '{"namespace": "user", "key": "k", "value": [1, {"a": -Infinity}]}',
        "value[1].a",
    ),
    (
        "at",
        "store_fact",
        json.dumps(FACT)[:-1] + ', "fact_kind": "event", "occurred_at": 1e999}',
        "occurred_at",
    ),
    ("digits", "store_fact", '{"namespace": "user", "key": "k", "value": ' + BIG + "}", "value"),
    ("limit", "search_notes", '{"query": "q", "limit": 1e400}', "limit"),
]


def _line(request_id: str, tool: str, arguments: str) -> str:
    head = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    return json.dumps(head)[:-1] + f', "params": {{"name": "{tool}", "arguments": {arguments}}}}}'


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawClient]:
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.initialize()
        yield client
    finally:
        client.stop()


def test_numbers_a_tool_cannot_take_are_refused_with_the_id_and_write_nothing(
    server: RawClient,
) -> None:
    for request_id, tool, arguments, name in LINES:
        server.send(_line(request_id, tool, arguments))
        answer = server.answer(request_id)
        assert "error" in answer, (request_id, answer)
        assert error_of(answer) == (-32602, "invalid_arguments"), answer
        assert answer["error"]["data"]["message"].startswith(f"{name}: "), answer
    server.call("list", "list_facts", {"namespace": "user"})
    listed = server.answer("list")["result"]["content"][0]["text"]
    assert listed == "No facts in user", listed
    assert server.close_stdin() == 0
    assert server.stderr == b""


finite = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
)
not_finite = st.sampled_from([math.inf, -math.inf, math.nan])


@st.composite
def arguments_with_one_bad_number(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """Arguments holding one number that is not finite somewhere, and its path as named."""
    arguments: dict[str, Any] = draw(
        st.dictionaries(st.text("abc", max_size=3), finite, max_size=3)
    )
    key = draw(st.text("xyz", min_size=1, max_size=3))
    path = key
    holder: Any = arguments
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            child: Any = {}
            holder[key] = child
            key = draw(st.text("xyz", min_size=1, max_size=3))
            path += f".{key}"
        else:
            index = draw(st.integers(0, 2))
            child = [draw(finite) for _ in range(index + 1)]
            holder[key] = child
            key, path = index, path + f"[{index}]"  # type: ignore[assignment]
        holder = child
    holder[key] = draw(not_finite)
    return arguments, path


@given(case=arguments_with_one_bad_number(), request_id=st.text(max_size=8) | st.integers(0, 10**6))
def test_a_number_that_is_not_finite_anywhere_in_the_arguments_is_named(
    case: tuple[dict[str, Any], str], request_id: str | int
) -> None:
    arguments, path = case
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": "store_fact", "arguments": arguments}}  # fmt: skip
    checked = check_line(json.dumps(message).encode())
    assert isinstance(checked, str), checked
    answer = json.loads(checked)
    assert answer["id"] == request_id
    assert answer["error"]["data"]["code"] == "invalid_arguments"
    assert answer["error"]["data"]["message"].startswith(f"{path}: a number that is not finite")
