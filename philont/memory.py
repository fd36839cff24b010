"""``Memory``: one unit of work on a Store, whose attributes are every service.

``with store.begin() as mem:`` begins a transaction, commits it when the block ends normally and
rolls it back on any exception. Inside, ``mem.facts``, ``mem.search``, ``mem.prefix``, ... are the
services, all bound to that one transaction. A unit of work is used once: entering it twice, or
using it (or a service taken from it) after its block ended, raises
:class:`~philont.errors.UnitOfWorkError` and touches no database, so nothing can autobegin a
transaction that nobody ends. ``with Memory.open(path) as mem:`` is the one-off form, on the
process-wide Store of that path (:func:`philont.store.shared`).
"""

from __future__ import annotations

import enum
import sqlite3
import sys
from collections.abc import Callable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar, overload

from sqlalchemy import Connection, Transaction, event
from sqlalchemy.exc import (
    PendingRollbackError,
    ResourceClosedError,
    SQLAlchemyError,
)
from sqlalchemy.orm import Session, SessionTransaction, SessionTransactionOrigin

from philont import interrupts
from philont.arguments import checked
from philont.clock import Clock
from philont.db import nesting
from philont.db.backend import Backend, Raw
from philont.db.engine import Target
from philont.db.retry import edge_failure, translate, typed_from, unlogged
from philont.errors import (
    ConflictError,
    DatabaseReadOnlyError,
    InvalidInputError,
    PhilontError,
    UnitOfWorkError,
)
from philont.log import get_logger
from philont.schemas.inputs import BusyTimeoutMs, now_from

if TYPE_CHECKING:
    from philont.embed.index import EmbeddingIndex
    from philont.services.access import AccessLog
    from philont.services.actions import ActionLog
    from philont.services.calendar import CalendarService
    from philont.services.facts import FactService
    from philont.services.notes import NoteService
    from philont.services.prefix import MemoryPrefix
    from philont.services.recall import RecallTrigger
    from philont.services.reflector import ReflectorService
    from philont.services.retriever import TimelineRetriever
    from philont.services.schedules import ScheduleService
    from philont.services.search import SearchService
    from philont.services.skills import SkillService
    from philont.services.timeline import TimelineService
    from philont.store import Store

__all__ = ["Memory"]

S = TypeVar("S")


class _service(Generic[S]):
    """A service of a unit of work, made on first use and kept in the instance (as
    ``functools.cached_property``, without its lock: Python 3.11's takes an ``RLock`` on every
    first access, which a tool call pays for each service it touches; a unit of work belongs to
    one thread, and a service made twice would be harmless anyway)."""

    def __init__(self, make: Callable[[Any], S]) -> None:
        self._make = make
        self._name = make.__name__
        self.__doc__ = make.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name

    @overload
    def __get__(self, mem: None, owner: type | None = None) -> _service[S]: ...
    @overload
    def __get__(self, mem: Memory, owner: type | None = None) -> S: ...
    def __get__(self, mem: Memory | None, owner: type | None = None) -> S | _service[S]:
        if mem is None:
            return self
        value = mem.__dict__[self._name] = self._make(mem)
        return value


class Joined(NamedTuple):
    """The API that joined a unit of work into a transaction, as the unit's errors name it: a
    message of ``store.join``'s sent an AsyncStore's user looking for a call they never made."""

    api: str
    argument: str
    """The argument that holds the caller's Session or Connection."""
    ended: str
    """What the unit says when its transaction was ended inside it (``{host}``: the type of
    the Session or Connection joined)."""
    host: str = ""
    """What the caller passed, as the unit's errors name it ("": the joined object's type)."""
    held: str = ""
    """The advice that ends the refusal of a Session whose binds put philont's statements on
    another database (the API's own way out, if it has one)."""


STORE_JOIN = Joined(
    "store.join",
    "bind",
    "the {host} ended its transaction (commit, rollback or close) inside the joined block; "
    "end it after the block",
    held="; join the connection the Session holds on this Store's database instead: "
    "store.join(session.connection(bind_arguments={'bind': store.engine}))",
)


