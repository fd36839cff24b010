"""The MCP server (a real ``philont mcp`` process) when things go wrong around a call: the client
cancels it or goes away while it waits for a lock, the database file is deleted under the
server, two hundred calls arrive at once. Each call has its whole effect or none, the server
keeps serving (or exits 0 when stdin closes), and stderr stays empty."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from philont import tools
from philont.store import Store
from tests.mcp_client import RawClient, lock_holder, served, tool_text
from tests.tools.workload import final_state, outcome, seed, workload


@pytest.fixture
def db(tool_db: Path) -> Path:
    return tool_db


@pytest.fixture
def server(db: Path) -> Iterator[RawClient]:
    with served(db) as client:
        yield client


@pytest.fixture
def holder(db: Path) -> Iterator[sqlite3.Connection]:
    with lock_holder(db) as conn:
        yield conn


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def _call(request_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def kept(db: Path, key: str) -> tuple[int, int]:
    """Rows of the fact ``mid.key`` and action-log rows of the calls that stored it."""
    with closing(sqlite3.connect(str(db))) as conn:
        facts = conn.execute(
            "SELECT count(*) FROM memory_facts WHERE namespace = 'mid' AND key = ?", (key,)
        ).fetchone()[0]
        logged = conn.execute(
            "SELECT count(*) FROM memory_actions WHERE params_json LIKE ?", (f'%"{key}"%',)
        ).fetchone()[0]
    return int(facts), int(logged)


def test_a_call_the_client_cancels_mid_way_leaves_the_server_serving(
    server: RawClient, holder: sqlite3.Connection, db: Path
) -> None:
    # The call went on in its thread and then answered a request the SDK had already answered
    # "cancelled": an AssertionError that ended the server, with a traceback on stderr.
    holder.execute("BEGIN IMMEDIATE")
    server.call("slow", "store_fact", {"namespace": "mid", "key": "cancelled", "value": 1})
    server.round_trip("started")  # the call is running, waiting for the lock
    server.send(
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow"}}
    )
    holder.execute("COMMIT")
    server.call("next", "list_facts", {"namespace": "mid"})
    assert tool_text(server.answer("next"))[0] is False
    assert "slow" not in server.answers  # a cancelled request is not answered (MCP)
    assert kept(db, "cancelled") in {(0, 0), (1, 1)}
    assert server.close_stdin() == 0
    assert server.stderr == b""


def test_closing_stdin_mid_call_lets_the_call_end_and_exits_cleanly(
    server: RawClient, holder: sqlite3.Connection, db: Path
) -> None:
    holder.execute("BEGIN IMMEDIATE")
    server.call("slow", "store_fact", {"namespace": "mid", "key": "eof", "value": 1})
    server.round_trip("started")
    assert server.process.stdin is not None
    server.process.stdin.close()  # the client went away
    holder.execute("COMMIT")
    assert server.close_stdin() == 0
    assert kept(db, "eof") == (1, 1)  # the call had its whole effect
    # and its answer, written before the server exits (it was dropped: the client could not
    # know what the call did)
    assert tool_text(server.answer("slow"))[1].startswith("Stored mid.eof")
    assert server.stderr == b""


def test_requests_piped_in_whole_are_all_answered_before_the_server_exits(db: Path) -> None:
    # printf '...' | philont mcp: stdin ends at once, while the calls run. The protocol's
    # requests were answered, the tool calls ran but their answers were dropped.
    calls = [_call(f"c{n}", "store_fact", {"namespace": "piped", "key": f"k{n}", "value": n})
             for n in range(20)]  # fmt: skip
    calls += [_call("list", "list_facts", {"namespace": "piped"})]
    lines = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, *calls]
    done = subprocess.run(
        [sys.executable, "-m", "philont", "mcp", "--db", str(db)],
        input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert set(answers) == {"init", "list"} | {f"c{n}" for n in range(20)}
    assert all(not tool_text(answers[f"c{n}"])[0] for n in range(20))


def test_a_client_that_goes_away_mid_call_leaves_the_call_whole_and_the_server_exits_quietly(
    db: Path, holder: sqlite3.Connection
) -> None:
    # Both pipes closed (the client process died) while a call waits for a lock: its answer
    # meets a closed pipe, and the server must neither print a traceback nor lose the call.
    read_end, write_end = os.pipe()
    process = subprocess.Popen(
        [sys.executable, "-m", "philont", "mcp", "--db", str(db)],
        stdin=subprocess.PIPE,
        stdout=write_end,
        stderr=subprocess.PIPE,
    )
    os.close(write_end)
    assert process.stdin is not None and process.stderr is not None
    with os.fdopen(read_end, "rb") as answers:

        def ask(message: dict[str, Any]) -> None:
            assert process.stdin is not None
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()

        ask(INITIALIZE)
        assert b'"id":"init"' in answers.readline()
        holder.execute("BEGIN IMMEDIATE")
        ask(_call("slow", "store_fact", {"namespace": "mid", "key": "gone", "value": 1}))
        ask({"jsonrpc": "2.0", "id": "started", "method": "ping"})
        assert b'"id":"started"' in answers.readline()
    process.stdin.close()  # both ends closed: the client is gone
    holder.execute("COMMIT")
    assert process.wait(60) == 0
    assert process.stderr.read() == b""
    assert kept(db, "gone") == (1, 1)


def test_a_deleted_database_is_a_typed_error_and_the_server_goes_on(
    server: RawClient, db: Path
) -> None:
    # Its connections went on writing to the deleted file, and every call said it was stored.
    server.call(1, "store_fact", {"namespace": "user", "key": "city", "value": "Berlin"})
    assert tool_text(server.answer(1))[0] is False
    for companion in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        companion.unlink(missing_ok=True)
    server.call(2, "store_fact", {"namespace": "user", "key": "city", "value": "Paris"})
    server.call(3, "get_fact", {"namespace": "user", "key": "city"})
    for request_id in (2, 3):
        is_error, text = tool_text(server.answer(request_id))
        assert is_error and text.startswith("error (database_gone): "), text
    server.request(4, "tools/list")
    assert len(server.answer(4)["result"]["tools"]) == len(tools.TOOL_NAMES)
    assert not db.exists()  # and no empty database made in its place
    assert server.close_stdin() == 0
    assert server.stderr == b""


def test_two_hundred_calls_at_once_leave_what_they_leave_one_by_one(
    server: RawClient, db: Path, tmp_path: Path, tool_template: Path
) -> None:
    # Calls that only read were refused (database_busy) whenever a writer was busy: SQLite
    # does not wait to turn their read into the write that logs them.
    baseline = tmp_path / "baseline.sqlite"
    with sqlite3.connect(str(tool_template)) as src, sqlite3.connect(str(baseline)) as dst:
        src.backup(dst)
    calls = workload(200)
    with Store.open(baseline) as store:
        for name, args in seed():
            assert tools.call(name, args, db=store).ok
        expected = [outcome(tools.call(name, args, db=store)) for name, args in calls]
        expected_state = final_state(store)
    for n, (name, args) in enumerate(seed()):
        server.call(f"seed-{n}", name, args)
        assert tool_text(server.answer(f"seed-{n}"))[0] is False
    for n, (name, args) in enumerate(calls):
        server.call(n, name, args)
    got = []
    for n in range(len(calls)):
        is_error, text = tool_text(server.answer(n))
        got.append((not is_error, None if not is_error else text[7:].split(")")[0]))
    assert got == expected
    assert server.close_stdin() == 0
    with Store.open(db) as store:
        assert final_state(store) == expected_state
    assert server.stderr == b""
