"""The base of every service: bound to one unit of work, never committing it."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from philont.clock import Clock
from philont.schemas.inputs import now_from

if TYPE_CHECKING:
    from philont.memory import Memory


class Service:
    """A service of one unit of work (``mem.facts``, ``mem.search``, ...). It reaches the
    transaction through the unit of work on every call, so a service kept past the end of
    its ``with`` block refuses to work (:class:`~philont.errors.UnitOfWorkError`) instead of
    beginning a transaction nobody ends. Services may flush; they never commit."""

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    @property
    def session(self) -> Session:
        return self.mem.session

    @property
    def clock(self) -> Clock:
        return self.mem.clock

    def _now(self) -> datetime:
        """The clock's time, aware UTC at storage precision."""
        return now_from(self.mem.clock)
