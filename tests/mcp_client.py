"""A raw JSON-RPC client of ``philont mcp`` over stdio: it sends any line, malformed ones too,
and waits for answers by id (threads read stdout and stderr; a condition wakes the waiters)."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

TIMEOUT_S = 60.0


class RawClient:
    """A server process on ``db`` and what it has said: answers by id, notifications, stderr."""

    def __init__(self, db: Path | str, *options: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "philont", "mcp", "--db", str(db), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.answers: dict[Any, dict[str, Any]] = {}
        self.unmatched: list[dict[str, Any]] = []  # notifications, answers without an id
        self.batches: list[list[dict[str, Any]]] = []  # lines holding an array of answers
        self.stderr = b""
        self.unreadable: list[bytes] = []  # lines of stdout that are no UTF-8 JSON
        self.ended = False  # stdout closed: the server exited (or closed it)
        self._seen = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:  # not UTF-8, or not JSON: no answer anyone can read
                self.unreadable.append(line)
                continue
            with self._seen:
                if isinstance(message, list):
                    self.batches.append(message)
                elif message.get("id") is not None:
                    self.answers[message["id"]] = message
                else:
                    self.unmatched.append(message)
                self._seen.notify_all()
        with self._seen:
            self.ended = True
            self._seen.notify_all()

    def _read_stderr(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.stderr += line

    def send(self, message: dict[str, Any] | str | bytes) -> None:
        """One line: a message (as JSON), or the text or bytes of a line as they are."""
        if isinstance(message, dict):
            message = json.dumps(message)
        line = message if isinstance(message, bytes) else message.encode("utf-8", "surrogatepass")
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def request(self, request_id: Any, method: str, params: Any = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def call(self, request_id: Any, name: str, arguments: Any) -> None:
        self.request(request_id, "tools/call", {"name": name, "arguments": arguments})

    def answer(self, request_id: Any) -> dict[str, Any]:
        with self._seen:
            self._seen.wait_for(lambda: request_id in self.answers or self.ended, TIMEOUT_S)
            if request_id not in self.answers:
                raise AssertionError(
                    f"no answer to {request_id!r}; unreadable lines: {self.unreadable!r}; "
                    f"stderr: {self.stderr!r}"
                )
            return self.answers[request_id]

    def unmatched_answer(self, count: int = 1) -> dict[str, Any]:
        """The ``count``-th message without an id (an error that could not name its request)."""
        with self._seen:
            self._seen.wait_for(lambda: len(self.unmatched) >= count or self.ended, TIMEOUT_S)
            if len(self.unmatched) < count:
                raise AssertionError(f"no answer without an id; stderr: {self.stderr!r}")
            return self.unmatched[count - 1]

    def batch_answer(self, count: int = 1) -> list[dict[str, Any]]:
        """The ``count``-th line of answers to a batch (a JSON array)."""
        with self._seen:
            self._seen.wait_for(lambda: len(self.batches) >= count or self.ended, TIMEOUT_S)
            if len(self.batches) < count:
                raise AssertionError(
                    f"no answer to batch {count}; answers: {self.answers!r}, "
                    f"without an id: {self.unmatched!r}; stderr: {self.stderr!r}"
                )
            return self.batches[count - 1]

    def initialize(self, version: str = "2025-06-18") -> None:
        self.request(
            "init",
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        )
        answer = self.answer("init")
        assert answer["result"]["protocolVersion"] == version, answer
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def round_trip(self, request_id: Any) -> None:
        """A ping answered: every line sent before it has been read by the server."""
        self.request(request_id, "ping")
        assert self.answer(request_id)["result"] == {}

    def close_stdin(self) -> int:
        """Close the server's stdin (the client went away) and wait for it to exit."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        code = self.process.wait(TIMEOUT_S)
        for reader in self._readers:
            reader.join(TIMEOUT_S)
        return code

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(TIMEOUT_S)


@contextmanager
def served(db: Path | str, version: str = "2025-06-18") -> Iterator[RawClient]:
    """A server on ``db``, initialized (at protocol ``version``), killed at the end if it is
    still running."""
    client = RawClient(db)
    try:
        client.initialize(version)
        yield client
    finally:
        client.stop()


@contextmanager
def lock_holder(db: Path | str) -> Iterator[sqlite3.Connection]:
    """Another process's connection to ``db``, as it were: it holds the write lock when told
    (``BEGIN IMMEDIATE``), and lets it go at the end."""
    conn = sqlite3.connect(str(db), isolation_level=None, check_same_thread=False)
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


def tool_text(answer: dict[str, Any]) -> tuple[bool, str]:
    """(isError, text) of a tools/call answer."""
    result = answer["result"]
    return bool(result["isError"]), str(result["content"][0]["text"])


def error_of(answer: dict[str, Any]) -> tuple[int, str]:
    """(JSON-RPC code, our code) of an error answer."""
    error = answer["error"]
    return int(error["code"]), str(error["data"]["code"])
