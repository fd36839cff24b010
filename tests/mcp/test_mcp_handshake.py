"""Before and around the handshake: a request other than ``initialize`` or ``ping`` sent before
``initialize`` was answered by the SDK with a bare ``-32602 Invalid request parameters`` (no
code of ours, no word of what to do) and a warning on stderr; a response the client sends (the
server asks nothing, so it answers nothing) made the SDK send an "Internal Server Error" log
notification and write to stderr. Now the early request is refused with its id and says to
initialize first, an early notification and any response are dropped quietly, and the server
serves normally once initialized. (And arguments a host sent as JSON text are named as such.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from tests.mcp_client import RawClient, error_of, tool_text


def test_a_request_before_initialize_is_refused_by_name_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.call("early", "store_fact", {"namespace": "user", "key": "k", "value": 1})
        answer = client.answer("early")
        assert error_of(answer) == (-32600, "not_initialized"), answer
        assert "initialize" in answer["error"]["data"]["message"]
        client.request("list", "tools/list")
        assert error_of(client.answer("list")) == (-32600, "not_initialized")
        client.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": "early"}})  # fmt: skip
        client.round_trip("ping-early")  # ping is allowed at any time
        client.initialize()
        client.call("late", "list_facts", {"namespace": "user"})
        assert tool_text(client.answer("late")) == (False, "No facts in user")  # nothing stored
        assert client.close_stdin() == 0
        assert client.unmatched == []
        assert client.stderr == b""
    finally:
        client.stop()


def test_a_response_from_the_client_is_dropped_quietly(tmp_path: Path) -> None:
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.initialize()
        client.send({"jsonrpc": "2.0", "id": "nobody-asked", "result": {}})
        client.send({"jsonrpc": "2.0", "id": 5, "error": {"code": -1, "message": "no"}})
        client.round_trip("after")
        assert client.close_stdin() == 0
        assert client.unmatched == []
        assert client.stderr == b""
    finally:
        client.stop()


def test_arguments_sent_as_json_text_are_named_as_encoded_twice(tmp_path: Path) -> None:
    """A host that serializes the model's arguments once more sends them as a string: the
    refusal said only "Input should be a valid dictionary"; it now says what happened."""
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.initialize()
        arguments = json.dumps({"namespace": "user"})
        client.call("twice", "list_facts", arguments)
        client.call("text", "list_facts", "namespace=user")
        twice, text = client.answer("twice"), client.answer("text")
        assert error_of(twice) == error_of(text) == (-32602, "invalid_arguments")
        assert twice["error"]["data"]["message"] == (
            "params.arguments: must be a JSON object, got a JSON string holding one: the "
            "arguments were JSON-encoded twice; send the object"
        )
        assert text["error"]["data"]["message"] == (
            "params.arguments: must be a JSON object, got a JSON string"
        )
        assert client.close_stdin() == 0 and client.stderr == b""
    finally:
        client.stop()


def test_the_server_names_itself_with_philonts_version(tmp_path: Path) -> None:
    """``serverInfo`` said ``philont`` with the MCP SDK's version (1.30.0), not philont's."""
    import philont

    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.request("init", "initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        })  # fmt: skip
        info = client.answer("init")["result"]["serverInfo"]
        assert info == {"name": "philont", "version": philont.__version__}, info
        assert client.close_stdin() == 0
    finally:
        client.stop()
