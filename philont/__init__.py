"""philont: long-term, cross-session memory for AI agents in one SQLite file (or PostgreSQL).

The public API::

    from philont import Store, Memory, tools

    store = Store.open("memory.sqlite")          # once per database per process
    with store.begin() as mem:                    # one unit of work; every service hangs off it
        mem.facts.store("user.home", "city", "Berlin")
        hits = mem.search.messages("Kastanienallee")
    tools.call("get_fact", {"namespace": "user.home", "key": "city"}, db=store)

Errors are :class:`PhilontError` subclasses with a stable ``code``; services return the frozen
read models exported here. ``import philont`` stays light: the Store, the unit of work, the
read models, the tools (and their recurrence and cron libraries), the CLI, Alembic and the MCP
server load when first used (``philont.Store``, ``from philont import Store``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from philont import lazy
from philont.errors import (
    ConflictError,
    DatabaseBusyError,
    DatabaseFullError,
    DatabaseGoneError,
    DatabaseReadOnlyError,
    EventLoopError,
    FactNotFoundError,
    InvalidDatabaseError,
    InvalidInputError,
    InvalidTimeRangeError,
    NotFoundError,
    PhilontError,
    PoolTimeoutError,
    ReservedNamespaceError,
    SchemaError,
    SchemaOutOfDateError,
    SkillNotFoundError,
    SkillNotUsableError,
    StorageError,
    StoreClosedError,
    TransactionConflictError,
    UnitOfWorkError,
)

if TYPE_CHECKING:
    from philont import tools
    from philont.memory import Memory
    from philont.schemas.actions import ActionRecord
    from philont.schemas.calendar import CalendarEventRecord, Occurrence
    from philont.schemas.facts import FactRecord
    from philont.schemas.notes import NoteRecord
    from philont.schemas.prefix import MemoryPrefixResult
    from philont.schemas.reflector import ReflectionReport
    from philont.schemas.schedules import ScheduleRecord
    from philont.schemas.search import MessageHit, NoteHit, RetrievalResult, SkillHit
    from philont.schemas.skills import RecipeRecord, SkillRecord
    from philont.schemas.timeline import MessageIn, MessageRecord, SessionOverview, SessionRecord
    from philont.store import Store

__all__ = [
    "ActionRecord",
    "CalendarEventRecord",
    "ConflictError",
    "DatabaseBusyError",
    "DatabaseFullError",
    "DatabaseGoneError",
    "DatabaseReadOnlyError",
    "EventLoopError",
    "FactNotFoundError",
    "FactRecord",
    "InvalidDatabaseError",
    "InvalidInputError",
    "InvalidTimeRangeError",
    "Memory",
    "MemoryPrefixResult",
    "MessageHit",
    "MessageIn",
    "MessageRecord",
    "NotFoundError",
    "NoteHit",
    "NoteRecord",
    "Occurrence",
    "PhilontError",
    "PoolTimeoutError",
    "RecipeRecord",
    "ReflectionReport",
    "ReservedNamespaceError",
    "RetrievalResult",
    "ScheduleRecord",
    "SchemaError",
    "SchemaOutOfDateError",
    "SessionOverview",
    "SessionRecord",
    "SkillHit",
    "SkillNotFoundError",
    "SkillNotUsableError",
    "SkillRecord",
    "StorageError",
    "Store",
    "StoreClosedError",
    "TransactionConflictError",
    "UnitOfWorkError",
    "tools",
]
__version__ = "0.1.0"


_LAZY = {
    "Memory": "philont.memory",
    "ActionRecord": "philont.schemas.actions",
    "CalendarEventRecord": "philont.schemas.calendar",
    "Occurrence": "philont.schemas.calendar",
    "FactRecord": "philont.schemas.facts",
    "NoteRecord": "philont.schemas.notes",
    "MemoryPrefixResult": "philont.schemas.prefix",
    "ReflectionReport": "philont.schemas.reflector",
    "ScheduleRecord": "philont.schemas.schedules",
    "MessageHit": "philont.schemas.search",
    "NoteHit": "philont.schemas.search",
    "RetrievalResult": "philont.schemas.search",
    "SkillHit": "philont.schemas.search",
    "RecipeRecord": "philont.schemas.skills",
    "SkillRecord": "philont.schemas.skills",
    "MessageIn": "philont.schemas.timeline",
    "MessageRecord": "philont.schemas.timeline",
    "SessionOverview": "philont.schemas.timeline",
    "SessionRecord": "philont.schemas.timeline",
    "Store": "philont.store",
    "tools": "philont.tools",  # the eleven tools (and their libraries)
}
"""Where each export lives: loaded on first use, so that ``import philont`` (and the command
line's start, its ``--help``) does not pay for SQLAlchemy, pydantic and the services."""


__getattr__ = lazy.exports(__name__, _LAZY)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
