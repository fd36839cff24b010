"""The Alembic chain on PostgreSQL: every revision applies, head equals the models, one agent
per schema, and the alembic CLI takes `-x url=... -x schema=...`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, text
from sqlalchemy.engine import URL

from philont import migrate, settings
from philont.db.bootstrap import ensure_bootstrap_rows
from philont.db.engine import create_engine, pg_schema, resolve_url
from philont.db.schema import metadata
from philont.errors import InvalidInputError, MigrationError, UnrecognizedSchemaError
from philont.memory import Memory

pytestmark = pytest.mark.postgres

ROOT = Path(__file__).resolve().parents[2]


def _schema_objects(engine: Engine) -> dict[str, object]:
    """Columns (name, type, nullability, default), indexes (definition) and constraints of the
    engine's agent schema, for comparing two schemas built differently."""
    with engine.connect() as conn:
        schema = conn.execute(text("SELECT current_schema()")).scalar_one()
        columns = conn.execute(
            text(
                "SELECT table_name, column_name, data_type, is_nullable, column_default"
                " FROM information_schema.columns WHERE table_schema = :s"
                " AND table_name != :v ORDER BY 1, 2"
            ),
            {"s": schema, "v": settings.VERSION_TABLE},
        ).all()
        indexes = conn.execute(
            text(
                "SELECT indexname, replace(indexdef, :s || '.', '') FROM pg_indexes"
                " WHERE schemaname = :s AND tablename != :v ORDER BY 1"
            ),
            {"s": schema, "v": settings.VERSION_TABLE},
        ).all()
        constraints = conn.execute(
            text(
                "SELECT c.conrelid::regclass::text, c.contype, pg_get_constraintdef(c.oid)"
                " FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace"
                " WHERE n.nspname = :s ORDER BY 1, 2, 3"
            ),
            {"s": schema},
        ).all()
    return {
        "columns": [tuple(r) for r in columns],
        "indexes": [tuple(r) for r in indexes],
        "constraints": [
            (str(r[0]).removeprefix(f"{schema}."), r[1], r[2])
            for r in constraints
            if not str(r[0]).startswith(f"{schema}.{settings.VERSION_TABLE}")
            and str(r[0]) != settings.VERSION_TABLE
        ],
    }


def test_upgrade_head_builds_what_the_models_build(pg_agent: Callable[[], URL]) -> None:
    upgraded, created = pg_agent(), pg_agent()
    report = migrate.upgrade(upgraded)
    assert report.applied[0] == "v001" and report.applied[-1] == migrate.head_revision()
    assert len(report.applied) == len(migrate.history())  # no revision skipped
    a = create_engine(created)
    metadata.create_all(a)
    b = create_engine(upgraded)
    try:
        built, migrated = _schema_objects(a), _schema_objects(b)
        assert built["columns"] == migrated["columns"]
        assert built["indexes"] == migrated["indexes"]
        assert built["constraints"] == migrated["constraints"]
        names = {r[0] for r in migrated["indexes"]}  # type: ignore[attr-defined]
        assert {"philont_pg_raw_messages_words", "philont_pg_raw_messages_trgm"} <= names
    finally:
        a.dispose()
        b.dispose()


def test_autogenerate_finds_no_difference_on_postgresql(pg_agent: Callable[[], URL]) -> None:
    url = pg_agent()
    migrate.upgrade(url)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            ctx = MigrationContext.configure(
                conn,
                opts={
                    "include_name": migrate.include_name,
                    "compare_type": True,
                    "version_table": settings.VERSION_TABLE,
                },
            )
            diff = compare_metadata(ctx, metadata)
    finally:
        engine.dispose()
    # SQLite lets a primary-key column hold NULL, and Philont's tables declare them so (the
    # models say nullable=True); PostgreSQL makes every primary key NOT NULL. Nothing else.
    pk_columns = {(t.name, c.name) for t in metadata.tables.values() for c in t.primary_key}
    rest = [
        d
        for d in diff
        if not (
            isinstance(d, list)
            and len(d) == 1
            and d[0][0] == "modify_nullable"
            and (d[0][2], d[0][3]) in pk_columns
            and d[0][6] is True  # the model says nullable, the database says not
        )
    ]
    assert rest == []
    assert diff  # the filter above is not vacuous


def test_epoch_millis_and_reals_keep_their_range_and_precision(
    pg_agent: Callable[[], URL],
) -> None:
    url = pg_agent()
    migrate.upgrade(url)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            types = dict(
                conn.execute(
                    text(
                        "SELECT column_name, data_type FROM information_schema.columns"
                        " WHERE table_schema = current_schema() AND table_name = 'memory_facts'"
                    )
                ).all()
            )
    finally:
        engine.dispose()
    assert types["created_at"] == "bigint"  # epoch ms overflow a 32-bit integer
    assert types["confidence"] == "double precision"  # SQLite REAL is an 8-byte double
    with Memory.open(url) as mem:
        fact = mem.facts.store("user", "pi", 3.14159, confidence=0.123456789)
    with Memory.open(url) as mem:
        got = mem.facts.get("user", "pi")
    assert got is not None and got.confidence == 0.123456789
    assert got.created_at == fact.created_at


