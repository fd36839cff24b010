"""Shared fixtures: real SQLite files in tmp_path (WAL on), copied from one template."""

from __future__ import annotations

import itertools
import os
import shutil
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from philont import migrate
from philont.db.bootstrap import ensure_bootstrap_rows
from philont.db.engine import create_engine, pg_schema, resolve_url
from philont.db.schema import metadata

FIXTURE_NAMES = ("v2", "v27", "v31", "empty-v31")


def fixtures_dir() -> Path | None:
    env = os.environ.get("PHILONT_FIXTURES")
    candidates = [Path(env)] if env else []
    candidates.append(Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "philont")
    for c in candidates:
        if (c / "v31.sqlite").exists():
            return c
    return None


@pytest.fixture(scope="session")
def philont_fixtures() -> Path:
    """Directory of the original program's databases; skips (or fails in CI) when absent."""
    found = fixtures_dir()
    if found is None:
        if os.environ.get("PHILONT_REQUIRE_FIXTURES") == "1":
            pytest.fail("PHILONT_REQUIRE_FIXTURES=1 but ../shared/fixtures/philont is missing")
        pytest.skip("Philont fixtures not found (set PHILONT_FIXTURES)")
    return found


@pytest.fixture
def copy_fixture(philont_fixtures: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    """Copy a named fixture database into tmp_path (never open the shared one read-write)."""

    def _copy(name: str) -> Path:
        target = tmp_path / f"{name}.sqlite"
        shutil.copyfile(philont_fixtures / f"{name}.sqlite", target)
        target.chmod(0o600)
        return target

    return _copy


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A v31 database built once by create_all (+ FTS DDL events + bootstrap rows)."""
    path = tmp_path_factory.mktemp("template") / "memory.sqlite"
    engine = create_engine(path)
    metadata.create_all(engine)
    with engine.begin() as conn:
        ensure_bootstrap_rows(conn)
    engine.dispose()
    return path


@pytest.fixture
def db_path(template_db: Path, tmp_path: Path) -> Path:
    target = tmp_path / "memory" / "memory.sqlite"
    target.parent.mkdir(mode=0o700)
    shutil.copyfile(template_db, target)
    target.chmod(0o600)
    return target


# --- PostgreSQL ------------------------------------------------------------------------------
# Tests marked `postgres` need a server: PHILONT_TEST_PG_URL (e.g. from scripts/pg_local.sh).
# Without it they skip, unless PHILONT_REQUIRE_PG=1 (set by .ci/run), which fails them instead.
# A module with `BOTH_BACKENDS = True` runs every test that uses `engine`/`session` on SQLite and
# on PostgreSQL (the latter in a fresh agent schema, marked `postgres`).


def _drop_schemas(names: list[str]) -> None:
    """Drop test agent schemas (and the admin schema this connection itself creates)."""
    admin = create_engine(resolve_url(pg_url(), agent="philont_test_admin"))
    with admin.begin() as conn:
        for name in [*names, "philont_test_admin"]:
            conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
    admin.dispose()


def pg_url() -> str:
    url = os.environ.get("PHILONT_TEST_PG_URL")
    if not url:
        if os.environ.get("PHILONT_REQUIRE_PG") == "1":
            pytest.fail("PHILONT_REQUIRE_PG=1 but PHILONT_TEST_PG_URL is not set")
        pytest.skip("PostgreSQL tests need PHILONT_TEST_PG_URL (see scripts/pg_local.sh)")
    return url


_AGENTS = itertools.count()


@pytest.fixture
def pg_agent(worker_tag: str) -> Iterator[Callable[[], URL]]:
    """Factory of fresh agent schemas on the test server (dropped after the test): each call
    returns a URL whose connections work in a new, empty agent schema."""
    base = pg_url()
    made: list[str] = []

    def _new() -> URL:
        name = f"t_{worker_tag}_{next(_AGENTS)}"
        made.append(name)
        return resolve_url(base, agent=name)

    yield _new
    if made:
        _drop_schemas(made)


@pytest.fixture(scope="session")
def worker_tag() -> str:
    return f"{os.getpid()}_{uuid.uuid4().hex[:6]}"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if getattr(metafunc.module, "BOTH_BACKENDS", False) and "backend" in metafunc.fixturenames:
        metafunc.parametrize(
            "backend",
            ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
            indirect=True,
        )


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture(scope="session")
def pg_shared(worker_tag: str) -> Iterator[Callable[[str], URL]]:
    """Two agent schemas shared by the PostgreSQL runs of BOTH_BACKENDS tests, built once:
    ``"models"`` by create_all, ``"migrated"`` by the migrations. Each test empties the one it
    uses first (TRUNCATE, identities restarted, bootstrap rows back): much cheaper than a
    schema per test. Tests that need their own schemas use ``pg_agent``."""
    made: dict[str, URL] = {}

    def get(kind: str) -> URL:
        if kind not in made:
            url = resolve_url(pg_url(), agent=f"t_{worker_tag}_{kind}")
            if kind == "migrated":
                migrate.upgrade(url)
            else:
                eng = create_engine(url)
                metadata.create_all(eng)
                eng.dispose()
            made[kind] = url
        _empty_pg(made[kind])
        return made[kind]

    yield get
    if made:
        _drop_schemas([str(pg_schema(url)) for url in made.values()])


def _empty_pg(url: URL) -> None:
    """Every table as a new database has it: empty but for memory_meta and the bootstrap rows."""
    tables = ", ".join(t.name for t in metadata.sorted_tables if t.name != "memory_meta")
    eng = create_engine(url, create=False)
    with eng.begin() as conn:
        conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        ensure_bootstrap_rows(conn)
    eng.dispose()


@pytest.fixture
def engine(backend: str, request: pytest.FixtureRequest) -> Iterator[Engine]:
    if backend == "postgres":
        eng = create_engine(request.getfixturevalue("pg_shared")("models"))
    else:
        eng = create_engine(request.getfixturevalue("db_path"))
    yield eng
    eng.dispose()


@pytest.fixture
def session(engine: Engine) -> Iterator[Session]:
    """One Session in one transaction, rolled back after the test (services never commit)."""
    s = sessionmaker(bind=engine, expire_on_commit=False)()
    s.begin()
    try:
        yield s
    finally:
        s.rollback()
        s.close()


class FakeClock:
    """A controllable clock: ``clock()`` returns the current time, ``advance`` moves it."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 6, 14, 4, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> datetime:
        self.now += timedelta(**kwargs)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture(scope="session")
def tool_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tools") / "memory.sqlite"
    migrate.upgrade(path)
    return path


@pytest.fixture
def tool_db(tool_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "memory.sqlite"
    with (
        closing(sqlite3.connect(str(tool_template))) as src,
        closing(sqlite3.connect(str(target))) as dst,
    ):
        src.backup(dst)
    return target


@pytest.fixture
def tool_target(backend: str, request: pytest.FixtureRequest) -> Path | URL:
    """The database a tool test calls (``tools.call(..., db=...)``, ``Memory.open``): the
    ``tool_db`` SQLite file, or on PostgreSQL (a ``BOTH_BACKENDS`` module's second run) the URL
    of an emptied agent schema brought to head by the migrations (see ``pg_shared``)."""
    if backend == "postgres":
        url: URL = request.getfixturevalue("pg_shared")("migrated")
        return url
    path: Path = request.getfixturevalue("tool_db")
    return path
