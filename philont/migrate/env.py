"""The body of ``alembic/env.py``: lock, inspect, check, back up, then the whole chain in one
transaction (ours, or the caller's when a Connection was given)."""

from __future__ import annotations

import logging.config
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from alembic.config import Config
from alembic.util import CommandError
from sqlalchemy import Connection
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from philont import filewrite, settings
from philont.db import connections
from philont.db.engine import (
    BEGIN_OPTION,
    check_file,
    create_engine,
    is_postgres,
    resolve_url,
    sqlite_engine,
    sqlite_path,
    tighten_permissions,
)
from philont.db.retry import file_error, is_busy
from philont.errors import (
    DatabaseBusyError,
    FilePathError,
    PhilontError,
    UnsupportedMigrationError,
)
from philont.filewrite import cannot_write
from philont.log import get_logger
from philont.migrate import postgres as pg
from philont.migrate.checks import check_foreign_keys, check_integrity, is_wal
from philont.migrate.plan import _Plan, plan_file, plan_from, ro_connect
from philont.migrate.report import StepCallback, UpgradeReport

log = get_logger(__name__)

CONNECTION_KEY = "philont_connection"
"""``Config.attributes`` key: a caller's Connection to run the chain on, in its transaction."""
BACKUP_KEY = "philont_backup"
"""``Config.attributes`` key: False to skip the pre-upgrade backup (``-x backup=false`` too)."""

PRE_UPGRADE_LABEL = "-pre-upgrade"
"""The label of the safety copy taken before an upgrade (never rotated away by ``backup``)."""

# --- backup ----------------------------------------------------------------------------------


def backup_file(
    path: Path,
    *,
    at: datetime | None = None,
    label: str = "",
    source: sqlite3.Connection | None = None,
) -> Path:
    """Online copy (SQLite backup API, consistent under concurrent writers) of ``path`` into its
    sibling ``backups/`` as ``<stem>-YYYYMMDDTHHMMSS[label].sqlite`` (:func:`settings.backup_stem`:
    ``memory`` for ``memory.sqlite``), mode 0600; read through
    ``source`` when given (a connection on ``path`` that holds it locked).

    The copy is written to a hidden ``.partial`` file, synced, and only then given its name:
    a process killed mid-copy leaves no half-written file that looks like a backup (its
    partial file is removed by the next backup into the folder). One that fails leaves no
    file, nor the ``backups/`` it made."""
    at = at or datetime.now(UTC)
    made = not settings.backup_dir_for(path).exists()
    directory = backup_dir(path)
    with _writing_into(directory):
        filewrite.sweep(  # a killed backup's
            directory,
            f".*.sqlite.{PARTIAL}-*",
            rf"\..*\.sqlite\.{PARTIAL}-{filewrite.TEMP_ID}",
        )
        stem = f"{settings.backup_stem(path)}-{at.astimezone(UTC):%Y%m%dT%H%M%S}{label}"
        # Made 0600 before SQLite writes a byte into it (no window with wider modes), and
        # held, so no sweep takes it for a killed backup's, until it is named or removed.
        held = filewrite.LockedTemp(
            directory / f".{stem}.sqlite.{PARTIAL}-{filewrite.temp_id()}", 0o600
        )
    partial = held.path
    try:
        with held, _writing_into(directory):
            with closing(connections.connect(str(partial))) as dst:
                dst.execute("PRAGMA journal_mode = OFF")  # unnamed until complete: no journal
                if source is not None:
                    source.backup(dst)
                else:
                    # timeout 0: the waiting is _gives_up's, where Ctrl-C can end it
                    with closing(connections.connect(str(path), timeout=0)) as src:
                        src.backup(dst, progress=_gives_up(path), sleep=BUSY_SLEEP_S)
            _fsync(partial)
            target = _claim_name(partial, directory, stem)
    except BaseException:
        if made:  # nor the directory made for it (unless another backup is in it)
            with suppress(OSError):
                directory.rmdir()
        raise
    target.chmod(0o600)
    with suppress(OSError):  # some filesystems refuse a directory fsync; the name stands
        _fsync(directory)
    return target


