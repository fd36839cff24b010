"""The ``Memory`` facade: open (and upgrade) a database and use every service in one unit of
work, for callers who do not bring their own Session."""

from __future__ import annotations

import sqlite3
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from philont import migrate
from philont.clock import Clock, utc_now
from philont.db.engine import BEGIN_OPTION, create_engine, is_postgres, resolve_url, sqlite_path
from philont.db.retry import translate
from philont.db.session import session_factory

if TYPE_CHECKING:
    from philont.services.access import AccessLog
    from philont.services.actions import ActionLog
    from philont.services.facts import FactService
    from philont.services.notes import NoteService
    from philont.services.reflector import ReflectorService
    from philont.services.skills import SkillService
    from philont.services.timeline import TimelineService


class Memory:
    """One open memory database and one transaction.

    ``with Memory.open(path) as mem:`` upgrades the database if needed, begins a transaction,
    commits it when the block ends normally and rolls it back on any exception.

    With ``write`` (default) the transaction begins ``IMMEDIATE``: it takes the write lock when
    it first touches the database (waiting up to the busy timeout for another writer), so a
    read-then-write can never fail half-way on a lock upgrade. ``write=False`` begins a
    deferred transaction for readers, which never wait for writers (WAL).

    SQLite failures leave the block as typed errors (the original kept as ``__cause__``):
    :class:`~philont.errors.DatabaseBusyError`, :class:`~philont.errors.DatabaseFullError`,
    :class:`~philont.errors.DatabaseReadOnlyError` or :class:`~philont.errors.StorageError`.
    Wrap the whole block in :func:`philont.db.retry.run_with_retry` to retry a busy one.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock = utc_now,
        owns_engine: bool = False,
        write: bool = True,
    ):
        self.engine = engine
        self.clock = clock
        self.write = write
        self._owns_engine = owns_engine
        self._session: Session | None = None

    @classmethod
    def open(
        cls,
        target: str | Path | URL | None = None,
        *,
        upgrade: bool = True,
        clock: Clock = utc_now,
        write: bool = True,
        busy_timeout_ms: int | None = None,
        agent: str | None = None,
    ) -> Memory:
        """Open the default database (``$MEMORY_DB_PATH`` or ``~/.philont/memory/...``) or the
        given path/URL; with ``upgrade`` (default) it is created or brought to head first.
        ``write=False`` begins read transactions (see the class); ``busy_timeout_ms``
        overrides how long to wait for another connection's lock. A PostgreSQL URL
        (``postgresql+psycopg://...``) needs ``agent``: each agent has its own schema there,
        created on first use."""
        url = resolve_url(target, agent=agent)
        if upgrade and not _at_head(url):
            migrate.upgrade(url)
        engine = create_engine(url, busy_timeout_ms=busy_timeout_ms)
        return cls(engine, clock=clock, owns_engine=True, write=write)

    # -- unit of work -------------------------------------------------------------------------

    def __enter__(self) -> Memory:
        bind = self.engine
        if self.write:
            bind = bind.execution_options(**{BEGIN_OPTION: "IMMEDIATE"})
        self._session = session_factory(bind)()
        self._session.begin()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        session, self._session = self._session, None
        try:
            if session is not None:
                try:
                    if exc_type is None:
                        session.commit()
                    else:
                        session.rollback()
                except (SQLAlchemyError, sqlite3.Error) as err:
                    typed = translate(err, path=self._path)
                    if typed is None:
                        raise
                    raise typed from err
                finally:
                    session.close()
            if isinstance(exc, SQLAlchemyError | sqlite3.Error):
                typed = translate(exc, path=self._path)
                if typed is not None:
                    raise typed from exc
        finally:
            if self._owns_engine:
                self.engine.dispose()

    @property
    def _path(self) -> str | None:
        return self.engine.url.database

    @property
    def session(self) -> Session:
        if self._session is None:
            raise RuntimeError("use `with Memory.open(...) as mem:` to begin a unit of work")
        return self._session

    # -- services (created on first use, bound to this unit of work) ---------------------------

    @cached_property
    def facts(self) -> FactService:
        from philont.services.facts import FactService

        return FactService(self.session, clock=self.clock)

    @cached_property
    def notes(self) -> NoteService:
        from philont.services.notes import NoteService

        return NoteService(self.session, clock=self.clock)

    @cached_property
    def timeline(self) -> TimelineService:
        from philont.services.timeline import TimelineService

        return TimelineService(self.session, clock=self.clock)

    @cached_property
    def actions(self) -> ActionLog:
        from philont.services.actions import ActionLog

        return ActionLog(self.session, clock=self.clock)

    @cached_property
    def skills(self) -> SkillService:
        from philont.services.skills import SkillService

        return SkillService(self.session, clock=self.clock)

    @cached_property
    def reflector(self) -> ReflectorService:
        from philont.services.reflector import ReflectorService

        return ReflectorService(self.session, clock=self.clock)

    @cached_property
    def access(self) -> AccessLog:
        from philont.services.access import AccessLog

        return AccessLog(self.session, clock=self.clock)


def _at_head(url: URL) -> bool:
    path = sqlite_path(url)
    if not is_postgres(url) and (path is None or not path.exists() or path.stat().st_size == 0):
        return False
    try:
        return migrate.status(url).at_head
    except Exception:  # anything odd: let upgrade() inspect and report it properly
        return False
