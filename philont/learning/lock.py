"""One learner of an agent writes at a time.

Every writer of the loop reads what is stored before it inserts: the same note or fact
version (extraction), the same skill (reflection, condensing), a run's verdict, whether a case
was condensed. Two learners of one agent on PostgreSQL (READ COMMITTED) both read "not there"
and both inserted. A unique constraint would need a migration (and Philont's schema has none
to add), so each writer first takes the agent's learning lock instead
(:meth:`~philont.db.backend.Backend.serialize`: a transaction-scoped advisory lock on
PostgreSQL; nothing on SQLite, where a writing unit of work already holds the file's one write
lock). It is held to the end of the transaction: a second learner waits, then reads what the
first one wrote. Whatever a writer read before taking it is read again after.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from philont.memory import Memory

__all__ = ["LEARNING_LOCK", "hold_learning_lock"]

LEARNING_LOCK: Final = "learning"


def hold_learning_lock(mem: Memory) -> None:
    """Make ``mem``'s transaction the agent's only learning writer until it ends (taking it
    again in the same transaction is harmless)."""
    mem.backend.serialize(mem.session, LEARNING_LOCK)
