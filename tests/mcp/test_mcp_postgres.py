"""``philont mcp`` on PostgreSQL serves one agent, named before it starts: without one it
answered ``initialize`` and ``tools/list`` as a working server and then refused every tool
call with ``agent_required``; now it exits before serving, saying so in one line. An agent
nobody has is ``agent_not_found``, as for every command but ``import``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from alembic import command
from sqlalchemy import create_engine, text

pytest.importorskip("mcp")

from philont import agents, settings
from philont.cli.common import EXIT_NOT_FOUND
from philont.migrate.scripts import alembic_config
from philont.store import Store
from tests import pg_support
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


def _agents(layout: Layout) -> int:
    with Store.open(layout.url, upgrade=False) as store:
        return agents.count(store)


@pytest.mark.parametrize("named_by", ["--agent", settings.AGENT_ENV])
def test_an_agent_nobody_has_is_not_found_and_not_created(pg_layout: Layout, named_by: str) -> None:
    """Only ``import`` makes an agent (docs/postgresql.md): a misspelt name started a server
    for a new, empty agent, whose writes then went there."""
    name = pg_layout.new_agent()
    env = {k: v for k, v in os.environ.items() if k != settings.AGENT_ENV}
    agent = ["--agent", name] if named_by == "--agent" else []
    if named_by == settings.AGENT_ENV:
        env[settings.AGENT_ENV] = name
    before = _agents(pg_layout)
    done = subprocess.run(
        [sys.executable, "-m", "philont", *agent, "mcp", "--db",
         pg_layout.app_url.render_as_string(False)],
        input=json.dumps(INITIALIZE) + "\n", capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == EXIT_NOT_FOUND, done
    assert done.stdout == ""
    assert done.stderr == f"error (agent_not_found): no agent named {name!r} in this database\n"
    assert _agents(pg_layout) == before


def test_with_an_agent_the_server_serves_it(
    pg_layout: Layout, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = pg_layout.new_agent()
    with Store.open(pg_layout.url, upgrade=False) as store:
        agents.create(store, name)
    monkeypatch.setenv(settings.AGENT_ENV, name)
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


def _catalog(schema: str) -> list[tuple[object, ...]]:
    """What an upgrade changes in ``schema``: its tables' columns and its recorded revision."""
    engine = create_engine(pg_support.server_url())
    try:
        with engine.connect() as conn:
            columns = conn.execute(
                text(
                    "SELECT table_name, column_name, data_type FROM information_schema.columns"
                    " WHERE table_schema = :s ORDER BY 1, 2"
                ),
                {"s": schema},
            ).all()
            version = conn.scalar(
                text("SELECT to_regclass(:t)"), {"t": f'"{schema}".alembic_version'}
            )
            stamp = (
                conn.execute(text(f'SELECT * FROM "{schema}".alembic_version')).all()
                if version is not None
                else []
            )
    finally:
        engine.dispose()
    return [tuple(c) for c in columns] + [tuple(s) for s in stamp]


@pytest.mark.parametrize("revision", [None, "v036", "v037", "v038"])
def test_an_agent_nobody_has_is_refused_before_the_layout_is_made_or_upgraded(
    revision: str | None,
) -> None:
    """``philont --agent nosuch mcp`` on a layout at an older revision (or none) upgraded it,
    then refused the name: it is refused with the layout as it was."""
    schema = f"t_mcp_old_{os.getpid()}_{revision or 'none'}"
    pg_support._admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; CREATE SCHEMA "{schema}"')
    try:
        url = pg_support.in_schema(pg_support.server_url(), schema)
        if revision is not None:
            command.upgrade(alembic_config(url), revision)
        before = _catalog(schema)
        env = {k: v for k, v in os.environ.items() if k != settings.AGENT_ENV}
        done = subprocess.run(
            [sys.executable, "-m", "philont", "--agent", "nosuch", "mcp", "--db",
             url.render_as_string(False)],
            input=json.dumps(INITIALIZE) + "\n", capture_output=True, text=True, env=env,
            timeout=60,
        )  # fmt: skip
        assert done.returncode == EXIT_NOT_FOUND, done
        assert done.stderr == "error (agent_not_found): no agent named 'nosuch' in this database\n"
        assert _catalog(schema) == before
    finally:
        pg_support._admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
