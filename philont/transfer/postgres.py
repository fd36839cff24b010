"""Export and import of one agent of a PostgreSQL database (and of an old per-agent schema).

The format is the one SQLite databases use (``philont.transfer.format``): an export of one agent
imports into an SQLite file, into another database, or under another name into the same one.

* :func:`export_agent`: one agent's rows, from one REPEATABLE READ READ ONLY snapshot, table by
  table in primary-key order, every statement ``WHERE agent_id = <the agent>`` (an index range:
  its cost does not depend on how many agents the database holds); ``sequences`` are the
  agent's id counters.
* :func:`import_agent`: into one agent (created when missing), in one transaction that holds
  the agent's registry row (``FOR UPDATE``: the agent's inserts wait, other agents do not);
  rows keep their ids (ids are per agent), counters move past the file's high-water marks.
* :func:`export_schema`: an agent still in the old layout (one schema per agent, revisions up to
  v034/v035) exported as it is, to be imported into the shared layout (README: moving an agent).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from sqlalchemy import Connection, Table
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from philont import migrate, settings
from philont.db import agents as registry
from philont.db import nesting
from philont.db.engine import create_engine, database_name
from philont.db.pg_layout import AGENT_COLUMN, COUNTERS_TABLE, counter_tables
from philont.db.retry import refusal
from philont.db.schema import metadata
from philont.errors import (
    AgentNotFoundError,
    AgentRequiredError,
    InvalidInputError,
    SchemaError,
    UnrecognizedSchemaError,
)
from philont.interrupts import point_of_no_return
from philont.log import get_logger
from philont.transfer.export import (
    _header,
    _pg_order,
    _same_columns,
    _write_rows,
    _writer,
    check_output,
)
from philont.transfer.format import (
    PROGRESS_EVERY,
    ExportReport,
    ImportForeignKeyError,
    ImportReport,
    Mode,
    Progress,
    conflicting_row,
    export_tables,
    ident,
    rejected_row,
)
from philont.transfer.merge import (
    Incoming,
    MergeConflicts,
    count_row,
    file_row,
    place_row,
    same_row_sql,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["agent_name", "export_agent", "export_schema", "import_agent"]

log = get_logger(__name__)

LEGACY_REVISIONS = ("v034", "v035")
"""The revisions an agent schema of the old layout (one schema per agent) can be at."""


def agent_name(agent: str | None) -> str:
    """``agent``, else ``$PHILONT_AGENT`` (:func:`~philont.settings.default_agent`); a
    PostgreSQL export or import is of one agent."""
    name = settings.default_agent() if agent is None else registry.check_name(agent)
    if name is None:
        raise AgentRequiredError.of(
            "agent",
            "a PostgreSQL database holds many agents: name the one to export or import "
            f"(agent=..., philont --agent NAME ..., ${settings.AGENT_ENV})",
        )
    return name


@contextmanager
def _connection(url: URL) -> Iterator[tuple[Connection, psycopg.Connection[tuple[Any, ...]]]]:
    """A SQLAlchemy connection and the psycopg connection under it, outside a transaction.
    Interrupted (Ctrl-C, or any other ``BaseException`` that is not an ``Exception``), the
    connection is closed instead of returned to the pool: the interrupt may have come in the
    middle of a statement, which leaves the driver waiting for an answer (``another command
    is already in progress``), so nothing more can be sent on it; the server rolls back
    whatever it had open when it closes."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            driver = conn.connection.driver_connection
            try:
                yield conn, cast("psycopg.Connection[tuple[Any, ...]]", driver)
            except BaseException as exc:
                if not isinstance(exc, Exception):
                    conn.invalidate()
                raise
    finally:
        engine.dispose()


@contextmanager
def _transaction(conn: Connection, *, permanent: bool = False) -> Iterator[None]:
    """``conn.begin()``, committed at the end of the block, rolled back when it raises; a
    rollback the connection cannot do any more (an interrupt in the middle of a statement,
    see :func:`_connection`) closes the connection instead, and what the block raised is what
    propagates, not the failed rollback. ``permanent``: its commit is the work's point of no
    return (:func:`philont.interrupts.point_of_no_return`: never cut off by Ctrl-C)."""
    transaction = conn.begin()
    try:
        yield
    except BaseException:
        try:
            transaction.rollback()
        except DBAPIError:
            conn.invalidate()  # the server rolls back as the connection closes
        raise
    if permanent:
        with point_of_no_return():
            transaction.commit()
    else:
        transaction.commit()


