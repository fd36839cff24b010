"""The MCP transport's reading and writing of stdio (``philont.mcp.transport``), on generated
lines and chunkings: a pipe read on the event loop gives the same lines as ``readline`` on a
buffer, and answers of every size leave on a pipe whole and in order (a short one written
from the event loop, a long one from a worker thread)."""

from __future__ import annotations

import io
import itertools
import json
import os
import threading
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from mcp import types
from mcp.shared.message import SessionMessage

from philont.mcp.transport import PIPE_BUF, _lines, stdio_transport

line_texts = st.binary(max_size=300).map(lambda b: b.replace(b"\n", b""))


async def _collect(source: Any) -> list[bytes]:
    return [line async for line in _lines(source)]


def _through_pipe(data: bytes, cuts: list[int]) -> list[bytes]:
    """The lines of ``data`` read from a pipe that a thread fills in pieces cut at ``cuts``."""
    read_fd, write_fd = os.pipe()
    bounds = [0, *sorted({c % (len(data) + 1) for c in cuts}), len(data)]

    def feed() -> None:
        with os.fdopen(write_fd, "wb", buffering=0) as sink:
            for start, end in itertools.pairwise(bounds):
                sink.write(data[start:end])

    feeder = threading.Thread(target=feed)
    feeder.start()
    with os.fdopen(read_fd, "rb", buffering=0) as source:
        got = anyio.run(_collect, source)
    feeder.join()
    return got


@settings(max_examples=60, deadline=None)
@given(
    lines=st.lists(line_texts, max_size=8),
    last_newline=st.booleans(),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
)
def test_a_pipe_gives_the_lines_readline_gives(
    lines: list[bytes], last_newline: bool, cuts: list[int]
) -> None:
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    expected = anyio.run(_collect, io.BytesIO(data))  # not a pipe: readline in a thread
    assert expected == io.BytesIO(data).readlines()
    assert _through_pipe(data, cuts) == expected


def _response(i: int, size: int) -> SessionMessage:
    result = {"content": [{"type": "text", "text": "x" * size}], "isError": False}
    message = types.JSONRPCResponse(jsonrpc="2.0", id=i, result=result)
    return SessionMessage(types.JSONRPCMessage(message))


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(0, 3 * PIPE_BUF), min_size=1, max_size=12))
def test_answers_of_every_size_leave_a_pipe_whole_and_in_order(sizes: list[int]) -> None:
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    received: list[bytes] = []

    def drain() -> None:
        with os.fdopen(out_read, "rb") as client:
            received.extend(client.readlines())

    reader = threading.Thread(target=drain)
    reader.start()

    async def serve() -> None:
        with os.fdopen(in_read, "rb", buffering=0) as stdin, os.fdopen(out_write, "wb") as out:
            async with stdio_transport(stdin, out) as (_from_client, to_client):
                async with to_client:
                    for i, size in enumerate(sizes):
                        await to_client.send(_response(i, size))
                os.close(in_write)  # the client is done: reading ends, the transport closes

    anyio.run(serve)
    reader.join()
    answers = [json.loads(line) for line in received]
    assert [a["id"] for a in answers] == list(range(len(sizes)))
    assert [len(a["result"]["content"][0]["text"]) for a in answers] == sizes
    assert all(line.endswith(b"\n") for line in received)


def test_a_client_that_stops_reading_blocks_the_answers_not_the_event_loop() -> None:
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    received: list[bytes] = []
    ticks_while_stalled: list[int] = []

    def drain() -> None:  # the client reads nothing for 0.5 s, then everything
        with os.fdopen(out_read, "rb") as client:
            received.extend(client.readlines())

    async def serve() -> None:
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await anyio.sleep(0.01)
                ticks += 1

        with os.fdopen(in_read, "rb", buffering=0) as stdin, os.fdopen(out_write, "wb") as out:
            async with anyio.create_task_group() as tg:
                tg.start_soon(tick)
                async with stdio_transport(stdin, out) as (_from_client, to_client):
                    async with to_client:
                        for i in range(200):  # about 220 kB: more than the pipe holds
                            await to_client.send(_response(i, 1000))
                    ticks_while_stalled.append(ticks)  # the client has not read yet
                    os.close(in_write)
                tg.cancel_scope.cancel()

    reader = threading.Timer(0.5, drain)
    reader.start()
    anyio.run(serve)
    reader.join()
    assert [json.loads(line)["id"] for line in received] == list(range(200))
    assert ticks_while_stalled[0] >= 20  # the loop kept running while the pipe was full
