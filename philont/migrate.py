"""Schema migrations from code: upgrade / current / check / history (works from a wheel).

``upgrade`` and ``alembic upgrade head`` share one path (``run_env``): inspect the database
read-only and refuse what we do not know before writing anything; back up a non-empty file into
``backups/``; stamp the revision of an unversioned Philont database from
``memory_meta.schema_version``; run the whole chain in ONE transaction (a failure anywhere leaves
the file as it was); re-ensure the bootstrap rows; check foreign keys.
"""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.engine import URL

from philont import settings
from philont.db.engine import (
    check_file,
    create_engine,
    is_postgres,
    pg_schema,
    resolve_url,
    sqlite_path,
    tighten_permissions,
)
from philont.errors import (
    MigrationError,
    PhilontError,
    SchemaError,
    SchemaOutOfDateError,
    UnknownSchemaVersionError,
    UnrecognizedSchemaError,
)
from philont.log import get_logger

log = get_logger(__name__)

HEAD_PHILONT_VERSION = settings.SCHEMA_VERSION

# The base layers as Philont schema 2 had them (spec §2.5): memory tables without a version row
# are adopted as version 2 only when they have exactly this shape.
V2_COLUMNS: dict[str, set[str]] = {
    "memory_raw_sessions": {"id", "started_at", "ended_at"},
    "memory_raw_messages": {"id", "session_id", "role", "content", "timestamp"},
    "memory_notes": {"id", "content", "importance", "session_id", "created_at"},
    "memory_facts": {
        "id",
        "namespace",
        "key",
        "value_json",
        "confidence",
        "superseded_by",
        "supersedes",
        "created_at",
    },
    "memory_actions": {
        "id",
        "session_id",
        "trigger",
        "tool_name",
        "params_json",
        "result",
        "success",
        "timestamp",
    },
    "memory_skills": {
        "id",
        "name",
        "description",
        "trigger_keywords",
        "action_template",
        "use_count",
        "last_used_at",
        "created_at",
    },
}
BASE_TABLES = frozenset(V2_COLUMNS)
MEMORY_TABLE = re.compile(
    r"^(memory_\w+|routing_rules|autonomous_budget|push_subscriptions|config_rules|"
    r"reasoning_sessions|reasoning_nodes|schedule_outcomes)$"
)

StepCallback = Callable[[str], None]


@dataclass
class UpgradeReport:
    """What an upgrade did."""

    url: str
    from_revision: str | None
    to_revision: str | None
    stamped: str | None = None
    backup: Path | None = None
    applied: list[str] = field(default_factory=list)
    bootstrap_rows: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Status:
    """Where a database stands."""

    revision: str | None
    head: str
    schema_version: str | None

    @property
    def at_head(self) -> bool:
        return self.revision == self.head


# --- configuration ---------------------------------------------------------------------------


def script_location() -> Path:
    """The Alembic scripts: shipped inside the wheel, or the checkout's top-level ``alembic/``."""
    here = Path(__file__).resolve().parent
    packaged = here / "_alembic"
    return packaged if packaged.is_dir() else here.parent / "alembic"