def export_agent(
    url: URL, out: Path | TextIO, progress: Progress | None, *, agent: str | None = None
) -> ExportReport:
    """Write one agent's rows to ``out`` (see the module docstring)."""
    import psycopg

    name = agent_name(agent)
    status = migrate.check(url)
    tables = export_tables()
    counts: dict[str, int] = {}
    with _connection(url) as (conn, driver):
        conn.rollback()  # whatever the pool's ping began: the snapshot starts here
        driver.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        driver.read_only = True
        with _transaction(conn):  # the first statement begins it, as set above
            found = driver.execute(
                "SELECT id FROM philont_agents WHERE name = %s", (name,)
            ).fetchone()
            if found is None:
                raise AgentNotFoundError(name)
            agent_id = int(found[0])
            # a snapshot, no lock: the agent's import or delete need not wait for an export
            registry.set_local(conn, agent_id, lock=False)
            mine = f" WHERE {AGENT_COLUMN} = {agent_id}::bigint"
            for table in tables:
                row = driver.execute(f"SELECT count(*) FROM {ident(table.name)}{mine}").fetchone()
                counts[table.name] = int(row[0]) if row else 0
            version_row = driver.execute(
                f"SELECT value FROM memory_meta{mine} AND key = 'schema_version'"
            ).fetchone()
            sequences = dict(
                driver.execute(f"SELECT name, last_value FROM {COUNTERS_TABLE}{mine}").fetchall()
            )
            header = _header(status.head, version_row, sequences)
            with _writer(out) as fh:
                fh.write(_dumps(header) + "\n")
                for table in tables:
                    _export_rows(driver, fh, table, mine, counts[table.name], progress)
                fh.write(_dumps({"end": True, "rows": counts}) + "\n")
    log.info("transfer.exported", db=database_name(url), agent=name, rows=sum(counts.values()))
    return ExportReport(
        rows=counts, schema_revision=status.head, path=out if isinstance(out, Path) else None
    )


def _dumps(obj: Any) -> str:
    from philont.transfer.format import dumps_line

    return dumps_line(obj)


def _export_rows(
    driver: psycopg.Connection[tuple[Any, ...]],
    fh: TextIO,
    table: Table,
    where: str,
    total: int,
    progress: Progress | None,
) -> None:
    columns = [c.name for c in table.c]
    select = ", ".join(ident(c) for c in columns)
    with driver.cursor(name=f"philont_export_{table.name}") as cursor:
        cursor.itersize = PROGRESS_EVERY
        cursor.execute(
            f"SELECT {select} FROM {ident(table.name)}{where} ORDER BY {_pg_order(table)}"
        )
        _write_rows(fh, table.name, columns, cursor, total, progress)


# --- import -----------------------------------------------------------------------------------


def import_agent(url: URL, incoming: Incoming, *, agent: str | None = None) -> None:
    """Insert a checked export file's rows as one agent's, in one transaction (see the module
    docstring), which also upgrades a database not at head: a refusal anywhere (a foreign key
    violation, a conflict, the upgrade) rolls back everything, the upgrade too."""
    name = agent_name(agent)
    with (
        _connection(url) as (conn, driver),
        _transaction(conn, permanent=True),
        nesting.watched(conn),  # inside this thread's open unit of the agent: refused
        incoming.reopen() as fh,
    ):
        if not migrate.status(conn).at_head:  # inside this transaction: a refusal undoes it
            incoming.report.upgrade = migrate.upgrade(conn)
        # The agent's units of work wait for its lock, taken alone, as they enter the agent
        # (registry.set_local): they hold nothing of it, no counter _raise_counters needs.
        # A rename or delete of the agent meanwhile: the name is looked up again (hold).
        found, _created = registry.hold(conn, name, make=True)
        registry.set_local(conn, found.id, lock=False)  # held alone already
        driver.execute("SELECT 1 FROM philont_agents WHERE id = %s FOR UPDATE", (found.id,))
        place = partial(_insert_row, driver, found.id, incoming.mode, incoming.report)
        sequences = incoming.place_rows(driver, fh, place, "%s", agent_id=found.id)
        _raise_counters(driver, found.id, sequences)


