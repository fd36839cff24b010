"""The MCP server: the same eleven tools, schemas and texts as ``philont.tools``, over stdio.

Thin by design: the server holds one Store for its life and every call goes through
``philont.tools.call`` on it (validation, one unit of work, action log). Logs go to stderr only;
stdout carries the protocol.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from philont import tools
from philont.store import Store

SERVER_NAME = "philont"


def build_server(store: Store) -> Server:
    """An MCP server on one Store (the server's for its whole life)."""
    server: Server = Server(SERVER_NAME)

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]  # SDK is untyped
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(name=t["name"], description=t["description"], inputSchema=t["input_schema"])
            for t in tools.anthropic_tools()
        ]

    # Our dispatcher validates (and reports bad arguments as a tool error the model can read),
    # so the SDK's own jsonschema check is off: both paths give the same texts.
    @server.call_tool(validate_input=False)  # type: ignore[untyped-decorator]  # SDK is untyped
    async def call_tool(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(lambda: tools.call(name, arguments, db=store))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], isError=not result.ok
        )

    return server


async def serve_stdio(store: Store) -> None:
    server = build_server(store)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run(db: str | Path | None = None, *, agent: str | None = None) -> None:
    """Open the database once (default: ``$MEMORY_DB_PATH``, then the default path) and
    serve until stdin closes."""
    with Store.open(db, agent=agent) as store:
        anyio.run(serve_stdio, store)
