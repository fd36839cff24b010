"""The MCP server: the same eleven tools, schemas and texts as ``philont.tools``, over stdio.

Thin by design: the server holds one Store for its life and every call goes through
``philont.tools.call`` on it (validation, one unit of work, action log), in a worker thread.
Logs go to stderr only; stdout carries the protocol (``philont.mcp.transport``: every line a
client sends gets its JSON-RPC answer).

What a client gets back: a tool's own failure (bad arguments, nothing found, a busy or
deleted database) is a tool result with ``isError`` and the text ``error (<code>): ...`` the
model reads; a call the protocol cannot make (an unknown tool) is a JSON-RPC error ``-32602``
with our code in ``error.data.code``. A call the client cancels (``notifications/cancelled``)
runs to its end in its thread, so it has its whole effect or none of it, and is not answered
(MCP: a cancelled request gets no answer; ``philont.mcp.transport`` drops the SDK's "Request
cancelled"). When stdin ends, the calls in flight are answered before the server stops
(``philont.mcp.transport``), unless stdout is closed too.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
from mcp import types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import McpError
from sqlalchemy import text
from sqlalchemy.engine import URL

from philont import __version__, settings, tools
from philont.db.agents import check_name, require
from philont.db.engine import create_engine, is_postgres, resolve_url
from philont.db.pg_layout import AGENTS_TABLE
from philont.errors import AgentNotFoundError, AgentRequiredError, DatabaseReadOnlyError
from philont.log import get_logger
from philont.mcp.transport import stdio_transport
from philont.store import Store

log = get_logger(__name__)

SERVER_NAME = "philont"


def build_server(store: Store) -> Server:
    """An MCP server on one Store (the server's for its whole life)."""
    server: Server = Server(SERVER_NAME, version=__version__)  # else the SDK's own version

    @server.list_tools()  # type: ignore[no-untyped-call, untyped-decorator]  # SDK is untyped
    async def list_tools() -> list[types.Tool]:
        return [
            types.Tool(name=t["name"], description=t["description"], inputSchema=t["input_schema"])
            for t in tools.anthropic_tools()
        ]

    # Our own handler, not the SDK's ``call_tool`` decorator: that one validates against the
    # schema (our dispatcher does, with the same texts as every other path) and turns every
    # exception, a protocol error included, into a tool result.
    async def call_tool(request: types.CallToolRequest) -> types.ServerResult:
        return await _call(store, request.params.name, request.params.arguments)

    server.request_handlers[types.CallToolRequest] = call_tool
    return server


async def _call(store: Store, name: str, arguments: dict[str, Any] | None) -> types.ServerResult:
    call = functools.partial(tools.call, name, arguments, db=store)
    result = await anyio.to_thread.run_sync(call)  # not abandoned when cancelled: it ends first
    # Cancelled meanwhile (the client's notifications/cancelled, stdout closed): raise here, so
    # that the SDK does not answer the request (it answered the cancellation itself, an answer
    # the transport does not write).
    await anyio.lowlevel.checkpoint()
    if result.error_code == "unknown_tool":
        raise McpError(
            types.ErrorData(
                code=types.INVALID_PARAMS,
                message=f"Unknown tool: {name[:80]}",
                data={"code": result.error_code, "message": result.error},
            )
        )
    return types.ServerResult(
        types.CallToolResult(
            content=[types.TextContent(type="text", text=result.text)], isError=not result.ok
        )
    )


async def serve_stdio(store: Store) -> None:
    server = build_server(store)
    async with stdio_transport() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def run(db: str | Path | None = None, *, agent: str | None = None, read_only: bool = False) -> None:
    """Open the database once (default: ``$MEMORY_DB_PATH``, then the default path) and
    serve until stdin closes.

    ``read_only`` (SQLite): serve the file through a read-only Store (``Store.open(...,
    read_only=True)``): nothing is created, upgraded or written, and a tool that writes
    answers ``database_read_only`` as a tool error. A file this process may not write (a
    read-only file or file system) is served so without it too, saying so on stderr (it
    was refused before the server started: exit 1 before ``initialize``)."""
    with _open(db, agent, read_only) as store:
        anyio.run(serve_stdio, store)


def _open(db: str | Path | None, agent: str | None, read_only: bool) -> Store:
    """The server's Store: read-only when asked, or when the file cannot be written. On
    PostgreSQL it serves one agent (``--agent``, ``$PHILONT_AGENT``), named before the server
    starts (without one it answered ``initialize`` and ``tools/list`` as a working server, and
    then refused every tool call: ``agent_required``), and already in the database: an agent
    nobody has (a misspelt name) is :class:`~philont.errors.AgentNotFoundError`, as for every
    command but ``import`` (the server created it)."""
    url = resolve_url(db)
    if is_postgres(url):
        return _open_agent(url, agent, read_only)
    if not read_only:
        try:
            return Store.open(url, agent=agent)
        except DatabaseReadOnlyError as exc:
            reason = exc.message
    store = Store.open(url, agent=agent, read_only=True)
    if not read_only:
        log.warning("mcp.serving_read_only", reason=reason, writes="database_read_only")
    return store


def _open_agent(url: URL, agent: str | None, read_only: bool) -> Store:
    """The server's Store on PostgreSQL: its one agent, which must exist."""
    from philont import agents

    name = settings.default_agent() if agent is None else check_name(agent)
    if name is None:
        raise AgentRequiredError(
            "a PostgreSQL database holds many agents: name the one this server serves "
            f"(philont --agent NAME mcp, or ${settings.AGENT_ENV})"
        )
    if not read_only:
        _require_before_upgrade(url, name)
    store = Store.open(url, agent=name, read_only=read_only)
    try:
        agents.require(store, name)
    except BaseException:
        store.close()
        raise
    return store


def _require_before_upgrade(url: URL, name: str) -> None:
    """:class:`~philont.errors.AgentNotFoundError` for an agent the registry does not hold,
    read before ``Store.open`` creates or upgrades the layout: a misspelt name upgraded a
    database at an older revision (or made the layout in an empty one) and only then was
    refused. No registry yet: no agent either (the layout's first revision, v036, makes the
    registry and no agent)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            if conn.scalar(text("SELECT to_regclass(:t)"), {"t": AGENTS_TABLE}) is None:
                raise AgentNotFoundError(name)
            require(conn, name)
    finally:
        engine.dispose()
