"""Lines nested deeply: every request gets its answer, with its id and our code, and nothing
reaches stderr.

The SDK validates a request by dumping it with pydantic, which gives up at 255 levels: a
``tools/call`` whose arguments nested that deep got a bare ``-32602`` with ``data: ""`` and a
line on stderr, from about 990 levels no answer at all (the client waited for ever), and from
about 1,000 a parse error with id ``null`` ("not valid JSON": it was).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from mcp.shared.message import SessionMessage

from philont.mcp.depth import MAX_MESSAGE_DEPTH, nesting, shallow
from philont.mcp.transport import check_line
from tests.mcp_client import RawClient, error_of, tool_text


def nested_text(depth: int, shape: list[bool]) -> str:
    """JSON text nesting ``depth`` levels (lists or objects, ``shape`` cycled), with
    brackets and quotes inside strings on the way (text, not nesting)."""
    opens = ['{"k]{":' if shape[i % len(shape)] else '["[\\"",' for i in range(depth)]
    closes = ["}" if shape[i % len(shape)] else "]" for i in reversed(range(depth))]
    return "".join(opens) + '"leaf"' + "".join(closes)


WHERE = ("value", "params", "top")


def line_of(request_id: Any, method: str, where: str, inner: str) -> tuple[str, int]:
    """A JSON-RPC line with ``inner`` placed ``where``, and how deep the line nests."""
    value = inner if where == "value" else "1"
    extra = f',"_x":{inner}' if where == "params" else ""
    params = '{"name":"store_fact","arguments":{"namespace":"user","key":"k","value":'
    params += value + "}" + extra + "}"
    head = '{"jsonrpc":"2.0",' + ("" if request_id is None else f'"id":{json.dumps(request_id)},')
    line = head + f'"method":{json.dumps(method)},"params":{params}'
    line += f',"_y":{inner}' + "}" if where == "top" else "}"
    return line, nesting(line)


@settings(max_examples=200, deadline=None)
@given(
    depth=st.integers(min_value=1, max_value=3000),
    shape=st.lists(st.booleans(), min_size=1, max_size=3),
    where=st.sampled_from(WHERE),
    request_id=st.none() | st.integers(-(2**40), 2**40) | st.text(max_size=8),
    method=st.sampled_from(["tools/call", "ping", "no/such"]),
)
@example(depth=1000, shape=[False], where="value", request_id=3, method="tools/call")
def test_a_deep_line_is_answered_with_its_id(
    depth: int, shape: list[bool], where: str, request_id: Any, method: str
) -> None:
    line, levels = line_of(request_id, method, where, nested_text(depth, shape))
    assert json.loads(shallow(line, MAX_MESSAGE_DEPTH)).get("id") == request_id
    checked = check_line(line.encode())
    if levels <= MAX_MESSAGE_DEPTH:
        assert checked is None or isinstance(checked, SessionMessage | str)
        if method == "tools/call" and where == "value" and request_id is not None:
            assert isinstance(checked, SessionMessage)  # the tool says what is wrong
        return
    if request_id is None:
        assert checked is None  # a notification: dropped quietly
        return
    assert isinstance(checked, str), checked
    answer = json.loads(checked)
    assert answer["id"] == request_id
    code = "invalid_arguments" if method == "tools/call" else "invalid_params"
    assert (answer["error"]["code"], answer["error"]["data"]["code"]) == (-32602, code)
    assert f"nests {levels:,} levels" in answer["error"]["data"]["message"]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawClient]:
    client = RawClient(tmp_path / "m.sqlite")
    client.initialize()
    yield client
    client.stop()


def test_the_server_answers_every_depth_with_its_id_and_stays_quiet(server: RawClient) -> None:
    for n, depth in enumerate([100, 101, 196, 254, 300, 990, 1000, 20_000]):
        line, _ = line_of(n, "tools/call", "value", "[" * depth + "]" * depth)
        server.send(line)
        answer = server.answer(n)
        if depth == 100:
            assert tool_text(answer)[0] is False
        elif depth <= 196:  # the tool's own refusal, as in-process
            failed, text = tool_text(answer)
            assert failed and text.startswith("error (invalid_arguments): value: nests")
        else:
            assert error_of(answer) == (-32602, "invalid_arguments"), answer
    server.round_trip("after")
    assert server.close_stdin() == 0
    assert server.stderr == b""
