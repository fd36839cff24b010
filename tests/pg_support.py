"""PostgreSQL test set-up: this run's layout schema, an application role, a real PgBouncer.

Everything the PostgreSQL tests need is made here, by the tests, on the server named by
``PHILONT_TEST_PG_URL`` (a superuser's URL: ``scripts/pg_local.sh`` makes one):

* a schema of this run's own (``t_<pid>_<random>``), migrated once to head (the shared layout of
  every agent, revision v036) and dropped at the end;
* the application role ``philont_app`` (LOGIN, NOSUPERUSER, NOBYPASSRLS): row-level security
  applies to it, as it does to an application that does not own the tables;
* a PgBouncer in transaction pooling mode on 127.0.0.1 (Debian's ``pgbouncer``, installed by
  ``scripts/pg_local.sh``), started on a free port and stopped at the end.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import sqlalchemy
from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.orm import Session, sessionmaker

from philont import agents, migrate
from philont.db import agents as registry
from philont.db.engine import create_engine
from philont.store import Store

APP_ROLE = "philont_app"
APP_PASSWORD = "philont_app"


def server_url() -> str:
    url = os.environ.get("PHILONT_TEST_PG_URL")
    if not url:
        if os.environ.get("PHILONT_REQUIRE_PG") == "1":
            pytest.fail("PHILONT_REQUIRE_PG=1 but PHILONT_TEST_PG_URL is not set")
        pytest.skip("PostgreSQL tests need PHILONT_TEST_PG_URL (see scripts/pg_local.sh)")
    return url


def in_schema(url: URL | str, schema: str) -> URL:
    """``url`` whose connections work in ``schema`` (extensions live in ``public``)."""
    url = make_url(str(url)) if isinstance(url, str) else url
    return url.update_query_dict({"options": f"-csearch_path={schema},public"})


def _admin(sql: str, params: dict[str, object] | None = None) -> None:
    engine = create_engine(server_url())
    try:
        with engine.begin() as conn:
            conn.execute(text(sql), params or {})
    finally:
        engine.dispose()


def admin_autocommit(sql: str) -> None:
    """Run ``sql`` on the test server outside a transaction (``CREATE DATABASE``, ``DROP
    DATABASE``: they cannot run inside one)."""
    engine = sqlalchemy.create_engine(server_url(), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text(sql))
    finally:
        engine.dispose()


def ensure_app_role(schema: str) -> None:
    """The application role, allowed to read and write the layout in ``schema``."""
    _admin(
        "DO $$ BEGIN CREATE ROLE philont_app LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD"
        f" '{APP_PASSWORD}'; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$"
    )
    _admin(
        f'GRANT USAGE ON SCHEMA "{schema}" TO {APP_ROLE};'
        f' GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" TO {APP_ROLE};'
        f' GRANT USAGE ON ALL SEQUENCES IN SCHEMA "{schema}" TO {APP_ROLE};'
        # PgBouncer does not pass a connection's startup options (our URLs' search_path) on:
        # the role finds the layout by its own setting in this database.
        f"DO $$ BEGIN EXECUTE format('ALTER ROLE {APP_ROLE} IN DATABASE %I SET search_path"
        f' TO "{schema}", public\', current_database()); END $$'
    )


_NAMES = itertools.count()


@dataclass
class Layout:
    """This run's layout schema on the test server."""

    schema: str
    url: URL  # the migrating (owner, superuser) role's
    app_url: URL  # the application role's (row-level security applies)
    made: list[str] = field(default_factory=list)

    def new_agent(self) -> str:
        name = f"a{next(_NAMES)}_{self.schema.removeprefix('t_')}"
        self.made.append(name)
        return name

    def drop(self) -> None:
        _admin(f'DROP SCHEMA IF EXISTS "{self.schema}" CASCADE')


def philont_tables(schema: str) -> list[str]:
    """Tables of philont's layout (``philont_*``, ``memory_*``) in ``schema`` of the server."""
    engine = create_engine(server_url())
    try:
        with engine.connect() as conn:
            return list(
                conn.scalars(
                    text(
                        "SELECT tablename FROM pg_tables WHERE schemaname = :s AND"
                        r" (tablename LIKE 'philont\_%' OR tablename LIKE 'memory\_%')"
                        " ORDER BY tablename"
                    ),
                    {"s": schema},
                )
            )
    finally:
        engine.dispose()


def refuse_populated_public() -> None:
    """Fail at once when the server's ``public`` schema holds philont's tables: every test's
    search_path is ``<its schema>, public``, so such tables (a probe that opened a Store on the
    server's URL as is migrated into ``public``) make every PostgreSQL test fail far from the
    cause ("permission denied for table philont_agents")."""
    found = philont_tables("public")
    if found:
        pytest.fail(
            f"the test server's public schema holds philont's tables ({', '.join(found[:5])}"
            f"{', ...' if len(found) > 5 else ''}): something migrated into public (open a"
            " probe's Store on a URL with options=-csearch_path%3D<schema>,public). Drop them"
            " (DROP TABLE public.<name> CASCADE) and run again.",
            pytrace=False,
        )


