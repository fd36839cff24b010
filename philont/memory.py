"""The ``Memory`` facade: open (and upgrade) a database and use every service in one unit of
work, for callers who do not bring their own Session."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from philont import migrate
from philont.clock import Clock, utc_now
from philont.db.engine import create_engine, resolve_url, sqlite_path
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
    """

    def __init__(self, engine: Engine, *, clock: Clock = utc_now, owns_engine: bool = False):
        self.engine = engine
        self.clock = clock
        self._owns_engine = owns_engine
        self._session: Session | None = None

    @classmethod
    def open(
        cls,
        target: str | Path | URL | None = None,
        *,
        upgrade: bool = True,
        clock: Clock = utc_now,
    ) -> Memory:
        """Open the default database (``$MEMORY_DB_PATH`` or ``~/.philont/memory/...``) or the
        given path/URL; with ``upgrade`` (default) it is created or brought to head first."""
        url = resolve_url(target)
        if upgrade and not _at_head(url):
            migrate.upgrade(url)
        return cls(create_engine(url), clock=clock, owns_engine=True)

    # -- unit of work -------------------------------------------------------------------------

    def __enter__(self) -> Memory:
        self._session = session_factory(self.engine)()
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
                if exc_type is None:
                    session.commit()
                else:
                    session.rollback()
                session.close()
        finally:
            if self._owns_engine:
                self.engine.dispose()

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
    if path is None or not path.exists() or path.stat().st_size == 0:
        return False
    try:
        return migrate.status(url).at_head
    except Exception:  # anything odd: let upgrade() inspect and report it properly
        return False