def alembic_config(target: str | Path | URL | None = None) -> Config:
    """An Alembic Config pointing at our scripts and the given (or default) database."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    url = resolve_url(target).render_as_string(hide_password=False)
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(":memory:"))


def head_revision() -> str:
    head = script_directory().get_current_head()
    assert head is not None
    return head


def history() -> list[tuple[str, str]]:
    """(revision, first docstring line) from the first revision to head."""
    revs = list(script_directory().walk_revisions())
    return [(r.revision, (r.doc or "").strip()) for r in reversed(revs)]


# --- inspection (read-only, before anything is written) --------------------------------------


@dataclass(frozen=True)
class _Plan:
    revision: str | None  # current Alembic revision, if versioned
    stamp: str | None  # revision to stamp for an unversioned Philont database
    has_data: bool


def _ro_connect(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in conn.execute(f'PRAGMA table_info("{table}")')}


def parse_schema_version(raw: str | None) -> int:
    """Philont's ``schema_version`` as an int in 1..31, else ``UnknownSchemaVersionError``.

    Unlike the original (which reads garbage as NaN and silently relabels it 31, spec Q-M1/Q-M2),
    anything but a decimal 1..31 is refused.
    """
    if raw is None or not re.fullmatch(r"[0-9]{1,6}", raw.strip()):
        raise UnknownSchemaVersionError(raw)
    value = int(raw.strip())
    if not 1 <= value <= HEAD_PHILONT_VERSION:
        raise UnknownSchemaVersionError(raw)
    return value


def _plan_sqlite(path: Path) -> _Plan:
    if not path.exists() or path.stat().st_size == 0:
        return _Plan(revision=None, stamp=None, has_data=False)
    try:
        with closing(_ro_connect(path)) as conn:
            return _plan_from(conn)
    except sqlite3.DatabaseError as exc:
        raise SchemaError(f"cannot read {path}: {exc}") from exc


def _plan_from(conn: sqlite3.Connection) -> _Plan:
    """What upgrading this (read-only) connection's database would do; raises before any
    write when the schema is unknown."""
    tables = _tables(conn)
    has_data = bool(tables)
    known = {s.revision for s in script_directory().walk_revisions()}
    if settings.VERSION_TABLE in tables:
        row = conn.execute(f"SELECT version_num FROM {settings.VERSION_TABLE}").fetchone()
        revision = row[0] if row else None
        if revision is not None and revision not in known:
            raise UnknownSchemaVersionError(revision)
        return _Plan(revision=revision, stamp=None, has_data=has_data)
    memory = {t for t in tables if MEMORY_TABLE.match(t)}
    raw: str | None = None
    if "memory_meta" in tables:
        row = conn.execute("SELECT value FROM memory_meta WHERE key = 'schema_version'").fetchone()
        raw = None if row is None else str(row[0])
    if raw is not None and raw.strip() != "0":
        version = parse_schema_version(raw)
        missing = BASE_TABLES - tables
        if missing:
            raise UnrecognizedSchemaError(
                f"schema_version {version} but tables {sorted(missing)} are missing"
            )
        return _Plan(revision=None, stamp=f"v{version:03d}", has_data=has_data)
    if not (memory - {"memory_meta"}):
        return _Plan(revision=None, stamp=None, has_data=has_data)  # ours get built beside
    for table, expected in V2_COLUMNS.items():
        found = _columns(conn, table) if table in tables else set()
        if found != expected:
            raise UnrecognizedSchemaError(
                f"memory tables without a schema version, and {table} does not have the "
                f"version-2 shape (expected columns {sorted(expected)}, found {sorted(found)})"
            )
    return _Plan(revision=None, stamp="v002", has_data=has_data)


def pg_tables(conn: Connection, schema: str | None) -> set[str]:
    """The tables of one PostgreSQL schema."""
    rows = conn.execute(
        text("SELECT tablename FROM pg_tables WHERE schemaname = :s"), {"s": schema}
    ).scalars()
    return set(rows)


def _plan_pg(conn: Connection, schema: str | None) -> _Plan:
    """The same inspection on PostgreSQL, in the connection's agent schema. Philont itself
    never wrote PostgreSQL, so only schemas philont created are adopted: memory tables without
    our version table are refused."""
    tables = pg_tables(conn, schema)
    known = {s.revision for s in script_directory().walk_revisions()}
    if settings.VERSION_TABLE in tables:
        row = conn.execute(text(f"SELECT version_num FROM {settings.VERSION_TABLE}")).first()
        revision = None if row is None else str(row[0])
        if revision is not None and revision not in known:
            raise UnknownSchemaVersionError(revision)
        return _Plan(revision=revision, stamp=None, has_data=bool(tables))
    memory = sorted(t for t in tables if MEMORY_TABLE.match(t))
    if memory:
        raise UnrecognizedSchemaError(
            f"memory tables {memory[:5]} without {settings.VERSION_TABLE}: not made by philont"
        )
    return _Plan(revision=None, stamp=None, has_data=bool(tables))


# --- backup ----------------------------------------------------------------------------------


def backup_file(path: Path, *, at: datetime | None = None, label: str = "") -> Path:
    """Online copy (SQLite backup API, consistent under concurrent writers) of ``path`` into its
    sibling ``backups/`` as ``memory-YYYYMMDDTHHMMSS[label].sqlite``, mode 0600."""
    at = at or datetime.now(UTC)
    directory = settings.backup_dir_for(path)
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    stem = f"memory-{at.astimezone(UTC):%Y%m%dT%H%M%S}{label}"
    target = directory / f"{stem}.sqlite"
    n = 1
    while target.exists():
        n += 1
        target = directory / f"{stem}-{n}.sqlite"
    # Create the file 0600 before SQLite writes a byte into it (no window with wider modes).
    os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    with closing(sqlite3.connect(str(path))) as src, closing(sqlite3.connect(str(target))) as dst:
        src.backup(dst)
    target.chmod(0o600)
    return target


# --- the env.py body -------------------------------------------------------------------------


def _is_upgrade(context: Any) -> bool:
    """True for ``upgrade`` whether it came from the alembic CLI or ``command.upgrade``."""
    # env.py receives alembic's module-level proxy; the EnvironmentContext behind it carries
    # the command's function (``fn``), which is how we know the command that is running.
    env = getattr(context, "_proxy", context)
    fn = env.context_opts.get("fn")
    return getattr(fn, "__name__", None) == "upgrade"


def _url_from_context(config: Config, x_args: dict[str, str]) -> URL:
    agent = x_args.get("schema")
    if "url" in x_args:
        return resolve_url(x_args["url"], agent=agent)
    url = config.get_main_option("sqlalchemy.url")
    return resolve_url(url or None, agent=agent)


def run_env(context: Any) -> None:
    """Body of ``alembic/env.py`` (online mode only)."""
    from philont.db.bootstrap import ensure_bootstrap_rows
    from philont.db.schema import metadata

    config: Config = context.config
    report: UpgradeReport | None = config.attributes.get("philont_report")
    on_step: StepCallback | None = config.attributes.get("philont_on_step")
    is_upgrade = _is_upgrade(context)
    url = _url_from_context(config, context.get_x_argument(as_dictionary=True))
    path = sqlite_path(url)
    postgres = is_postgres(url)

    plan = _Plan(revision=None, stamp=None, has_data=False)
    if path is not None:
        check_file(path, create=is_upgrade)
        plan = _plan_sqlite(path)
    engine = create_engine(url, foreign_keys=False, create=is_upgrade)
    if postgres:
        try:
            with engine.connect() as conn:
                plan = _plan_pg(conn, pg_schema(url))
        except BaseException:
            engine.dispose()
            raise
    head = context.script.get_current_head()
    needs_work = is_upgrade and (plan.revision != head)
    backup = None
    if needs_work and plan.has_data and path is not None:
        backup = backup_file(path, label="-pre-upgrade")
        log.info("migrate.backup", path=str(backup))

    def _applied(ctx: Any, step: Any, heads: Any, run_args: Any) -> None:
        rev = step.up_revision_id
        if report is not None:
            report.applied.append(rev)
        log.info("migrate.step", revision=rev)
        if on_step is not None:
            on_step(rev)

    try:
        with engine.connect() as conn, conn.begin():
            if postgres:
                # One upgrade per agent at a time (SQLite's write lock does this for a file);
                # a second one waits, then finds the schema at head and does nothing.
                conn.execute(
                    text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                    {"key": f"philont.migrate.{pg_schema(url)}"},
                )
                plan = _plan_pg(conn, pg_schema(url))
            context.configure(
                connection=conn,
                target_metadata=metadata,
                version_table=settings.VERSION_TABLE,
                include_name=include_name,
                render_as_batch=True,
                transaction_per_migration=False,
                # Our BEGIN hook makes SQLite DDL transactional: one transaction for the chain.
                transactional_ddl=True,
                on_version_apply=_applied,
            )
            if is_upgrade and plan.stamp:
                context.get_context().stamp(context.script, plan.stamp)
                log.info("migrate.adopted", stamped=plan.stamp)
            with context.begin_transaction():
                context.run_migrations()
            if is_upgrade and context.get_context().get_current_heads() == (head,):
                # Bootstrap rows use the head-shaped models: only at head (not `upgrade v002`).
                bootstrap = ensure_bootstrap_rows(conn)
                if report is not None:
                    report.bootstrap_rows = bootstrap
            if is_upgrade and not postgres:  # PostgreSQL checks foreign keys as it goes
                _check_foreign_keys(conn)
        if path is not None and is_upgrade:
            tighten_permissions(path)
    finally:
        engine.dispose()
    if report is not None:
        report.from_revision = plan.revision or plan.stamp
        report.stamped = plan.stamp
        report.backup = backup


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Autogenerate filter: FTS5 virtual tables and their shadow tables, and PostgreSQL's GIN
    search indexes (DDL events, not Index objects), are not models."""
    if type_ == "table" and name is not None:
        return "_fts" not in name and name != settings.VERSION_TABLE
    if type_ == "index" and name is not None:
        return not name.startswith("philont_pg_")
    return True


