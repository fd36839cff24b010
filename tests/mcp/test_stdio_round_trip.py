"""The MCP server end to end with the SDK's own client over stdio."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from philont import tools

mcp = pytest.importorskip("mcp")
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("store_fact", {"namespace": "user.home", "key": "city", "value": "Berlin"}),
    ("get_fact", {"namespace": "user.home", "key": "city"}),
    ("list_facts", {"namespace": "user.*"}),
    ("search_notes", {"query": "deposit"}),
    ("search_skills", {"query": "zip"}),
    ("use_skill", {"name": "missing-skill"}),
    ("recall_sessions", {"query": "Berlin"}),
    (
        "create_calendar_event",
        {"title": "Dentist", "starts_at": "2030-01-02T09:00:00+01:00", "timezone": "Europe/Berlin"},
    ),
    ("list_upcoming", {"window_days": 30}),
    ("schedule_reminder", {"name": "water", "message": "drink water", "interval_ms": 3600000}),
    ("cancel_schedule", {"name": "water"}),
]


async def _session_run(db: Path) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "philont", "mcp", "--db", str(db)]
    )
    out: dict[str, Any] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        listed = await session.list_tools()
        out["tools"] = {t.name: t for t in listed.tools}
        out["results"] = {}
        for name, arguments in CALLS:
            out["results"][name] = await session.call_tool(name, arguments)
        out["bad"] = await session.call_tool(
            "store_fact", {"namespace": "self", "key": "k", "value": 1}
        )
    return out


def test_the_sdk_client_lists_calls_and_sees_failures_as_tool_errors(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    got = anyio.run(_session_run, db)
    expected = {t["name"]: t for t in tools.anthropic_tools()}
    assert set(got["tools"]) == set(expected)
    for name, tool in got["tools"].items():
        assert tool.inputSchema == expected[name]["input_schema"]
        assert tool.description == expected[name]["description"]
    results = got["results"]
    assert results["store_fact"].isError is False
    assert results["get_fact"].content[0].text.startswith('"Berlin" [state')
    assert results["use_skill"].isError is True
    assert "skill_not_found" in results["use_skill"].content[0].text
    assert results["cancel_schedule"].isError is False
    for name in (
        "list_facts",
        "search_notes",
        "search_skills",
        "recall_sessions",
        "create_calendar_event",
        "list_upcoming",
        "schedule_reminder",
    ):
        assert results[name].isError is False, (name, results[name].content[0].text)
    assert got["bad"].isError is True
    assert "reserved_namespace" in got["bad"].content[0].text
