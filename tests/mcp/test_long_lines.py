"""Lines longer than the server reads whole (``philont.mcp.lines.MAX_LINE_BYTES``): a line was
held and parsed whole however long it was (200 MB took 1.1 GB of memory and 9 s to be refused
for its size). Now such a line is skipped without being kept, answered with the id and method
its head shows, and the lines after it are read as ever."""

from __future__ import annotations

import io
import json
import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("mcp")

from philont.mcp.lines import MAX_LINE_BYTES, Oversized, head_fields, lines
from tests.mcp_client import RawClient, error_of, tool_text


async def _collect(source: Any, limit: int) -> list[bytes | Oversized]:
    return [line async for line in lines(source, limit)]


def _from_pipe(data: bytes, limit: int) -> list[bytes | Oversized]:
    read_fd, write_fd = os.pipe()

    def feed() -> None:
        with os.fdopen(write_fd, "wb", buffering=0) as sink:
            for start in range(0, len(data), 50_000):
                sink.write(data[start : start + 50_000])

    feeder = threading.Thread(target=feed)
    feeder.start()
    with os.fdopen(read_fd, "rb", buffering=0) as source:
        got = anyio.run(_collect, source, limit)
    feeder.join()
    return got


@pytest.mark.parametrize("reader", ["buffer", "pipe"])
def test_a_line_past_the_limit_is_skipped_and_the_next_lines_are_whole(reader: str) -> None:
    limit = 1000
    long = b'{"id": 7, "method": "tools/call", "params": "' + b"x" * 300_000 + b'"}\n'
    data = b"first\n" + long + b"second\n" + b"y" * limit + b"\nlast"
    got = (
        anyio.run(_collect, io.BytesIO(data), limit)
        if reader == "buffer"
        else _from_pipe(data, limit)
    )
    assert got[0] == b"first\n" and got[2:] == [b"second\n", b"y" * limit + b"\n", b"last"], got[2:]
    skipped = got[1]
    assert isinstance(skipped, Oversized) and long.startswith(skipped.head)
    assert limit < skipped.size < limit + 65_536 + 1 and len(skipped.head) <= 65_536


keys = st.sampled_from(["id", "method", "params", "jsonrpc", "x"])
values = st.recursive(
    st.none() | st.integers(-(10**6), 10**6) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=8,
)


@given(
    request_id=st.integers(0, 10**9) | st.text(max_size=10),
    method=st.text(max_size=12),
    params=st.dictionaries(keys, values, max_size=4),
    params_first=st.booleans(),
)
def test_the_head_names_the_top_level_id_and_method_never_a_nested_one(
    request_id: int | str, method: str, params: dict[str, Any], params_first: bool
) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0"}
    if params_first:
        message["params"] = params
    message |= {"id": request_id, "method": method}
    message.setdefault("params", params)
    text = json.dumps(message)
    assert head_fields(text) == {"id": request_id, "method": method}
    cut = text[: text.index('"params"')] if not params_first else text[:-1]
    assert head_fields(cut + ' "params": {"id": "nested", "x": "un') in (
        {"id": request_id, "method": method},
        {"id": request_id},
        {"method": method},
        {},
    )


def _rss_kb(pid: int) -> int:
    return int(subprocess.run(["ps", "-o", "rss=", "-p", str(pid)], capture_output=True, text=True,
                              check=True).stdout)  # fmt: skip


def test_the_server_answers_a_huge_line_by_id_without_holding_it(tmp_path: Path) -> None:
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        client.initialize()
        before = _rss_kb(client.process.pid)
        size = 6 * MAX_LINE_BYTES  # 96 MB: held whole, it took about 550 MB
        client.call("huge", "store_fact", {"namespace": "user", "key": "k", "value": "x" * size})
        answer = client.answer("huge")
        assert error_of(answer) == (-32602, "invalid_arguments"), answer
        assert f"more than {MAX_LINE_BYTES:,} bytes" in answer["error"]["data"]["message"]
        grown_mb = (_rss_kb(client.process.pid) - before) / 1024
        assert grown_mb < 100, grown_mb
        client.call("after", "list_facts", {"namespace": "user"})
        assert tool_text(client.answer("after")) == (False, "No facts in user")
        assert client.close_stdin() == 0
        assert client.unmatched == [] and client.stderr == b""
    finally:
        client.stop()
