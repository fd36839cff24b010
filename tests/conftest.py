"""Shared fixtures: real SQLite files in tmp_path (WAL on), copied from one template."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings
from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from philont import migrate, settings
from philont.db.bootstrap import ensure_bootstrap_rows
from philont.db.engine import create_engine
from philont.db.schema import metadata
from tests import pg_support

FIXTURE_NAMES = ("v2", "v27", "v31", "empty-v31")

# No time limit per generated example: speed lives in the benchmarks, and on a loaded machine
# hypothesis's default 200 ms deadline failed tests that had found nothing wrong.
# In CI ($CI set, as .ci/run sets it) the examples are fixed (derandomize: seeded from each
# test), so a CI run is the run `CI=true make test` repeats here; elsewhere every run explores
# new ones.
hypothesis_settings.register_profile(
    "philont",
    deadline=None,
    derandomize=os.environ.get("CI", "").lower() not in ("", "0", "false", "no"),
)
hypothesis_settings.load_profile("philont")

# Ctrl-C as in a foreground shell: a test run started in the background (`make test &`) has
# SIGINT ignored, every child inherits that, and philont keeps an ignored SIGINT ignored, so
# the tests that press Ctrl-C on a command waited for it in vain.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
# on PostgreSQL (marked `postgres`). On PostgreSQL a test run migrates one schema of its own
# once (the shared layout, revision v036); every test then works as a fresh agent in it (a row
# in the agents registry: no DDL per test), as the application role, so that SQL a test writes
# itself sees its own agent only (row-level security). That every statement of philont's
# carries its agent without row-level security is proven as the owner, in test_pg_isolation.py.
# See tests/pg_support.py.


def pg_url() -> str:
    return pg_support.server_url()


@pytest.fixture(scope="session")
def worker_tag() -> str:
    return f"{os.getpid()}_{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="session")
def pg_layout(worker_tag: str) -> Iterator[pg_support.Layout]:
    """This test run's schema, migrated to head once, with an application role (no superuser,
    no BYPASSRLS) allowed to use it; dropped at the end."""
    layout = pg_support.make_layout(f"t_{worker_tag}")
    yield layout
    layout.drop()


@pytest.fixture(scope="module")
def bouncer(pg_layout: pg_support.Layout) -> Iterator[pg_support.Bouncer]:
    """A PgBouncer in transaction pooling mode in front of this run's server (per module)."""
    running = pg_support.start_bouncer(pg_layout)
    yield running
    running.stop()


@pytest.fixture
def pg_agent_name(pg_layout: pg_support.Layout) -> Callable[[], str]:
    """Factory of fresh agent names in this run's layout (created on first use)."""
    return pg_layout.new_agent


@pytest.fixture
def pg_agent(pg_layout: pg_support.Layout, monkeypatch: pytest.MonkeyPatch) -> Callable[[], URL]:
    """Factory of fresh agents: each call makes a new agent the default one ($PHILONT_AGENT)
    and returns the URL of this run's layout (Store.open, Memory.open, tools.call(db=url) then
    work as that agent). Tests that need two agents at once name them (``pg_agent_name``)."""

    def new() -> URL:
        monkeypatch.setenv(settings.AGENT_ENV, pg_layout.new_agent())
        return pg_layout.url

    return new


@pytest.fixture
def target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | URL:
    """Where a new memory is opened: a file not yet created, or (a ``BOTH_BACKENDS`` module's
    second run) this run's layout with a fresh agent as the default one."""
    if backend == "postgres":
        url: URL = request.getfixturevalue("pg_agent")()
        return url
    return tmp_path / "memory.sqlite"


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


@pytest.fixture
def pg_test_agent(
    backend: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> str | None:
    """On PostgreSQL: a fresh agent, made the default agent of every Store the test opens
    ($PHILONT_AGENT); None on SQLite."""
    if backend != "postgres":
        return None
    name: str = request.getfixturevalue("pg_agent_name")()
    monkeypatch.setenv(settings.AGENT_ENV, name)
    return name


@pytest.fixture
def engine(
    backend: str, pg_test_agent: str | None, request: pytest.FixtureRequest
) -> Iterator[Engine]:
    if backend == "postgres":  # as the application role: a test's own SQL sees its agent only
        eng = create_engine(request.getfixturevalue("pg_layout").app_url)
    else:
        eng = create_engine(request.getfixturevalue("db_path"))
    yield eng
    eng.dispose()


@pytest.fixture
def session(engine: Engine, pg_test_agent: str | None) -> Iterator[Session]:
    """One Session in one transaction, rolled back after the test (services never commit). On
    PostgreSQL the transaction is the test's agent's."""
    s = sessionmaker(bind=engine, expire_on_commit=False)()
    s.begin()
    if pg_test_agent is not None:
        from philont import agents as philont_agents
        from philont.db import agents as registry
        from philont.store import Store

        registry.enter(s, philont_agents.agent_id(Store(engine), pg_test_agent))
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
def tool_target(
    backend: str, pg_test_agent: str | None, request: pytest.FixtureRequest
) -> Path | URL:
    """The database a tool test calls (``tools.call(..., db=...)``, ``Memory.open``): the
    ``tool_db`` SQLite file, or on PostgreSQL (a ``BOTH_BACKENDS`` module's second run) the URL
    of this run's layout, where the test's agent is the default ($PHILONT_AGENT)."""
    if backend == "postgres":  # the application role, as for `engine`
        url: URL = request.getfixturevalue("pg_layout").app_url
        return url
    path: Path = request.getfixturevalue("tool_db")
    return path


@pytest.fixture
def unconfigured() -> Iterator[None]:
    """structlog as a host that never configured it leaves it: philont's events then reach
    stdlib logging (caplog). Other tests may have configured it: the command line's set-up,
    and ``structlog.testing.capture_logs``, which leaves structlog configured (with its
    defaults, printing) when it was not before."""
    import structlog

    structlog.reset_defaults()
    yield
    structlog.reset_defaults()
