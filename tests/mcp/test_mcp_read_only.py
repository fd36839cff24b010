"""``philont mcp`` on a database it must not write: a file this process may not write (chmod
444) is served read-only (it ended with exit 1 before ``initialize``), and ``--read-only``
serves any SQLite file so. Reading tools answer; a writing tool answers the typed
``database_read_only`` as a tool error and the server goes on serving; the file is unchanged,
and stdin's end is exit 0 with no traceback on stderr."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

pytest.importorskip("mcp")

from philont import tools
from philont.store import Store
from tests.mcp_client import RawClient, tool_text


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.parametrize("how", ["chmod 444", "--read-only"])
def test_a_read_only_database_is_served_and_writes_are_tool_errors(tool_db: Path, how: str) -> None:
    with Store.open(tool_db) as store:
        stored = tools.call(
            "store_fact", {"namespace": "user", "key": "city", "value": "Rome"}, db=store
        )
    assert stored.ok, stored.text
    if how == "chmod 444":
        tool_db.chmod(0o444)
        options: tuple[str, ...] = ()
    else:
        options = ("--read-only",)
    before = _digest(tool_db)
    client = RawClient(tool_db, *options)
    try:
        client.initialize()
        client.call(1, "store_fact", {"namespace": "user", "key": "city", "value": "Berlin"})
        client.call(2, "get_fact", {"namespace": "user", "key": "city"})
        failed, text = tool_text(client.answer(1))
        assert failed, text
        assert text.startswith("error (database_read_only): "), text
        ok, text = tool_text(client.answer(2))
        assert not ok, text
        assert text.startswith('"Rome"'), text
        client.round_trip("alive")  # still serving after the refused write
        assert client.close_stdin() == 0
    finally:
        client.stop()
    assert _digest(tool_db) == before
    assert b"Traceback" not in client.stderr, client.stderr.decode()
    shown = client.stderr.decode()
    if how == "--read-only":
        assert shown == ""
    else:  # served read-only without being asked: it says so, once
        assert shown.count("mcp.serving_read_only") == 1, shown
        assert "the file is read-only" in shown, shown