OWN_UNIT_ENDED = (
    "the unit of work's transaction was ended inside its block (mem.session.commit(), "
    "rollback() or close()): what the block wrote before was committed or rolled back by that "
    "call, and nothing after it is written; a unit of work commits as its block ends"
)
"""The error of a unit of its own whose Session's transaction the block ended: every later
service call and the block's end raise it (they raised SQLAlchemy's untyped "Autobegin is
disabled" error)."""


class _State(enum.Enum):
    NEW = "new"
    ACTIVE = "active"
    ENDED = "ended"


class Memory:
    """One unit of work (see the module docstring). Made by :meth:`Store.begin`,
    :meth:`Store.join` or :meth:`Memory.open`, never directly."""

    def __init__(
        self,
        store: Store,
        *,
        write: bool,
        clock: Clock,
        bind: Session | Connection | None = None,
        agent: str | None = None,
        joined: Joined = STORE_JOIN,
    ) -> None:
        self.store = store
        self.write = write
        self._clock = clock
        self.agent = agent
        """The agent this unit of work serves (PostgreSQL; None on SQLite: a file is one)."""
        self._bind = bind
        self._joined = joined
        self._savepoint: SessionTransaction | None = None
        self._host_transaction: SessionTransaction | Transaction | None = None
        """The caller's transaction a joined unit entered (:meth:`Store.join`): ended by the
        caller inside the block, it ends the unit (:meth:`_ended_by_host`). A unit of its own:
        its Session's transaction (begun again by :meth:`rollback`), which must still be the
        Session's (:meth:`_host_ended`)."""
        self._flush_failure: BaseException | None = None
        """The error of a flush that failed and rolled this unit's transaction back
        (:func:`_flush_rolled_back`)."""
        self._failed_in: SessionTransaction | None = None
        """The transaction that flush rolled back (one begun by :meth:`rollback` is not)."""
        self._session: Session | None = None
        self._agent: int | None = None
        self._outer_agent: int | None = None
        """The agent served on a joined transaction as this unit entered it: an open unit's
        it was joined inside (PostgreSQL), served again as this one leaves."""
        self._open: nesting.Open | None = None
        """Listed among this thread's open units of work (PostgreSQL, :mod:`philont.db.nesting`)."""
        self._state = _State.NEW

    def clock(self) -> datetime:
        """Now, by the clock this unit of work was given, as a stored value: aware UTC at
        millisecond precision, so what a write returns equals what a later read gives back
        (a clock with microseconds is truncated; a naive or non-datetime one is refused by
        name, :class:`~philont.errors.InvalidInputError` for ``clock()``)."""
        return now_from(self._clock)

    @classmethod
    @checked
    def open(
        cls,
        target: Target | None = None,
        *,
        agent: str | None = None,
        write: bool = True,
        clock: Clock | None = None,
        busy_timeout_ms: BusyTimeoutMs | None = None,
        read_only: bool = False,
    ) -> Memory:
        """A unit of work on the process-wide Store of ``target`` (default: the default
        database), created or upgraded on first use: ``with Memory.open(path) as mem:``.
        ``write`` as in :meth:`Store.begin` (False: a deferred transaction that takes the write
        lock only if it writes — not a read-only one). ``read_only`` (SQLite): on the
        process-wide read-only Store of the file (:func:`~philont.store.shared`), never
        created or upgraded; every write refused."""
        from philont.store import shared

        store = shared(target, busy_timeout_ms=busy_timeout_ms, read_only=read_only)
        return store.begin(write=write, clock=clock, agent=agent)

    # --- the transaction ---------------------------------------------------------------------

    def __enter__(self) -> Memory:
        if self._state is not _State.NEW:
            raise UnitOfWorkError(
                "this unit of work was already used; begin a new one (with store.begin() as mem:)"
            )
        self.store._check_usable()
        if self._bind is None:
            return self._begin()
        try:
            return self._begin()
        except (SQLAlchemyError, sqlite3.Error) as exc:
            raise self._unjoinable(exc) from exc

    def _begin(self) -> Memory:
        agent_id = self._agent_id()  # before our transaction: creating an agent commits its own
        # The host's innermost transaction, which the block is inside (a SAVEPOINT of the
        # host's, or its transaction): the host's end of it ends the unit (_host_ended).
        host: SessionTransaction | Transaction | None = None
        if isinstance(self._bind, Session):
            session = self._bind
            # A SAVEPOINT of our own, as a joined Connection gets one: an exception in the
            # block undoes what the block wrote, and the host's transaction goes on.
            self._savepoint = session.begin_nested()
            host = self._savepoint.parent
        elif isinstance(self._bind, Connection):
            if not self._bind.in_transaction():
                # Begun as the host's first statement would begin it (SQLAlchemy's autobegin),
                # so the host commits or rolls back; a Session on a Connection in no
                # transaction begins one of its own and commits it as the block ends.
                self._bind.begin()
            host = self._bind.get_nested_transaction() or self._bind.get_transaction()
            _ = self._bind.connection  # invalidated in a transaction: refused here, not later
            session = Session(
                bind=self._bind, join_transaction_mode="create_savepoint", expire_on_commit=False
            )
        else:
            bind = self.store.write_engine if self.write else self.store.engine
            session = Session(bind=bind, autobegin=False, expire_on_commit=False)
            host = session.begin()
        self._agent = agent_id
        try:
            if self._bind is not None:  # joined inside another unit: its agent, served again
                self._outer_agent = self.store.backend.served(session)
            self._enter_agent(session)
            self._open = self._listed(session)
        except BaseException:
            if self._bind is None:
                session.close()  # ours: nothing began that anybody else would end
            elif self._savepoint is not None:
                self._savepoint.rollback()
                self._savepoint = None
            raise
        self._session = session
        self._host_transaction = host  # a failed flush ends our SAVEPOINT only: this stays active
        self._state = _State.ACTIVE
        session.info.setdefault(_UNITS, []).append(self)  # told of a failed flush
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session, self._session = self._session, None
        self._state = _State.ENDED
        if session is None:
            return
        nesting.closed(self._open, exc)
        if exc is not None:  # a not-found error raised in the block (a host's, the command
            # line's) says what it means on this database, as a service's does; one an inner
            # unit of work (or a service) explained is left alone
            self.store.backend.explain(exc)
        failed = self._flush_failed(session)
        if self._host_ended(session):
            self._leave_ended(session, exc)
            return
        try:
            again = (  # PostgreSQL: the connection to serve the outer unit's agent on again
                None if self._bind is None else self.store.backend.leave(session, self._outer_agent)
            )
            if isinstance(self._bind, Session):
                savepoint, self._savepoint = self._savepoint, None
                if savepoint is not None and exc_type is None and failed is None:
                    savepoint.commit()  # released: the caller's transaction commits, not us
                    self._serve_outer_again(again)
                elif savepoint is not None:
                    savepoint.rollback()  # the caller's transaction goes on
                    if exc_type is None:  # a failed flush rolled the block's writes back
                        raise self._rolled_back(failed)
            else:
                # Ours: commit or roll back. A host Connection's: release or roll back our
                # SAVEPOINT, leaving the host's own transaction to the host.
                try:
                    if exc_type is None:
                        interrupts.check()  # a Ctrl-C Python dropped: never commit past it
                        session.commit()
                        self._serve_outer_again(again)
                    else:
                        session.rollback()
                finally:
                    session.close()
        except (SQLAlchemyError, sqlite3.Error) as err:
            self._raise_typed(err, failed)
            raise
        if exc is not None:
            self._raise_typed(exc, failed)

    def _leave_ended(self, session: Session, exc: BaseException | None) -> None:
        """The end of a block whose transaction was ended inside it (:meth:`_host_ended`):
        nothing left to commit or roll back; raises :meth:`_ended_by_host` unless the block
        raised it already, or Ctrl-C and kin."""
        if self._bind is None:
            session.close()  # ours, in no transaction: nothing to end
        else:
            self.store.backend.leave(session, self._outer_agent)
        if isinstance(self._bind, Connection) and not self._bind.in_transaction():
            session.close()  # no rollback: our SAVEPOINT ended with the caller's transaction
        # After the end of a SAVEPOINT of the caller's, ours is gone too, and closing our
        # Session would roll back to it: an error that on PostgreSQL aborts the caller's
        # transaction. Left unclosed, it is ended with that transaction, with no statement.
        if isinstance(exc, UnitOfWorkError) or not isinstance(exc, Exception | None):
            return  # the block's own (a service called after the end), or Ctrl-C and kin
        raise self._ended_by_host() from exc

    def _serve_outer_again(self, conn: Connection | None) -> None:
        """After the release only: rolled back to, the SAVEPOINT gave the outer agent back,
        and in a transaction an error aborted the ``SET LOCAL`` failed, untyped, leaving the
        host's transaction aborted before its SAVEPOINT was rolled back to."""
        if conn is not None and self._outer_agent is not None:
            self.store.backend.serve_again(conn, self._outer_agent)

    def _host_ended(self, session: Session) -> bool:
        """Whether the transaction this unit is inside was ended inside the block
        (``commit()``, ``rollback()``, ``close()``): by the caller's Session or Connection, the
        one a joined unit entered or the SAVEPOINT of the caller's it was inside; or, in a unit
        of its own, by ``mem.session`` (a failed flush leaves it begun, to be rolled back)."""
        host = self._host_transaction
        if self._bind is None:  # ended, or ended and begun again (serving no agent: PostgreSQL)
            return session.get_transaction() is not host
        return host is not None and not host.is_active

    def _ended_by_host(self) -> UnitOfWorkError:
        """The error of a joined unit whose caller ended its transaction inside the block
        (:meth:`_host_ended`), raised by the next service call and by the block's end. The
        block's SAVEPOINT went with it, so what the unit wrote is the caller's to keep or not;
        a service call after it wrote in a transaction the caller began next (SQLite), or
        failed as a generic StorageError (PostgreSQL: no agent served), and the block's end
        raised SQLAlchemy's untyped ResourceClosedError / InvalidRequestError."""
        if self._bind is None:
            return UnitOfWorkError(OWN_UNIT_ENDED)
        api, ended = self._joined.api, self._joined.ended
        return UnitOfWorkError(f"{api}: " + ended.format(host=type(self._bind).__name__))

    def _unjoinable(self, exc: SQLAlchemyError | sqlite3.Error) -> PhilontError:
        """The typed error of a caller's Session or Connection that could not be joined: one
        that is closed, or whose transaction failed and was not rolled back (a failed flush,
        a PostgreSQL statement that aborted it, an invalidated connection), refuses the
        argument by name; any other database error is typed as a unit of work's
        (:meth:`_storage_error`). SQLAlchemy's own error left ``store.join`` untyped."""
        orig = getattr(exc, "orig", None)
        if isinstance(exc, ResourceClosedError | PendingRollbackError) or (
            getattr(orig, "sqlstate", None) == IN_FAILED_TRANSACTION
        ):
            return InvalidInputError.of(
                self._joined.argument,
                f"the {self._joined.host or type(self._bind).__name__} cannot be joined "
                f"({type(exc).__name__}): it "
                "is closed, or its transaction failed; roll it back (or open a new one) first",
            )
        typed = self._storage_error(exc, None, _STORAGE_ERROR)
        assert typed is not None  # a database error
        return typed

    def _raise_typed(self, exc: BaseException, failed: BaseException | None) -> None:
        """Raise ``exc``'s typed error from it, when it has one (:meth:`_storage_error`); a
        service's typed error for a refusal nobody logged is logged now."""
        missed = unlogged(exc)
        if missed is not None:
            log.failure(_STORAGE_ERROR, missed)
        typed = self._storage_error(exc, failed, _STORAGE_ERROR)
        if typed is not None:
            raise typed from exc

    def _storage_error(
        self, exc: BaseException, failed: BaseException | None, event: str | None
    ) -> PhilontError | None:
        """``exc``'s typed error (:meth:`_typed`); a driver's error philont does not map is
        :func:`~philont.db.retry.edge_failure`'s :class:`~philont.errors.StorageError` (its
        kind and what it refused, never its text, logged as ``event``): no database error
        leaves a unit of work, or a service's method in it, untyped. None for anything else
        (a typed error)."""
        typed = (
            self._typed(exc, failed) if isinstance(exc, SQLAlchemyError | sqlite3.Error) else None
        )
        if typed is None:
            typed = edge_failure(exc, event, where=self.store.label)
        return typed

    def raised_in(self, exc: BaseException) -> PhilontError | None:
        """The typed error a service's method of this unit of work raises in place of the
        database error ``exc`` (raised ``from`` it), the one the unit's end would give it:
        a host that catches philont's errors around one call inside the block gets philont's,
        never SQLAlchemy's. None when ``exc`` is no database error (a typed error passes as
        it is, so the unit's end does not type it twice). What the unit's end does is
        unchanged: it rolls back (or, when the block went on after a failed flush, refuses
        to commit, :class:`~philont.errors.UnitOfWorkError`). A refusal philont does not map
        is logged by whoever reports it (:func:`~philont.db.retry.unlogged`: a tool's result,
        the unit's end), not by a caller that handles it."""
        session = self._session
        failed = None if session is None else self._failure_of(session)
        typed = self._storage_error(exc, failed, None)
        return None if typed is None else typed_from(typed, exc)

    def _failure_of(self, session: Session) -> BaseException | None:
        """The error of a flush that failed and rolled this unit's transaction back (kept by
        :func:`_flush_rolled_back`; not if :meth:`rollback` began another since), or None."""
        current = self._savepoint or session.get_transaction()
        return self._flush_failure if self._failed_in is current else None

    def _flush_failed(self, session: Session) -> BaseException | None:
        """The error of a flush that failed and rolled this unit's transaction back (kept by
        :func:`_flush_rolled_back`; not if :meth:`rollback` began another since), or None;
        the unit is no longer told of failures."""
        units = session.info.get(_UNITS, [])
        if self in units:
            units.remove(self)
        failed = self._failure_of(session)
        self._flush_failure = self._failed_in = None
        return failed

    def _typed(
        self, exc: BaseException, failed: BaseException | None = None
    ) -> PhilontError | None:
        """``exc``'s typed error (:func:`~philont.db.retry.translate`). (A read-only Store's
        refusal of a write is typed where SQLite refuses it: ``engine.ReadOnlyConnection``.)
        SQLAlchemy's ``PendingRollbackError`` (a flush failed, ``failed``, and rolled the
        transaction back; the block went on and ended or used the session again) is
        :meth:`_rolled_back`."""
        if isinstance(exc, PendingRollbackError):
            return self._rolled_back(failed)
        return translate(exc, path=self._path())

    def _rolled_back(self, failed: BaseException | None) -> PhilontError:
        """The error of a unit of work whose transaction a failed flush rolled back (its
        error ``failed``, caught by the host inside the block): nothing of it was written. A
        write refused by a read-only Store is :class:`DatabaseReadOnlyError` again; any other
        failure :class:`UnitOfWorkError` naming its kind."""
        typed = None if failed is None else translate(failed, path=self._path())
        if self.read_only and (failed is None or isinstance(typed, DatabaseReadOnlyError)):
            reason = (
                "the Store was opened read-only (Store.open(..., read_only=True)); a write of "
                "this unit of work was refused, so nothing of it was written"
            )
            return DatabaseReadOnlyError(self._path() or self.store.label, reason)
        kind = typed.code if typed is not None else type(failed).__name__ if failed else "flush"
        return UnitOfWorkError(
            f"a write of this unit of work failed ({kind}) and rolled its transaction back, "
            "so nothing of it was written, yet the block went on; begin a new unit of work"
        )

    @property
    def read_only(self) -> bool:
        """Whether the Store was opened read-only: reads then refresh no access times."""
        return self.store.read_only

    def _agent_id(self) -> int | None:
        """The registry id of this unit of work's agent (PostgreSQL), the agent created if new;
        None on SQLite."""
        if self.store.backend.name != "postgresql":
            return None
        if self.agent is None:  # a Session that already serves an agent goes on serving it
            bound = self._bind if isinstance(self._bind, Session) else None
            return None if bound is None else self.store.backend.agent_of(bound)
        from philont.agents import agent_id

        return agent_id(self.store, self.agent)

    def _enter_agent(self, session: Session) -> None:
        """Serve this unit of work's agent in ``session``'s transaction. The id the Store
        cached for the name is confirmed in the same statement: after another process renamed
        or deleted the agent, the name is looked up again (the agent created if it is gone)
        instead of serving whichever agent holds that id now."""
        backend = self.store.backend
        if backend.enter(session, self._agent, self.agent):
            return
        from philont.agents import agent_id, forget

        assert self.agent is not None  # a name-less unit of work is never refused
        forget(self.store, self.agent)
        self._agent = agent_id(self.store, self.agent)
        if not backend.enter(session, self._agent, self.agent):
            raise ConflictError(f"agent {self.agent!r} was renamed or deleted as it was entered")

    def _listed(self, session: Session) -> nesting.Open | None:
        """This unit of work among its thread's open ones, by the server process its agent was
        just set on (PostgreSQL: a thread's units that wait for each other are refused,
        :mod:`philont.db.nesting`); None on SQLite, whose write gate refuses them, and on an
        async engine, whose units on one thread are tasks that wait for each other's locks
        without blocking the thread."""
        if self.store.backend.name != "postgresql":
            return None
        conn = session.connection()
        if conn.dialect.is_async:
            return None
        return nesting.opened(conn.info, conn.connection.dbapi_connection, conn.engine)

    def _path(self) -> str | None:
        path = self.store.path
        return None if path is None else str(path)

    def rollback(self) -> None:
        """Undo everything this unit of work did so far and go on in a new transaction (for
        units of work of a Store's own; one that joined a caller's transaction cannot). It
        also goes on after the block ended the transaction itself (``mem.session.rollback()``,
        as SQLAlchemy's error after a failed flush advises, or ``commit()``, ``close()``)."""
        if self._bind is not None:
            raise UnitOfWorkError(
                "a unit of work inside the caller's transaction cannot roll it back; use a "
                "savepoint (session.begin_nested()) or let the caller roll back"
            )
        session = self._session
        if session is None:
            session = self.session  # raises: not begun, or ended
        nesting.closed(self._open)
        self._open = None
        session.rollback()  # ours, or one the block began again on it
        self._host_transaction = session.begin()
        self.store.backend.enter(session, self._agent)  # SET LOCAL ended with the rollback
        self._open = self._listed(session)  # through PgBouncer, maybe another server process

    @property
    def active(self) -> bool:
        """Whether the unit of work is inside its ``with`` block."""
        return self._state is _State.ACTIVE

    @property
    def joined(self) -> bool:
        """Whether the unit of work is inside a caller's transaction (:meth:`Store.join`): its
        Session or Connection is the caller's, and the caller commits."""
        return self._bind is not None

    @property
    def session(self) -> Session:
        """The Session of this unit of work (only inside its ``with`` block)."""
        session = self._session
        if session is None:
            if self._state is _State.NEW:
                raise UnitOfWorkError(
                    "this unit of work has not begun: use it as `with store.begin() as mem:`"
                )
            raise UnitOfWorkError(
                "this unit of work has ended (its transaction was committed or rolled back); "
                "begin a new one: with store.begin() as mem:"
            )
        if self._host_ended(session):
            raise self._ended_by_host()
        return session

    @property
    def backend(self) -> Backend:
        return self.store.backend

    def raw(self) -> Raw:
        """The DB-API connection under this transaction, for the query modules' lean reads."""
        return self.store.backend.raw(self.session)

    # --- services (created on first use, bound to this unit of work) ---------------------------

    @_service
    def facts(self) -> FactService:
        from philont.services.facts import FactService

        return FactService(self)

    @_service
    def notes(self) -> NoteService:
        from philont.services.notes import NoteService

        return NoteService(self)

    @_service
    def timeline(self) -> TimelineService:
        from philont.services.timeline import TimelineService

        return TimelineService(self)

    @_service
    def actions(self) -> ActionLog:
        from philont.services.actions import ActionLog

        return ActionLog(self)

    @_service
    def skills(self) -> SkillService:
        from philont.services.skills import SkillService

        return SkillService(self)

    @_service
    def reflector(self) -> ReflectorService:
        from philont.services.reflector import ReflectorService

        return ReflectorService(self)

    @_service
    def access(self) -> AccessLog:
        from philont.services.access import AccessLog

        return AccessLog(self)

    @_service
    def search(self) -> SearchService:
        from philont.services.search import SearchService

        return SearchService(self)

    @_service
    def retriever(self) -> TimelineRetriever:
        from philont.services.retriever import TimelineRetriever

        return TimelineRetriever(self)

    @_service
    def prefix(self) -> MemoryPrefix:
        from philont.services.prefix import MemoryPrefix

        return MemoryPrefix(self)

    @_service
    def recall_trigger(self) -> RecallTrigger:
        from philont.services.recall import RecallTrigger

        return RecallTrigger(self)

    @_service
    def calendar(self) -> CalendarService:
        from philont.services.calendar import CalendarService

        return CalendarService(self)

    @_service
    def schedules(self) -> ScheduleService:
        from philont.services.schedules import ScheduleService

        return ScheduleService(self)

    @_service
    def embeddings(self) -> EmbeddingIndex:
        from philont.embed.index import EmbeddingIndex

        return EmbeddingIndex(self)

    def __repr__(self) -> str:
        return f"<Memory {self._state.value} on {self.store!r}>"


