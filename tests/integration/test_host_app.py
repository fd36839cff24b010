"""A host application living with philont in one database: its own models and Alembic history
(tests/host_app), one ``alembic upgrade head`` for both histories, an autogenerate that leaves
philont's objects alone, and host + philont writes in one transaction."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path

import alembic
import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, create_engine, select, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session

from philont import migrate, settings, tools
from philont.db.engine import busy_timeout_s, checkpointer_of
from philont.db.engine import create_engine as philont_engine
from philont.errors import InvalidDatabaseError, InvalidInputError
from philont.store import Store
from tests.conftest import pg_url
from tests.host_app.models import Customer, HostBase
from tests.pg_support import Layout, in_schema

HOST_APP = Path(__file__).resolve().parents[1] / "host_app"
GENERIC_MAKO = Path(alembic.__file__).parent / "templates" / "generic" / "script.py.mako"


def _host_alembic(
    directory: Path,
    url: str,
    *,
    mode: str = "env",
) -> Config:
    """The host's Alembic set-up in ``directory``: its env.py, its versions/ (with the revision
    that runs philont's chain, in ``revision`` mode), its configuration."""
    scripts = directory / "host_migrations"
    (scripts / "versions").mkdir(parents=True)
    shutil.copyfile(HOST_APP / "env.py", scripts / "env.py")
    shutil.copyfile(GENERIC_MAKO, scripts / "script.py.mako")
    if mode == "revision":
        shutil.copyfile(HOST_APP / "first_revision.py", scripts / "versions" / "h001_philont.py")
    cfg = Config()
    cfg.set_main_option("script_location", str(scripts))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    cfg.set_main_option("philont_mode", mode)
    return cfg


def _generated(cfg: Config) -> str:
    versions = Path(cfg.get_main_option("script_location") or "") / "versions"
    newest = max(versions.glob("*.py"), key=lambda p: p.stat().st_mtime_ns)
    return newest.read_text(encoding="utf-8")


def _tables(db: Path) -> set[str]:
    with closing(sqlite3.connect(str(db))) as conn:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}


def _host_revision(db: Path) -> str | None:
    with closing(sqlite3.connect(str(db))) as conn:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return None if row is None else str(row[0])


# --- one alembic upgrade head for both histories ---------------------------------------------


def test_one_alembic_upgrade_head_runs_philonts_chain_and_the_hosts_history(
    tmp_path: Path,
) -> None:
    db = tmp_path / "app.sqlite"
    cfg = _host_alembic(tmp_path, f"sqlite:///{db}")

    # The host's real autogenerate (env.py runs philont's chain first, in this process).
    command.revision(cfg, message="host tables", autogenerate=True, rev_id="h001")
    script = _generated(cfg)
    assert "op.create_table('customers'" in script and "op.create_table('orders'" in script
    for philonts in ("memory_", "philont_", "push_subscriptions", "_fts"):
        assert philonts not in script, philonts
    upgrade_body = script.split("def upgrade()")[1].split("def downgrade()")[0]
    assert "drop_" not in upgrade_body and "alter_" not in upgrade_body

    command.upgrade(cfg, "head")
    assert migrate.status(db).at_head
    assert _host_revision(db) == "h001"
    assert {"customers", "orders", "memory_facts", "alembic_version"} <= _tables(db)

    command.check(cfg)  # autogenerate proposes nothing: not for the host, not for philont


def test_without_the_filters_the_hosts_autogenerate_would_drop_philonts_tables(
    tmp_path: Path,
) -> None:
    db = tmp_path / "app.sqlite"
    migrate.upgrade(db)
    engine = create_engine(f"sqlite:///{db}")
    HostBase.metadata.create_all(engine)
    try:
        with engine.connect() as conn:
            bare = compare_metadata(MigrationContext.configure(conn), HostBase.metadata)
            dropped = {d[1].name for d in bare if d[0] == "remove_table"}
            assert {"memory_facts", "philont_alembic_version", "memory_notes_fts"} <= dropped
            filtered = MigrationContext.configure(
                conn,
                opts={
                    "include_name": migrate.host_include_name,
                    "include_object": migrate.host_include_object,
                },
            )
            assert compare_metadata(filtered, HostBase.metadata) == []
    finally:
        engine.dispose()


def test_philonts_chain_runs_inside_a_host_revision(tmp_path: Path) -> None:
    db = tmp_path / "app.sqlite"
    cfg = _host_alembic(tmp_path, f"sqlite:///{db}", mode="revision")

    command.upgrade(cfg, "head")
    assert migrate.status(db).at_head and _host_revision(db) == "h001"
    report = migrate.upgrade(db)
    assert report.applied == [] and report.backup is None

    command.revision(cfg, message="orders", autogenerate=True, rev_id="h002")
    script = _generated(cfg)
    assert "op.create_table('orders'" in script and "memory_" not in script
    command.upgrade(cfg, "head")
    command.check(cfg)
    assert _host_revision(db) == "h002"


