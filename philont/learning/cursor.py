"""The consolidator's cursor: Philont's fact ``system.last_consolidated_ts``, the epoch ms of
the last message consolidated (a JSON number), moved in place after the first batch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from philont.db.models import Fact
from philont.domain import decay
from philont.domain.timepolicy import MAX_EPOCH_MS, MIN_EPOCH_MS
from philont.learning.extract import LOOP_NAMESPACE

if TYPE_CHECKING:
    from philont.memory import Memory

__all__ = [
    "BEFORE_START",
    "CURSOR_KEY",
    "CURSOR_NAMESPACE",
    "expected_cursor",
    "read_cursor",
    "write_cursor",
]

CURSOR_NAMESPACE = LOOP_NAMESPACE  # extraction never writes there
CURSOR_KEY = "last_consolidated_ts"
BEFORE_START = -1
"""``after_ts`` of the first batch (no cursor yet)."""


def _cursor_row(session: Session) -> Fact | None:
    return session.scalars(
        select(Fact)
        .where(
            Fact.namespace == CURSOR_NAMESPACE,
            Fact.key == CURSOR_KEY,
            Fact.superseded_by.is_(None),
            Fact.forgotten_at.is_(None),
        )
        .order_by(Fact.created_at.desc(), Fact.id.desc())
        .limit(1)
        .execution_options(populate_existing=True)
    ).first()


def _as_ms(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    # A number past the times a message can have (another program's, a typo) is read as the
    # nearest end of them: as it was, one no 64-bit column holds failed every claim with an
    # OverflowError (a traceback on the command line), for good.
    return min(max(int(value), MIN_EPOCH_MS - 1), MAX_EPOCH_MS)


def read_cursor(session: Session) -> int | None:
    """The cursor (epoch ms of the last consolidated message), or None before the first batch
    (or when the fact holds something that is not a whole number, as Philont reads it); a
    number before or after every time a message can have is read as that end."""
    row = _cursor_row(session)
    return None if row is None else _as_ms(row.value)


def write_cursor(mem: Memory, value: int) -> None:
    """Move the cursor: in place when the fact exists (no new version per batch). It is
    pinned: moving it never refreshes its access time, so with decay the sweep would forget
    it after a few years, and the messages after it would never be learned from (Q-D5)."""
    row = _cursor_row(mem.session)
    if row is None:
        mem.facts.store(CURSOR_NAMESPACE, CURSOR_KEY, value, decay_tau_days=decay.PIN_SENTINEL)
    else:
        row.value = value
        row.decay_tau_days = decay.PIN_SENTINEL
        mem.session.flush()


def expected_cursor(after: int) -> int | None:
    """The cursor while the batch after ``after`` is still to be done."""
    return None if after == BEFORE_START else after
