"""The MCP server: the same eleven tools, schemas and texts as ``philont.tools``, over stdio.

Thin by design: every call goes through ``philont.tools.call`` (validation, one unit of work,
action log). Logs go to stderr only; stdout carries the protocol.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from philont import tools

SERVER_NAME = "philont"


def build_server(db: str | Path | None = None) -> Server:
    """An MCP server bound to a database (default: ``$MEMORY_DB_PATH`` at call time)."""
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
        result = await anyio.to_thread.run_sync(lambda: tools.call(name, arguments, db=db))
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], isError=not result.ok
        )

    return server


async def serve_stdio(db: str | Path | None = None) -> None:
    server = build_server(db)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run(db: str | Path | None = None) -> None:
    """Serve until stdin closes."""
    anyio.run(serve_stdio, db)