def test_a_host_revision_failing_after_philonts_chain_rolls_back_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "app.sqlite"
    cfg = _host_alembic(tmp_path, f"sqlite:///{db}", mode="revision")
    monkeypatch.setenv("HOST_APP_FAIL_AFTER_PHILONT", "1")

    with pytest.raises(RuntimeError, match="after philont's chain"):
        command.upgrade(cfg, "head")

    # only the host's own version table, which its Alembic made before the transaction began
    # (pysqlite commits that DDL at once), and empty
    assert _tables(db) == {"alembic_version"} and _host_revision(db) is None
    monkeypatch.delenv("HOST_APP_FAIL_AFTER_PHILONT")
    command.upgrade(cfg, "head")
    assert migrate.status(db).at_head


def test_alembics_globals_are_the_hosts_again_after_a_nested_upgrade(tmp_path: Path) -> None:
    import alembic.context as host_context

    cfg = Config()
    cfg.set_main_option("script_location", str(HOST_APP))  # any folder: only the proxy matters
    from alembic.runtime.environment import EnvironmentContext
    from alembic.script import ScriptDirectory

    with EnvironmentContext(cfg, ScriptDirectory(str(HOST_APP))) as env:
        migrate.upgrade(tmp_path / "nested.sqlite")
        assert host_context.config is cfg  # not philont's Config, not deleted
        assert env.script is host_context.script


# --- host + philont writes in one transaction ------------------------------------------------


@pytest.fixture
def shared_sqlite(tmp_path: Path) -> Iterator[Engine]:
    """The host's engine on a file that went through both histories, made by philont's
    create_engine (transactional BEGIN: a plain pysqlite engine is refused, see below)."""
    db = tmp_path / "app.sqlite"
    cfg = _host_alembic(tmp_path, f"sqlite:///{db}")
    command.revision(cfg, message="host tables", autogenerate=True, rev_id="h001")
    command.upgrade(cfg, "head")
    engine = philont_engine(db)
    yield engine
    engine.dispose()


def test_a_plain_pysqlite_engine_is_refused_because_a_host_rollback_could_keep_our_writes(
    shared_sqlite: Engine,
) -> None:
    # Under pysqlite's own transaction handling a SAVEPOINT issued before the host's first
    # write is outside any transaction: its release committed a tool call's fact, and a join
    # on a host Connection kept its writes after the host rolled back.
    # store.join took a Session or Connection of such an engine on the Store's own file.
    plain = create_engine(shared_sqlite.url)
    store = Store.from_engine(shared_sqlite)
    try:
        with pytest.raises(InvalidDatabaseError, match=r"philont\.db\.engine\.create_engine"):
            Store.from_engine(plain)
        with Session(plain) as session, plain.connect() as conn:
            for bind in (session, conn, Session(conn)):
                with pytest.raises(InvalidDatabaseError, match=r"^store\.join: .* pysqlite"):
                    store.join(bind)
    finally:
        plain.dispose()


def _copy(engine: Engine) -> Engine:
    """A host's copy of ``engine`` with other execution options: it shares the engine's pool,
    dialect and listeners. Store.from_engine refused one as a plain pysqlite engine: philont
    kept its records of the set-up by engine object."""
    return engine.execution_options(logging_token="host").execution_options(x=1)


@pytest.mark.parametrize("via", ["tool call", "connection", "a copy's connection"])
def test_a_host_rollback_undoes_what_philont_wrote_first_in_its_transaction(
    shared_sqlite: Engine, via: str
) -> None:
    engine = _copy(shared_sqlite) if via == "a copy's connection" else shared_sqlite
    store = Store.from_engine(engine)
    if via == "tool call":
        with Session(shared_sqlite) as session:
            session.begin()
            with store.join(session) as mem:
                assert tools.call(
                    "store_fact", {"namespace": "user", "key": "b", "value": 1}, db=mem
                ).ok
            session.rollback()
    else:
        with engine.connect() as conn:
            outer = conn.begin()
            with store.join(conn) as mem:
                mem.facts.store("user", "b", 1)
            outer.rollback()
    with store.begin(write=False) as mem:
        assert mem.facts.get("user", "b") is None


def test_a_copy_of_philonts_engine_has_its_busy_timeout_and_checkpointer(
    shared_sqlite: Engine,
) -> None:
    copy = _copy(shared_sqlite)
    assert busy_timeout_s(copy) == busy_timeout_s(shared_sqlite)
    assert checkpointer_of(copy) is checkpointer_of(shared_sqlite) is not None


OUTCOMES = [("commit", (1, 1, 1)), ("rollback", (0, 0, 0)), ("error", (0, 0, 0))]