WRITING_BACKUPS = "cannot write a backup into it"


def backup_dir(path: Path) -> Path:
    """The ``backups/`` directory beside the database ``path``, made (mode 0700) when missing;
    one that cannot be (a plain file has its name, a parent cannot be written) is
    :class:`FilePathError` naming it."""
    directory = settings.backup_dir_for(path)
    if directory.is_dir():
        return directory
    if directory.exists():
        raise FilePathError(str(directory), "it is not a directory, and backups go into it")
    with _writing_into(directory):
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(directory, 0o700)  # mkdir's mode is masked by the umask
    return directory


@contextmanager
def _writing_into(directory: Path) -> Iterator[None]:
    """A backup that cannot be written into ``directory`` (a full disk, a file size limit, a
    read-only folder) is :class:`FilePathError` naming that directory: never an error that
    names the database (whose disk may be another, and which nothing wrote to) or a hidden
    partial file."""
    try:
        yield
    except OSError as exc:
        raise cannot_write(directory, exc, doing=WRITING_BACKUPS) from exc
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) not in _COPY_WRITE_FAILED:
            raise
        raise FilePathError(str(directory), f"{WRITING_BACKUPS} ({exc})") from exc


_COPY_WRITE_FAILED = frozenset(
    (
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_IOERR_WRITE,  # a file size limit (EFBIG), a failing device
        sqlite3.SQLITE_IOERR_FSYNC,
        sqlite3.SQLITE_IOERR_TRUNCATE,
    )
)
"""SQLite's failures of a write: during a backup only the copy is written (the database is
read), so they are the copy's directory's, whatever SQLite names."""


BUSY_SLEEP_S = 0.05
"""Seconds between a backup's tries to read a file another connection holds locked."""


def _gives_up(path: Path) -> Callable[[int, int, int], None]:
    """The progress callback of an online backup of ``path``: Python's backup tries again for
    as long as the file is locked, with no limit and deaf to Ctrl-C (its loop runs no Python
    code); this callback is Python code (a KeyboardInterrupt is raised in it) and ends the
    backup with ``DatabaseBusyError`` once the file has stayed locked for the busy timeout."""
    timeout_s = settings.BUSY_TIMEOUT_MS / 1000
    deadline: list[float] = []

    def progress(status: int, _remaining: int, _total: int) -> None:
        if status & 0xFF not in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            deadline.clear()
            return
        now = time.monotonic()
        if not deadline:
            deadline.append(now + timeout_s)
        elif now >= deadline[0]:
            raise DatabaseBusyError(
                f"{str(path)!r} stayed locked by another connection for the busy timeout "
                f"({timeout_s:g} s) and could not be read for a backup; try again later",
                path=str(path),
            )

    return progress


PARTIAL = "partial"
"""Marks a backup still being written (``.<stem>-<...>.sqlite.partial-<id>``)."""


def _claim_name(partial: Path, directory: Path, stem: str) -> Path:
    """Give the finished copy the first free ``stem[-N].sqlite`` (a hard link never replaces
    a name another backup took meanwhile), then drop its partial name."""
    n = 1
    while True:
        target = directory / (f"{stem}.sqlite" if n == 1 else f"{stem}-{n}.sqlite")
        try:
            os.link(partial, target)
        except FileExistsError:
            n += 1
            continue
        partial.unlink()
        return target


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- one run of env.py -----------------------------------------------------------------------

NEW_DATABASE = _Plan(revision=None, stamp=None, has_data=False)