def make_layout(schema: str, *, app_role: bool = True) -> Layout:
    """A new layout in ``schema``. ``app_role``: the application role's layout, reached by
    its search_path setting in this database (one per database: the run's own layout's; a
    test's extra layout that set it pointed later PgBouncer tests at a dropped schema)."""
    refuse_populated_public()
    _admin(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; CREATE SCHEMA "{schema}"')
    url = in_schema(server_url(), schema)
    migrate.upgrade(url)
    if app_role:
        ensure_app_role(schema)
    app = url.set(username=APP_ROLE, password=APP_PASSWORD)
    return Layout(schema=schema, url=url, app_url=app)


# --- PgBouncer --------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Bouncer:
    """A running PgBouncer (transaction pooling) in front of the test server."""

    port: int
    directory: Path
    process: subprocess.Popen[bytes]

    def url(self, target: URL) -> URL:
        """``target`` reached through this PgBouncer."""
        return target.set(host="127.0.0.1", port=self.port)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a stuck bouncer
            self.process.kill()
        shutil.rmtree(self.directory, ignore_errors=True)


def start_bouncer(layout: Layout) -> Bouncer:
    """PgBouncer on a free 127.0.0.1 port, transaction pooling, 4 server connections, for the
    owner and the application role of ``layout``; skips (fails in CI) when not installed.

    The port is free when picked, not when PgBouncer binds it: another process may take it
    in between. PgBouncer then exits ("Address already in use") and is started again on
    another port; it is running once its own log says it listens on the port (a connection
    that succeeds could reach the other process)."""
    binary = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
    if not Path(binary).exists():
        if os.environ.get("PHILONT_REQUIRE_PG") == "1":
            pytest.fail("PHILONT_REQUIRE_PG=1 but pgbouncer is not installed (scripts/pg_local.sh)")
        pytest.skip("pgbouncer is not installed (scripts/pg_local.sh installs it)")
    for _ in range(20):
        running = _bouncer_on(binary, _free_port())
        if running is not None:
            return running
    raise RuntimeError("pgbouncer found every port it was given taken")


def _bouncer_on(binary: str, port: int) -> Bouncer | None:
    """PgBouncer listening on ``port``; None when the port was taken before it bound it."""
    server = make_url(server_url())
    directory = Path(tempfile.mkdtemp(prefix="philont-pgbouncer-"))
    users = [(server.username, server.password), (APP_ROLE, APP_PASSWORD)]
    (directory / "users.txt").write_text("".join(f'"{u}" "{p}"\n' for u, p in users))
    (directory / "pgbouncer.ini").write_text(
        "[databases]\n"
        f"* = host={server.host} port={server.port or 5432}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        f"auth_type = plain\nauth_file = {directory / 'users.txt'}\n"
        "pool_mode = transaction\ndefault_pool_size = 4\nmax_client_conn = 200\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
    )
    for path in directory.iterdir():
        path.chmod(0o644)
    directory.chmod(0o755)
    command = [binary, str(directory / "pgbouncer.ini")]
    if os.geteuid() == 0:  # PgBouncer refuses to run as root
        command[1:1] = ["-u", "postgres"]
    log = directory / "pgbouncer.log"  # its log goes to stderr, into a file we opened
    with log.open("wb") as sink:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink)
    bouncer = Bouncer(port, directory, process)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        exited = process.poll() is not None
        said = log.read_text(errors="replace")  # read after the poll: all it said, if it exited
        if not exited and f"listening on 127.0.0.1:{port}" in said:
            return bouncer
        if exited:
            bouncer.stop()
            if "Address already in use" in said:
                return None
            raise RuntimeError(f"pgbouncer exited: {said}")
        time.sleep(0.05)
    bouncer.stop()
    raise RuntimeError("pgbouncer did not start listening within 60 s")


# --- working as one agent ------------------------------------------------------------------------


def agent_id(engine: Engine, name: str) -> int:
    """The registry id of agent ``name`` (created when missing)."""
    return agents.agent_id(Store(engine), name)


@contextmanager
def agent_connection(engine: Engine, name: str) -> Iterator[Connection]:
    """A Connection in a transaction that is agent ``name``'s (committed at the end)."""
    ident = agent_id(engine, name)
    with engine.connect() as conn, registry.scoped(conn, ident):
        yield conn


def agent_session(engine: Engine, name: str) -> Session:
    """A begun Session whose transaction is agent ``name``'s (the caller ends it)."""
    ident = agent_id(engine, name)
    session = sessionmaker(bind=engine, expire_on_commit=False)()
    session.begin()
    registry.enter(session, ident)
    return session
