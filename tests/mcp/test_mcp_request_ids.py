"""A request is answered with the id it gave whenever JSON-RPC allows that id, also when the
server refuses it: a number written with a fraction or an exponent (``1.5``, ``1.0``, ``1e3``:
JSON-RPC and MCP allow any number, the SDK serves strings and whole numbers only) was refused
with ``id: null``, which no waiting request matches, so its sender waited for ever."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("mcp")

from tests.mcp_client import RawClient, error_of, served

NUMBER_IDS = st.floats(allow_nan=False, allow_infinity=False)
"""Ids written as JSON numbers with a fraction or an exponent (json.dumps: 1.0, 1.5, 1e+16)."""

_PINGS = itertools.count()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawClient]:
    with served(tmp_path_factory.mktemp("ids") / "memory.sqlite") as client:
        yield client


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    request_id=NUMBER_IDS,
    method=st.sampled_from(
        ["ping", "tools/list", "tools/call", "resources/list", "no/such-method"]
    ),
)
def test_a_request_with_a_number_id_it_does_not_serve_is_refused_with_that_id(
    server: RawClient, request_id: float, method: str
) -> None:
    with server._seen:
        server.answers.pop(request_id, None)
    server.request(request_id, method, {"name": "list_facts", "arguments": {"namespace": "u"}})
    server.round_trip(f"after-{next(_PINGS)}")  # the refusal is written before this
    answer = server.answers.get(request_id)  # matched by the id it gave (1.0 == 1)
    assert answer is not None, server.unmatched[-1:]
    assert error_of(answer) == (-32600, "invalid_request"), answer
    assert "string or a whole number" in answer["error"]["data"]["message"]
    assert server.unmatched == []


def test_the_server_exits_cleanly_after_them(server: RawClient) -> None:
    assert server.close_stdin() == 0
    assert server.stderr == b""
