"""JSON-RPC batches (a line holding an array of messages) under MCP 2025-03-26, which says an
implementation MUST support receiving them: the server negotiated that version and refused
every batch with one ``-32600`` error whose id was ``null``, so no request in it was answered
by its id and the client waited until it timed out. Now each message of the batch is handled
as if sent alone, and the answers to its requests come back as one array on one line (none
for notifications). Without batches (2025-06-18 removed them, and before ``initialize``) a
batch is refused as before, saying why."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from philont.mcp.depth import items
from philont.mcp.lines import MAX_BATCH_MESSAGES
from tests.mcp_client import RawClient, error_of, lock_holder, served, tool_text

BATCHES = "2025-03-26"

_IDS = itertools.count()


def _request(method: str, params: Any = None) -> dict[str, Any]:
    """A request of ``method`` (its id set when it is sent: :func:`_with_ids`)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": None, "method": method}
    if params is not None:
        message["params"] = params
    return message


def _call(name: str, arguments: Any) -> dict[str, Any]:
    return _request("tools/call", {"name": name, "arguments": arguments})


REQUESTS = st.sampled_from(
    [
        _request("ping"),
        _request("tools/list"),
        _call("get_fact", {"namespace": "user", "key": "city"}),  # stored by the fixture
        _call("get_fact", {"namespace": "user", "key": "nowhere"}),  # fact_not_found
        _call("list_facts", {"namespace": "user"}),
        _call("store_fact", {"namespace": 5, "key": ["k"]}),  # invalid_arguments (tool)
        _call("get_fact", "namespace=user"),  # -32602 invalid_arguments
        _call("no_such_tool", {}),  # -32602 unknown_tool
        _request("no/such"),  # -32601
        _request("tools/list", {"cursor": 5}),  # -32602 invalid_params
    ]
)
NOTIFICATIONS = st.sampled_from(
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "gone"}},
        {"jsonrpc": "2.0", "method": "notifications/no_such"},  # dropped
        {"jsonrpc": "2.0", "id": "not-asked", "result": {}},  # a response: dropped
    ]
)
MALFORMED = st.sampled_from(
    [
        "42",
        '"text"',
        '{"jsonrpc": "2.0"}',
        '{"jsonrpc": "1.0", "id": "ID", "method": "ping"}',
        '{"jsonrpc": "2.0", "id": "ID"}',
        '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": "ID", "method": "tools/call", "params": {"name": "get_fact",'
        ' "arguments": {"namespace": "user", "key": "a", "key": "b"}}}',  # a key given twice
        '{"jsonrpc": "2.0", "id": "ID", "method": "tools/call", "params": {"name": "get_fact",'
        ' "arguments": {"namespace": "user", "key": NaN}}}',
        '{"jsonrpc": "2.0", "id": "ID", "method": "tools/call", "params": {"name": "store_fact",'
        f' "arguments": {{"namespace": "user", "key": "k", "value": {"[" * 300}{"]" * 300}}}}}}}',
    ]
)
"""Texts of messages the transport refuses ("ID": the request's id, made unique; 1.5: an id
it does not serve, echoed)."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    with served(tmp_path_factory.mktemp("batches") / "memory.sqlite", BATCHES) as client:
        client.call("stored", "store_fact", {"namespace": "user", "key": "city", "value": "Köln"})
        assert tool_text(client.answer("stored"))[0] is False
        yield client


def _with_ids(element: dict[str, Any] | str, id_type: type) -> tuple[str, Any, bool]:
    """The text of ``element`` with a fresh id (of ``id_type``) where it has one, that id, and
    whether it is a request the server runs (answered once it is done; the transport answers
    the others as it reads them)."""
    n = next(_IDS)
    request_id = n if id_type is int else f"r{n}"
    if isinstance(element, str):
        fresh = '"ID"' in element
        return element.replace('"ID"', json.dumps(request_id)), request_id if fresh else None, False
    if element.get("id", 0) is None:
        return json.dumps({**element, "id": request_id}), request_id, True
    return json.dumps(element), None, False


def _alone(server: RawClient, text: str, request_id: Any, runs: bool) -> list[dict[str, Any]]:
    """The answers ``text`` gets as a line of its own (its id used again once its batch is
    answered)."""
    before = len(server.unmatched)
    with server._seen:
        for known in (request_id, 1.5):
            server.answers.pop(known, None)
    server.send(text)
    server.round_trip(f"ping-{next(_IDS)}")  # every line before it has been read
    got = [server.answer(request_id)] if runs else []
    got += [server.answers[k] for k in (request_id, 1.5) if not runs and k in server.answers]
    return got + server.unmatched[before:]


def _key(answer: dict[str, Any]) -> str:
    return json.dumps(answer, sort_keys=True)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    elements=st.lists(st.one_of(REQUESTS, NOTIFICATIONS, MALFORMED), min_size=1, max_size=8),
    id_types=st.lists(st.sampled_from([int, str]), min_size=8, max_size=8),
    spacing=st.sampled_from([", ", ",", " ,\r\t"]),  # (a newline ends the line)
)
def test_a_batch_is_answered_as_its_messages_alone_in_one_array(
    server: RawClient, elements: list[Any], id_types: list[type], spacing: str
) -> None:
    sent = [_with_ids(element, t) for element, t in zip(elements, id_types, strict=False)]
    batches = len(server.batches)
    server.send(f"[{spacing.join(text for text, _, _ in sent)}]")
    got = server.batch_answer(batches + 1) if any(request for _, _, request in sent) else None
    expected = [answer for message in sent for answer in _alone(server, *message)]
    if expected:
        got = got or server.batch_answer(batches + 1)
        assert sorted(map(_key, got)) == sorted(map(_key, expected)), (sent, got)
        fresh = [request_id for _, request_id, _ in sent if request_id is not None]
        assert sorted(map(str, fresh)) == sorted(str(a["id"]) for a in got if a["id"] in fresh)
    else:  # notifications only: no answer at all
        server.round_trip(f"ping-{next(_IDS)}")
        assert len(server.batches) == batches
    assert server.stderr == b""


def test_the_batch_answers_were_all_the_server_wrote(server: RawClient) -> None:
    # (after the generated examples, on the same server): every batch got one line
    assert server.close_stdin() == 0
    assert server.unreadable == [] and server.stderr == b""


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[RawClient]:
    client = RawClient(tmp_path / "memory.sqlite")
    try:
        yield client
    finally:
        client.stop()


def test_an_empty_batch_is_one_invalid_request(fresh: RawClient) -> None:
    fresh.initialize(BATCHES)
    fresh.send("[ ]")
    answer = fresh.unmatched_answer()
    assert answer["id"] is None and error_of(answer) == (-32600, "invalid_request"), answer
    assert "empty batch" in answer["error"]["data"]["message"]
    fresh.round_trip("after")
    assert fresh.batches == [] and fresh.close_stdin() == 0 and fresh.stderr == b""


@pytest.mark.parametrize(
    ("line", "id_", "ours"),
    [
        ('[{"jsonrpc": "2.0", "id": "a", "method": "ping"}, {"jsonrpc"', None, "invalid_json"),
        (b'[{"jsonrpc": "2.0", "id": "a", "method": "ping", "x": "\xff"}]', None, "invalid_json"),
        ('[{"jsonrpc": "2.0", "id": "a", "method": "ping"}] 1', None, "invalid_json"),
    ],
)
def test_a_batch_that_is_not_json_is_one_parse_error(
    fresh: RawClient, line: str | bytes, id_: Any, ours: str
) -> None:
    fresh.initialize(BATCHES)
    fresh.send(line)
    answer = fresh.unmatched_answer()
    assert answer["id"] is id_ and error_of(answer) == (-32700, ours), answer
    fresh.round_trip("after")
    assert fresh.batches == [] and fresh.close_stdin() == 0 and fresh.stderr == b""


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", None])
def test_a_batch_without_batches_is_refused_saying_why(
    fresh: RawClient, version: str | None
) -> None:
    if version is not None:
        fresh.initialize(version)
    fresh.send('[{"jsonrpc": "2.0", "id": "a", "method": "ping"}]')
    answer = fresh.unmatched_answer()
    assert answer["id"] is None and error_of(answer) == (-32600, "invalid_request"), answer
    message = answer["error"]["data"]["message"]
    assert "2025-03-26 only" in message and "2025-06-18 removed them" in message, message
    if version is None:  # a session asking for 2025-03-26 takes batches once initialized
        fresh.initialize(BATCHES)
        fresh.send('[{"jsonrpc": "2.0", "id": "a", "method": "ping"}]')
        assert fresh.batch_answer() == [{"jsonrpc": "2.0", "id": "a", "result": {}}]
    assert "a" not in fresh.answers
    assert fresh.close_stdin() == 0 and fresh.stderr == b""


def test_a_batch_too_long_is_refused_by_the_ids_of_its_requests(fresh: RawClient) -> None:
    fresh.initialize(BATCHES)
    pings = [{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(MAX_BATCH_MESSAGES)]
    note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    fresh.send(json.dumps([*pings, note]))
    answers = fresh.batch_answer()
    assert sorted(a["id"] for a in answers) == list(range(MAX_BATCH_MESSAGES))
    assert {error_of(a) for a in answers} == {(-32600, "invalid_request")}
    fresh.send(json.dumps(pings))  # at the limit: served
    assert sorted(a["id"] for a in fresh.batch_answer(2)) == list(range(MAX_BATCH_MESSAGES))
    assert fresh.close_stdin() == 0 and fresh.stderr == b""


def test_a_cancelled_request_of_a_batch_is_left_out_of_its_answers(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    with served(db, BATCHES) as client, lock_holder(db) as holder:
        holder.execute("BEGIN IMMEDIATE")  # the call waits for the lock: in flight
        call = {"jsonrpc": "2.0", "id": "slow", "method": "tools/call",
                "params": {"name": "store_fact",
                           "arguments": {"namespace": "user", "key": "k", "value": 1}}}  # fmt: skip
        client.send(json.dumps([call, {"jsonrpc": "2.0", "id": "quick", "method": "ping"}]))
        client.round_trip("ping-1")  # the batch has been read: the call is running
        assert client.batches == []  # its answer waits for the call's
        client.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": "slow"}})  # fmt: skip
        client.round_trip("ping-2")
        holder.execute("COMMIT")
        assert client.batch_answer() == [{"jsonrpc": "2.0", "id": "quick", "result": {}}]
        assert client.stderr == b""
        # a batch of a request and its own cancellation: nothing to answer. (The SDK fails to
        # cancel a request whose handler has not started yet and says so on stderr, as it
        # does for the two sent as lines in one write; the request then runs to its end.)
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": "again"}}  # fmt: skip
        holder.execute("BEGIN IMMEDIATE")
        client.send(json.dumps([{**call, "id": "again"}, cancel]))
        client.round_trip("ping-3")
        holder.execute("COMMIT")
        client.round_trip("ping-4")
        assert client.close_stdin() == 0  # the call ended before the server did
        assert len(client.batches) == 1 and "slow" not in client.answers
        assert all(line.startswith(b"Failed to validate notification: RequestResponder must")
                   for line in client.stderr.splitlines()), client.stderr  # fmt: skip


def test_a_batch_in_flight_when_stdin_ends_is_answered(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    with served(db, BATCHES) as client, lock_holder(db) as holder:
        holder.execute("BEGIN IMMEDIATE")
        client.send(json.dumps([
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "store_fact", "arguments": {"namespace": "user", "key": "k", "value": 1}}},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ]))  # fmt: skip
        client.round_trip("read")
        assert client.process.stdin is not None
        client.process.stdin.close()
        holder.execute("COMMIT")
        assert client.process.wait(60) == 0
        answers = {a["id"]: a for a in client.batch_answer()}
        assert set(answers) == {1, 2} and tool_text(answers[1])[0] is False


@settings(max_examples=200)
@given(values=st.lists(st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
), max_size=6), indent=st.sampled_from([None, 0, 2]))  # fmt: skip
def test_the_items_of_an_array_are_found_as_written(values: list[Any], indent: int | None) -> None:
    texts = items(json.dumps(values, indent=indent, ensure_ascii=False))
    assert [json.loads(text) for text in texts] == values


def test_initialize_and_a_batch_inside_a_batch_are_refused_there(fresh: RawClient) -> None:
    fresh.initialize(BATCHES)
    initialize = {"jsonrpc": "2.0", "id": "again", "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "raw", "version": "1"}}}  # fmt: skip
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    fresh.send(f"[{json.dumps(initialize)}, [1, 2], {json.dumps(ping)}]")
    answers = {a["id"]: a for a in fresh.batch_answer()}
    assert set(answers) == {3, "again", None}, answers
    assert answers[3]["result"] == {}
    assert error_of(answers["again"]) == error_of(answers[None]) == (-32600, "invalid_request")
    assert "initialize inside a batch" in answers["again"]["error"]["data"]["message"]
    assert "a batch inside a batch" in answers[None]["error"]["data"]["message"]
    fresh.send('[{"jsonrpc": "2.0", "id": 4, "method": "ping"}]')  # still 2025-03-26
    assert fresh.batch_answer(2) == [{"jsonrpc": "2.0", "id": 4, "result": {}}]
    assert fresh.close_stdin() == 0 and fresh.stderr == b""
