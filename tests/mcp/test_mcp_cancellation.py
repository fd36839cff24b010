"""A request the client cancels (``notifications/cancelled``) while it is in flight gets no
answer (MCP: the receiver of a cancellation SHOULD NOT answer the cancelled request). The SDK
answered each one at once with an error ``0 "Request cancelled"``, although the call ran on to
its end and kept its effect, and an official client reads an answer to a request it cancelled
as an error of its own ("a response for an unknown message ID"). A cancellation that comes
after the answer changes nothing, and an id that was cancelled is answered when used again."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from tests.mcp.test_mcp_failures import kept
from tests.mcp_client import RawClient, lock_holder, served, tool_text

REQUEST_IDS = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=12),
).filter(lambda i: not str(i).startswith("ping-"))
"""Ids of either JSON type MCP takes (any integer, any text); the pings' ids are apart."""

_PINGS = itertools.count()
_KEYS = itertools.count()


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cancel") / "memory.sqlite"


@pytest.fixture(scope="module")
def server(db: Path) -> Iterator[RawClient]:
    with served(db) as client:
        yield client


@pytest.fixture(scope="module")
def holder(server: RawClient, db: Path) -> Iterator[sqlite3.Connection]:
    """Another connection to the file (made by the server), holding its lock when told."""
    with lock_holder(db) as conn:
        yield conn


def _ping(server: RawClient) -> None:
    """Every line sent so far has been read and handled (the SDK answers a cancellation as it
    reads it, before the next request)."""
    server.round_trip(f"ping-{next(_PINGS)}")


def _cancel(server: RawClient, request_id: Any) -> None:
    params = {"requestId": request_id, "reason": "the user stopped it"}
    server.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": params})


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(request_id=REQUEST_IDS, finished=st.booleans())
def test_a_cancelled_call_is_not_answered_and_its_id_serves_again(
    server: RawClient, holder: sqlite3.Connection, db: Path, request_id: Any, finished: bool
) -> None:
    with server._seen:  # an id drawn again: its earlier answers are not this example's
        server.answers.pop(request_id, None)
    key = f"k{next(_KEYS)}"
    if not finished:
        holder.execute("BEGIN IMMEDIATE")  # the call waits for the lock: in flight
    server.call(request_id, "store_fact", {"namespace": "mid", "key": key, "value": 1})
    if finished:
        answer = server.answer(request_id)
        _cancel(server, request_id)  # too late: changes nothing
        _ping(server)
        assert server.answers[request_id] == answer and not tool_text(answer)[0]
        assert kept(db, key) == (1, 1)
    else:
        _ping(server)  # the call is running, waiting for the lock
        _cancel(server, request_id)
        _ping(server)
        holder.execute("COMMIT")
        assert request_id not in server.answers, server.answers[request_id]
    with server._seen:
        server.answers.pop(request_id, None)
    server.request(request_id, "ping")  # the id, used again, is answered
    assert server.answer(request_id)["result"] == {}
    assert server.unmatched == []


def test_the_cancelled_calls_had_their_whole_effect_or_none_and_the_server_exits_cleanly(
    server: RawClient, db: Path
) -> None:
    # (after the generated examples, on the same server and file)
    assert server.close_stdin() == 0
    assert server.stderr == b""
    for n in range(next(_KEYS)):
        assert kept(db, f"k{n}") in {(0, 0), (1, 1)}