def test_a_second_upgrade_applies_nothing_and_records_the_versions(
    pg_agent: Callable[[], URL],
) -> None:
    url = pg_agent()
    migrate.upgrade(url)
    again = migrate.upgrade(url)
    assert again.applied == []
    st = migrate.status(url)
    assert st.at_head and st.schema_version == str(settings.SCHEMA_VERSION)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            where = conn.execute(
                text("SELECT table_schema FROM information_schema.tables WHERE table_name = :t"),
                {"t": settings.VERSION_TABLE},
            ).scalars()
            assert pg_schema(url) in set(where)
            assert conn.execute(text("SELECT count(*) FROM memory_raw_sessions")).scalar() == 1
    finally:
        engine.dispose()


def test_the_alembic_cli_takes_url_and_schema(pg_agent: Callable[[], URL]) -> None:
    url = pg_agent()
    schema = pg_schema(url)
    plain = os.environ["PHILONT_TEST_PG_URL"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url={plain}", "-x", f"schema={schema}",
         "upgrade", "head"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert migrate.status(url).at_head
    missing = subprocess.run(
        [sys.executable, "-m", "alembic", "-x", f"url={plain}", "upgrade", "head"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert missing.returncode != 0
    assert "agent" in missing.stderr


def test_memory_tables_without_our_version_table_are_refused_untouched(
    pg_agent: Callable[[], URL],
) -> None:
    url = pg_agent()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("CREATE TABLE memory_notes (id TEXT PRIMARY KEY, body TEXT)"))
        with pytest.raises(UnrecognizedSchemaError):
            migrate.upgrade(url)
        with engine.connect() as conn:
            tables = conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            ).scalars()
            assert set(tables) == {"memory_notes"}
    finally:
        engine.dispose()


@pytest.mark.parametrize("agent", ["", "Alice", "public", "pg_x", "a-b", "1x", "x" * 64, "a;b"])
def test_bad_agent_names_are_refused_before_connecting(agent: str) -> None:
    with pytest.raises(InvalidInputError):
        resolve_url("postgresql+psycopg://u:p@127.0.0.1:1/db", agent=agent)


def test_a_postgresql_url_without_an_agent_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(settings.AGENT_ENV, raising=False)
    with pytest.raises(InvalidInputError, match="agent"):
        Memory.open("postgresql+psycopg://u:p@127.0.0.1:1/db")
    monkeypatch.setenv(settings.AGENT_ENV, "carol")
    assert pg_schema(resolve_url("postgresql+psycopg://u:p@127.0.0.1:1/db")) == "carol"


def test_the_cli_works_on_an_agent_schema(pg_agent: Callable[[], URL]) -> None:
    schema = pg_schema(pg_agent())
    plain = os.environ["PHILONT_TEST_PG_URL"]
    cli = [sys.executable, "-m", "philont", "--agent", str(schema)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    up = subprocess.run([*cli, "db", "upgrade", "--db", plain], env=env, capture_output=True,
                        text=True, timeout=300)  # fmt: skip
    assert up.returncode == 0, up.stderr
    current = subprocess.run([*cli, "db", "current", "--db", plain, "--json"], env=env,
                             capture_output=True, text=True, timeout=300)  # fmt: skip
    assert current.returncode == 0, current.stderr
    assert json.loads(current.stdout)["revision"] == migrate.head_revision()
    stats = subprocess.run([*cli, "stats", "--db", plain, "--json"], env=env,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert stats.returncode == 0, stats.stderr


def test_create_all_schema_gets_bootstrap_rows_once(pg_agent: Callable[[], URL]) -> None:
    engine = create_engine(pg_agent())
    try:
        metadata.create_all(engine)
        with engine.begin() as conn:
            first = ensure_bootstrap_rows(conn)
            second = ensure_bootstrap_rows(conn)
        assert len(first) == 2 and second == []
    finally:
        engine.dispose()


def test_a_failure_mid_chain_leaves_the_agent_schema_empty(pg_agent: Callable[[], URL]) -> None:
    url = pg_agent()

    def fail_at_v015(revision: str) -> None:
        if revision == "v015":
            raise RuntimeError("injected failure")

    with pytest.raises(MigrationError):
        migrate.upgrade(url, on_step=fail_at_v015)
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = conn.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            ).scalars()
            assert list(tables) == []  # PostgreSQL's DDL is transactional: all or nothing
    finally:
        engine.dispose()
    assert migrate.upgrade(url).applied[-1] == migrate.head_revision()


def test_concurrent_first_upgrades_of_one_agent_all_succeed(pg_agent: Callable[[], URL]) -> None:
    url = pg_agent()
    # Processes, as in real life (Alembic's context is process-global, not thread-safe).
    code = (
        "import json, sys; from philont import migrate; from philont.db.engine import resolve_url;"
        " print(json.dumps(migrate.upgrade(resolve_url(sys.argv[1], agent=sys.argv[2])).applied))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    args = [sys.executable, "-c", code, os.environ["PHILONT_TEST_PG_URL"], str(pg_schema(url))]
    procs = [
        subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _out, err in outputs]
    applied = sorted((json.loads(out) for out, _err in outputs), key=len)
    assert applied[0] == [] and applied[1] == [] and len(applied[2]) == len(migrate.history())


def test_a_url_with_its_own_connection_options_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="options"):
        resolve_url(
            "postgresql+psycopg://u:p@127.0.0.1:1/db?options=-cstatement_timeout=5", agent="a"
        )