def _insert_row(
    driver: psycopg.Connection[tuple[Any, ...]],
    agent_id: int,
    mode: Mode,
    report: ImportReport,
    conflicts: MergeConflicts,
    number: int,
    name: str,
    row: dict[str, Any],
) -> None:
    import psycopg

    pk, key, values = file_row(name, row)  # values: without the rowid (PostgreSQL has none)
    sets = ", ".join(f"{ident(c)} = %s" for c in values)
    where = " AND ".join(f"{ident(c)} = %s" for c in pk)
    try:  # no savepoint: any error ends the import, and the whole transaction is rolled back
        outcome = place_row(
            name,
            key,
            number,
            mode,
            conflicts,
            insert=lambda: _insert_new(driver, name, row),
            replace=lambda: driver.execute(
                f"UPDATE {ident(name)} SET {sets} WHERE {AGENT_COLUMN} = %s AND {where}",
                (*values.values(), agent_id, *key),
            ),
            same=lambda: _same_row(driver, agent_id, name, pk, row),
        )
    except psycopg.errors.UniqueViolation as exc:  # named by kind, never by the row's values
        raise conflicting_row(number, name, exc) from exc
    except psycopg.errors.ForeignKeyViolation as exc:
        violation = (name, key[0] if len(key) == 1 else key, _parent(name, exc))
        raise ImportForeignKeyError([violation], lines=[number]) from exc
    except psycopg.Error as exc:  # a constraint, a value, a host's trigger's RAISE EXCEPTION
        if refusal(exc) is None:
            raise  # no refusal of the row (a conflict, a lost connection): typed by import_
        raise rejected_row(number, name, exc) from exc
    count_row(report, name, key, outcome)


def _insert_new(
    driver: psycopg.Connection[tuple[Any, ...]], name: str, row: dict[str, Any]
) -> bool:
    """Insert the file row unless the agent holds its primary key (False)."""
    pk, _, values = file_row(name, row)
    columns = ", ".join(ident(c) for c in values)
    marks = ", ".join("%s" for _ in values)
    conflict = ", ".join(ident(c) for c in [AGENT_COLUMN, *pk])
    cursor = driver.execute(
        f"INSERT INTO {ident(name)} ({columns}) VALUES ({marks})"
        f" ON CONFLICT ({conflict}) DO NOTHING",
        tuple(values.values()),
    )
    return cursor.rowcount == 1


def _parent(name: str, exc: psycopg.Error) -> str:
    """The table the refused row of ``name`` refers to (as SQLite's ``foreign_key_check`` names
    it): the one foreign key of the table whose columns the violated constraint's name holds,
    else the constraint's name; never the DETAIL ``Key (...)=(...)``, which holds the row's
    values."""
    constraint = exc.diag.constraint_name or ""
    found = {
        fk.referred_table.name
        for fk in metadata.tables[name].foreign_key_constraints
        if all(column.name in constraint for column in fk.columns)
    }
    return found.pop() if len(found) == 1 else f"constraint {constraint!r}"


def _same_row(
    driver: psycopg.Connection[tuple[Any, ...]],
    agent_id: int,
    name: str,
    pk: list[str],
    row: dict[str, Any],
) -> bool:
    sql, params = same_row_sql(
        name,
        pk,
        row,
        mark="%s",
        null_safe_eq="IS NOT DISTINCT FROM",
        where=f"{ident(AGENT_COLUMN)} = %s AND ",
    )
    return driver.execute(sql, (agent_id, *params)).fetchone() is not None