@dataclass
class _Run:
    """What one run of env.py was asked to do, and what it found and did."""

    context: Any  # alembic's module-level proxy of the EnvironmentContext
    url: URL
    connection: Connection | None  # a caller's: its transaction, no backup, its file modes
    is_upgrade: bool
    backup_wanted: bool
    report: UpgradeReport | None
    on_step: StepCallback | None
    plan: _Plan = NEW_DATABASE
    backup: Path | None = None
    checked: bool = False  # integrity already checked (read-only, before the lock)

    @property
    def path(self) -> Path | None:
        return sqlite_path(self.url)

    @property
    def ours(self) -> bool:
        """The file holds philont's database, or holds nothing else (so we made it)."""
        return not self.plan.has_data or bool(self.plan.revision or self.plan.stamp)

    def applied(self, ctx: Any, step: Any, heads: Any, run_args: Any) -> None:
        rev = step.up_revision_id
        if self.report is not None:
            self.report.applied.append(rev)
        log.debug("migrate.step", revision=rev)
        if self.on_step is not None:
            self.on_step(rev)

    def drop_backup(self) -> None:
        """A failed upgrade left the file as it was: its backup would only pile up."""
        if self.backup is not None:
            self.backup.unlink(missing_ok=True)
            log.info("migrate.backup_removed", path=str(self.backup))
            self.backup = None


def _command(context: Any) -> str | None:
    """The running Alembic command (``upgrade``, ``downgrade``, ``current``, ...), whether it
    came from the alembic CLI or ``command.*``."""
    # env.py receives alembic's module-level proxy; the EnvironmentContext behind it carries
    # the command's function (``fn``), which is how we know the command that is running.
    env = getattr(context, "_proxy", context)
    fn = env.context_opts.get("fn")
    name = getattr(fn, "__name__", None)
    return name if isinstance(name, str) else None


def _is_upgrade(context: Any) -> bool:
    return _command(context) == "upgrade"


def _refuse_unsupported(context: Any) -> None:
    """Before the database is opened (opening switches a file to WAL): no downgrade, no
    offline SQL."""
    if _command(context) == "downgrade":
        raise UnsupportedMigrationError(
            "philont's schema history is forward-only: `alembic downgrade` is not supported "
            "and nothing was changed; to go back, restore the copy the upgrade took "
            "(`philont restore backups/<name>-<UTC>-pre-upgrade.sqlite`; on PostgreSQL, "
            "your own backup of the database)"
        )
    if context.is_offline_mode():
        raise UnsupportedMigrationError(
            "offline SQL (--sql) is not supported: philont's upgrade inspects, locks and backs "
            "up the database itself; run it online (`alembic -x url=... upgrade head`)"
        )


def _url_from_context(config: Config, x_args: dict[str, str]) -> URL:
    if "url" in x_args:
        return resolve_url(x_args["url"])
    url = config.get_main_option("sqlalchemy.url")
    return resolve_url(url or None)


def _new_run(context: Any) -> _Run:
    config: Config = context.config
    x_args = context.get_x_argument(as_dictionary=True)
    connection = config.attributes.get(CONNECTION_KEY)
    backup = config.attributes.get(BACKUP_KEY, True)
    if x_args.get("backup", "").lower() in ("0", "false", "no", "off"):
        backup = False
    url = connection.engine.url if connection is not None else _url_from_context(config, x_args)
    return _Run(
        context=context,
        url=url,
        connection=connection,
        is_upgrade=_is_upgrade(context),
        backup_wanted=bool(backup) and connection is None,
        report=config.attributes.get("philont_report"),
        on_step=config.attributes.get("philont_on_step"),
    )


def run_env(context: Any) -> None:
    """Body of ``alembic/env.py`` (online mode only). From the alembic command line a typed
    refusal is alembic's own ``FAILED: error (<code>): <message>`` line, not a traceback."""
    _cli_logging(context.config)
    try:
        _refuse_unsupported(context)
        _run_env(context)
    except PhilontError as exc:
        if context.config.cmd_opts is None:  # philont.migrate.upgrade() or a host's code
            raise
        raise CommandError(f"error ({exc.code}): {exc}") from exc


def _cli_logging(config: Config) -> None:
    """On the alembic command line, its ini's ``[loggers]`` (as every Alembic env.py applies
    them): the upgrade then says each revision it runs and the backup it took. Never from
    philont's own calls or a host's code (philont configures no logging there)."""
    name = config.config_file_name
    if config.cmd_opts is None or not name or not config.file_config.has_section("loggers"):
        return
    logging.config.fileConfig(name, disable_existing_loggers=False)


