"""Lone surrogates (``"\\udc80"``: JSON that Python reads, text no UTF-8 can hold) anywhere in
a message: in its id, its method, a tool's name, a key or a value of the arguments or params.
A ping whose id held one crashed the server (pydantic refuses to write the answer), so did an
unknown tool's name (echoed in the error); an error answer echoing one wrote bytes that are not
UTF-8 (no client can read the line); a key holding one got the SDK's bare "Invalid request
parameters" and a warning on stderr. Every such line is now answered with its id, in UTF-8 JSON
(the surrogate escaped as the client sent it), and the server goes on, quietly."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from tests.mcp_client import RawClient

LONE = "\udc80"

CALLS: dict[str, dict[str, Any]] = {
    "store_fact": {"namespace": "user", "key": "city", "value": {"name": "Berlin"}},
    "get_fact": {"namespace": "user", "key": "city"},
    "list_facts": {"namespace": "user.*"},
    "use_skill": {"name": "deploy"},
    "search_notes": {"query": "berlin"},
    "search_skills": {"query": "deploy"},
    "recall_sessions": {"query": "berlin", "since": "2026-01-01", "timezone": "UTC"},
    "create_calendar_event": {"title": "Dentist", "starts_at": "2026-12-10", "timezone": "UTC"},
    "list_upcoming": {},
    "schedule_reminder": {"name": "r", "message": "hi", "cron": "0 9 * * *"},
    "cancel_schedule": {"name": "r"},
}
"""A well-formed call of every tool (each one's arguments hold text to spoil)."""

TEMPLATES: list[dict[str, Any]] = [
    {"jsonrpc": "2.0", "id": "", "method": "ping"},
    {"jsonrpc": "2.0", "id": "", "method": "tools/list", "params": {"cursor": "c"}},
    {"jsonrpc": "2.0", "id": "", "method": "no/such"},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "gone"}},
    {"jsonrpc": "2.0", "id": "", "method": "tools/call",
     "params": {"name": "list_upcoming", "arguments": {}, "_meta": {"progressToken": "t"}}},
    *({"jsonrpc": "2.0", "id": "", "method": "tools/call",
       "params": {"name": name, "arguments": arguments}} for name, arguments in CALLS.items()),
]  # fmt: skip
"""Messages whose every text (key or value) gets a lone surrogate in turn; ``id`` is filled in."""


def spoiled(value: Any) -> Iterator[Any]:
    """``value`` once for each text inside it (a key or a value), that text with a lone
    surrogate appended."""
    if isinstance(value, str):
        yield value + LONE
    elif isinstance(value, dict):
        for key, item in value.items():
            others = {k: v for k, v in value.items() if k != key}
            yield {**others, key + LONE: item}
            for bad in spoiled(item):
                yield {**value, key: bad}
    elif isinstance(value, list):
        for n, item in enumerate(value):
            for bad in spoiled(item):
                yield [*value[:n], bad, *value[n + 1 :]]


def lines() -> list[dict[str, Any]]:
    """Every spoiled message, each request with an id of its own (spoiled too, when it is
    the id's turn)."""
    found = []
    for template in TEMPLATES:
        for message in spoiled(template):
            if "id" in message:
                message["id"] = f"v{len(found)}{message['id'][-1:]}"
            found.append(message)
    return found


def test_every_text_holding_a_lone_surrogate_is_answered_in_utf8_and_the_server_goes_on(
    tmp_path: Path,
) -> None:
    messages = lines()
    assert len(messages) > 150
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.initialize()
        for message in messages:
            # sent as JSON escapes, as a client writes them (json.dumps: ensure_ascii)
            client.send(json.dumps(message))
        for message in messages:
            if isinstance(message.get("id"), str):
                answer = client.answer(message["id"])  # read back as the id it was sent
                if "error" in answer:  # with a code of ours, not the SDK's bare -32602
                    assert isinstance(answer["error"].get("data"), dict), answer
                    assert answer["error"]["data"]["code"], answer
        client.round_trip("after")
        assert client.close_stdin() == 0
        assert client.unreadable == []
        assert client.stderr == b""
    finally:
        client.stop()
