"""Bounded RFC 5545 expansion in wall-clock time, every step counted against a work limit.

A series is walked in *blocks*: one FREQ period for YEARLY..DAILY, one day for HOURLY and
finer (the grid of hours, minutes or seconds inside a day is solved arithmetically, so a day
costs one step however fine the rule). Any block can be reached in O(1) from the start, so
expansion skips straight to a window; only COUNT needs the blocks before it, and those are
counted in bulk (O(1) per block, or O(1) overall when every block holds the same number).
Inside a walk, runs of empty blocks are jumped over (:mod:`philont.domain.rrule_skip`), so a
rare rule costs steps per occurrence, not per day between them.
Nothing here can overflow: days are integers, and the series ends where the calendar ends.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator, Sequence
from datetime import date, datetime, timedelta
from typing import Final

from philont.domain.rrule import Freq, Rule
from philont.domain.rrule_days import (
    MAX_ORDINAL,
    DayFilter,
    month_starts,
    weekday,
    year_of,
    year_start,
)
from philont.domain.rrule_grid import DAY, UNIT, Grid, ceil_div, select, time_set
from philont.domain.rrule_never import never_reason
from philont.domain.rrule_skip import BlockTable, block_table, build_estimate, next_month_in
from philont.domain.rrule_work import DEFAULT_WORK_LIMIT, Repeats, Work, WorkLimitExceeded

__all__ = ["DEFAULT_WORK_LIMIT", "Repeats", "Series", "Work", "WorkLimitExceeded"]


def _day_filter(rule: Rule, start: datetime) -> DayFilter:
    months = frozenset(rule.bymonth) or None
    monthdays = frozenset(rule.bymonthday) or None
    weekdays = frozenset(wd for n, wd in rule.byday if n == 0) or None
    nth = frozenset((n, wd) for n, wd in rule.byday if n != 0) or None
    # RFC 5545 / dateutil defaults: without any day part, the start supplies one.
    if not (rule.byweekno or rule.byyearday or rule.bymonthday or rule.byday):
        if rule.freq is Freq.YEARLY:
            months = months or frozenset({start.month})
            monthdays = frozenset({start.day})
        elif rule.freq is Freq.MONTHLY:
            monthdays = frozenset({start.day})
        elif rule.freq is Freq.WEEKLY:
            weekdays = frozenset({start.weekday()})
    return DayFilter(
        months=months,
        monthdays=monthdays,
        yeardays=frozenset(rule.byyearday) or None,
        weeknos=frozenset(rule.byweekno) or None,
        weekdays=weekdays,
        nth=nth,
        nth_in_month=rule.freq is Freq.MONTHLY or bool(rule.bymonth),
        wkst=rule.wkst,
    )


_Key = tuple[int, int]
"""A point in wall-clock time: (day ordinal, second of the day)."""

_PERIOD_STEPS: Final = 4
"""What setting up a week, month or year costs, in steps (choosing how to generate its days
takes a few times the work of testing one day)."""

_MAX_PERIOD: Final = 400
"""Longest repeating pattern (in blocks) that COUNT arithmetic uses; longer ones are walked."""


def _key(value: datetime) -> _Key:
    return value.toordinal(), value.hour * 3600 + value.minute * 60 + value.second


class Series:
    """The occurrences of a rule that starts at a naive wall-clock time, in order.

    Every call shares one :class:`Work`; each block visited, candidate day tested and
    occurrence produced is a step, and :class:`WorkLimitExceeded` ends a call that would need
    more. ``COUNT`` is honoured; UNTIL is left to the caller (it is an instant, not a wall time).
    With ``repeats`` (see :class:`Repeats`) the wall-clock occurrences that repeat an earlier
    one's instant are left out and not counted, so COUNT=N still yields N distinct instants.
    """

    def __init__(
        self, rule: Rule, start: datetime, work: Work | None = None, repeats: Repeats | None = None
    ) -> None:
        self.rule = rule
        self.repeats = repeats
        self.work = work if work is not None else Work()
        self.start = start.replace(microsecond=0, tzinfo=None)
        self.start_key = _key(self.start)
        self.days = _day_filter(rule, self.start)
        self.grid = Grid(rule, self.start, self.work) if rule.freq in UNIT else None
        self.times: tuple[int, ...] = ()
        if self.grid is None:
            self.times, _ = time_set(
                rule.byhour or (self.start.hour,),
                rule.byminute or (self.start.minute,),
                rule.bysecond or (self.start.second,),
                self.work,
            )
        day = self.start_key[0]
        if rule.freq is Freq.WEEKLY:
            self.origin = day - (weekday(day) - rule.wkst) % 7
        elif rule.freq is Freq.MONTHLY:
            self.origin = self.start.year * 12 + self.start.month - 1
        elif rule.freq is Freq.YEARLY:
            self.origin = self.start.year
        else:
            self.origin = day
        self.last_block = self._last_block()
        self._table: BlockTable | None = None
        self._empty_blocks = 0
        self._table_after: int | None = None  # empty blocks walked before building a table
        self._last: datetime | None = None  # what last() found, once it looked
        self._last_known = False

    def _last_block(self) -> int:
        """The index of the last block that starts inside the calendar."""
        step, freq = self.rule.interval, self.rule.freq
        if self.grid is not None:
            return MAX_ORDINAL - self.origin
        if freq is Freq.DAILY:
            return (MAX_ORDINAL - self.origin) // step
        if freq is Freq.WEEKLY:
            return (MAX_ORDINAL - self.origin) // (7 * step)
        if freq is Freq.MONTHLY:
            return (9999 * 12 + 11 - self.origin) // step
        return (9999 - self.origin) // step

    # --- blocks ---------------------------------------------------------------------------------

    def _block(self, k: int) -> tuple[int, int] | None:
        """The first and last day of block ``k``; None past the end of the calendar."""
        step, freq = self.rule.interval, self.rule.freq
        if self.grid is not None or freq is Freq.DAILY:
            day = self.origin + k * (1 if self.grid is not None else step)
            return None if day > MAX_ORDINAL else (day, day)
        if freq is Freq.WEEKLY:
            first = self.origin + 7 * k * step
            return None if first > MAX_ORDINAL else (first, first + 6)
        if freq is Freq.MONTHLY:
            year, month0 = divmod(self.origin + k * step, 12)
            if year > 9999:
                return None
            starts = month_starts(year)
            return starts[month0], starts[month0 + 1] - 1
        year = self.origin + k * step
        return None if year > 9999 else (year_start(year), year_start(year + 1) - 1)

    def _block_at(self, day: int) -> int:
        """The first block that ends on or after ``day``."""
        step, freq = self.rule.interval, self.rule.freq
        if self.grid is not None:
            k = day - self.origin
        elif freq is Freq.DAILY:
            k = ceil_div(day - self.origin, step)
        elif freq is Freq.WEEKLY:
            k = ceil_div(day - self.origin - 6, 7 * step)
        elif freq is Freq.MONTHLY:
            when = date.fromordinal(min(max(day, 1), MAX_ORDINAL))
            k = ceil_div(when.year * 12 + when.month - 1 - self.origin, step)
        else:
            k = ceil_div(year_of(day) - self.origin, step)
        return max(k, 0)

    def _days_of(self, k: int) -> list[int]:
        block = self._block(k)
        if block is None:
            self.work.spend(1)
            return []
        if block[0] == block[1]:  # DAILY: one day, no generation needed
            self.work.spend(1)
            day = block[0]
            return [day] if not self.days.restricts or self.days.allows(day) else []
        self.work.spend(_PERIOD_STEPS)
        return self.days.candidates(*block, work=self.work)

    def _units_of(self, k: int) -> tuple[int, Sequence[int]]:
        assert self.grid is not None
        day = self.origin + k
        self.work.spend(1)
        if day > MAX_ORDINAL or (self.days.restricts and not self.days.allows(day)):
            return day, ()
        return day, self.grid.units_on(day, self.work)

    def _picks(self, days: list[int]) -> list[_Key]:
        """BYSETPOS over one period: positions in days x times (never materialised whole)."""
        n = len(self.times)
        return [
            (days[i // n], self.times[i % n]) for i in select(len(days) * n, self.rule.bysetpos)
        ]

    def _items(self, k: int, lower: _Key) -> Iterator[_Key]:
        """The occurrences of block ``k`` at or after ``lower``, ascending."""
        if self.grid is not None:
            day, units = self._units_of(k)
            offsets, unit = self.grid.offsets, self.grid.unit
            if not offsets:
                return
            floor = lower[1] if day == lower[0] else 0
            first = bisect.bisect_left(units, (floor - offsets[-1]) // unit)
            for u in units[first:]:
                for offset in offsets:
                    second = u * unit + offset
                    if (day, second) >= lower:
                        self.work.spend(1)
                        yield day, second
            return
        days = self._days_of(k)
        if self.rule.bysetpos:
            for item in self._picks(days):
                if item >= lower:
                    self.work.spend(1)
                    yield item
            return
        for day in days:
            if day < lower[0]:
                continue
            first = bisect.bisect_left(self.times, lower[1]) if day == lower[0] else 0
            for second in self.times[first:]:
                self.work.spend(1)
                yield day, second

    def _count_in(self, k: int, lower: _Key, upper: _Key | None) -> int:
        """How many occurrences of block ``k`` lie in ``[lower, upper)``, counted in bulk."""
        if self.grid is not None:
            day, units = self._units_of(k)
            if not units:
                return 0
            lo = lower[1] if day == lower[0] else 0
            hi = upper[1] if upper is not None and day == upper[0] else DAY
            if day < lower[0] or (upper is not None and day > upper[0]):
                return 0
            unit = self.grid.unit
            return sum(
                bisect.bisect_left(units, ceil_div(hi - e, unit))
                - bisect.bisect_left(units, ceil_div(lo - e, unit))
                for e in self.grid.offsets
            )
        days = self._days_of(k)
        if self.rule.bysetpos:
            return sum(
                1 for item in self._picks(days) if item >= lower and (upper is None or item < upper)
            )
        total = 0
        for day in days:
            if day < lower[0] or (upper is not None and day > upper[0]):
                continue
            a = bisect.bisect_left(self.times, lower[1]) if day == lower[0] else 0
            b = len(self.times)
            if upper is not None and day == upper[0]:
                b = bisect.bisect_left(self.times, upper[1])
            total += max(0, b - a)
        return total

    def _period(self) -> int | None:
        """A number of blocks P after which the occurrences per block repeat (blocks 1, 2, ...
        hold as many as blocks 1 + P, 2 + P, ...), when P is small; else None.

        Weekday-only day parts repeat weekly; a sub-daily grid repeats when the days realign
        with the interval. Month and year parts follow the irregular calendar: no period.
        """
        days, step = self.days, self.rule.interval
        only_weekdays = (
            days.weekdays is not None
            and days.months is None
            and days.monthdays is None
            and days.yeardays is None
            and days.weeknos is None
            and days.nth is None
        )
        if days.restricts and not only_weekdays:
            return None
        day_period = 7 if days.restricts else 1
        if self.grid is not None:
            grid_period = self.grid.interval // math.gcd(self.grid.per_day, self.grid.interval)
            period = math.lcm(day_period, grid_period)
        elif self.rule.freq is Freq.DAILY:
            period = day_period // math.gcd(day_period, step)
        elif self.rule.freq is Freq.WEEKLY:
            period = 1
        else:
            return None
        return period if period <= _MAX_PERIOD else None

    def _count_blocks(self, first: int, end: int, cap: int) -> int:
        """Occurrences in the whole blocks ``first .. end - 1`` (first >= 1), at most ``cap``:
        whole periods at once, the rest block by block."""
        total, k = 0, first
        period = self._period() if end - first > 1 else None
        if period is not None:
            per_period = sum(self._count_in(j, self.start_key, None) for j in range(1, 1 + period))
            cycles = (end - first) // period
            total, k = cycles * per_period, first + cycles * period
        while k < end and total < cap and k <= self.last_block:
            total += self._count_in(k, self.start_key, None)
            k += 1
        return min(total, cap)

    # --- the series -----------------------------------------------------------------------------

    def count_before(self, lower: _Key, cap: int) -> int:
        """How many occurrences precede ``lower`` (at most ``cap``; the walk stops there)."""
        end = self._block_at(lower[0])
        if end == 0:
            return min(cap, self._count_in(0, self.start_key, lower))
        total = self._count_in(0, self.start_key, None)
        if total < cap:
            total += self._count_blocks(1, end, cap - total)
        if total < cap and end <= self.last_block:
            total += self._count_in(end, self.start_key, lower)
        return min(total, cap)

    def occurrences_from(
        self, lower: datetime, upper: datetime | None = None, *, plain: bool = False
    ) -> Iterator[datetime]:
        """The occurrences at or after ``lower`` (naive wall-clock time), ascending, until
        ``upper`` (inclusive), COUNT is used up, or the calendar ends. With ``upper`` the walk
        stops at the last block that can hold an occurrence before it, even when the series
        yields nothing there (a rule that never matches costs one step per block, no more).
        ``plain``: every wall-clock occurrence, repeats included, COUNT ignored."""
        key = max(self.start_key, _key(lower))
        if lower.microsecond and key == _key(lower):
            key = (key[0], key[1] + 1) if key[1] < DAY - 1 else (key[0] + 1, 0)
        last_day = MAX_ORDINAL if upper is None else min(upper.toordinal(), MAX_ORDINAL)
        if key[0] > last_day:
            return
        remaining = None
        if self.rule.count is not None and not plain:
            remaining = self.rule.count - self._distinct_before(key, upper)
            if remaining <= 0:
                return
        repeats = None if plain else self.repeats
        k = self._block_at(key[0])
        while (block := self._block(k)) is not None and block[0] <= last_day:
            produced = False
            for day, second in self._items(k, key):
                at = datetime.fromordinal(day) + timedelta(seconds=second)
                if upper is not None and at > upper:
                    return
                produced = True
                if repeats is not None and repeats.repeats(self, at):
                    continue
                yield at
                if remaining is not None:
                    remaining -= 1
                    if remaining == 0:
                        return
            k = k + 1 if produced else self._skip(k + 1)

    def _distinct_before(self, key: _Key, upper: datetime | None) -> int:
        """How many occurrences that are no repeat precede ``key`` (at most COUNT), or, when
        that cannot matter before ``upper``, how many wall-clock ones do: the repeats are
        counted only where COUNT can run out inside the walk (they cost a look at each year
        from the start), and never past the series' last occurrence (:meth:`last`)."""
        count = self.rule.count
        assert count is not None
        wall = self.count_before(key, count)
        if self.repeats is None or wall == 0:
            return wall
        lower = datetime.fromordinal(key[0]) + timedelta(0, key[1])
        if wall < count:  # every wall-clock occurrence before ``key`` counted, none past COUNT
            if upper is not None:
                after = _key(upper + timedelta(seconds=1))
                if count - wall > self.count_before(after, count) - wall:
                    return wall  # COUNT outlasts the walk however many repeats lie before it
            # so ``key`` is not past the last one (:meth:`last`): no walk to it, nor a recount
            return wall - self.repeats.before(self, lower)
        end = self.last()  # at COUNT already, wall-clock: past the last one, COUNT ran out
        if end is not None and lower > end:
            return count
        extra = self.repeats.before(self, lower)
        return wall if extra == 0 else self.count_before(key, count + extra) - extra

    def has(self, wall: datetime) -> bool:
        """Whether ``wall`` is an occurrence of the plain wall-clock series."""
        return next(self.occurrences_from(wall, wall, plain=True), None) == wall

    def _skip(self, k: int) -> int:
        """The first block at or after ``k`` that can hold an occurrence, found without
        visiting the empty blocks between (one step per jump). Walking each empty block made a
        sparse rule cost a step per day of a long stretch, and a listing walks one: an event
        lasting centuries is listed from the occurrences that started centuries before.

        Called after each empty block. The table of blocks with an allowed day costs up to
        a few thousand steps, so it is built only once the empty blocks walked have cost as
        much (so at most about twice the cheaper of walking and building)."""
        if self._empty_blocks == 0 and self.days.restricts:
            self._table_after = build_estimate(self.days)
        self._empty_blocks += 1
        if self._empty_blocks == self._table_after:
            freq = Freq.DAILY if self.grid is not None else self.rule.freq
            step = 1 if self.grid is not None else self.rule.interval
            self._table = block_table(self.days, freq, self.origin, step, self.work)
        while k <= self.last_block:
            nxt = self._jump(k)
            if nxt == k:
                return k
            self.work.spend(1)
            k = nxt
        return k

    def _jump(self, k: int) -> int:
        """A block at or after ``k``, and before any that can hold an occurrence: past blocks
        without an allowed day (the day parts' table, else BYMONTH) and, for HOURLY and finer
        with an INTERVAL over a day, past days without a point of the grid."""
        if self._table is not None:
            found = self._table.next(k)
            k = self.last_block + 1 if found is None else found
        elif self.days.months is not None and self.rule.freq is not Freq.YEARLY:
            k = self._next_in_months(k, self.days.months)
        if self.grid is not None and k <= self.last_block:
            k = self.grid.next_day(self.origin + k) - self.origin
        return k

    def _next_in_months(self, k: int, months: frozenset[int]) -> int:
        """Block ``k`` when it touches one of ``months``, else the first block that can."""
        block = self._block(k)
        if block is None:
            return k
        later = next_month_in(block, months)
        if later is None:
            return k
        return self.last_block + 1 if later > MAX_ORDINAL else max(k, self._block_at(later))

    def first(self) -> datetime | None:
        """The first occurrence, or None when there is none before the calendar ends."""
        return next(self.occurrences_from(self.start), None)

    def _nth_in_block(self, k: int, n: int) -> datetime:
        """The ``n``-th (from 1) occurrence of block ``k`` at or after the start, found by
        index arithmetic instead of walking the block (a day of seconds holds 86,400)."""
        index = n - 1 + self._count_in(k, (0, 0), self.start_key)  # skip those before the start
        if self.grid is not None:
            day, units = self._units_of(k)
            offsets = self.grid.offsets
            unit, offset = units[index // len(offsets)], offsets[index % len(offsets)]
            return datetime.fromordinal(day) + timedelta(seconds=unit * self.grid.unit + offset)
        days = self._days_of(k)
        if self.rule.bysetpos:
            day, second = self._picks(days)[index]
        else:
            size = len(self.times)
            day, second = days[index // size], self.times[index % size]
        return datetime.fromordinal(day) + timedelta(seconds=second)

    def last(self) -> datetime | None:
        """The COUNT-th occurrence of a COUNT series (None for others, and when the series
        runs past the end of the calendar). Costs about what ``count_before`` of any later
        point costs, which is what a listing pays for a COUNT series. With repeats: the
        wall-clock occurrence whose place, less the repeats up to it, is COUNT (the least
        such, found by raising the place by the repeats until it holds; never a repeat)."""
        count = self.rule.count
        if count is None:
            return None
        if not self._last_known:
            self._last, self._last_known = self._find_last(count), True
        return self._last

    def _find_last(self, count: int) -> datetime | None:
        n = count
        while True:
            found = self._nth(n)
            if found is None or self.repeats is None:
                return found
            extra = self.repeats.before(self, found + timedelta(seconds=1))
            if n == count + extra:
                return found
            n = count + extra

    def _nth(self, count: int) -> datetime | None:
        """The ``count``-th wall-clock occurrence (from 1), repeats included."""
        left, k = count, 0
        period = self._period()
        per_period = 0
        if period is not None:
            per_period = sum(self._count_in(j, self.start_key, None) for j in range(1, 1 + period))
        while k <= self.last_block:
            in_block = self._count_in(k, self.start_key, None)
            if left <= in_block:
                return self._nth_in_block(k, left)
            left -= in_block
            k += 1
            if k == 1 and period is not None:
                if per_period == 0:
                    return None
                cycles = (left - 1) // per_period
                left, k = left - cycles * per_period, 1 + cycles * period
        return None

    def never_reason(self) -> str | None:
        """Why the rule can never produce an occurrence, when its parts tell that cheaply
        (bounded work; None means "not obviously empty"): :func:`rrule_never.never_reason`."""
        return never_reason(self)
