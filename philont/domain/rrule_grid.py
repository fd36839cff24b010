"""The part of an RRULE inside one day for HOURLY, MINUTELY and SECONDLY: which hours, minutes
or seconds lie on the INTERVAL grid and pass the limiting BYxxx parts, solved arithmetically so
a day costs one step however fine the rule (see :mod:`philont.domain.rrule_engine`)."""

from __future__ import annotations

import math
from collections.abc import Container, Sequence
from datetime import datetime
from typing import Final, Protocol

from philont.domain.rrule import Freq, Rule

__all__ = ["DAY", "UNIT", "Grid", "ceil_div", "select", "time_set"]

DAY: Final = 86_400
UNIT: Final = {Freq.HOURLY: 3_600, Freq.MINUTELY: 60, Freq.SECONDLY: 1}
_CACHE_SIZE: Final = 256


class _Spender(Protocol):
    def spend(self, n: int = 1) -> None: ...


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def select(size: int, setpos: tuple[int, ...]) -> list[int]:
    """Indexes BYSETPOS picks from a set of ``size`` (all of them without BYSETPOS)."""
    if not setpos:
        return list(range(size))
    picked = {p - 1 if p > 0 else size + p for p in setpos}
    return sorted(i for i in picked if 0 <= i < size)


_TIME_SETS: dict[tuple[object, ...], tuple[tuple[int, ...], frozenset[int]]] = {}
_BUCKETS: dict[tuple[object, ...], Sequence[int]] = {}


def time_set(
    hours: tuple[int, ...],
    minutes: tuple[int, ...],
    seconds: tuple[int, ...],
    work: _Spender,
    unit: int = 1,
) -> tuple[tuple[int, ...], frozenset[int]]:
    """``(h*3600 + m*60 + s) // unit`` for every combination, ascending, and as a set. Built
    once per distinct combination (up to 86,400 values; building is counted as work)."""
    key = (hours, minutes, seconds, unit)
    found = _TIME_SETS.get(key)
    if found is None:
        work.spend(len(hours) * len(minutes) * len(seconds))
        values = tuple(
            (h * 3600 + m * 60 + s) // unit for h in hours for m in minutes for s in seconds
        )
        found = (values, frozenset(values))
        if len(_TIME_SETS) >= _CACHE_SIZE:
            _TIME_SETS.clear()
        _TIME_SETS[key] = found
    return found


class Grid:
    """HOURLY/MINUTELY/SECONDLY inside one day: the units (hours, minutes or seconds of the
    day) on the ``interval`` grid that pass the limiting BYxxx parts, and the offsets (seconds)
    each unit expands to: BYMINUTE/BYSECOND, then BYSETPOS, which picks within one unit."""

    def __init__(self, rule: Rule, start: datetime, work: _Spender) -> None:
        self.unit = UNIT[rule.freq]
        self.per_day = DAY // self.unit
        self.interval = rule.interval
        every_minute, every_second = tuple(range(60)), tuple(range(60))
        hours = rule.byhour or tuple(range(24))
        self.spec: tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]
        if rule.freq is Freq.HOURLY:
            self.spec = (hours, (0,), (0,))
            minutes = rule.byminute or (start.minute,)
            seconds = rule.bysecond or (start.second,)
            offsets = tuple(sorted(m * 60 + s for m in minutes for s in seconds))
        elif rule.freq is Freq.MINUTELY:
            self.spec = (hours, rule.byminute or every_minute, (0,))
            offsets = rule.bysecond or (start.second,)
        else:
            self.spec = (hours, rule.byminute or every_minute, rule.bysecond or every_second)
            offsets = (0,)
        limited = (rule.byhour, rule.byminute, rule.bysecond)[: int(rule.freq) - int(Freq.DAILY)]
        self.full = not any(limited)
        self.units: Sequence[int]
        self.unit_set: Container[int]
        if self.full:  # every unit of the day: no set to build, the grid alone decides
            self.units = self.unit_set = range(self.per_day)
        else:
            self.units, self.unit_set = time_set(*self.spec, work, self.unit)
        self.offsets = tuple(offsets[i] for i in select(len(offsets), rule.bysetpos))
        absolute = start.toordinal() * DAY + start.hour * 3600 + start.minute * 60 + start.second
        self.anchor = absolute // self.unit  # the start's unit; the grid is anchor + k * interval

    def units_on(self, ordinal: int, work: _Spender) -> Sequence[int]:
        """The grid units of one day that pass the limits, ascending."""
        r = (self.anchor - ordinal * self.per_day) % self.interval
        if self.interval >= self.per_day:
            return (r,) if r < self.per_day and r in self.unit_set else ()
        if self.full:
            return range(r, self.per_day, self.interval)
        key = (self.unit, self.interval, *self.spec, r)
        found = _BUCKETS.get(key)
        if found is None:
            on_grid = ceil_div(self.per_day - r, self.interval)
            work.spend(min(len(self.units), on_grid))
            if len(self.units) <= on_grid:
                found = tuple(u for u in self.units if u % self.interval == r)
            else:
                found = tuple(
                    u for u in range(r, self.per_day, self.interval) if u in self.unit_set
                )
            if len(_BUCKETS) >= _CACHE_SIZE:
                _BUCKETS.clear()
            _BUCKETS[key] = found
        return found

    def reachable(self) -> bool:
        """Whether any allowed unit is ever on the grid (each day shifts it by ``per_day``)."""
        g = math.gcd(self.per_day, self.interval)
        return self.full or any(u % g == self.anchor % g for u in self.units)

    def constant(self) -> bool:
        """Whether every day has the same grid units (the interval divides a day)."""
        return self.per_day % self.interval == 0