log = get_logger(__name__)

_STORAGE_ERROR = "unit_of_work.storage_error"
IN_FAILED_TRANSACTION = "25P02"
"""PostgreSQL's SQLSTATE of a statement in a transaction an earlier error aborted."""
_UNITS = "philont.units"
"""The key of ``Session.info`` listing the units of work open on that Session (a host's
Session may hold one joined inside another), told of a flush that fails in it."""


@event.listens_for(Session, "after_soft_rollback")
def _flush_rolled_back(session: Session, previous: SessionTransaction) -> None:
    """A failed flush rolls back its own subtransaction, and with it the transaction it ran
    in; the block may catch the error and go on, and SQLAlchemy then refuses every statement
    (``PendingRollbackError``) without saying why in a typed way. Each unit of work open on
    ``session`` whose transaction that was keeps the flush's error (the exception being
    handled while SQLAlchemy rolls back) to end typed (:meth:`Memory._rolled_back`). Only a
    subtransaction (a flush's; no caller begins one) is such a rollback: a block's own
    ``rollback()`` while it handles some error is not."""
    if previous.origin is not SessionTransactionOrigin.SUBTRANSACTION:
        return
    failure = sys.exc_info()[1]
    if failure is None:
        return
    for unit in session.info.get(_UNITS, ()):
        if previous.parent is (unit._savepoint or session.get_transaction()):
            unit._flush_failure, unit._failed_in = failure, previous.parent
