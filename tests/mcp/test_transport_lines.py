"""The MCP transport's reading of one line (``philont.mcp.transport.check_line``), on generated
lines: it never raises, every line but a notification or a blank one is passed on or
answered, an answer is one JSON-RPC error with our code naming the request when its id can be
read, and nothing the SDK itself reads is refused."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from mcp import types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from philont.mcp.transport import NOTIFICATIONS, REQUESTS, SERVED, check_line
from philont.schemas.inputs import unstorable

OUR_CODES = {
    -32700: {"invalid_json"},
    -32600: {"invalid_request"},
    -32601: {"unknown_method"},
    -32602: {"invalid_arguments", "invalid_params"},
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
ids = st.none() | st.integers(-(2**40), 2**40) | st.text(max_size=12) | st.booleans() | st.floats()
methods = st.sampled_from(sorted(REQUESTS | NOTIFICATIONS)) | st.text(max_size=20)
params = (
    st.none()
    | json_values
    | st.fixed_dictionaries(
        {"name": st.sampled_from(["store_fact", "get_fact", "nope"]) | st.integers()},
        optional={"arguments": json_values, "cursor": json_values, "_meta": json_values},
    )
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {}
    if draw(st.booleans()):
        message["jsonrpc"] = draw(st.sampled_from(["2.0", "2.0", "1.0", 2]))
    for key, values in (("id", ids), ("method", methods), ("params", params)):
        if draw(st.booleans()):
            message[key] = draw(values)
    return message


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return all(_finite(v) for v in value) if isinstance(value, list) else True


def _sdk_reads(line: bytes) -> bool:
    """Whether the SDK's own transport and session read ``line`` as a message they handle
    (and a tool call's arguments as they were sent: a number that is not finite is ``null``
    once the SDK has re-read the request), a request for a method the server serves."""
    try:
        message = types.JSONRPCMessage.model_validate_json(line.decode("utf-8"))
    except (UnicodeDecodeError, ValidationError):
        return False
    root = message.root
    calls = isinstance(root, types.JSONRPCRequest) and root.method == "tools/call"
    if calls and not _finite((root.params or {}).get("arguments")):  # type: ignore[union-attr]
        return False
    if isinstance(root, types.JSONRPCRequest):
        if root.method not in SERVED:
            return False
        union: Any = types.ClientRequest
    elif isinstance(root, types.JSONRPCNotification):
        union = types.ClientNotification
    else:
        return True
    try:
        union.model_validate({"method": root.method, "params": root.params})
    except ValidationError:
        return False
    return True


def _check_answer(line: bytes, answer: str) -> dict[str, Any]:
    parsed = json.loads(answer)
    assert parsed["jsonrpc"] == "2.0" and set(parsed) == {"jsonrpc", "id", "error"}
    assert parsed["id"] is None or isinstance(parsed["id"], str | int | float)
    error = parsed["error"]
    assert error["data"]["code"] in OUR_CODES[error["code"]], (line, error)
    assert error["message"] and error["data"]["message"]
    return dict(parsed)


@settings(max_examples=300)
@given(line=st.binary(max_size=200))
def test_any_bytes_are_passed_on_or_answered_and_never_raise(line: bytes) -> None:
    checked = check_line(line)
    if isinstance(checked, str):
        _check_answer(line, checked)
    else:
        assert checked is None or isinstance(checked, SessionMessage)


@settings(max_examples=500)
@given(message=messages())
def test_every_message_is_passed_on_or_answered_naming_its_request(message: dict[str, Any]) -> None:
    line = json.dumps(message).encode()
    checked = check_line(line)
    given = message.get("id")  # an id JSON-RPC allows is echoed (a number: the SDK's or not)
    readable_id = type(given) in (str, int) or (type(given) is float and math.isfinite(given))
    if _sdk_reads(line):
        assert isinstance(checked, SessionMessage), (message, checked)
    elif isinstance(checked, str):
        answer = _check_answer(line, checked)
        assert answer["id"] == (message["id"] if readable_id else None), (message, answer)
    elif checked is None:  # dropped: only a notification (no id, or a notification's method)
        method = message.get("method")
        assert isinstance(method, str), message
        assert "id" not in message or method in NOTIFICATIONS, message
    served_id = type(given) in (str, int)  # (a notification's method with another id: as read)
    if "id" in message and served_id and message.get("jsonrpc") == "2.0" and "method" in message:
        assert checked is not None, message  # a request always gets through or an answer


def test_the_keys_of_a_calls_arguments_are_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A line the SDK's parser refuses (a lone surrogate escape) is read by Python, and every
    key in it checked for one: a call's arguments were walked twice (as the arguments, then
    again inside params)."""
    from philont.mcp import transport

    checked: list[str] = []

    def counting(text: str) -> str | None:
        checked.append(text)
        return unstorable(text)

    monkeypatch.setattr(transport, "unstorable", counting)
    arguments = {f"key{i}": {"inner": "x"} for i in range(5)}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "list_upcoming", "arguments": {**arguments, "text": "LONE"}},
    }
    line = json.dumps(message).replace("LONE", "\\udc80").encode()

    assert isinstance(check_line(line), SessionMessage)  # passed on: the tool refuses it by name
    assert sorted(checked) == sorted(["name", "text", *arguments, *["inner"] * 5])
