"""The Store: one memory database per process — engine, backend and one schema check, built once.

``Store.open(path_or_url)`` (or ``Store.from_engine(engine)``) is the composition root: it
creates or upgrades the database if asked, checks it once, and then hands out units of work
(:class:`~philont.memory.Memory`) that carry every service. It is thread-safe: each unit of work
has its own Session and connection from the engine's pool. :func:`shared` resolves a path or URL
to a process-wide Store, for one-off helpers (``Memory.open(path)``, ``tools.call(db=path)``).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import UnboundExecutionError
from sqlalchemy.orm import Session, scoped_session

from philont import settings
from philont.arguments import check_of, checked
from philont.clock import Clock, utc_now
from philont.db import fork
from philont.db.agents import check_name
from philont.db.backend import Backend, backend_for
from philont.db.engine import (
    BEGIN_OPTION,
    Target,
    check_file,
    create_engine,
    database_name,
    guard_pg,
    is_postgres,
    require_file,
    require_sqlite_hooks,
    resolve_url,
    sqlite_engine,
    sqlite_path,
    sqlite_read_only_engine,
)
from philont.db.retry import DEFAULT_ATTEMPTS, run_unit
from philont.embed.base import Embedder
from philont.errors import (
    DatabaseGoneError,
    InvalidDatabaseError,
    SchemaOutOfDateError,
    StoreClosedError,
)
from philont.log import alembic_at_debug, get_logger
from philont.memory import STORE_JOIN, Joined, Memory
from philont.schemas.inputs import Attempts, BusyTimeoutMs

if TYPE_CHECKING:
    from philont.services.search.scoring import Scorer

__all__ = ["Store", "shared"]

T = TypeVar("T")

log = get_logger(__name__)


class Store:
    """One memory database: its engine, its backend and the result of one schema check.

    Build it once per database per process and keep it (a CLI run, an MCP server, a web app);
    ``with store.begin() as mem:`` is one unit of work whose attributes are every service
    (``mem.facts``, ``mem.search``, ``mem.prefix``, ...), committed when the block ends normally
    and rolled back on an exception. ``store.begin(write=False)`` begins a deferred transaction:
    on SQLite it takes the write lock only when it first writes, so a unit that only reads never
    waits for writers (WAL); what it does write is committed like any other. Use ``write=True``
    (the default) for a unit that writes. ``store.join(session)`` runs the services inside
    a transaction the caller owns. ``store.close()`` (or ``with Store.open(...) as store:``)
    releases the connections.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        agent: str | None = None,
        clock: Clock = utc_now,
        owns_engine: bool = False,
        embedder: Embedder | None = None,
        read_only: bool = False,
    ) -> None:
        """Prefer :meth:`open` / :meth:`from_engine`, which check the schema first."""
        self.engine = engine
        self.read_only = read_only
        """Opened with ``read_only=True``: every write is refused
        (:func:`~philont.db.engine.refused_write`), reads refresh no access times."""
        self.backend: Backend = backend_for(engine)
        if self.backend.name == "postgresql":
            guard_pg(engine)  # a host's engine too: U+0000 is refused by name, not by psycopg
        self.agent = None if agent is None else check_name(agent)  # a bad name: any backend
        """The agent units of work serve when ``begin()``/``join()`` name none (PostgreSQL;
        without it, ``$PHILONT_AGENT`` as it is when the unit of work begins)."""
        self._agent_ids: dict[str, int] = {}  # agent name -> registry id (philont.agents)
        self.clock = clock
        self.embedder = embedder
        """Semantic recall (issue #18): search fuses vectors of this model with keywords; None
        (the default) is keyword search exactly. See philont.embed."""
        self.scorer: Scorer = self.backend.scorer()
        """The backend's search scoring, one per Store (it caches statistics of this database)."""
        self.write_engine = (
            engine if read_only else engine.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
        )
        """The engine whose transactions take SQLite's write lock up front (built once: an
        option engine per unit of work costs more than an SQLite BEGIN)."""
        self._owns_engine = owns_engine
        self._closed = False
        self._path = sqlite_path(engine.url)
        self._path_text = None if self._path is None else str(self._path)
        """The file as text, stat'ed by every unit of work (a Path costs more than the stat)."""
        self._file_id = _file_id(self._path_text)
        self._async = engine.dialect.is_async
        """The sync face of an async engine (an AsyncStore's): it can only join a unit of work
        the AsyncStore runs (inside ``run_sync``), never begin one of its own."""
        self._origin: Store | None = None
        """The Store this one is a view of (:meth:`for_agent`), whose per-Store state it shares
        (its search statistics, agent ids, vector search state); None: not a view."""

    # --- building ------------------------------------------------------------------------

    @classmethod
    @checked
    def open(
        cls,
        target: Target | None = None,
        *,
        agent: str | None = None,
        upgrade: bool = True,
        clock: Clock = utc_now,
        busy_timeout_ms: BusyTimeoutMs | None = None,
        embedder: Embedder | None = None,
        read_only: bool = False,
    ) -> Store:
        """The Store of a path or URL (default ``$MEMORY_DB_PATH``, then
        ``~/.philont/memory/memory.sqlite``). With ``upgrade`` (default) the database is
        created or brought to head first; without it a database not at head is refused with
        :class:`~philont.errors.SchemaOutOfDateError`. On PostgreSQL ``agent`` is the default
        agent of its units of work (see the class docstring). ``busy_timeout_ms`` sets how long
        an SQLite connection waits for another's lock. ``embedder``: semantic recall with that
        model (EmbedderMismatchError if the stored vectors are another model's).

        ``read_only=True`` (SQLite): read a file this process may not write (a read-only file
        or file system, a backup to inspect). SQLite opens it ``mode=ro`` and nothing is
        created, upgraded or written: a database not at head is refused
        (:class:`~philont.errors.SchemaOutOfDateError`, naming ``philont db upgrade``), every
        write with :class:`~philont.errors.DatabaseReadOnlyError` saying the Store is
        read-only, and reads refresh no access times. PostgreSQL is refused
        (:class:`~philont.errors.InvalidDatabaseError`)."""
        url = resolve_url(target)
        require_file(url)
        if read_only:
            return cls._open_read_only(url, agent, clock, busy_timeout_ms, embedder)
        ensure_schema(url, upgrade=upgrade)  # an SQLite file is checked there (check_file)
        if is_postgres(url):
            engine = create_engine(url, busy_timeout_ms=busy_timeout_ms)
        else:
            engine = sqlite_engine(url, busy_timeout_ms=busy_timeout_ms)
        log.debug("store.opened", url=database_name(url), backend=engine.dialect.name)
        store = cls(engine, agent=agent, clock=clock, owns_engine=True, embedder=embedder)
        return store._checked_embedder()

    @classmethod
    def _open_read_only(
        cls,
        url: URL,
        agent: str | None,
        clock: Clock,
        busy_timeout_ms: int | None,
        embedder: Embedder | None,
    ) -> Store:
        check_read_only(url)
        engine = sqlite_read_only_engine(url, busy_timeout_ms=busy_timeout_ms)
        log.debug("store.opened", url=database_name(url), backend="sqlite", read_only=True)
        store = cls(
            engine, agent=agent, clock=clock, owns_engine=True, embedder=embedder, read_only=True
        )
        return store._checked_embedder()

    @classmethod
    @checked
    def from_engine(
        cls,
        engine: Engine,
        *,
        agent: str | None = None,
        upgrade: bool = False,
        clock: Clock = utc_now,
        embedder: Embedder | None = None,
    ) -> Store:
        """A Store over an engine the caller made (and keeps: ``close()`` leaves it open). The
        schema is checked once (upgraded first with ``upgrade=True``). A SQLite engine must
        be philont's (``philont.db.engine.create_engine``): with pysqlite's own transaction
        handling a host's rollback could keep philont's writes."""
        require_file(engine.url)
        require_sqlite_hooks(engine)
        if is_postgres(engine.url):
            guard_pg(engine)  # its connections made before are checked by ensure_schema_on
            with engine.connect() as conn:
                ensure_schema_on(conn, upgrade=upgrade)
        else:
            ensure_schema(engine.url, upgrade=upgrade)
        return cls(engine, agent=agent, clock=clock, embedder=embedder)._checked_embedder()

    def _checked_embedder(self) -> Store:
        """Refuse (and close) when the stored vectors are another model's (issue #18). On
        PostgreSQL each agent has its own vectors: the default agent's are checked here (a
        Store without one is checked by each agent's first search or backfill)."""
        if self.embedder is None:
            return self
        try:  # a bad $PHILONT_AGENT is refused here too: the Store is closed either way
            if self.backend.name != "postgresql" or self._agent(None) is not None:
                from philont.embed.search import check_embedder

                with self.begin(write=False) as mem:
                    check_embedder(mem.raw(), self.embedder)
        except Exception:
            self.close()
            raise
        return self

    # --- units of work -------------------------------------------------------------------

    def begin(
        self, *, write: bool = True, clock: Clock | None = None, agent: str | None = None
    ) -> Memory:
        """A new unit of work; its transaction begins when the ``with`` block is entered.

        On SQLite ``write=True`` begins ``IMMEDIATE``: the write lock is taken up front (waiting
        up to the busy timeout), so a unit that reads and then writes cannot fail half-way
        because another writer committed in between. ``write=False`` begins ``DEFERRED``: the
        lock is taken only when the unit first writes, so a read never waits for writers; it
        is not read-only (its writes are committed). PostgreSQL begins both alike. ``clock``
        overrides the Store's clock; ``agent`` the Store's default agent (PostgreSQL)."""
        if write.__class__ is not bool or clock is not None or agent is not None:
            _check_begin(self, write=write, clock=clock, agent=agent)  # the usual call: none
        self._check_open()
        if self._async:
            raise InvalidDatabaseError(
                f"the Store of {self.label} runs on an async engine (an AsyncStore's), whose "
                "statements must be awaited: use `await astore.run(work)` for a unit of work "
                "and `await astore.call(name, arguments)` for a tool, or open a sync Store "
                "with Store.open()"
            )
        return Memory(self, write=write, clock=clock or self.clock, agent=self._agent(agent))

    @checked
    def run(
        self,
        work: Callable[[Memory], T],
        *,
        write: bool = True,
        clock: Clock | None = None,
        agent: str | None = None,
        attempts: Attempts = DEFAULT_ATTEMPTS,
    ) -> T:
        """``work(mem)`` in a unit of work of its own (:meth:`begin`), and its result; run
        again in a new unit of work when the transaction conflicted with a concurrent one
        (PostgreSQL: a deadlock, a serialization failure, a lock timeout) or SQLite reported
        busy without waiting (a deferred unit that read and then wrote while another
        connection wrote: the next attempt begins ``write=True``), at most ``attempts`` times
        with a jittered backoff (:class:`philont.db.retry.RetryPolicy`). A lock SQLite
        already waited the whole busy timeout for is not waited for again: that is
        :class:`~philont.errors.DatabaseBusyError` at once, naming the wait. Such a failure
        rolled the unit back, so nothing is written twice, but whatever ``work`` does besides
        the database (a model call, output) is done again. After the last attempt the error is
        raised (:class:`~philont.errors.DatabaseBusyError`,
        :class:`~philont.errors.TransactionConflictError`); any other exception at once."""
        begin = functools.partial(self.begin, clock=clock, agent=agent)
        return run_unit(begin, work, write=write, attempts=attempts)

    @checked
    def join(
        self,
        bind: Session | scoped_session[Session] | Connection,
        *,
        clock: Clock | None = None,
        agent: str | None = None,
    ) -> Memory:
        """A unit of work inside the caller's transaction (a Session or a Connection of this
        database): services flush into it, and the caller commits or rolls back. Use it as
        ``with store.join(session) as mem:``; leaving the block does not end the caller's
        transaction, and an exception in the block undoes what the block wrote (a SAVEPOINT)
        while the caller's transaction goes on. On PostgreSQL the agent is set in the caller's
        transaction (``SET LOCAL``), so it holds until the caller's transaction ends. A
        ``scoped_session`` stands for its current Session."""
        if isinstance(bind, scoped_session):
            bind = bind()
        return self._join(bind, clock=clock, agent=agent, joined=STORE_JOIN)

    def _join(
        self,
        bind: Session | Connection,
        *,
        clock: Clock | None,
        agent: str | None,
        joined: Joined,
    ) -> Memory:
        """:meth:`join`, its errors naming ``joined``'s API (an AsyncStore's run joins too)."""
        self._check_open()
        self._check_same_database(bind, joined)
        return Memory(
            self,
            write=True,
            clock=clock or self.clock,
            bind=bind,
            agent=self._agent(agent),
            joined=joined,
        )

    def _check_same_database(self, bind: Session | Connection, joined: Joined) -> None:
        """Refuse a Session or Connection on another database than this Store's: its services
        would write there, with this Store's caches (agent ids, search statistics). A Session
        with binds per model is checked for philont's models and for the statements it runs
        without one (lean reads, locks: its default bind). On SQLite the engine must have
        philont's set-up, as for :meth:`from_engine`: under pysqlite's own transaction
        handling the caller's rollback kept what the block wrote."""
        from philont.db.models import Meta

        api, host = joined.api, joined.host or type(bind).__name__
        if isinstance(bind, Connection):
            held, engines = "", [bind.engine]
        else:  # binds per model: where philont's models go, and its statements without one
            held = joined.held
            try:
                engines = [bind.get_bind(Meta).engine, bind.get_bind().engine]
            except UnboundExecutionError as exc:
                raise InvalidDatabaseError(
                    f"{api}: the {host} has no bind for statements without a model, "
                    f"which philont's services run too{held}"
                ) from exc
        for engine in engines:
            if engine is not self.engine and _database_of(engine.url) != _database_of(
                self.engine.url
            ):
                raise InvalidDatabaseError(
                    f"{api}: the {host} is on "
                    f"{database_name(engine.url)}, this Store serves {self.label}{held}"
                )
            require_sqlite_hooks(engine, api)

    def _agent(self, agent: str | None) -> str | None:
        """The agent a unit of work serves: ``agent``, else this Store's, else (PostgreSQL)
        ``$PHILONT_AGENT`` (:func:`~philont.settings.default_agent`)."""
        if agent is not None:
            return check_name(agent)  # refused on SQLite too, where the name is not used
        if self.agent is not None or self.backend.name != "postgresql":
            return self.agent
        return settings.default_agent()

    def for_agent(self, agent: str) -> Store:
        """A Store on the same engine (the same pool) whose default agent is ``agent``."""
        view = Store(
            self.engine,
            agent=agent,
            clock=self.clock,
            embedder=self.embedder,
            read_only=self.read_only,
        )
        view.scorer, view._agent_ids = self.scorer, self._agent_ids  # shared caches
        view._origin = self._origin or self
        return view

    # --- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Release the engine's connections (if this Store made the engine). Units of work
        begun afterwards are refused; ``close()`` twice is harmless."""
        if self._closed:
            return
        self._closed = True
        if self._owns_engine:
            self.engine.dispose()

    @property
    def closed(self) -> bool:
        """Closed, or a view of a Store that is (:meth:`for_agent`: it served on after the
        Store's ``close()``, opening connections nobody would release)."""
        return self._closed or (self._origin is not None and self._origin._closed)

    def _check_open(self) -> None:
        if self.closed:
            raise StoreClosedError(f"the Store of {self.label} is closed")

    def _check_usable(self) -> None:
        """Refuse a unit of work that would begin on a closed Store, or on an SQLite file
        deleted or replaced since the Store opened it: its pooled connections still hold the
        old file, so what they wrote would be lost (and a new connection would make a fresh
        empty file at the path). One ``stat`` per unit of work."""
        self._check_open()
        if self._file_id is None:
            return
        now = _file_id(self._path_text)
        if now != self._file_id:
            reason = "was deleted" if now is None else "was replaced by another file"
            raise DatabaseGoneError(str(self._path), reason)

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # --- facts about the database --------------------------------------------------------

    @property
    def url(self) -> URL:
        return self.engine.url

    @property
    def label(self) -> str:
        """The database as messages name it: the SQLite file's path, else the URL without its
        password (:func:`philont.db.engine.database_name`)."""
        return database_name(self.engine.url)

    @property
    def path(self) -> Path | None:
        """The SQLite file, or None (in-memory, PostgreSQL)."""
        return self._path

    def __repr__(self) -> str:
        state = "closed" if self.closed else self.backend.name
        return f"<Store {self.label} ({state})>"


_check_begin = check_of(Store.begin)


def _database_of(url: URL) -> tuple[object, ...]:
    """What names a database, whatever the driver or password: an SQLite file (resolved), or a
    PostgreSQL database's name (a server is reached by many spellings: a socket, a host name,
    an address; a join is refused only when it is surely another database)."""
    path = sqlite_path(url)
    if path is not None:
        return ("sqlite", str(path.resolve()))
    return (url.get_backend_name(), url.database)


def ensure_schema(url: URL, *, upgrade: bool, writable: bool = True) -> None:
    """Create or upgrade the database at ``url`` to head (``upgrade``), or refuse one that is
    not at head. Reads the revision scripts once per process (see ``philont.migrate``). An
    SQLite file it returns for has been checked for writing (``check_file``: by its look at
    the schema, or by the upgrade that created or upgraded it): an engine made right after
    (``sqlite_engine``) need not look at the file again; ``writable=False``: for reading
    (a read-only Store), the file need not be writable."""
    with alembic_at_debug():  # Alembic logs at INFO from its first import on
        from philont import migrate

        if _at_head(url, writable=writable):
            return
        if not upgrade:
            migrate.check(url)  # raises SchemaOutOfDateError naming the command to run
            raise SchemaOutOfDateError(f"{database_name(url)} is not at head")
        migrate.upgrade(url)


def ensure_schema_on(conn: Connection, *, upgrade: bool) -> None:
    """:func:`ensure_schema` through a caller's PostgreSQL connection, as its engine makes
    them: the schema its search_path names and the credentials it connects with (a host's
    ``connect_args`` or connect events), where the URL alone may name another schema."""
    with alembic_at_debug():
        from philont import migrate

        at_head = migrate.status(conn).at_head
        conn.rollback()  # the status read began a transaction; the upgrade begins its own
        if at_head:
            return
        if not upgrade:
            migrate.check(conn)  # raises SchemaOutOfDateError naming the command to run
            raise SchemaOutOfDateError(f"{database_name(conn.engine.url)} is not at head")
        migrate.upgrade(conn)


def check_read_only(url: URL) -> None:
    """Refuse what a read-only Store cannot read: PostgreSQL (:class:`InvalidDatabaseError`),
    a missing file (never created), a database not at head (never upgraded)."""
    if is_postgres(url):
        raise InvalidDatabaseError(
            "Store.open(read_only=True) reads SQLite files only; on PostgreSQL connect "
            "as a role that may only read instead"
        )
    path = sqlite_path(url)
    if path is not None:  # a missing file is refused, never created
        check_file(path, create=False, writable=False)
    ensure_schema(url, upgrade=False, writable=False)


def _at_head(url: URL, *, writable: bool = True) -> bool:
    from philont import migrate

    path = sqlite_path(url)
    if not is_postgres(url) and (path is None or not path.exists() or path.stat().st_size == 0):
        return False
    if path is not None:  # refused before a look at the schema leaves -wal and -shm beside it
        check_file(path, create=False, writable=writable)
    try:
        return (migrate.status(url) if path is None else migrate.file_status(path)).at_head
    except Exception:  # anything odd: let upgrade() inspect and report it properly
        return False


# --- the process-wide Stores -----------------------------------------------------------------

_SHARED: dict[tuple[str, str | None, int | None, bool], Store] = {}
_SHARED_LOCK = fork.Lock()


@checked
def shared(
    target: Target | None = None,
    *,
    agent: str | None = None,
    busy_timeout_ms: BusyTimeoutMs | None = None,
    read_only: bool = False,
) -> Store:
    """The process-wide Store of a path or URL (the default database without one), opened
    (and upgraded) on first use and kept for the life of the process. Thread-safe. With
    ``agent`` (PostgreSQL), a view of it whose default agent that is (same pool). With
    ``read_only`` (SQLite) the process-wide read-only Store of the file
    (``Store.open(read_only=True)``; one of its own, beside the writable one)."""
    store = _shared(target, busy_timeout_ms, read_only)
    return store if agent is None or store.agent == agent else store.for_agent(agent)


def _shared(target: Target | None, busy_timeout_ms: int | None, read_only: bool) -> Store:
    named, path = _named(target)
    store = _BY_NAME.get((named, busy_timeout_ms, read_only))
    if store is not None and not store.closed and _same_file(store, path):
        return store  # the common case: a call on the target it was given last time
    url = resolve_url(target)
    key = (url.render_as_string(hide_password=False), None, busy_timeout_ms, read_only)
    with _SHARED_LOCK:
        store = _SHARED.get(key)
        if store is None or store.closed or not _still_there(store):
            if store is not None:
                store.close()
            store = Store.open(url, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
            _SHARED[key] = store
        _BY_NAME[(named, busy_timeout_ms, read_only)] = store
        return store


_BY_NAME: dict[tuple[tuple[object, ...], int | None, bool], Store] = {}
"""Targets as given (with the working directory a relative path depends on) -> their Store:
resolving a path and rendering its URL costs more than a small tool call's own work."""


def _named(target: Target | None) -> tuple[tuple[object, ...], str | Path | None]:
    """A key for ``target`` as given, and the file it names (None: a URL or in memory)."""
    if isinstance(target, URL):
        return (target,), None
    if target is None:
        target = settings.default_db_path()
    text_ = str(target)
    if "://" in text_ or text_ == ":memory:":
        return (text_,), None
    if text_.startswith("/"):  # absolute, nothing to expand: as given (a Path costs more)
        return (text_, None), text_
    try:
        path = Path(text_).expanduser()
    except RuntimeError:  # "~someone" without such a user: resolve_url refuses it by name
        return (text_,), None
    return (str(path), None if path.is_absolute() else os.getcwd()), path


def _same_file(store: Store, given: str | Path | None) -> bool:
    """Whether ``store`` still serves the file ``given`` names: not replaced or deleted behind
    its back, and (through a symbolic link) not pointed elsewhere since."""
    if given is None:
        return _still_there(store)
    return store.path is not None and _file_id(given) == store._file_id


def _file_id(path: str | Path | None) -> tuple[int, int] | None:
    """The file's device and inode (what stays the same while it is the same file), or None
    when there is none."""
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _still_there(store: Store) -> bool:
    """An SQLite file deleted or replaced behind the Store's back (a restore, a test that
    recreates it) is opened afresh: a Store must not keep writing to an unlinked file."""
    return store.path is None or _file_id(store.path) == store._file_id


def release_shared(path: Path) -> None:
    """Close the process-wide Stores of the file ``path`` (a restore is about to replace it:
    their idle connections hold it open). The next use opens the file afresh."""
    file_id = _file_id(path)
    with _SHARED_LOCK:
        for key, store in list(_SHARED.items()):
            if file_id is not None and store.path is not None and store._file_id == file_id:
                store.close()
                del _SHARED[key]
        for name, store in list(_BY_NAME.items()):
            if store.closed:
                del _BY_NAME[name]


def close_shared() -> None:
    """Close every process-wide Store (for tests and orderly shutdown)."""
    with _SHARED_LOCK:
        for store in _SHARED.values():
            store.close()
        _SHARED.clear()
        _BY_NAME.clear()