def _run_env(context: Any) -> None:
    run = _new_run(context)
    if run.connection is not None:
        _run_on_callers(run, run.connection)
    else:
        _run_own(run)
    if run.report is not None:
        run.report.from_revision = run.plan.revision or run.plan.stamp
        run.report.stamped = run.plan.stamp
        if run.url.get_backend_name() != "postgresql":
            run.report.adopted = run.plan.stamp
        run.report.backup = run.backup


def _run_own(run: _Run) -> None:
    """On our own connection and transaction: SQLite's write lock taken up front (a second
    upgrade of the file waits for it, then finds the file at head), a backup of a non-empty
    file, file modes tightened when the file is philont's."""
    path = run.path
    switched = False
    if path is not None:
        check_file(path, create=run.is_upgrade)
        if run.is_upgrade:
            _say_if_waiting(path)
        _precheck(run, path)
        switched = run.is_upgrade and path.stat().st_size > 0 and not is_wal(path)
    timeout = settings.MIGRATION_BUSY_TIMEOUT_MS
    engine = (
        create_engine(run.url, foreign_keys=False, create=run.is_upgrade, busy_timeout_ms=timeout)
        if path is None
        else sqlite_engine(run.url, foreign_keys=False, busy_timeout_ms=timeout)  # checked above
    )
    try:
        bind = engine
        if run.is_upgrade and not is_postgres(run.url):
            bind = engine.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
        with _storage_errors_named(path), bind.connect() as conn, conn.begin():
            _migrate(run, conn)
    except BaseException:
        run.drop_backup()
        raise
    finally:
        engine.dispose()
    if path is not None and run.is_upgrade:
        if switched:
            log.info("migrate.wal_enabled", path=str(path))
        if run.ours:
            tighten_permissions(path)


def _say_if_waiting(path: Path) -> None:
    """Log (WARNING: a command shows it) that the upgrade waits for another connection's write
    lock, when it will: it may wait up to ``MIGRATION_BUSY_TIMEOUT_MS`` without a word. Any
    other failure is left to the checks that follow (a damaged file is named there)."""
    with closing(connections.connect(str(path), isolation_level=None, timeout=0)) as probe:
        try:
            probe.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            if is_busy(exc):
                log.warning(
                    "migrate.waiting",
                    path=str(path),
                    detail="another connection holds the write lock (another upgrade, an"
                    " import, a long write); waiting for it",
                    up_to_s=settings.MIGRATION_BUSY_TIMEOUT_MS // 1000,
                )
            return
        probe.execute("ROLLBACK")


def _precheck(run: _Run, path: Path) -> None:
    """Read-only, before anything is written (even the switch to WAL): refuse a schema we do
    not know and, when there is work to do, a damaged file."""
    wait = settings.MIGRATION_BUSY_TIMEOUT_MS / 1000  # as long as for the write lock
    plan = plan_file(path, timeout=wait)
    if run.is_upgrade and plan.has_data and plan.revision != run.context.script.get_current_head():
        with closing(ro_connect(path, timeout=wait)) as conn:
            check_integrity(conn, path)
        run.checked = True


def _run_on_callers(run: _Run, conn: Connection) -> None:
    """On a caller's Connection (a host's env.py or revision): inside its transaction (begun
    here when it has none, and then committed here), without a backup, file modes untouched."""
    if conn.in_transaction():
        with _storage_errors_named(run.path):
            _sqlite_transactional(conn)
            _migrate(run, conn)
        return
    with _storage_errors_named(run.path), conn.begin():
        _sqlite_transactional(conn)
        _migrate(run, conn)


def _sqlite_transactional(conn: Connection) -> None:
    """Make the chain one transaction on a connection that is not philont's: pysqlite's
    default mode begins transactions only before INSERT/UPDATE/DELETE, so the DDL would
    commit statement by statement. A BEGIN on the driver connection is ended by the
    SQLAlchemy transaction's own COMMIT or ROLLBACK."""
    driver = conn.connection.driver_connection
    if isinstance(driver, sqlite3.Connection) and not driver.in_transaction:
        driver.execute("BEGIN")