def _check_foreign_keys(conn: Connection) -> None:
    bad = conn.execute(text("PRAGMA foreign_key_check")).fetchall()
    if bad:
        raise MigrationError(f"foreign key violations after upgrade: {bad[:5]}")


# --- public API ------------------------------------------------------------------------------


def upgrade(
    target: str | Path | URL | None = None,
    *,
    on_step: StepCallback | None = None,
) -> UpgradeReport:
    """Create or upgrade a memory database to head (see the module docstring).

    ``on_step(revision)`` is called after each applied revision (for progress displays); an
    exception it raises aborts the upgrade, which is rolled back as a whole.
    """
    url = resolve_url(target)
    cfg = alembic_config(url)
    report = UpgradeReport(url=url.render_as_string(), from_revision=None, to_revision=None)
    cfg.attributes["philont_report"] = report
    cfg.attributes["philont_on_step"] = on_step
    try:
        command.upgrade(cfg, "head")
    except PhilontError:
        raise
    except Exception as exc:
        raise MigrationError(
            f"upgrade of {report.url} failed ({type(exc).__name__}: {exc}); "
            "the database was left as it was"
        ) from exc
    report.to_revision = head_revision()
    log.info("migrate.done", url=report.url, applied=len(report.applied), stamped=report.stamped)
    return report


