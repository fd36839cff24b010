"""Which blocks of a series can hold an occurrence at all, so a walk jumps over empty ones.

The day parts of a rule repeat every 400 years: 146,097 days, which is a whole number of weeks
(20,871), months (4,800) and years (400). So the days a :class:`DayFilter` allows, taken once
over one cycle, tell for every block (a FREQ period, stepped by INTERVAL) whether it holds an
allowed day: block ``k`` covers unit ``origin + k * step`` (a day, week, month or year), and
the ``k`` that land on an allowed unit form a pattern with period ``cycle / gcd(step, cycle)``.
Finding the next such block is then a bisection, however many empty blocks lie between.
"""

from __future__ import annotations

import bisect
import math
from datetime import date
from typing import Final, Protocol

from philont.domain.rrule import Freq
from philont.domain.rrule_days import MAX_ORDINAL, DayFilter, month_starts, year_of, year_start

__all__ = ["SPARSE_DAYS", "BlockTable", "block_table", "build_estimate", "next_month_in"]

CYCLE_DAYS: Final = 146_097
_CYCLE: Final = {Freq.YEARLY: 400, Freq.MONTHLY: 4_800, Freq.WEEKLY: 20_871, Freq.DAILY: CYCLE_DAYS}
_FIRST: Final = year_start(2000)
"""Any 400 years will do; these lie well inside the calendar."""

SPARSE_DAYS: Final = 5_000
"""Most allowed days per cycle (12.5 a year) for which a table is built: a denser filter fills
most blocks anyway, and walking them costs about what the occurrences found in them cost."""

_CACHE_SIZE: Final = 256


class _Spender(Protocol):
    def spend(self, n: int = 1) -> None: ...


class BlockTable:
    """Block numbers that can hold an allowed day: ``k`` with ``k % period`` in ``residues``."""

    __slots__ = ("period", "residues")

    def __init__(self, period: int, residues: tuple[int, ...]) -> None:
        self.period = period
        self.residues = residues

    def next(self, k: int) -> int | None:
        """The first such block at or after ``k``; None when there is none at all."""
        if not self.residues:
            return None
        cycles, rest = divmod(k, self.period)
        i = bisect.bisect_left(self.residues, rest)
        if i == len(self.residues):
            return (cycles + 1) * self.period + self.residues[0]
        return cycles * self.period + self.residues[i]


class _Tally:
    """Counts the work of building a table, to charge it on every use of the table."""

    def __init__(self) -> None:
        self.steps = 0

    def spend(self, n: int = 1) -> None:
        self.steps += n


_TABLES: dict[tuple[object, ...], tuple[BlockTable | None, int]] = {}


def _cycle_estimate(days: DayFilter) -> int:
    return min(days.estimates(_FIRST, _FIRST + CYCLE_DAYS - 1).values())


def build_estimate(days: DayFilter) -> int | None:
    """About what :func:`block_table` costs for this filter, in steps; None when the filter
    allows too many days to be worth a table."""
    estimate = _cycle_estimate(days)
    return None if estimate > SPARSE_DAYS else 400 + 2 * estimate


def _allowed_days(days: DayFilter, work: _Spender) -> tuple[int, ...] | None:
    """The allowed days of one cycle (ordinals from 2000-01-01); None when too many."""
    if _cycle_estimate(days) > SPARSE_DAYS:
        return None
    work.spend(400)  # the generators visit each year or month of the cycle once
    return tuple(days.candidates(_FIRST, _FIRST + CYCLE_DAYS - 1, work=work))


def _unit(freq: Freq, ordinal: int, origin: int) -> int:
    """The day, week (counted from the week of ``origin``), month or year holding a day."""
    if freq is Freq.DAILY:
        return ordinal
    if freq is Freq.WEEKLY:
        return (ordinal - origin) // 7
    if freq is Freq.MONTHLY:
        when = date.fromordinal(ordinal)
        return when.year * 12 + when.month - 1
    return year_of(ordinal)


def block_table(
    days: DayFilter, freq: Freq, origin: int, step: int, work: _Spender
) -> BlockTable | None:
    """Which blocks of a series can hold an allowed day (``freq`` DAILY for HOURLY and finer,
    whose blocks are days; ``origin`` the unit of block 0, a day ordinal for WEEKLY); None
    when the filter allows too many days to be worth a table. Built once per filter, origin
    and step, and charged to ``work`` at its full cost on every use, so what a call costs
    does not depend on what ran before it."""
    cycle = _CYCLE[freq]
    # A WEEKLY origin is a day (its weeks are counted from it); the others are units.
    key = (days, freq, origin % (CYCLE_DAYS if freq is Freq.WEEKLY else cycle), step % cycle)
    found = _TABLES.get(key)
    if found is None:
        tally = _Tally()
        found = (_build(days, freq, origin, step, tally), tally.steps)
        if len(_TABLES) >= _CACHE_SIZE:
            _TABLES.clear()
        _TABLES[key] = found
    work.spend(found[1])
    return found[0]


def _build(days: DayFilter, freq: Freq, origin: int, step: int, work: _Tally) -> BlockTable | None:
    allowed = _allowed_days(days, work)
    if allowed is None:
        return None
    work.spend(len(allowed))
    cycle = _CYCLE[freq]
    start = 0 if freq is Freq.WEEKLY else origin
    shared = math.gcd(step, cycle)
    period = cycle // shared
    inverse = pow(step // shared, -1, period)
    residues = set()
    for ordinal in allowed:
        delta = _unit(freq, ordinal, origin) - start
        if delta % shared == 0:  # origin + k * step reaches this unit for these k
            residues.add(delta // shared * inverse % period)
    return BlockTable(period, tuple(sorted(residues)))


def next_month_in(block: tuple[int, int], months: frozenset[int]) -> int | None:
    """None when the days ``block`` spans (at most two months) touch one of ``months``; else
    the first day of the next such month (past the calendar when there is none)."""
    first = date.fromordinal(block[0])
    last = date.fromordinal(min(block[1], MAX_ORDINAL))
    if first.month in months or last.month in months:
        return None
    year, month = last.year, last.month
    while True:  # one of the next twelve months is allowed
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        if month in months:
            break
    return MAX_ORDINAL + 1 if year > 9999 else month_starts(year)[month - 1]