def _write_both(engine: Engine, *, outcome: str) -> None:
    store = Store.from_engine(engine)  # on PostgreSQL the agent is $PHILONT_AGENT (pg_agent)
    with Session(engine) as session:
        session.begin()
        session.add(Customer(name="Ada"))
        try:
            with store.join(session) as mem:
                mem.facts.store("user", "city", "Berlin")
                mem.notes.add("Ada prefers tea", importance=0.7)
                if outcome == "error":
                    mem.facts.store("user", "bad key with spaces", 1)
        except InvalidInputError:
            session.rollback()
            return
        if outcome == "commit":
            session.commit()
        else:
            session.rollback()


def _seen(engine: Engine, agent: str | None = None) -> tuple[int, int, int]:
    """Customers, and the agent's facts and notes (on PostgreSQL the layout holds every
    agent's rows; this owner's connection is not limited by row-level security)."""
    mine = (
        ""
        if agent is None
        else (" WHERE agent_id = (SELECT id FROM philont_agents WHERE name = :agent)")
    )
    params = {} if agent is None else {"agent": agent}
    with engine.connect() as conn:
        customers = conn.execute(select(Customer.id)).all()
        facts = conn.execute(text(f"SELECT count(*) FROM memory_facts{mine}"), params)
        notes = conn.execute(text(f"SELECT count(*) FROM memory_notes{mine}"), params)
        return len(customers), int(facts.scalar_one()), int(notes.scalar_one())


@pytest.mark.parametrize(("outcome", "expected"), OUTCOMES)
def test_host_and_philont_writes_commit_or_roll_back_together(
    shared_sqlite: Engine, outcome: str, expected: tuple[int, int, int]
) -> None:
    _write_both(shared_sqlite, outcome=outcome)
    assert _seen(shared_sqlite) == expected


# --- PostgreSQL ------------------------------------------------------------------------------


@pytest.fixture
def host_schema(worker_tag: str) -> Iterator[str]:
    name = f"h_{worker_tag}"
    engine = create_engine(pg_url())
    with engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE; CREATE SCHEMA "{name}"'))
    yield name
    with engine.begin() as conn:
        conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
    engine.dispose()


def _tables_in(schema: str) -> set[str]:
    engine = create_engine(make_url(pg_url()))
    try:
        with engine.connect() as conn:
            found = conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = :s"), {"s": schema}
            ).scalars()
            return set(found)
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_on_postgresql_one_alembic_upgrade_head_runs_both_histories(
    tmp_path: Path, host_schema: str
) -> None:
    # The host keeps its tables and philont's layout in its own schema of the database.
    url = in_schema(pg_url(), host_schema)
    cfg = _host_alembic(tmp_path, url.render_as_string(hide_password=False))

    command.revision(cfg, message="host tables", autogenerate=True, rev_id="h001")
    script = _generated(cfg)
    assert "op.create_table('customers'" in script and "memory_" not in script
    assert "philont_agents" not in script
    command.upgrade(cfg, "head")
    command.check(cfg)

    assert migrate.status(url).at_head
    migrate.check(url)
    found = _tables_in(host_schema)
    assert {"customers", "orders", "alembic_version", "memory_facts", "philont_agents"} <= found


@pytest.mark.postgres
@pytest.mark.parametrize(("outcome", "expected"), OUTCOMES)
def test_on_postgresql_host_and_philont_writes_commit_or_roll_back_together(
    pg_agent: Callable[[], URL],
    pg_layout: Layout,
    host_schema: str,
    outcome: str,
    expected: tuple[int, int, int],
) -> None:
    pg_agent()  # a fresh agent, the default one ($PHILONT_AGENT)
    agent = os.environ[settings.AGENT_ENV]
    # The host's connections find its own tables first, then philont's layout.
    path = f"-csearch_path={host_schema},{pg_layout.schema},public"
    engine = create_engine(make_url(pg_url()).update_query_dict({"options": path}))
    HostBase.metadata.create_all(engine)
    try:
        _write_both(engine, outcome=outcome)
        counts = _seen(engine, agent)
    finally:
        engine.dispose()
    # the bootstrap rows are not facts or notes: a fresh agent has none of either
    assert counts == expected


@pytest.mark.postgres
def test_on_postgresql_philonts_chain_runs_on_a_host_connection(host_schema: str) -> None:
    engine = create_engine(make_url(pg_url()))  # the host's own engine: no agent anywhere
    try:
        with engine.connect() as conn:
            conn.execute(text(f'SET search_path TO "{host_schema}", public'))
            conn.commit()
            report = migrate.upgrade(conn)  # begins and commits its own transaction here
            assert report.applied[-1] == migrate.head_revision()
            assert not conn.in_transaction()
            assert migrate.upgrade(conn).applied == []
    finally:
        engine.dispose()
    assert migrate.status(in_schema(pg_url(), host_schema)).at_head
