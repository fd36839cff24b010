"""Schema migrations from code: upgrade / current / check / history (works from a wheel).

``upgrade`` and ``alembic upgrade head`` share one path (``run_env``): inspect the database
read-only and refuse what we do not know before writing anything (unknown or disagreeing schema
records, other tables under philont's names, a damaged file); take the write lock (a second
upgrade waits, then finds the file at head); back up a non-empty file into ``backups/`` (removed
again if the upgrade fails); stamp the revision of an unversioned Philont database from
``memory_meta.schema_version``; run the whole chain in ONE transaction (a failure anywhere leaves
the file as it was); re-ensure the bootstrap rows; check philont's foreign keys. A host sharing
the file uses :func:`host_include_name` / :func:`host_include_object` in its own autogenerate
and runs the chain from its env.py or a revision (``upgrade(connection)``).
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Annotated

from alembic import command
from alembic.config import Config
from pydantic import PlainValidator
from sqlalchemy import Connection
from sqlalchemy.engine import URL

from philont import settings
from philont.arguments import checked
from philont.db.engine import (
    check_file,
    create_engine,
    database_name,
    is_postgres,
    require_file,
    resolve_url,
    sqlite_path,
    target_kind,
)
from philont.db.retry import database_reason
from philont.errors import (
    MigrationError,
    PhilontError,
    SchemaError,
    SchemaOutOfDateError,
)
from philont.log import get_logger
from philont.migrate.env import BACKUP_KEY, CONNECTION_KEY, backup_file, include_name, run_env
from philont.migrate.host import host_include_name, host_include_object
from philont.migrate.plan import (
    HEAD_PHILONT_VERSION,
    check_recorded,
    parse_schema_version,
    plan_file,
    plan_from,
    ro_connect,
    table_names,
    unreadable,
)
from philont.migrate.report import Status, StepCallback, UpgradeReport
from philont.migrate.scripts import (
    alembic_config,
    alembic_ini,
    head_revision,
    heads_for,
    history,
    isolated,
    script_directory,
    script_location,
)

__all__ = [
    "HEAD_PHILONT_VERSION",
    "Status",
    "StepCallback",
    "UpgradeReport",
    "alembic_config",
    "alembic_ini",
    "backup_file",
    "check",
    "file_status",
    "head_revision",
    "heads_for",
    "history",
    "host_include_name",
    "host_include_object",
    "include_name",
    "parse_schema_version",
    "readable_status",
    "run_env",
    "script_directory",
    "script_location",
    "status",
    "upgrade",
]

log = get_logger(__name__)

# --- public API ------------------------------------------------------------------------------


def _target(value: object) -> object:
    return value if isinstance(value, Connection) else target_kind(value)


Target = Annotated[str | os.PathLike[str] | URL | Connection | None, PlainValidator(_target)]
"""A database (:data:`philont.db.engine.Target`) or a Connection to one."""


@checked
def upgrade(
    target: Target = None,
    *,
    backup: bool = True,
    on_step: StepCallback | None = None,
) -> UpgradeReport:
    """Create or upgrade a memory database to head (see the module docstring).

    ``target`` is a path, a URL or a SQLAlchemy ``Connection``. (A PostgreSQL database holds
    every agent in one layout, upgraded once: no agent is named here.) On
    a path or URL, philont opens its own connection and transaction; a non-empty SQLite file is
    backed up first unless ``backup=False``. On a Connection (a host's ``env.py`` or Alembic
    revision: ``upgrade(op.get_bind())``), the chain runs inside that connection's transaction
    (begun and committed here when it has none), without a backup, leaving file modes alone.

    ``on_step(revision)`` is called after each applied revision (for progress displays); an
    exception it raises aborts the upgrade, which is rolled back as a whole. Safe to call while
    another Alembic command runs in this process (from a host's env.py or revision).
    """
    if isinstance(target, Connection):
        url = target.engine.url  # the caller's, as it is: its connection is all we use
        cfg = Config()
        cfg.set_main_option("script_location", str(script_location()))
        cfg.attributes[CONNECTION_KEY] = target
    else:
        url = resolve_url(target)
        require_file(url, "an upgrade")  # it would upgrade a database gone with its connection
        cfg = alembic_config(url)
    report = UpgradeReport(url=database_name(url), from_revision=None, to_revision=None)
    cfg.attributes["philont_report"] = report
    cfg.attributes["philont_on_step"] = on_step
    cfg.attributes[BACKUP_KEY] = backup
    try:
        with isolated():
            command.upgrade(cfg, "head")
    except PhilontError:
        raise
    except Exception as exc:
        reason = database_reason(exc)  # a database's text can hold a revision's row values
        if reason is None:
            reason = f"{type(exc).__name__}: {exc}"
        else:
            log.failure("migrate.failed", exc, url=report.url)
        raise MigrationError(
            f"upgrade of {report.url} failed ({reason}); the database was left as it was"
        ) from exc
    report.to_revision = head_revision()
    log.info("migrate.done", url=report.url, applied=len(report.applied), stamped=report.stamped)
    return report


@checked
def status(target: Target = None) -> Status:
    """Current revision and ``memory_meta.schema_version``, read without writing. A
    PostgreSQL ``Connection`` is read as it is (the schema its search_path names)."""
    if isinstance(target, Connection):
        if target.dialect.name == "postgresql":
            from philont.migrate import postgres

            return postgres.status_on(target, head_revision())
        target = target.engine.url
    url = resolve_url(target)
    path = sqlite_path(url)
    head = head_revision()
    if is_postgres(url):
        return _status_pg(url, head)
    require_file(url, "status()")
    if path is None:
        raise SchemaError("status() needs an SQLite file or a PostgreSQL URL")
    check_file(path, create=False, writable=False)  # a read-only file can tell its version
    return file_status(path)


def file_status(path: Path) -> Status:
    """:func:`status` of the SQLite file ``path``, which the caller has just checked
    (:func:`~philont.db.engine.check_file`: ``Store.open`` looks at its file once)."""
    try:
        with closing(ro_connect(path)) as conn:
            revision, version = _recorded(conn)
    except sqlite3.DatabaseError as exc:  # locked by a writer, damaged, ...: typed
        raise unreadable(path, exc) from exc
    return Status(
        revision=revision,
        head=head_revision(),
        schema_version=version,
        heads=heads_for("sqlite"),
    )


def _recorded(conn: sqlite3.Connection) -> tuple[str | None, str | None]:
    """Our revision and ``memory_meta.schema_version`` as the file records them."""
    tables = table_names(conn)
    revision = None
    if settings.VERSION_TABLE in tables:
        row = conn.execute(f"SELECT version_num FROM {settings.VERSION_TABLE}").fetchone()
        revision = row[0] if row else None
    version = None
    if "memory_meta" in tables:
        row = conn.execute("SELECT value FROM memory_meta WHERE key = 'schema_version'").fetchone()
        version = None if row is None else str(row[0])
    return revision, version


def _plan(target: URL | Connection | None) -> None:
    """Inspect ``target`` as an upgrade does first, read only: raises what an upgrade would
    refuse it with (a revision or ``schema_version`` we do not ship, records that disagree,
    another program's tables under philont's names, the old per-agent PostgreSQL layout), on
    every backend and kind of target."""
    from philont.migrate import postgres

    if isinstance(target, Connection):
        driver = target.connection.driver_connection
        if isinstance(driver, sqlite3.Connection):
            plan_from(driver)
        elif target.dialect.name == "postgresql":
            postgres.plan(target)
        return
    path = None if target is None else sqlite_path(target)
    if path is not None:
        plan_file(path)
    elif target is not None and is_postgres(target):
        engine = create_engine(target, create=False)
        try:
            with engine.connect() as conn:
                postgres.plan(conn)
        finally:
            engine.dispose()


def _status_pg(url: URL, head: str) -> Status:
    from philont.migrate import postgres

    return postgres.status(url, head)


@checked
def readable_status(target: Target = None) -> Status:
    """:func:`status`, refusing what an upgrade would refuse (a revision or ``schema_version``
    this release does not ship, records that disagree, other tables under philont's names, the
    old per-agent PostgreSQL layout) with the upgrade's own error, on every backend: what a
    command that reads the database as this release knows it (``philont stats``) calls first.
    A database at an older revision passes (``check`` says it needs an upgrade)."""
    st = status(target)
    if st.at_head:
        return st
    if st.revision == st.head:
        check_recorded(st.revision, st.schema_version)  # raises: the records disagree
    _plan(target if isinstance(target, Connection) else resolve_url(target))  # as an upgrade
    return st


@checked
def check(target: Target = None) -> Status:
    """Raise ``SchemaOutOfDateError`` (with the command that fixes it) unless at head. A
    database the upgrade would refuse is refused here with the same error, never sent to an
    upgrade that cannot run: a ``schema_version`` newer than ours (``'32'``) or a revision we
    do not ship (a later release's), records that disagree (``'99'`` at our head), other
    tables under philont's names."""
    st = readable_status(target)
    url = None if isinstance(target, Connection) else resolve_url(target)
    if not st.at_head:
        named = "database" if url is None else f"database {database_name(url)}"
        raise SchemaOutOfDateError(
            f"{named} is at revision {st.revision or '(none)'}, head is {st.head}; run "
            "`alembic upgrade head` or `philont db upgrade`"
        )
    return st
