"""``philont mcp`` on PostgreSQL serves one agent, named before it starts: without one it
answered ``initialize`` and ``tools/list`` as a working server and then refused every tool
call with ``agent_required``; now it exits before serving, saying so in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("mcp")

from philont import settings
from tests.mcp_client import RawClient, tool_text
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}


def test_without_an_agent_the_server_does_not_start(pg_layout: Layout) -> None:
    env = {k: v for k, v in os.environ.items() if k != settings.AGENT_ENV}
    done = subprocess.run(
        [sys.executable, "-m", "philont", "mcp", "--db", pg_layout.app_url.render_as_string(False)],
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 1, done
    assert done.stdout == ""  # no answer: a client sees the server fail to start
    assert done.stderr.startswith("error (agent_required): "), done.stderr
    assert "--agent" in done.stderr and len(done.stderr.splitlines()) == 1


def test_with_an_agent_the_server_serves_it(
    pg_layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(settings.AGENT_ENV, pg_layout.new_agent())
    client = RawClient(pg_layout.app_url.render_as_string(False))
    try:
        client.initialize()
        client.call("s", "store_fact", {"namespace": "user", "key": "city", "value": "Lyon"})
        assert tool_text(client.answer("s"))[0] is False
        client.call("g", "get_fact", {"namespace": "user", "key": "city"})
        assert tool_text(client.answer("g"))[1].startswith('"Lyon"')
        assert client.close_stdin() == 0
    finally:
        client.stop()
