"""The backend object: what really differs between SQLite and PostgreSQL, chosen once per Store.

Services never ask for the dialect's name; they ask the backend: how to run a lean read on the
DB-API connection (placeholders, id lists), which search scorer to use, whether text may hold
U+0000. Everything else (models, services, rules, tools) is the same code on both.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from itertools import repeat
from typing import TYPE_CHECKING, Any, Final, NamedTuple, Protocol, TypeVar

from sqlalchemy import ColumnElement, Connection, Engine, LargeBinary, and_, cast, func, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import QueryableAttribute, Session

from philont.db import stored_values
from philont.domain.query import FOLDED_INTO_ASCII, fold_case
from philont.errors import AgentRequiredError, InvalidInputError, NotFoundError, UnitOfWorkError
from philont.log import get_logger

if TYPE_CHECKING:
    from philont.db.vectors import VectorEngine
    from philont.services.search.scoring import Scorer

__all__ = ["LOCK_ORDER", "Backend", "PostgresBackend", "Raw", "SqliteBackend", "backend_for"]

R = TypeVar("R", bound=NamedTuple)

log = get_logger(__name__)


class _DbApi(Protocol):
    """A DB-API connection: sqlite3's, psycopg's, or an async driver's adapter."""

    def cursor(self) -> Any: ...