def status(target: str | Path | URL | None = None) -> Status:
    """Current revision and ``memory_meta.schema_version``, read without writing."""
    url = resolve_url(target)
    path = sqlite_path(url)
    head = head_revision()
    if is_postgres(url):
        return _status_pg(url, head)
    if path is None:
        raise SchemaError("status() needs an SQLite file or a PostgreSQL URL")
    check_file(path, create=False)
    with closing(_ro_connect(path)) as conn:
        tables = _tables(conn)
        revision = None
        if settings.VERSION_TABLE in tables:
            row = conn.execute(f"SELECT version_num FROM {settings.VERSION_TABLE}").fetchone()
            revision = row[0] if row else None
        version = None
        if "memory_meta" in tables:
            row = conn.execute(
                "SELECT value FROM memory_meta WHERE key = 'schema_version'"
            ).fetchone()
            version = None if row is None else str(row[0])
    return Status(revision=revision, head=head, schema_version=version)


def _status_pg(url: URL, head: str) -> Status:
    engine = create_engine(url, create=False)
    try:
        with engine.connect() as conn:
            tables = pg_tables(conn, pg_schema(url))
            revision = version = None
            if settings.VERSION_TABLE in tables:
                revision = conn.execute(
                    text(f"SELECT version_num FROM {settings.VERSION_TABLE}")
                ).scalar()
            if "memory_meta" in tables:
                version = conn.execute(
                    text("SELECT value FROM memory_meta WHERE key = 'schema_version'")
                ).scalar()
    finally:
        engine.dispose()
    return Status(revision=revision, head=head, schema_version=version)


def check(target: str | Path | URL | None = None) -> Status:
    """Raise ``SchemaOutOfDateError`` (with the command that fixes it) unless at head."""
    st = status(target)
    if not st.at_head:
        raise SchemaOutOfDateError(
            f"database is at revision {st.revision or '(none)'}, head is {st.head}; run "
            "`alembic upgrade head` or `philont db upgrade`"
        )
    return st
