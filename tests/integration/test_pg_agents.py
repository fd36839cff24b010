"""Agents of one PostgreSQL database: created as rows (no DDL), counted, listed, renamed,
exported and imported under another name, deleted to the last row; an agent from the old
schema-per-agent layout moves in with export/import; the whole database dumps with defaults."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import insert, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session

from philont import agents, settings, transfer
from philont.cli.common import EXIT_NOT_FOUND
from philont.db.bootstrap import ensure_bootstrap_rows
from philont.db.engine import create_engine
from philont.db.fts import PG_WORDS_COLUMN
from philont.db.models import Fact, Note, RawMessage, RawSession
from philont.db.pg_layout import AGENTS_TABLE, COUNTERS_TABLE
from philont.db.schema import metadata
from philont.errors import AgentNotFoundError, ConflictError
from philont.store import Store
from tests.pg_support import Layout, _admin, in_schema, server_url

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]
CATALOGS = ("pg_class", "pg_attribute", "pg_index", "pg_constraint", "pg_type", "pg_depend")


@pytest.fixture
def store(pg_layout: Layout) -> Iterator[Store]:
    with Store.open(pg_layout.url, upgrade=False) as s:
        yield s


def _catalog_rows(store: Store) -> dict[str, int]:
    with store.engine.connect() as conn:
        return {
            c: int(conn.execute(text(f"SELECT count(*) FROM {c}")).scalar_one()) for c in CATALOGS
        }


def _fill(store: Store, agent: str, marker: str) -> None:
    now = datetime.now(UTC)
    with store.begin(agent=agent) as mem:
        mem.facts.store("user", "city", marker)
        mem.notes.add(f"{marker} note", importance=0.7)
        session = mem.timeline.start_session()
        for n in range(5):
            mem.timeline.append(f"{marker} message {n}", session_id=session.id)
        skill = mem.skills.create(f"{marker.lower()}-skill", "does things", ["do"], "1. do")
        mem.skills.use(skill.name)
        mem.actions.record("use_skill", params={"name": skill.name}, success=True)
        mem.calendar.create(f"{marker} event", now + timedelta(days=1), timezone="UTC")
        mem.schedules.create(f"{marker.lower()}-job", message=marker, interval_ms=60_000)


def _rows_of(store: Store, agent_id: int) -> dict[str, int]:
    """Rows of ``agent_id`` in every table of the layout, unfiltered by anything but the id
    (the owner here bypasses row-level security)."""
    tables = [t.name for t in metadata.sorted_tables] + [COUNTERS_TABLE]
    with store.engine.connect() as conn:
        return {
            t: int(
                conn.execute(
                    text(f"SELECT count(*) FROM {t} WHERE agent_id = :a"), {"a": agent_id}
                ).scalar_one()
            )
            for t in tables
        }


def _dump(store: Store, agent: str) -> list[dict[str, object]]:
    buf = io.StringIO()
    transfer.export(store.url, buf, agent=agent)
    lines = [json.loads(line) for line in buf.getvalue().splitlines()]
    lines[0].pop("exported_at")
    return lines


def test_creating_an_agent_is_a_row_and_adds_no_relation_type_or_constraint(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    agents.create(store, pg_agent_name())  # warm: any first-use work happens here
    before = _catalog_rows(store)
    names = [pg_agent_name() for _ in range(25)]
    for name in names:
        with store.begin(agent=name) as mem:
            mem.facts.store("user", "name", name)
    assert _catalog_rows(store) == before
    listed = {a.name for a in agents.list_agents(store)}
    assert set(names) <= listed
    assert agents.count(store) == len(listed)


def test_an_agent_exported_and_imported_under_another_name_has_every_row(
    store: Store, pg_agent_name: Callable[[], str], tmp_path: Path
) -> None:
    alice, copy = pg_agent_name(), pg_agent_name()
    _fill(store, alice, "Amber")
    out = tmp_path / "alice.jsonl"
    report = transfer.export(store.url, out, agent=alice)
    assert report.rows["memory_raw_messages"] == 5
    transfer.import_(store.url, out, agent=copy)
    original, copied = _dump(store, alice), _dump(store, copy)
    assert copied == original  # same rows, same ids, same counters
    assert not any(PG_WORDS_COLUMN in line for line in map(json.dumps, copied))
    with store.begin(agent=copy) as mem:  # and the copy goes on from the same high-water marks
        # its words stored anew (a generated column: no file carries it, no import writes it)
        found = mem.search.messages("amber message", limit=10)
        assert sorted(h.id for h in found) == [1, 2, 3, 4, 5]
        assert len(mem.search.notes("amber")) == len(mem.search.skills("amber")) == 1
        assert mem.timeline.append("next").id == 6
        assert mem.facts.get("user", "city") is not None


def test_deleting_an_agent_leaves_no_row_of_it_and_every_row_of_the_others(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    gone, kept = pg_agent_name(), pg_agent_name()
    _fill(store, gone, "Garnet")
    _fill(store, kept, "Kyanite")
    gone_id, kept_id = agents.agent_id(store, gone), agents.agent_id(store, kept)
    kept_before = _rows_of(store, kept_id)
    written = _rows_of(store, gone_id)
    deleted = agents.delete(store, gone)
    assert {t: n for t, n in written.items() if n and t != COUNTERS_TABLE} == deleted
    assert set(_rows_of(store, gone_id).values()) == {0}
    with store.engine.connect() as conn:
        left = conn.execute(
            text(f"SELECT count(*) FROM {AGENTS_TABLE} WHERE id = :a"), {"a": gone_id}
        )
        assert left.scalar_one() == 0
    assert _rows_of(store, kept_id) == kept_before
    with pytest.raises(AgentNotFoundError):
        agents.delete(store, gone)


def test_agents_are_renamed_with_their_memory(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    old, new, taken = pg_agent_name(), pg_agent_name(), pg_agent_name()
    _fill(store, old, "Onyx")
    agents.create(store, taken)
    with pytest.raises(ConflictError):
        agents.rename(store, old, taken)
    agents.rename(store, old, new)
    with store.begin(agent=new) as mem:
        fact = mem.facts.get("user", "city")
        assert fact is not None and fact.value == "Onyx"
    assert [a.name for a in agents.list_agents(store, prefix=old) if a.name == old] == []
    with pytest.raises(AgentNotFoundError):
        agents.rename(store, old, pg_agent_name())


def _city(store: Store, agent: str, entry: str) -> str | None:
    """The agent's city, read through a Store-owned unit of work or a host's Session."""
    if entry == "begin":
        with store.begin(agent=agent) as mem:
            fact = mem.facts.get("user", "city")
    else:
        with (
            Session(store.engine) as session,
            session.begin(),
            store.join(session, agent=agent) as mem,
        ):
            fact = mem.facts.get("user", "city")
    return None if fact is None else str(fact.value)


@pytest.mark.parametrize("entry", ["begin", "join"])
@pytest.mark.parametrize("change", ["rename", "delete"])
def test_a_store_follows_an_agent_renamed_or_deleted_by_another_process(
    pg_layout: Layout, pg_agent_name: Callable[[], str], change: str, entry: str
) -> None:
    """A Store caches name -> id; another process (here another Store, its own cache) renames
    or deletes the agent: the name now means the new registry row, never the old id (which
    served the renamed agent's memory, or failed with a foreign key error after a delete)."""
    alice, renamed = pg_agent_name(), pg_agent_name()
    url = pg_layout.url
    with Store.open(url, upgrade=False) as store, Store.open(url, upgrade=False) as other:
        _fill(store, alice, "Onyx")
        assert _city(store, alice, entry) == "Onyx"  # its id is cached now
        if change == "rename":
            agents.rename(other, alice, renamed)
        else:
            agents.delete(other, alice)

        assert _city(store, alice, entry) is None  # a new agent of that name
        with store.begin(agent=alice) as mem:
            mem.facts.store("user", "city", "Paris")
        assert _city(other, alice, entry) == "Paris"
        if change == "rename":
            assert _city(other, renamed, entry) == "Onyx"  # untouched


def test_counting_and_listing_follow_the_registry(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    before = agents.count(store)
    names = sorted(pg_agent_name() for _ in range(3))
    for name in names:
        assert agents.create(store, name)[1] is True
        assert agents.create(store, name)[1] is False  # once
    assert agents.count(store) == before + 3
    listed = [a.name for a in agents.list_agents(store)]
    assert listed == sorted(listed)  # in name order
    assert names == [n for n in listed if n in names]
    assert [a.name for a in agents.list_agents(store, prefix=names[1])] == [names[1]]
    assert len(agents.list_agents(store, limit=2)) == 2


def _legacy_schema(name: str) -> URL:
    """A schema in the old layout (one agent, SQLite-shaped tables, version v034), as philont
    before the shared layout made it (``create_all`` equalled ``upgrade head`` there)."""
    _admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE; CREATE SCHEMA "{name}"')
    url = in_schema(server_url(), name)
    engine = create_engine(url)
    now = datetime(2026, 1, 5, tzinfo=UTC)
    try:
        metadata.create_all(engine)
        with engine.begin() as conn:
            conn.execute(text(f"CREATE TABLE {settings.VERSION_TABLE} (version_num TEXT)"))
            conn.execute(text(f"INSERT INTO {settings.VERSION_TABLE} VALUES ('v034')"))
            conn.execute(text("INSERT INTO memory_meta VALUES ('schema_version', '31')"))
            ensure_bootstrap_rows(conn, now=now)
            conn.execute(insert(RawSession).values(id="s1", started_at=now))
            conn.execute(
                insert(RawMessage),
                [
                    {"session_id": "s1", "role": "user", "content": f"old {n}", "timestamp": now}
                    for n in range(3)
                ],
            )
            conn.execute(insert(Note).values(id="n1", content="old note", created_at=now))
            conn.execute(
                insert(Fact).values(
                    id="f1", namespace="user", key="city", value="Oslo", created_at=now
                )
            )
    finally:
        engine.dispose()
    return url


def test_an_agent_of_the_old_per_agent_layout_moves_in_with_export_and_import(
    store: Store, pg_agent_name: Callable[[], str], worker_tag: str, tmp_path: Path
) -> None:
    schema = f"legacy_{worker_tag}"
    _legacy_schema(schema)
    try:
        out = tmp_path / "legacy.jsonl"
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        url = make_url(server_url()).render_as_string(hide_password=False)
        done = subprocess.run(
            [sys.executable, "-m", "philont", "agents", "export-schema", schema, str(out),
             "--db", url],
            env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        name = pg_agent_name()
        report = transfer.import_(store.url, out, agent=name)
        assert report.inserted["memory_raw_messages"] == 3
        with store.begin(agent=name) as mem:
            fact = mem.facts.get("user", "city")
            assert fact is not None and fact.value == "Oslo"
            assert [m.content for m in mem.timeline.messages("s1")] == ["old 0", "old 1", "old 2"]
            assert mem.timeline.append("new", session_id="s1").id == 4
    finally:
        _admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_the_cli_lists_counts_renames_deletes_and_moves_agents(
    store: Store, pg_agent_name: Callable[[], str], tmp_path: Path
) -> None:
    first, second, third = pg_agent_name(), pg_agent_name(), pg_agent_name()
    _fill(store, first, "Topaz")
    url = store.url.render_as_string(hide_password=False)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "philont", *args], env=env, capture_output=True, text=True,
            timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert int(json.loads(cli("agents", "count", "--db", url, "--json"))["agents"]) >= 1
    listed = json.loads(cli("agents", "list", "--prefix", first, "--db", url, "--json"))
    assert [a["name"] for a in listed] == [first]
    out = tmp_path / "first.jsonl"
    cli("--agent", first, "export", str(out), "--db", url)
    cli("--agent", second, "import", str(out), "--db", url)
    assert _dump(store, second) == _dump(store, first)
    cli("agents", "rename", second, third, "--db", url)
    deleted = json.loads(cli("agents", "delete", third, "--yes", "--db", url, "--json"))
    assert deleted["deleted"]["memory_raw_messages"] == 5
    assert [a.name for a in agents.list_agents(store, prefix=third)] == []


def test_deleting_an_unknown_agent_is_refused_before_asking_and_creates_nothing(
    store: Store, pg_agent_name: Callable[[], str]
) -> None:
    name = pg_agent_name()
    url = store.url.render_as_string(hide_password=False)
    done = subprocess.run(
        [sys.executable, "-m", "philont", "agents", "delete", name, "--db", url],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, input="", capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == EXIT_NOT_FOUND, (done.stdout, done.stderr)
    assert "[y/N]" not in done.stdout and name in done.stdout + done.stderr
    assert agents.list_agents(store, prefix=name) == []
    with pytest.raises(AgentNotFoundError):
        agents.require(store, name)


def test_the_whole_database_dumps_with_default_settings(
    store: Store, pg_agent_name: Callable[[], str], tmp_path: Path
) -> None:
    for _ in range(50):
        agents.create(store, pg_agent_name())
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_dump"))
    if not bins:
        pytest.skip("pg_dump is not installed")
    server = make_url(server_url())
    with store.engine.connect() as conn:
        locks = conn.execute(text("SHOW max_locks_per_transaction")).scalar_one()
    assert locks == "64"  # the server's default: the dump below needs nothing more
    done = subprocess.run(
        [str(bins[-1]), "-h", str(server.host), "-p", str(server.port or 5432),
         "-U", str(server.username), "-Fc", "-f", str(tmp_path / "all.dump"),
         str(server.database)],
        env={**os.environ, "PGPASSWORD": str(server.password or "")},
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "all.dump").stat().st_size > 0


LOOKING_COMMANDS = [
    ["stats"],
    ["facts", "list"],
    ["facts", "get", "user", "city"],
    ["facts", "history", "user", "city"],
    ["notes", "list"],
    ["notes", "search", "tea"],
    ["skills", "list"],
    ["skills", "show", "greet"],
    ["skills", "judge-report"],
    ["timeline"],
    ["search", "tea"],
    ["calendar", "list"],
    ["calendar", "remove", "1"],
    ["recall", "where do I live?"],
    ["prefix"],
    ["embed", "--status"],
]


@pytest.mark.parametrize("command", LOOKING_COMMANDS, ids=" ".join)
def test_a_command_on_a_misspelt_agent_is_not_found_and_creates_nothing(
    store: Store, pg_agent_name: Callable[[], str], command: list[str]
) -> None:
    """Only import makes an agent; a command that looks at (or edits) an agent's memory under
    a name nobody has is agent_not_found, exit 4, as export is, and the registry is unchanged
    (it used to create the agent, bootstrap rows and all, and report it empty)."""
    from typer.testing import CliRunner

    from philont.cli import app

    name = pg_agent_name()
    before = agents.count(store)
    url = store.url.render_as_string(hide_password=False)

    result = CliRunner().invoke(app, ["--agent", name, *command, "--db", url])

    assert result.exit_code == EXIT_NOT_FOUND, result.output
    assert "agent_not_found" in result.output
    assert agents.count(store) == before


def test_an_export_without_an_agent_is_refused_naming_agent(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A PostgreSQL database holds many agents: an export that names none is the refusal of
    its ``agent`` argument (named, as every argument's refusal is; an import reads its file
    first, then refuses the same way)."""
    from philont.errors import InvalidInputError

    monkeypatch.delenv(settings.AGENT_ENV, raising=False)
    out = tmp_path / "x.jsonl"
    with pytest.raises(InvalidInputError, match=r"^agent: a PostgreSQL database holds") as e:
        transfer.export(store.url, out)
    assert e.value.details["argument"] == "agent"
    assert not out.exists()