class Raw:
    """The DB-API connection under a unit of work's transaction, for lean reads.

    Statements are written once with this backend's placeholder (:attr:`mark`), id lists
    through :meth:`in_ids` and the agent through :meth:`where` / :meth:`mine` /
    :meth:`same_agent` / :meth:`key` (PostgreSQL keeps many agents in one set of tables; an
    SQLite file is one agent, so these add nothing there); rows come back as tuples
    (:meth:`rows`) or as the NamedTuple type a query module declares next to its SQL
    (:meth:`named`). A ``careful`` Raw (a unit of work reading again after a stored value of
    the wrong kind broke a rule: :func:`philont.db.stored_values.careful`) reads every value
    :meth:`named` returns as its column's kind.
    """

    __slots__ = ("_conn", "agent", "careful", "mark", "postgres")

    def __init__(
        self, conn: _DbApi, *, postgres: bool, agent: int | None = None, careful: bool = False
    ) -> None:
        self._conn = conn
        self.postgres = postgres
        self.careful = careful
        self.mark = "%s" if postgres else "?"
        if postgres and not isinstance(agent, int):
            raise UnitOfWorkError("a PostgreSQL unit of work serves one agent; none is set")
        self.agent = agent

    def mine(self, alias: str = "") -> str:
        """The condition keeping ``alias`` (a table of ours) to this unit of work's agent
        (``TRUE`` on SQLite). The id is an integer from the registry, written as a literal, so
        the planner prunes partitions with it whatever the statement, and the GIN search
        indexes look up the agent's part of a word's posting list only."""
        if not self.postgres:
            return "TRUE"
        # ``::bigint``: the column's own type. With an int4 literal, ``bigint = integer`` is a
        # cross-type operator that btree_gin's opclass lacks, and the GIN search indexes could
        # not use their agent_id key (they would read every agent's posting list instead).
        return f"{alias + '.' if alias else ''}agent_id = {int(self.agent or 0)}::bigint"

    def where(self, *conditions: str, alias: str = "") -> str:
        """`` WHERE`` with this agent's condition (PostgreSQL) and ``conditions``, or ``""``."""
        parts = ([self.mine(alias)] if self.postgres else []) + [c for c in conditions if c]
        return f" WHERE {' AND '.join(parts)}" if parts else ""

    def real(self, column: str) -> str:
        """A REAL ``column`` to select as philont's types read it: a host's -0.0 as 0.0 on
        PostgreSQL (``column + 0``; an SQLite REAL keeps no sign of zero, and a value of
        another kind must reach :mod:`philont.db.stored_values` as stored)."""
        return f"{column} + 0" if self.postgres else column

    def same_agent(self, left: str, right: str) -> str:
        """A join condition's agent part: `` AND left.agent_id = right.agent_id`` (PostgreSQL:
        every key leads with the agent, and a distributed database co-locates by it)."""
        return f" AND {left}.agent_id = {right}.agent_id" if self.postgres else ""

    def key(self, *columns: str) -> str:
        """A key's column list, the agent first on PostgreSQL (an ``ON CONFLICT`` target must
        name a unique key, and every key of the shared layout leads with ``agent_id``)."""
        return ", ".join([*(["agent_id"] if self.postgres else []), *columns])

    @property
    def connection(self) -> Any:
        """The DB-API connection itself (to load an SQLite extension into it)."""
        return self._conn

    def _execute(self, sql: str, params: Sequence[Any], *, fetch: bool = False) -> Any:
        """Run one statement and return its rows (``fetch``) or, on SQLite, its ``lastrowid``.
        The cursor is closed in every case: a cursor left open on a failed or unread statement
        keeps that statement active, and when the garbage collector frees it later (an exception's
        traceback holds it in a cycle) it takes its connection's mutex from whatever thread
        collects. That thread may hold the write lock while the connection is in another
        thread's busy wait for that lock: both wait the whole busy timeout."""
        cursor = self._conn.cursor()
        try:
            cursor.execute(sql, tuple(params))
            if fetch:
                return cursor.fetchall()
            return None if self.postgres else cursor.lastrowid
        finally:
            cursor.close()

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Every row of one read statement (bound parameters only)."""
        rows: list[tuple[Any, ...]] = self._execute(sql, params, fetch=True)
        return rows

    def named(self, row_type: type[R], sql: str, params: Sequence[Any] = ()) -> list[R]:
        """Every row of one read statement as ``row_type`` (its fields are the columns, in the
        order the statement selects them; a statement selecting another number of columns is a
        programming error, raised as TypeError as ``_make`` would)."""
        rows = self._execute(sql, params, fetch=True)
        if rows and len(rows[0]) != len(row_type._fields):
            raise TypeError(
                f"{row_type.__name__} has {len(row_type._fields)} fields; the statement selects"
                f" {len(rows[0])} columns"
            )
        # tuple.__new__(row_type, row) is what row_type._make does per row; mapped in C it
        # costs about 60% of a comprehension calling _make (hot paths read ~500 rows a turn).
        named = list(map(tuple.__new__, repeat(row_type, len(rows)), rows))
        return stored_values.clean_named(named) if self.careful else named

    def run(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement that returns no rows (a write, a ``SET``)."""
        self._execute(sql, params)

    def many(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one write statement once per parameter row (``executemany``)."""
        if rows:
            cursor = self._conn.cursor()
            try:
                cursor.executemany(sql, [tuple(r) for r in rows])
            finally:
                cursor.close()

    def insert(self, sql: str, params: Sequence[Any]) -> int:
        """Run one single-row INSERT into a table with an integer id and return the id. A
        failure is raised as SQLAlchemy would raise it (``IntegrityError``, ...), and on
        PostgreSQL it is contained in a savepoint, so the transaction goes on (as on SQLite)."""
        try:
            if not self.postgres:
                return int(self._execute(sql, params))
            self._execute("SAVEPOINT philont_insert", ())
            try:
                row = self._execute(f"{sql} RETURNING id", params, fetch=True)
            except Exception:
                self._execute("ROLLBACK TO SAVEPOINT philont_insert", ())
                raise
            self._execute("RELEASE SAVEPOINT philont_insert", ())
            return int(row[0][0])
        except Exception as exc:
            base = _driver_error_base(exc)
            if base is None:
                raise
            raise DBAPIError.instance(sql, params, exc, base) from exc

    def in_ids(self, column: str, ids: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``ids``: the SQL condition and its parameters (one array on
        PostgreSQL, so that a list's length does not make every statement text new)."""
        if self.postgres:
            return f"{column} = ANY({self.mark})", [list(ids)]
        return f"{column} IN ({', '.join('?' * len(ids))})", list(ids)


def _driver_error_base(exc: Exception) -> type[Exception] | None:
    """The DB-API ``Error`` class ``exc`` belongs to (sqlite3's or psycopg's), if any."""
    if isinstance(exc, sqlite3.Error):
        return sqlite3.Error
    try:
        import psycopg
    except ModuleNotFoundError:  # pragma: no cover - the postgres extra is not installed
        return None
    return psycopg.Error if isinstance(exc, psycopg.Error) else None


FOLD_FUNCTION = "philont_fold_case"
"""The SQL function (SQLite; registered on every connection of philont's engines) that
lowercases stored text by :func:`~philont.domain.query.fold_case`."""


def fold_stored(value: bytes | str | None) -> str | None:
    """:data:`FOLD_FUNCTION` of ``CAST(text AS BLOB)``: the text folded (read as bytes, so text
    that is not valid UTF-8 is folded too, each stray byte read as U+FFFD; the result is text,
    as SQLite's LIKE matches no BLOB)."""
    if value is None:
        return None
    if isinstance(value, str):
        return fold_case(value)
    return fold_case(bytes(value).decode("utf-8", "replace"))


class Backend:
    """What differs between the databases. One instance per Store, shared by its threads."""

    name: str = ""
    keeps_nul = True
    """Whether text may hold U+0000 (SQLite yes; PostgreSQL text cannot)."""

    def explain(self, exc: BaseException) -> None:
        """Add to ``exc``, raised on this database, what it means here: on SQLite a
        :class:`~philont.errors.NotFoundError` whose key holds U+FFFD says that key may have
        been read from bytes that are not UTF-8 (:meth:`~philont.errors.NotFoundError.from_sqlite`).
        Anything else is left as it is. Called by whoever raised it (a service's method, a
        tool's handler, a unit of work the error leaves), never from a global state; the
        first call decides (:attr:`~philont.errors.NotFoundError.explained`): the error
        leaving an outer unit of work on another database is not that database's."""
        if isinstance(exc, NotFoundError) and not exc.explained:
            exc.explained = True
            self._explain(exc)

    def _explain(self, exc: NotFoundError) -> None:
        """What a not-found error raised on this database means here (:meth:`explain`)."""

    def raw(self, session: Session) -> Raw:
        """The DB-API connection under ``session``'s transaction, pending ORM changes flushed
        first (as an ORM query would, with autoflush on). Under an async engine this is the
        driver's adapter, which awaits each statement on the event loop for us."""
        if session.autoflush:
            session.flush()
        dbapi = session.connection().connection.dbapi_connection
        assert dbapi is not None, "a connection inside a transaction is checked out"
        return Raw(
            dbapi,
            postgres=not self.keeps_nul,
            agent=self.agent_of(session),
            careful=stored_values.CAREFUL in session.info,
        )

    def agent_of(self, session: Session) -> int | None:
        """The agent ``session``'s unit of work serves (None: the database is one agent)."""
        return None

    def enter(self, session: Session, agent: int | None, name: str | None = None) -> bool:
        """Begin serving ``agent`` in ``session``'s transaction (nothing on SQLite). With
        ``name``, only while the agent still has that name: False, nothing changed, if not."""
        return True

    def served(self, session: Session) -> int | None:
        """The agent the connection of ``session``'s transaction serves now, an open unit of
        work's (None: none; always on SQLite)."""
        return None

    def leave(self, session: Session, outer: int | None = None) -> Connection | None:
        """Stop serving the agent on ``session``, or note ``outer`` again, the agent of the
        unit of work this one was joined inside; the connection to tell it once the unit's
        SAVEPOINT is released (:meth:`serve_again`), if any (nothing on SQLite)."""
        return None

    def serve_again(self, conn: Connection, outer: int) -> None:
        """Serve ``outer`` again on ``conn``'s transaction (nothing on SQLite)."""

    def serialize(self, session: Session, *key: str) -> None:
        """Make this transaction the only writer of ``key`` (e.g. a fact's table, namespace
        and key) until it ends, before it reads what it is about to replace. Nothing on
        SQLite, where a writing unit of work holds the database's one write lock; on
        PostgreSQL a transaction-scoped advisory lock of the agent and ``key``: two read
        committed transactions read "no current version" (or the same one) and both wrote
        a current version.

        The order of these locks in one transaction (:data:`LOCK_ORDER`). Two transactions
        that take two locks in opposite orders deadlock: PostgreSQL ends one of them (SQLSTATE
        40P01, :class:`~philont.errors.TransactionConflictError`). So philont takes them in
        one order:

        0. the agent's lock (:data:`~philont.db.pg_layout.AGENT_LOCK`), shared, as the unit
           of work enters its agent, in the statement that sets it
           (:func:`~philont.db.agents.set_local`); an import, a rename and an agent's
           delete take it alone, before anything else of the agent. So they wait for the
           agent's units of work under way (readers too), and the units that come meanwhile
           wait for them before touching anything of the agent;
        1. the agent's learning lock, ``("learning",)`` (:mod:`philont.learning.lock`), the
           first of these: a :class:`~philont.learning.Learner` takes it as it is made, and
           every writer of the loop (``apply``, extraction, skills, summaries, verdicts,
           condensing) before anything else, so the fact, note and session locks of the loop
           come after it;
        2. key locks, ``("fact", namespace, key)``, ``("note", id)``, ``("session", id)``,
           ``("schedule", name)`` (a replace), ``("calendar", external_ref)``, as
           the writes come (one in a tool call; several only under the learning lock, so
           two units of philont's own never hold two key locks each), and always before
           the rows of their key are written (a fact's ``get``, which refreshes its access
           time, and ``forget`` too; ``sweep`` skips rows another transaction holds);
        3. then whatever the statements lock: rows, the per-agent id counters.

        A transaction that takes the learning lock after a key lock (a host's that stores a
        fact and then makes a Learner) is logged (``db.lock_order``, WARNING): it may deadlock
        with a consolidator. Whichever transaction PostgreSQL ends is rolled back; philont's
        own units of work run again (:func:`philont.db.retry.run_with_retry`), a host's
        ``store.begin()`` block gets the typed error."""

    def folded_like(
        self, column: ColumnElement[str] | QueryableAttribute[str], pattern: str
    ) -> ColumnElement[bool]:
        """``column`` LIKE ``pattern`` (escaped with ``\\``, already folded by
        :func:`~philont.domain.query.fold_case`), the column's text folded the same way: the one
        case rule on both backends. SQLite's own LIKE folds ASCII letters only; the fold keeps
        every character one character and makes ASCII of no other letter than those of
        FOLDED_INTO_ASCII. So SQLite's LIKE is the rule for a pattern of other ASCII
        characters; any other pattern is first looked for with those letters and every
        non-ASCII one as ``_`` (any one character: a necessary condition, fast), and only the
        rows that pass are folded through :data:`FOLD_FUNCTION` (a Python call each)."""
        loose = "".join("_" if not c.isascii() or c in FOLDED_INTO_ASCII else c for c in pattern)
        plain = column.like(loose, escape="\\")
        if loose == pattern:
            return plain
        folded: ColumnElement[str] = getattr(func, FOLD_FUNCTION)(cast(column, LargeBinary))
        return and_(plain, folded.like(pattern, escape="\\"))

    def scorer(self) -> Scorer:
        raise NotImplementedError

    def vectors(self) -> VectorEngine:
        """The vector search this database offers beyond the portable Python path (one per
        Store: sqlite-vec on SQLite, pgvector on PostgreSQL, each when available)."""
        raise NotImplementedError

    def storable_text(self, value: str, name: str) -> str:
        """``value`` as this database can store it verbatim, or InvalidInputError naming the
        argument ``name``."""
        return refuse_nul(value, name, keeps_nul=self.keeps_nul)

    def escape_nul(self, value: str) -> str:
        """``value`` with every U+0000 written as ``\\x00`` where the database cannot hold it
        (for records that must be written whatever they were given, like the action log)."""
        return value if self.keeps_nul else value.replace("\x00", "\\x00")


NUL_REFUSED = "text with a NUL character (U+0000) cannot be stored in PostgreSQL"


def refuse_nul(value: str, name: str, *, keeps_nul: bool) -> str:
    """``value``, or InvalidInputError naming the argument ``name`` when it holds a NUL
    character a database that does not keep one (PostgreSQL) would be given."""
    if not keeps_nul and "\x00" in value:
        raise InvalidInputError(f"{name}: {NUL_REFUSED}", argument=name)
    return value


class SqliteBackend(Backend):
    name = "sqlite"

    def _explain(self, exc: NotFoundError) -> None:
        exc.from_sqlite()

    def scorer(self) -> Scorer:
        from philont.services.search.sqlite import SqliteScorer

        return SqliteScorer()

    def vectors(self) -> VectorEngine:
        from philont.db.vectors import SqliteVectors

        return SqliteVectors()


class PostgresBackend(Backend):
    """Many agents in one set of tables: every unit of work serves one (``philont.db.agents``)."""

    name = "postgresql"
    keeps_nul = False

    def folded_like(
        self, column: ColumnElement[str] | QueryableAttribute[str], pattern: str
    ) -> ColumnElement[bool]:
        # ILIKE lowercases both sides by the database's LC_CTYPE: under a UTF-8 locale of the C
        # library (C.UTF-8, en_US.UTF-8...) that is towlower, Unicode's simple mapping, the
        # rule of fold_case (and the trigram index still serves it).
        return column.ilike(pattern, escape="\\")

    def agent_of(self, session: Session) -> int | None:
        from philont.db.agents import AGENT_OPTION

        agent = session.info.get(AGENT_OPTION)
        return None if agent is None else int(agent)

    def enter(self, session: Session, agent: int | None, name: str | None = None) -> bool:
        from philont.db import agents

        if agent is None:
            raise AgentRequiredError(
                "a PostgreSQL database holds many agents: name one (Store.open(url, "
                "agent=...), store.begin(agent=...), --agent, $PHILONT_AGENT)"
            )
        return agents.enter(session, agent, name)

    def served(self, session: Session) -> int | None:
        from philont.db import agents

        return agents.served(session)

    def leave(self, session: Session, outer: int | None = None) -> Connection | None:
        from philont.db import agents

        return agents.leave(session, outer)

    def serve_again(self, conn: Connection, outer: int) -> None:
        from philont.db import agents

        agents.serve_again(conn, outer)

    def serialize(self, session: Session, *key: str) -> None:
        _check_order(session, key)
        lock = "\x1f".join((str(self.agent_of(session)), *key))
        session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:k, 0))"), {"k": lock})

    def scorer(self) -> Scorer:
        from philont.services.search.postgres import PgScorer

        return PgScorer()

    def vectors(self) -> VectorEngine:
        from philont.db.vectors_pg import PgVectors

        return PgVectors()