@contextmanager
def _storage_errors_named(path: Path | None) -> Iterator[None]:
    """SQLite's failures, wherever they surface (opening, the WAL switch, reading the schema,
    a step), typed: a lock still held by another connection after the wait is
    :class:`DatabaseBusyError`, a file SQLite will not write :class:`DatabaseReadOnlyError`,
    "malformed" or "not a database" :class:`DatabaseCorruptError` (never a lock taken for
    damage, nor damage for a failed step)."""
    try:
        yield
    except (sqlite3.DatabaseError, DBAPIError) as exc:
        typed = file_error(exc, path=str(path or "the database"))
        if typed is not None:
            raise typed from exc
        raise


def _migrate(run: _Run, conn: Connection) -> None:
    """Inspect (inside the lock), check and back up when there is work, run the chain."""
    from philont.db.bootstrap import ensure_bootstrap_rows

    postgres = conn.dialect.name == "postgresql"
    run.plan = _plan_locked_pg(conn, run.is_upgrade) if postgres else _plan_sqlite(conn)
    context = run.context
    head = context.script.get_current_head()
    work = run.is_upgrade and run.plan.revision != head
    if work and postgres:
        pg.check_extensions_on_path(conn)
    path = run.path
    if work and path is not None:
        if not run.checked:  # before the backup: never copy a damaged file
            check_integrity(_driver(conn), path)
        if run.backup_wanted and run.plan.has_data:
            run.backup = backup_file(path, label=PRE_UPGRADE_LABEL)
            log.info("migrate.backup", path=str(run.backup))
    _configure(run, conn)
    if run.is_upgrade and run.plan.stamp:
        context.get_context().stamp(context.script, run.plan.stamp)
        log.info("migrate.stamped" if postgres else "migrate.adopted", stamped=run.plan.stamp)
    with context.begin_transaction():
        context.run_migrations()
    at_head = context.get_context().get_current_heads() == (head,)
    if run.is_upgrade and at_head and not postgres:  # PostgreSQL: per agent, when created
        # Bootstrap rows use the head-shaped models: only at head (not `upgrade v002`).
        bootstrap = ensure_bootstrap_rows(conn)
        if run.report is not None:
            run.report.bootstrap_rows = bootstrap
    if run.is_upgrade and not postgres:  # PostgreSQL checks foreign keys as it goes
        check_foreign_keys(conn)


def _driver(conn: Connection) -> sqlite3.Connection:
    driver = conn.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    return driver


def _plan_sqlite(conn: Connection) -> _Plan:
    """The read-only inspection, on the connection that holds the write lock: what it sees
    cannot change before the chain runs."""
    return plan_from(_driver(conn))


def _plan_locked_pg(conn: Connection, upgrade: bool) -> _Plan:
    """One upgrade per database at a time (SQLite's write lock does this for a file): a second
    one waits here, then finds the shared layout at head and does nothing. An upgrade makes
    the schema its search_path names when it is missing."""
    if upgrade:
        pg.ensure_named_schema(conn)
    pg.lock(conn)
    return pg.plan(conn)


def _configure(run: _Run, conn: Connection) -> None:
    from philont.db.schema import metadata

    run.context.configure(
        connection=conn,
        target_metadata=metadata,
        version_table=settings.VERSION_TABLE,
        include_name=include_name,
        render_as_batch=True,
        transaction_per_migration=False,
        # Our BEGIN hook makes SQLite DDL transactional: one transaction for the chain.
        transactional_ddl=True,
        on_version_apply=run.applied,
    )


def include_name(name: str | None, type_: str, parent_names: Any) -> bool:
    """Our own autogenerate filter (models against migrations): FTS5 virtual tables and their
    shadow tables, and PostgreSQL's GIN search indexes (DDL events, not Index objects), are
    not models. A host's filter is :func:`philont.migrate.host_include_name`."""
    if type_ == "table" and name is not None:
        from philont.db.pg_layout import layout_only  # PostgreSQL's registry and partitions

        return "_fts" not in name and name != settings.VERSION_TABLE and not layout_only(name)
    if type_ == "index" and name is not None:
        return not name.startswith("philont_pg_")
    return True
