"""The body of ``alembic/env.py``: backup, adoption, the whole chain in one transaction."""

from __future__ import annotations

import os
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic.config import Config
from sqlalchemy import Connection, text
from sqlalchemy.engine import URL

from philont import settings
from philont.db.engine import (
    check_file,
    create_engine,
    is_postgres,
    resolve_url,
    sqlite_path,
    tighten_permissions,
)
from philont.errors import (
    MigrationError,
)
from philont.log import get_logger
from philont.migrate import postgres as pg
from philont.migrate.plan import _Plan, _plan_sqlite
from philont.migrate.report import StepCallback, UpgradeReport

log = get_logger(__name__)

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
    if "url" in x_args:
        return resolve_url(x_args["url"])
    url = config.get_main_option("sqlalchemy.url")
    return resolve_url(url or None)


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
                plan = pg.plan(conn)
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
        log.debug("migrate.step", revision=rev)
        if on_step is not None:
            on_step(rev)

    try:
        with engine.connect() as conn, conn.begin():
            if postgres:  # once per database, for every agent (philont.migrate.postgres)
                pg.lock(conn)
                plan = pg.plan(conn)
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
            at_head = context.get_context().get_current_heads() == (head,)
            if is_upgrade and at_head and not postgres:  # PostgreSQL: per agent, when created
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
        from philont.db.pg_layout import layout_only  # PostgreSQL's registry and partitions

        return "_fts" not in name and name != settings.VERSION_TABLE and not layout_only(name)
    if type_ == "index" and name is not None:
        return not name.startswith("philont_pg_")
    return True


def _check_foreign_keys(conn: Connection) -> None:
    bad = conn.execute(text("PRAGMA foreign_key_check")).fetchall()
    if bad:
        raise MigrationError(f"foreign key violations after upgrade: {bad[:5]}")
