"""PostgreSQL agents: the registry (create, find, list, rename, delete) and the one place where
every statement of a unit of work is kept to its agent.

A unit of work on PostgreSQL serves one agent (:func:`enter`), twice guarded:

* its transaction carries the agent (``set_config('philont.agent_id', id, true)``, i.e.
  ``SET LOCAL``: it ends with the transaction, so a pooled connection, or PgBouncer in
  transaction mode, never carries it into another unit of work); row-level security lets the
  application role see and write only that agent's rows, and INSERTs take it as the
  ``agent_id`` column's DEFAULT;
* every statement names the agent itself: ORM SELECTs get ``agent_id = :id`` on every entity
  (aliases included) through ``with_loader_criteria`` (:func:`_orm_criteria`), UPDATE and
  DELETE statements (ORM flushes and bulk statements; their target and every other table of
  ours they read, ``UPDATE ... FROM``) through :func:`_dml_criteria`, and the
  lean SQL of ``philont.db.queries`` and the search scorer through ``Raw.mine()``. No service
  writes an agent filter of its own. A host's statement that reads a table of ours where none
  of these reaches (a Core Table in a nested SELECT or on an outer join's optional side, a
  nested SELECT in an INSERT, UPDATE or DELETE) is refused before it runs (:func:`_refusal`).

SQLite needs none of this: one file is one agent.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Engine,
    Table,
    bindparam,
    event,
    insert,
    text,
    true,
)
from sqlalchemy.orm import ORMExecuteState, Session, with_loader_criteria
from sqlalchemy.sql import ColumnElement, Delete, Insert, Join, Select, Update, visitors
from sqlalchemy.sql.expression import Alias, ColumnClause, Lateral, SelectBase, TableSample

from philont.db.base import Base
from philont.db.bootstrap import bootstrap_rows
from philont.db.listen import listen_once
from philont.db.models import Meta
from philont.db.nesting import BACKEND
from philont.db.pg_layout import (
    AGENT_COLUMN,
    AGENT_SETTING,
    AGENTS_TABLE,
    COUNTERS_TABLE,
    agent_lock,
)
from philont.db.schema import metadata
from philont.errors import AgentNotFoundError, ConflictError, InvalidInputError
from philont.log import get_logger

__all__ = [
    "Agent",
    "check_name",
    "count",
    "create",
    "delete",
    "enter",
    "find",
    "hold",
    "leave",
    "list_agents",
    "rename",
    "scoped",
]

log = get_logger(__name__)

_NAME = re.compile(r"[a-z0-9_][a-z0-9_.-]{0,62}")  # fullmatch: "$" matched before a final "\n"
AGENT_OPTION = "philont_agent_id"
"""Execution option (on a unit of work's Connection) and ``Session.info`` key: the agent id."""
_CONNECTION = "philont_agent_connection"
_SCOPED = frozenset(metadata.tables)


@dataclass(frozen=True)
class Agent:
    """One row of the registry."""

    id: int
    name: str
    created_at_ms: int


def check_name(name: object, argument: str = "agent") -> str:
    """An agent's name: 1-63 characters of ``a-z 0-9 _ . -``, not starting with ``.``/``-``;
    else the refusal of the argument ``argument`` (named, as every argument's refusal)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInputError.of(
            argument,
            f"{name!r} is no agent name: 1-63 characters of a-z, 0-9, _, . and - "
            "(not starting with . or -)",
        )
    return name


# --- the transaction's agent ------------------------------------------------------------------


def set_local(
    conn: Connection, agent_id: int, *, name: str | None = None, lock: bool = True
) -> bool:
    """Name ``agent_id`` the agent of ``conn``'s current transaction (``SET LOCAL``), on the
    DB-API connection (psycopg's, or the async driver's adapter, which awaits for us). With
    ``name``, only while the registry still gives the agent that name (the same statement):
    False, nothing set, when it does not.

    With ``lock``, the same statement takes the agent's lock, shared
    (:data:`~philont.db.pg_layout.AGENT_LOCK`), before anything else of the agent: an import
    and an agent's delete take it alone first, and a unit of work entering the agent then waits
    for them holding nothing of it. (It waited only for its first id, after its foreign keys
    had locked the agent's registry row, KEY SHARE, which the import and the delete lock
    next: a deadlock.) The lock is tried; only a unit of work that has to wait runs more
    statements: it waits, then looks the name up again (the first statement's snapshot is
    older than the delete it waited for)."""
    dbapi = conn.connection.dbapi_connection
    assert dbapi is not None, "a connection inside a transaction is checked out"
    mine = int(agent_id)
    # the server process too, for free (philont.db.nesting: a thread's units waiting on each other)
    sql = "SELECT set_config(%s, %s, true), pg_postmaster_start_time(), pg_backend_pid()"
    params: list[object] = [AGENT_SETTING, str(mine)]
    if lock:
        sql += f", {agent_lock('%s', shared=True, wait=False)}"
        params.append(mine)
    registry = f" FROM {AGENTS_TABLE} WHERE id = %s AND name = %s"
    if name is not None:
        sql += registry
        params += [mine, name]
    cursor = dbapi.cursor()
    try:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
        if not rows:
            return False
        conn.info[BACKEND] = (rows[0][1], rows[0][2])
        if not lock or rows[0][3]:
            return True
        # an import or a delete of the agent holds it alone: wait for its end
        cursor.execute(f"SELECT {agent_lock('%s', shared=True)}", [mine])
        cursor.fetchall()
        if name is None:
            return True
        cursor.execute(f"SELECT 1{registry}", [mine, name])
        if cursor.fetchall():
            return True
        cursor.execute("SELECT set_config(%s, '', true)", [AGENT_SETTING])  # gone meanwhile
        cursor.fetchall()
        return False
    finally:
        cursor.close()


def enter(session: Session, agent_id: int, name: str | None = None) -> bool:
    """Make ``session``'s current transaction one agent's (both guards, see the module). With
    ``name``, only while ``agent_id`` is still the agent of that name (an id a Store cached
    outlives a rename or delete by another process): False, nothing changed, when it is not."""
    conn = session.connection()
    scope_engine(conn.engine)
    if not set_local(conn, agent_id, name=name):
        return False
    conn.execution_options(**{AGENT_OPTION: agent_id})
    session.info[AGENT_OPTION] = agent_id
    session.info[_CONNECTION] = conn
    return True


def served(session: Session) -> int | None:
    """The agent the connection of ``session``'s transaction serves now: that of an open unit
    of work a unit joining it is joined inside (None: none)."""
    agent = session.connection().get_execution_options().get(AGENT_OPTION)
    return None if agent is None else int(agent)


def leave(session: Session, outer: int | None = None) -> Connection | None:
    """Forget the agent on ``session`` and its connection (a host's Session or Connection
    lives on; its transaction keeps the ``SET LOCAL`` until it ends), or note ``outer`` again:
    the agent of the open unit of work this one was joined inside (:func:`served`).
    Forgotten, that unit's later statements were no agent's (as the owner its reads saw every
    agent's rows). Returns the connection whose transaction must be told ``outer`` again once
    this unit's SAVEPOINT is released (:func:`serve_again`), as the release keeps the inner
    agent's ``SET LOCAL``; None when nothing is to be told (rolled back to, the SAVEPOINT gives
    the outer agent's back itself)."""
    inner = session.info.pop(AGENT_OPTION, None)
    conn = session.info.pop(_CONNECTION, None)
    if conn is None or conn.closed:
        return None
    conn.execution_options(**{AGENT_OPTION: outer})
    if outer is None:
        return None
    session.info[AGENT_OPTION], session.info[_CONNECTION] = outer, conn
    return conn if outer != inner else None


def serve_again(conn: Connection, outer: int) -> None:
    """``SET LOCAL`` ``outer`` on ``conn``'s transaction after an inner unit's release
    (:func:`leave`); nothing when the host ended the transaction inside the block (set there,
    it would begin one SQLAlchemy does not know of, serving ``outer`` without its lock)."""
    if conn.closed or not conn.in_transaction():
        return
    set_local(conn, outer, lock=False)  # its lock is held since the outer unit entered
    conn.info.pop(BACKEND, None)  # not a unit of work's entry (philont.db.nesting)


def _agent_criterion(entity: Any, agent: Any) -> ColumnElement[bool]:
    """``agent_id = :agent`` of the table (or alias of one) an ORM entity selects from. An
    entity aliased to a subquery or CTE (``aliased(Note, select(Note).subquery())``) gets
    nothing: the ORM SELECT inside it has the criterion already, and the subquery has no
    ``agent_id`` column of its own (naming one crashed SQLAlchemy with an AttributeError)."""
    from sqlalchemy import inspect

    with suppress(AttributeError):  # with_loader_criteria's lambda receives it wrapped
        entity = object.__getattribute__(entity, "subject")
    found = inspect(entity, raiseerr=False)
    if found is None:  # the base class itself, when SQLAlchemy first analyses the lambda
        column: ColumnClause[int] = ColumnClause(AGENT_COLUMN, BigInteger())
    else:
        selectable = found.selectable
        if not isinstance(getattr(selectable, "element", selectable), Table):
            return true()
        column = ColumnClause(AGENT_COLUMN, BigInteger(), _selectable=selectable)
    condition: ColumnElement[bool] = column == agent
    return condition


def _inner_side(clause: Any) -> Iterator[Any]:
    """The FROM elements of ``clause`` whose rows every result row has (not an outer join's
    optional side)."""
    if isinstance(clause, Join):
        yield from _inner_side(clause.left)
        if not clause.isouter:
            yield from _inner_side(clause.right)
    else:
        yield clause


def _optional_side(clause: Any) -> Iterator[Any]:
    """What of ``clause`` :func:`_inner_side` leaves out: the optional side of outer joins."""
    if isinstance(clause, Join):
        yield from _optional_side(clause.left)
        yield from [clause.right] if clause.isouter else _optional_side(clause.right)


def _from_criteria(statement: Select[Any], agent: int) -> Select[Any]:
    """``agent_id = :agent`` for every scoped table (or alias of one) the SELECT reads from,
    inner joins included. Loader criteria reach ORM entities only: a SELECT of plain table
    columns (``select(*table.c)``, ``select(func.count()).select_from(table)``) needs this, and
    an ORM one gets it too (the same condition twice costs nothing). The outer side of an outer
    join is left to the loader criteria (they go in its ON clause; a WHERE would drop the
    unmatched rows). The agent is a bound value: the cached compiled statement serves every
    agent."""
    conditions = []
    for element in _scoped_froms(statement):
        column = ColumnClause(AGENT_COLUMN, BigInteger(), _selectable=element)
        conditions.append(column == bindparam(None, agent, type_=BigInteger()))
    return statement.where(*conditions) if conditions else statement


def _core_table(element: Any) -> str | None:
    """The name of the scoped table ``element`` is (or is an alias of) when it is read as a
    Core Table: not through an ORM entity, which the loader criteria keep to the agent."""
    table = _table_of(element)
    if table is None or table.name not in _SCOPED:
        return None
    return None if "parententity" in element._annotations else str(table.name)


def _core_tables(element: Any, seen: set[int] | None = None) -> Iterator[str]:
    """The scoped tables ``element`` reads as Core Tables (:func:`_core_table`), through its
    FROM elements and its columns: a column of an ORM entity is the entity's (its table is
    not looked at), a Core column its table's, a column of a subquery or CTE that one's."""
    seen = set() if seen is None else seen
    if id(element) in seen:
        return
    seen.add(id(element))
    if isinstance(element, ColumnClause):
        if element.table is None:
            return
        if "parententity" in element._annotations and _table_of(element.table) is not None:
            return  # an ORM entity's column
        element = element.table
    if _table_of(element) is not None:
        if (name := _core_table(element)) is not None:
            yield name
        return
    # a SELECT names the tables of its columns among its children too: those of an ORM
    # entity's columns are the entity's
    orm = _orm_tables(element) if isinstance(element, Select) else set()
    for child in element.get_children():
        if child not in orm:
            yield from _core_tables(child, seen)


def _orm_tables(select_: Select[Any]) -> set[Any]:
    """The tables (or aliases of them: ``aliased(Note)``) of the ORM entities ``select_``
    itself names (not a SELECT nested in it): the loader criteria keep those to the agent."""
    found, stack = set(), list(select_.get_children())
    while stack:
        element = stack.pop()
        entity = element._annotations.get("parententity")
        if entity is not None and _table_of(entity.selectable) is not None:
            found.add(entity.selectable)
        if not isinstance(element, SelectBase | ColumnClause):
            stack.extend(element.get_children())
    return found


def _table_of(element: Any) -> Table | None:
    """The Table ``element`` is, or is an alias of."""
    table = element.element if isinstance(element, Alias | Lateral | TableSample) else element
    return table if isinstance(table, Table) else None


def _refusal(statement: Any, froms: Sequence[Any]) -> str | None:
    """Why ``statement`` cannot be kept to the agent (None: it can). Only the tables of a
    SELECT's own FROM (``froms``, :func:`_from_criteria`) and the tables UPDATE and DELETE
    name outside nested SELECTs (:func:`_dml_criteria`) get the agent's condition from
    philont, every ORM entity from the loader criteria; a Core Table of ours anywhere else
    (in a subquery, CTE, union member, EXISTS, scalar subquery, an INSERT's SELECT, or on the
    optional side of an outer join, whose condition would have to go in the ON clause) would
    read or write every agent's rows. The check reads the statement; it changes nothing in it."""
    nested: list[Any] = [
        e for e in visitors.iterate(statement) if isinstance(e, SelectBase) and e is not statement
    ]
    where = "inside a nested SELECT (subquery, CTE, union, EXISTS, scalar subquery)"
    found = [name for select_ in nested for name in _core_tables(select_)]
    if isinstance(statement, Insert | Update | Delete):  # no loader criteria: ORM ones too
        where = "inside a nested SELECT of an INSERT, UPDATE or DELETE"
        found = [
            table.name
            for select_ in nested
            for e in visitors.iterate(select_)
            if (table := _table_of(e)) is not None and table.name in _SCOPED
        ]
        if found:
            return (
                f"{found[0]!r} is read {where}, which philont cannot keep to the unit of "
                "work's agent on PostgreSQL: read the rows with a SELECT of the ORM entity "
                "first, then write the values"
            )
    if not found:
        where = "on the optional side of an outer join"
        found = [
            name for clause in froms for e in _optional_side(clause) for name in _core_tables(e)
        ]
    if not found:
        return None
    return (
        f"{found[0]!r} is read as a Core Table {where}, which philont cannot keep to the unit "
        f"of work's agent on PostgreSQL: select the ORM entity instead (select(Note), "
        f"aliased(Note), Note.content, not Note.__table__ or its columns)"
    )


_FROMS: dict[Any, tuple[tuple[Table, ...] | None, str | None]] = {}
FROMS_CACHE_SIZE = 5_000
"""Statement shapes whose scoped tables and refusal are remembered (:func:`_scoped_froms`,
:func:`_checked`); past this the cache starts afresh."""


def _remember(key: Any, froms: tuple[Table, ...] | None, refusal: str | None) -> None:
    if key is not None:
        if len(_FROMS) >= FROMS_CACHE_SIZE:
            _FROMS.clear()
        _FROMS[key.key] = (froms, refusal)


def _scoped_froms(statement: Select[Any]) -> list[Any]:
    """The scoped tables (or aliases of them) of the inner side of ``statement``'s FROM;
    :class:`~philont.errors.InvalidInputError` when the statement reads a table of ours
    elsewhere as a Core Table (:func:`_refusal`). ``get_final_froms()`` compiles the
    statement, an ORM one with its entities: about as long as the rest of a fact's ``get``
    together on PostgreSQL, on every SELECT. So the tables of a statement that reads no alias
    are kept per cache key (which names every Table object itself: a host's Table of the same
    name is another key); one with an alias, whose objects are new with each statement, is
    looked at every time. Whether it is refused is kept for both: a statement seen before
    pays nothing more."""
    key = statement._generate_cache_key()
    known = None if key is None else _FROMS.get(key.key)
    if known is not None and known[1] is not None:
        raise InvalidInputError(known[1])
    if known is not None and known[0] is not None:
        return list(known[0])
    clauses = statement.get_final_froms()
    found = [e for clause in clauses for e in _inner_side(clause) if _scoped(e)]
    refusal = known[1] if known is not None else _refusal(statement, clauses)
    plain = all(isinstance(element, Table) for element in found)
    if known is None:
        _remember(key, tuple(found) if plain else None, refusal)
    if refusal is not None:
        raise InvalidInputError(refusal)
    return found


def _scoped(element: Any) -> bool:
    """``element`` is a scoped table or an alias of one."""
    table = getattr(element, "element", element)  # an alias's table
    return isinstance(table, Table) and table.name in _SCOPED


def _checked(statement: Any) -> None:
    """:class:`~philont.errors.InvalidInputError` when ``statement`` (a union, an INSERT,
    UPDATE or DELETE) reads a table of ours in a nested SELECT as a Core Table
    (:func:`_refusal`), remembered per cache key."""
    key = statement._generate_cache_key()
    known = None if key is None else _FROMS.get(key.key)
    if known is None:
        known = (None, _refusal(statement, []))
        _remember(key, *known)
    if known[1] is not None:
        raise InvalidInputError(known[1])


def _orm_criteria(state: ORMExecuteState) -> None:
    agent = state.session.info.get(AGENT_OPTION)
    if agent is None or not state.is_select:
        return
    statement = state.statement.options(
        with_loader_criteria(
            Base,
            lambda cls: _agent_criterion(cls, agent),
            include_aliases=True,
            propagate_to_loaders=True,
        )
    )
    if isinstance(statement, Select):
        statement = _from_criteria(statement, agent)
    else:
        _checked(statement)  # a union: its SELECTs are nested
    state.statement = statement


event.listen(Session, "do_orm_execute", _orm_criteria)


def _dml_criteria(
    conn: Connection,
    statement: Any,
    multiparams: Any,
    params: Any,
    execution_options: Any,
) -> tuple[Any, Any, Any]:
    agent = conn.get_execution_options().get(AGENT_OPTION)
    if agent is not None and isinstance(statement, Insert | Update | Delete):
        _checked(statement)
    if agent is not None and isinstance(statement, Update | Delete):
        mine = bindparam("philont_agent", agent, type_=BigInteger())
        conditions = [
            ColumnClause(AGENT_COLUMN, BigInteger(), _selectable=element) == mine
            for element in _dml_froms(statement)
        ]
        if conditions:
            statement = statement.where(*conditions)
    return statement, multiparams, params


def _dml_froms(statement: Update | Delete) -> list[Any]:
    """The scoped tables (or aliases of them) an UPDATE or DELETE writes or reads: its target
    (a Table or an alias of one) and every other one its columns name (PostgreSQL's ``UPDATE
    ... FROM``, ``DELETE ... USING``). Its nested SELECTs are refused (:func:`_checked`)."""
    columns = [e.table for e in visitors.iterate(statement) if isinstance(e, ColumnClause)]
    found: dict[Any, None] = {}
    for source in [statement.table, *columns]:
        if source is not None and _scoped(source):
            found[source] = None
    return list(found)


def scope_engine(engine: Engine) -> None:
    """Install the UPDATE/DELETE agent filter on ``engine`` (once; host engines included)."""
    listen_once(engine, "before_execute", _dml_criteria, retval=True)


# --- the registry -----------------------------------------------------------------------------


def find(conn: Connection, name: str) -> Agent | None:
    row = conn.execute(
        text(f"SELECT id, name, created_at FROM {AGENTS_TABLE} WHERE name = :n"),
        {"n": check_name(name)},
    ).first()
    return None if row is None else Agent(int(row[0]), str(row[1]), int(row[2]))


def create(conn: Connection, name: str, *, now_ms: int | None = None) -> tuple[Agent, bool]:
    """The agent named ``name``, created (a registry row and the rows every memory holds: the
    'global' session, the root pursuit, ``memory_meta``) when missing; True when created. Runs
    in ``conn``'s transaction and leaves it the new agent's."""
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    found = find(conn, name)
    if found is not None:
        return found, False
    row = conn.execute(
        text(
            f"INSERT INTO {AGENTS_TABLE} (name, created_at) VALUES (:n, :t)"
            " ON CONFLICT (name) DO NOTHING RETURNING id"
        ),
        {"n": check_name(name), "t": now_ms},
    ).first()
    if row is None:
        found = find(conn, name)
        if found is None:  # pragma: no cover - deleted between the two statements
            raise ConflictError(f"agent {name!r} was deleted while being created")
        return found, False
    agent = Agent(int(row[0]), name, now_ms)
    set_local(conn, agent.id)
    from philont import settings

    conn.execute(insert(Meta).values(key="schema_version", value=str(settings.SCHEMA_VERSION)))
    for model, values in bootstrap_rows():
        conn.execute(insert(model).values(**values))
    log.info("agents.created", agent=name, id=agent.id)
    return agent, True


def list_agents(conn: Connection, *, prefix: str = "", limit: int | None = None) -> list[Agent]:
    """Agents by name (``prefix`` matched literally), through the registry's unique index."""
    sql = f"SELECT id, name, created_at FROM {AGENTS_TABLE}"
    params: dict[str, Any] = {}
    if prefix:
        sql += " WHERE name >= :lo AND name < :hi"
        params = {"lo": prefix, "hi": prefix + "\U0010ffff"}
    sql += ' ORDER BY name COLLATE "C"'
    if limit is not None:
        sql += " LIMIT :limit"
        params["limit"] = int(limit)
    return [Agent(int(r[0]), str(r[1]), int(r[2])) for r in conn.execute(text(sql), params)]


def count(conn: Connection) -> int:
    return int(conn.execute(text(f"SELECT count(*) FROM {AGENTS_TABLE}")).scalar_one())


def rename(conn: Connection, old: str, new: str) -> Agent:
    """Give an agent a new name (its rows keep their ``agent_id``: one UPDATE), holding its
    lock alone (:func:`hold`): the rename waits for the agent's units of work, import and
    delete under way, and they for it, so none of them acts on the agent under a name it no
    longer has (a delete of ``old`` that waited for the agent's units of work deleted the
    agent just renamed ``new``)."""
    check_name(old, "old")
    check_name(new, "new")
    agent, _created = hold(conn, old)
    if find(conn, new) is not None:
        raise ConflictError(f"an agent named {new!r} exists already")
    conn.execute(
        text(f"UPDATE {AGENTS_TABLE} SET name = :new WHERE id = :id"), {"new": new, "id": agent.id}
    )
    return Agent(agent.id, new, agent.created_at_ms)


def hold(conn: Connection, name: str, *, make: bool = False) -> tuple[Agent, bool]:
    """The agent named ``name``, its lock held alone until ``conn``'s transaction ends (what
    changes the agent's registry row or all of its rows: an import, a rename, a delete), and
    whether this call created it (``make``: created when missing, else
    :class:`~philont.errors.AgentNotFoundError`). The lock waits for the agent's units of work
    under way and for another import, rename or delete of it; the name is looked up again
    after the wait, and when a rename or delete we waited for changed what it names, the lock
    is let go (a SAVEPOINT rolled back) and the look-up starts again."""
    while True:
        agent, created = create(conn, name) if make else (require(conn, name), False)
        with conn.begin_nested() as attempt:
            conn.execute(text(f"SELECT {agent_lock(':id')}"), {"id": agent.id})
            if find(conn, name) == agent:
                return agent, created
            attempt.rollback()


def require(conn: Connection, name: str) -> Agent:
    agent = find(conn, name)
    if agent is None:
        raise AgentNotFoundError(name)
    return agent


def delete(conn: Connection, name: str) -> dict[str, int]:
    """Delete every row of one agent, then its registry row; returns rows deleted per table.
    The registry row goes last and every table references it, so it cannot go while a row of
    the agent is left anywhere. The agent's lock is taken alone first (:func:`hold`): it
    waits for the units of work of the agent under way (and its import or rename), and those
    that come meanwhile wait for the delete as they enter the agent (:func:`set_local`),
    holding nothing of it."""
    agent, _created = hold(conn, name)
    set_local(conn, agent.id, lock=False)  # held alone already
    deleted: dict[str, int] = {}
    for table in [*reversed(metadata.sorted_tables)]:
        result = conn.execute(
            text(f'DELETE FROM "{table.name}" WHERE {AGENT_COLUMN} = :id'), {"id": agent.id}
        )
        if result.rowcount:
            deleted[table.name] = int(result.rowcount)
    conn.execute(text(f"DELETE FROM {COUNTERS_TABLE} WHERE {AGENT_COLUMN} = :id"), {"id": agent.id})
    conn.execute(text(f"DELETE FROM {AGENTS_TABLE} WHERE id = :id"), {"id": agent.id})
    log.info("agents.deleted", agent=name, rows=sum(deleted.values()))
    return deleted


@contextmanager
def scoped(conn: Connection, agent_id: int) -> Iterator[Connection]:
    """``conn`` inside a transaction that is ``agent_id``'s (for maintenance code)."""
    with conn.begin():
        set_local(conn, agent_id)
        yield conn
