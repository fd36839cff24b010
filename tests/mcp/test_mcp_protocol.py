"""The MCP server (a real ``philont mcp`` process) answers every line a client sends: what it
cannot read or run is a JSON-RPC error with our code in ``error.data.code``, what a tool
refuses is a tool error naming the code, and it goes on serving; stderr stays empty."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast, get_args

import pytest

pytest.importorskip("mcp")

from philont.mcp.server import build_server
from philont.mcp.transport import REQUESTS, SERVED
from philont.store import Store
from tests.mcp_client import RawClient, error_of, tool_text

Line = dict[str, Any] | str | bytes

PROTOCOL_ERRORS: list[tuple[Line, Any, int, str]] = [
    # (the line, the id its answer names, the JSON-RPC code, our code)
    ("this is not json", None, -32700, "invalid_json"),
    ('{"jsonrpc": "2.0", "id": "cut", "method": "tools/ca', None, -32700, "invalid_json"),
    (  # bytes that are not UTF-8 (they were read as U+FFFD and stored)
        b'{"jsonrpc":"2.0","id":"latin1","method":"tools/call","params":{"name":"store_fact",'
        b'"arguments":{"namespace":"user","key":"city","value":"K\xf6ln"}}}',
        "latin1",
        -32700,
        "invalid_json",
    ),
    ("[1, 2, 3]", None, -32600, "invalid_request"),  # a batch
    ("42", None, -32600, "invalid_request"),
    ({"jsonrpc": "2.0", "id": "no-method"}, "no-method", -32600, "invalid_request"),
    ({"jsonrpc": "1.0", "id": "old", "method": "ping"}, "old", -32600, "invalid_request"),
    ({"jsonrpc": "2.0", "id": "m", "method": "no/such"}, "m", -32601, "unknown_method"),
    ({"jsonrpc": "2.0", "id": "np", "method": "tools/call"}, "np", -32602, "invalid_arguments"),
    (
        {
            "jsonrpc": "2.0",
            "id": "sa",
            "method": "tools/call",
            "params": {"name": "get_fact", "arguments": "namespace=user"},
        },
        "sa",
        -32602,
        "invalid_arguments",
    ),
    (
        {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"arguments": {}}},
        7,
        -32602,
        "invalid_arguments",
    ),
    (
        {
            "jsonrpc": "2.0",
            "id": "ut",
            "method": "tools/call",
            "params": {"name": "delete_everything", "arguments": {}},
        },
        "ut",
        -32602,
        "unknown_tool",
    ),
    (
        {"jsonrpc": "2.0", "id": "lp", "method": "tools/list", "params": 5},
        "lp",
        -32600,
        "invalid_request",
    ),
    (
        {"jsonrpc": "2.0", "id": "cursor", "method": "tools/list", "params": {"cursor": 5}},
        "cursor",
        -32602,
        "invalid_params",
    ),
]

TOOL_ERRORS: list[tuple[Line, Any, str]] = [
    # (the line, its id, the code the tool result names)
    (
        {
            "jsonrpc": "2.0",
            "id": "types",
            "method": "tools/call",
            "params": {
                "name": "store_fact",
                "arguments": {"namespace": 5, "key": ["k"], "value": 1},
            },
        },
        "types",
        "invalid_arguments",
    ),
    (
        {
            "jsonrpc": "2.0",
            "id": "huge",
            "method": "tools/call",
            "params": {
                "name": "store_fact",
                "arguments": {"namespace": "user", "key": "k", "value": "x" * 10_000_000},
            },
        },
        "huge",
        "invalid_arguments",
    ),
    (  # JSON that Python reads but the SDK's parser refused: the line got no answer at all
        '{"jsonrpc":"2.0","id":"lone","method":"tools/call","params":{"name":"store_fact",'
        '"arguments":{"namespace":"user","key":"k","value":"\\ud800"}}}',
        "lone",
        "invalid_arguments",
    ),
    (
        {
            "jsonrpc": "2.0",
            "id": "nul",
            "method": "tools/call",
            "params": {"name": "get_fact", "arguments": {"namespace": "user", "key": "a\u0000b"}},
        },
        "nul",
        "invalid_input",  # a key a stored row may hold: refused by the lookup (none holds it)
    ),
]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RawClient]:
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.initialize()
        yield client
    finally:
        client.stop()


def test_every_line_gets_its_answer_and_the_server_goes_on(server: RawClient) -> None:
    unmatched = 0
    for n, (line, request_id, code, ours) in enumerate(PROTOCOL_ERRORS):
        server.send(line)
        if request_id is None:
            unmatched += 1
            answer = server.unmatched_answer(unmatched)
            assert answer["id"] is None, line
        else:
            answer = server.answer(request_id)
        assert error_of(answer) == (code, ours), (line, answer)
        assert answer["error"]["data"]["message"], line
        server.round_trip(f"ping-{n}")  # still serving
    for line, request_id, ours in TOOL_ERRORS:
        server.send(line)
        is_error, text = tool_text(server.answer(request_id))
        assert is_error and text.startswith(f"error ({ours}): "), (request_id, text[:300])
    server.call("ok", "store_fact", {"namespace": "user", "key": "city", "value": "Köln"})
    assert tool_text(server.answer("ok"))[0] is False
    server.call("read", "get_fact", {"namespace": "user", "key": "city"})
    assert tool_text(server.answer("read"))[1].startswith('"Köln"')  # nothing else was stored
    assert server.close_stdin() == 0
    assert server.stderr == b""  # no traceback, no validation dump, no warning


def test_an_unknown_tool_is_a_protocol_error_that_lists_the_tools(server: RawClient) -> None:
    server.call(1, "no_such_tool", {})
    error = server.answer(1)["error"]
    assert error["code"] == -32602 and error["message"] == "Unknown tool: no_such_tool"
    assert error["data"]["code"] == "unknown_tool" and "store_fact" in error["data"]["message"]


def test_the_methods_the_server_does_not_serve_are_unknown_methods_by_name(
    server: RawClient,
) -> None:
    # resources/list, prompts/list, logging/setLevel, tasks/* ... (MCP defines them; this
    # server offers tools only) got the SDK's bare "Method not found", with no code of ours,
    # and the refusal of an unknown method listed them as methods to call.
    others = sorted(set(REQUESTS) - SERVED)
    assert "resources/list" in others and "prompts/list" in others
    for method in [*others, "no/such"]:
        server.request(method, method, {})
        code, ours = error_of(server.answer(method))
        assert (code, ours) == (-32601, "unknown_method"), method
        message = server.answer(method)["error"]["data"]["message"]
        assert message.endswith("methods: initialize, ping, tools/call, tools/list"), message
        assert ("tools only" in message) == (method != "no/such"), message
    assert server.close_stdin() == 0
    assert server.stderr == b""


def test_the_served_methods_are_those_the_server_handles() -> None:
    handled = build_server(cast(Store, None)).request_handlers
    methods = {m for model in handled for m in get_args(model.model_fields["method"].annotation)}
    assert {"initialize", *methods} == SERVED  # initialize: the SDK's session answers it


LONG_KEY = "k" * 900_000
LONG_KEY_LINES = {  # a problem at a key of 900,000 characters: answered in a few hundred
    "unknown argument": (
        "tools/call",
        f'{{"name":"list_upcoming","arguments":{{"{LONG_KEY}":1}}}}',
        "invalid_arguments",
    ),
    "NaN in arguments": (
        "tools/call",
        f'{{"name":"list_upcoming","arguments":{{"{LONG_KEY}":NaN}}}}',
        "invalid_arguments",
    ),
    "lone surrogate key in arguments": (
        "tools/call",
        f'{{"name":"list_upcoming","arguments":{{"{LONG_KEY}\\ud800":1}}}}',
        "invalid_arguments",
    ),
    "lone surrogate key in params": ("tools/list", f'{{"{LONG_KEY}\\ud800":1}}', "invalid_params"),
}


@pytest.mark.parametrize("problem", sorted(LONG_KEY_LINES))
def test_a_long_key_is_quoted_cut_short(server: RawClient, problem: str) -> None:
    method, params, ours = LONG_KEY_LINES[problem]
    server.send(f'{{"jsonrpc":"2.0","id":"long","method":"{method}","params":{params}}}')
    answer = server.answer("long")
    if "error" in answer:
        assert error_of(answer)[1] == ours
        shown = answer["error"]["data"]["message"]
    else:
        is_error, shown = tool_text(answer)
        assert is_error and shown.startswith(f"error ({ours}): ")
    assert "kkkk...kkkk" in shown and len(shown) < 400, (len(shown), shown[:200])
    assert server.close_stdin() == 0
    assert server.stderr == b""
