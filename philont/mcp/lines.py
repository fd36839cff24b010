"""The lines a client sends on stdin, each held in memory only up to :data:`MAX_LINE_BYTES`.

A line was held whole however long it was, and parsed twice: a 200 MB request took 1.1 GB of
memory and 9 seconds to be refused for its size (a tool's arguments are at most
``MAX_ARGUMENT_BYTES``, 1 MB). A line longer than the limit is now read past without being
kept: only its head (:class:`Oversized`), enough to name its id and method in the answer.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from typing import Any, BinaryIO, Final, NamedTuple

import anyio

from philont.schemas.inputs import MAX_ARGUMENT_BYTES

__all__ = ["MAX_BATCH_MESSAGES", "MAX_LINE_BYTES", "Oversized", "fd_of", "head_fields", "lines"]

MAX_LINE_BYTES: Final = 16 * MAX_ARGUMENT_BYTES
"""The longest line the server reads whole: room for the largest arguments a tool takes in
any JSON spelling of them (``\\u0001`` is six bytes for one), and the refusal of a longer
argument stays the tool's own (``error (invalid_arguments): arguments are N bytes ...``)."""
MAX_BATCH_MESSAGES: Final = 100
"""The most messages a line holding a batch may hold: the answers to a batch are written as one
line once all are done, so they are held until then (each up to a tool's result, tens of KB)."""
HEAD_BYTES: Final = 65_536
"""What is kept of an oversized line: its id and method come first in the messages clients
write."""


class Oversized(NamedTuple):
    """A line longer than the limit: its first bytes, and how long it was when refused."""

    head: bytes
    size: int


def fd_of(stream: BinaryIO, *kinds: Any) -> int | None:
    """The file descriptor of ``stream`` when it is of one of ``kinds`` (``stat.S_ISFIFO``
    ...), else None (a regular file, a terminal, a test's buffer, anything on Windows, where
    the event loop cannot wait for a pipe)."""
    if sys.platform == "win32":
        return None
    try:
        fd = stream.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return None
    return fd if any(kind(mode) for kind in kinds) else None


async def lines(source: BinaryIO, limit: int = MAX_LINE_BYTES) -> AsyncIterator[bytes | Oversized]:
    """The lines of ``source`` (the last one may lack its newline); a line longer than
    ``limit`` (give or take one read) is an :class:`Oversized`, and the rest of it is skipped.

    A pipe or socket is read on the event loop when it has data (``os.read`` on the blocking
    descriptor returns what is there, without waiting for more): no worker thread to wake per
    line. Anything else (a file, a terminal, a test's buffer) is read by ``readline`` in a
    worker thread."""
    fd = fd_of(source, stat.S_ISFIFO, stat.S_ISSOCK)
    found = _buffer_lines(source, limit) if fd is None else _pipe_lines(fd, limit)
    async for line in found:
        yield line


async def _buffer_lines(source: BinaryIO, limit: int) -> AsyncIterator[bytes | Oversized]:
    skipping = False
    while line := await anyio.to_thread.run_sync(source.readline, limit + 1):
        ended = line.endswith(b"\n")
        if skipping:
            skipping = not ended
        elif len(line) > limit and not ended:
            yield Oversized(line[:HEAD_BYTES], len(line))
            skipping = True
        else:
            yield line


async def _pipe_lines(fd: int, limit: int) -> AsyncIterator[bytes | Oversized]:
    pending = bytearray()
    skipping = False  # inside an oversized line: dropped up to its newline
    while True:
        await anyio.wait_readable(fd)
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        start = len(pending)
        pending += chunk
        while (end := pending.find(b"\n", start)) >= 0:
            if not skipping:
                yield bytes(pending[: end + 1])
            skipping = False
            del pending[: end + 1]
            start = 0
        if not skipping and len(pending) > limit:
            yield Oversized(bytes(pending[:HEAD_BYTES]), len(pending))
            skipping = True
        if skipping:
            pending.clear()
    if pending and not skipping:
        yield bytes(pending)


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_VALUE = re.compile(r'\s*:\s*("(?:[^"\\]|\\.)*"|-?\d{1,30})\s*[,}]', re.DOTALL)


def head_fields(head: str) -> dict[str, Any]:
    """The top-level ``id`` and ``method`` that the first characters of a JSON-RPC message
    show (a key inside ``params`` is not one of them), read without parsing the rest."""
    found: dict[str, Any] = {}
    depth = 0
    for match in _TOKEN.finditer(head):
        token = match.group()
        if len(token) == 1:
            depth += 1 if token in "[{" else -1
            continue
        value = _VALUE.match(head, match.end()) if depth == 1 else None
        key = _text(token)
        if value is not None and key in ("id", "method") and key not in found:
            found[key] = json.loads(value.group(1))
    return found


def _text(token: str) -> str | None:
    try:
        text = json.loads(token)
    except ValueError:
        return None
    return text if isinstance(text, str) else None