LOCK_ORDER: Final = {
    "learning": 0,
    "fact": 1,
    "note": 1,
    "session": 1,
    "schedule": 1,
    "calendar": 1,
}
"""Rank of each kind of :meth:`Backend.serialize` lock: a transaction takes a lower rank
before a higher one (the order and why: :meth:`Backend.serialize`)."""
_RANKS_TAKEN = "philont.lock_ranks"


def _check_order(session: Session, key: tuple[str, ...]) -> None:
    """Log a lock taken after one of a higher rank in the same transaction (the ranks taken
    are kept in ``session.info`` with the transaction they belong to). Taking a lock again
    is no wait, and no disorder."""
    rank = LOCK_ORDER.get(key[0], 1) if key else 1
    transaction = session.get_transaction()
    seen = session.info.get(_RANKS_TAKEN)
    taken: set[int] = seen[1] if seen is not None and seen[0] is transaction else set()
    if rank not in taken and any(r > rank for r in taken):
        log.warning(
            "db.lock_order",
            lock=key[0],
            detail="the learning lock after a key's lock (a fact's, note's, session's, schedule's"
            " or calendar event's) in one transaction:"
            " it may deadlock with a consolidator (make the Learner first)",
        )
    session.info[_RANKS_TAKEN] = (transaction, taken | {rank})


_SQLITE = SqliteBackend()
_POSTGRES = PostgresBackend()


def backend_for(target: Engine | URL | Session | sqlite3.Connection) -> Backend:
    """The backend of an engine, URL or Session (SQLite unless it is PostgreSQL)."""
    if isinstance(target, Session):
        target = target.get_bind().engine
    if isinstance(target, Engine):
        target = target.url
    if isinstance(target, URL) and target.get_backend_name() == "postgresql":
        return _POSTGRES
    return _SQLITE