def _raise_counters(
    driver: psycopg.Connection[tuple[Any, ...]], agent_id: int, sequences: dict[str, int]
) -> None:
    """Move each id counter of the agent past the file's high-water mark and every id it now
    holds, so ids deleted in the source are never handed out again (as SQLite's AUTOINCREMENT)."""
    for name in counter_tables():
        row = driver.execute(
            f"SELECT coalesce(max(id), 0) FROM {ident(name)} WHERE {AGENT_COLUMN} = %s",
            (agent_id,),
        ).fetchone()
        high = max(int(row[0]) if row else 0, int(sequences.get(name, 0)))
        if high:
            driver.execute(
                f"INSERT INTO {COUNTERS_TABLE} AS c ({AGENT_COLUMN}, name, last_value)"
                " VALUES (%s, %s, %s) ON CONFLICT (agent_id, name)"
                " DO UPDATE SET last_value = greatest(c.last_value, excluded.last_value)",
                (agent_id, name, high),
            )


# --- an agent in the old layout (one schema per agent) -------------------------------------------


def export_schema(
    url: URL, schema: str, out: Path | TextIO, progress: Progress | None = None
) -> ExportReport:
    """Export the agent kept in the old per-agent ``schema`` (at revision v034 or v035) of the
    database at ``url``, in the format :func:`import_agent` (or any import) reads."""
    import psycopg

    if isinstance(out, Path):
        check_output(out)
    if url.get_backend_name() != "postgresql":
        raise InvalidInputError.of(
            "url", "an old per-agent schema lives in a PostgreSQL database; give its URL with --db"
        )
    with _connection(url) as (conn, driver):
        conn.rollback()
        driver.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
        driver.read_only = True
        with _transaction(conn):
            driver.execute("SELECT set_config('search_path', %s, true)", (f'"{schema}"',))
            revision = _legacy_revision(driver, schema)
            tables = export_tables()
            counts: dict[str, int] = {}
            for table in tables:
                found = driver.execute(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_schema = %s AND table_name = %s",
                    (schema, table.name),
                ).fetchall()
                if not found:  # a table added after that layout (v035's, at v034): empty
                    counts[table.name] = 0
                    continue
                _same_columns(table, [r[0] for r in found])
                row = driver.execute(f"SELECT count(*) FROM {ident(table.name)}").fetchone()
                counts[table.name] = int(row[0]) if row else 0
            version_row = driver.execute(
                "SELECT value FROM memory_meta WHERE key = 'schema_version'"
            ).fetchone()
            sequences = _legacy_sequences(driver)
            header = _header(revision, version_row, sequences)
            with _writer(out) as fh:
                fh.write(_dumps(header) + "\n")
                for table in tables:
                    if counts[table.name]:
                        _export_rows(driver, fh, table, "", counts[table.name], progress)
                fh.write(_dumps({"end": True, "rows": counts}) + "\n")
    log.info("transfer.exported_schema", db=database_name(url), schema=schema)
    return ExportReport(
        rows=counts, schema_revision=revision, path=out if isinstance(out, Path) else None
    )


def _legacy_revision(driver: psycopg.Connection[tuple[Any, ...]], schema: str) -> str:
    row = driver.execute(
        "SELECT to_regclass(%s) IS NOT NULL", (f'"{schema}".{settings.VERSION_TABLE}',)
    ).fetchone()
    if not row or not row[0]:
        raise UnrecognizedSchemaError(f"schema {schema!r} holds no philont agent")
    found = driver.execute(f"SELECT version_num FROM {settings.VERSION_TABLE}").fetchone()
    revision = None if found is None else str(found[0])
    if revision not in LEGACY_REVISIONS:
        raise SchemaError(
            f"schema {schema!r} is at revision {revision}, not one of {LEGACY_REVISIONS}: "
            "upgrade it with the philont release that made it, then export it"
        )
    return revision


def _legacy_sequences(driver: psycopg.Connection[tuple[Any, ...]]) -> dict[str, int]:
    """Each AUTOINCREMENT table's high-water mark in a per-agent schema (its serial sequence)."""
    out: dict[str, int] = {}
    for name in counter_tables():
        row = driver.execute(
            "SELECT pg_sequence_last_value(pg_get_serial_sequence(%s, 'id')::regclass),"
            f" (SELECT max(id) FROM {ident(name)})",
            (ident(name),),
        ).fetchone()
        high = max(int(row[0] or 0), int(row[1] or 0)) if row else 0
        if high:
            out[name] = high
    return out
