"""What a series expansion may spend (:class:`Work`), and what a zone tells it about repeated
instants (:class:`Repeats`); used by :mod:`philont.domain.rrule_engine`, which re-exports them."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Final, Protocol

if TYPE_CHECKING:
    from philont.domain.rrule_engine import Series

__all__ = ["DEFAULT_WORK_LIMIT", "Repeats", "Work", "WorkLimitExceeded"]

DEFAULT_WORK_LIMIT: Final = 200_000
"""Steps one expansion may take: about a tenth of a second of Python."""


class WorkLimitExceeded(Exception):
    """An expansion needed more steps than its ``Work`` allows."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"needs more than {limit} steps")
        self.limit = limit


class Work:
    """A step counter with a ceiling. A step is O(1) work: a block visited, a candidate day
    tested, an occurrence produced. Tests read ``steps`` to prove boundedness."""

    __slots__ = ("limit", "steps")

    def __init__(self, limit: int = DEFAULT_WORK_LIMIT) -> None:
        self.limit = limit
        self.steps = 0

    def spend(self, n: int = 1) -> None:
        self.steps += n
        if self.steps > self.limit:
            raise WorkLimitExceeded(self.limit)


class Repeats(Protocol):
    """Which wall-clock occurrences of a series fall on the instant of an earlier one (in a zone,
    a time its clock skips is read a gap later, where the series may already have one). Such a
    repeat is no occurrence of its own: the series does not yield it and COUNT does not count
    it. Both methods look at the plain wall-clock series (``occurrences_from(..., plain=True)``).
    """

    def repeats(self, series: Series, wall: datetime) -> bool:
        """Whether the wall-clock occurrence ``wall`` repeats an earlier one's instant."""

    def before(self, series: Series, lower: datetime) -> int:
        """How many wall-clock occurrences before ``lower`` are repeats."""
