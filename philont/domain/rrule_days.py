"""Which days an RRULE allows: calendar arithmetic on day ordinals, the BYxxx day filters, and
cheap generation of the candidate days of a range (the most selective part generates).

Days are ``date.toordinal()`` integers (0001-01-01 is 1), so no arithmetic can overflow: a
range past the end of the calendar is simply clipped.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import date
from typing import Final, Protocol

__all__ = ["MAX_ORDINAL", "DayFilter", "weekday", "year_of", "year_start"]

MAX_ORDINAL: Final = date.max.toordinal()
_MONTH_DAYS: Final = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class Spender(Protocol):
    """What counts the work (:class:`philont.domain.rrule_engine.Work`)."""

    def spend(self, n: int = 1) -> None: ...


def year_start(year: int) -> int:
    """Ordinal of January 1 of ``year`` (proleptic Gregorian; works for years 0 and 10000)."""
    p = year - 1
    return p * 365 + p // 4 - p // 100 + p // 400 + 1


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def weekday(ordinal: int) -> int:
    """Monday 0 .. Sunday 6 (0001-01-01 was a Monday)."""
    return (ordinal + 6) % 7


def year_of(ordinal: int) -> int:
    if ordinal < 1:
        return 0
    if ordinal > MAX_ORDINAL:
        return 10_000
    return date.fromordinal(ordinal).year


@functools.lru_cache(maxsize=4096)
def month_starts(year: int) -> tuple[int, ...]:
    """Ordinals of the first day of each month of ``year``, plus January 1 of the next year."""
    start = year_start(year)
    out = [start]
    for month, days in enumerate(_MONTH_DAYS, 1):
        start += days + (1 if month == 2 and _leap(year) else 0)
        out.append(start)
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def _week_one(year: int, wkst: int) -> int:
    """Ordinal of the first day of week 1: the first week (starting on ``wkst``) with at least
    four days in ``year`` (RFC 5545, ISO 8601 when ``wkst`` is Monday)."""
    fourth = year_start(year) + 3
    return fourth - (weekday(fourth) - wkst) % 7


def _week_number(ordinal: int, wkst: int) -> tuple[int, int]:
    """(week number, weeks in that week-numbering year) of a day."""
    first = ordinal - (weekday(ordinal) - wkst) % 7
    year = year_of(first + 3)  # the year holding most of the week
    one = _week_one(year, wkst)
    return (first - one) // 7 + 1, (_week_one(year + 1, wkst) - one) // 7


def _ranges(lo: int, hi: int, months: frozenset[int] | None) -> list[tuple[int, int, int, int]]:
    """(year, month, first ordinal, last ordinal) of each month overlapping ``[lo, hi]``
    (``lo`` and ``hi`` inside the calendar)."""
    out = []
    first, last = date.fromordinal(lo), date.fromordinal(hi)
    year, month = first.year, first.month
    while (year, month) <= (last.year, last.month):
        if months is None or month in months:
            starts = month_starts(year)
            out.append((year, month, starts[month - 1], starts[month] - 1))
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


@dataclass(frozen=True)
class DayFilter:
    """The day parts of a rule (after RFC defaults), as a predicate and a candidate generator.

    ``nth_in_month``: numbered weekdays (``2MO``) count within each month (FREQ=MONTHLY, or
    YEARLY with BYMONTH) rather than within the year.
    """

    months: frozenset[int] | None
    monthdays: frozenset[int] | None
    yeardays: frozenset[int] | None
    weeknos: frozenset[int] | None
    weekdays: frozenset[int] | None
    nth: frozenset[tuple[int, int]] | None
    nth_in_month: bool
    wkst: int

    @functools.cached_property
    def restricts(self) -> bool:
        """Whether any day part is present (otherwise every day passes)."""
        return any(
            part is not None
            for part in (
                self.months,
                self.monthdays,
                self.yeardays,
                self.weeknos,
                self.weekdays,
                self.nth,
            )
        )

    def allows(self, ordinal: int) -> bool:
        """Whether the day passes every day part (a union within BYDAY, as RFC 5545 says)."""
        if not 1 <= ordinal <= MAX_ORDINAL:
            return False
        day = date.fromordinal(ordinal)
        if self.months is not None and day.month not in self.months:
            return False
        if self.monthdays is not None or (self.nth is not None and self.nth_in_month):
            starts = month_starts(day.year)
            month_len = starts[day.month] - starts[day.month - 1]
            if self.monthdays is not None and not (
                day.day in self.monthdays or day.day - month_len - 1 in self.monthdays
            ):
                return False
        if self.yeardays is not None or (self.nth is not None and not self.nth_in_month):
            first = year_start(day.year)
            yearday, year_len = ordinal - first + 1, year_start(day.year + 1) - first
            if self.yeardays is not None and not (
                yearday in self.yeardays or yearday - year_len - 1 in self.yeardays
            ):
                return False
        if self.weeknos is not None:
            number, weeks = _week_number(ordinal, self.wkst)
            if number not in self.weeknos and number - weeks - 1 not in self.weeknos:
                return False
        if self.weekdays is None and self.nth is None:
            return True
        wd = weekday(ordinal)
        if self.weekdays is not None and wd in self.weekdays:
            return True
        if self.nth is None:
            return False
        if self.nth_in_month:
            position, length = day.day, month_len
        else:
            position, length = yearday, year_len
        forward, backward = (position - 1) // 7 + 1, -((length - position) // 7 + 1)
        return (forward, wd) in self.nth or (backward, wd) in self.nth

    # --- candidate generation ------------------------------------------------------------------

    def max_per_range(self, kind: str) -> int:
        """An upper bound on the days one period (``year``/``month``/``week``/``day``) yields."""
        bound = {"year": 366, "month": 31, "week": 7, "day": 1}[kind]
        if kind == "day":
            return bound
        months = 12 if kind == "year" else 1
        if self.months is not None and kind == "year":
            bound = min(bound, 31 * len(self.months))
            months = len(self.months)
        if self.yeardays is not None:
            bound = min(bound, len(self.yeardays))
        if self.monthdays is not None:
            bound = min(bound, len(self.monthdays) * months)
        if self.weeknos is not None:
            bound = min(bound, 7 * len(self.weeknos))
        if self.weekdays is not None or self.nth is not None:
            per_day = {"year": 53, "month": 5, "week": 1}[kind]
            units = months if self.nth_in_month else 1
            bound = min(bound, len(self.weekdays or ()) * per_day + len(self.nth or ()) * units)
        return bound

    def candidates(self, lo: int, hi: int, *, work: Spender) -> list[int]:
        """The days of ``[lo, hi]`` that pass, sorted. The most selective part generates them,
        so the work (``work.spend``: one per day generated) is about the size of that part's
        expansion over the range, not the length of the range."""
        lo, hi = max(lo, 1), min(hi, MAX_ORDINAL)
        if lo > hi:
            return []
        out = self._generate(lo, hi)
        work.spend(len(out))
        return sorted(o for o in out if self.allows(o))

    def _estimates(self, lo: int, hi: int) -> dict[str, int]:
        years = year_of(hi) - year_of(lo) + 1
        months = years * 12 if self.months is None else years * len(self.months)
        months = min(months, (hi - lo) // 28 + 2)
        est = {"all": hi - lo + 1}
        if self.yeardays is not None:
            est["yeardays"] = len(self.yeardays) * years
        if self.monthdays is not None:
            est["monthdays"] = len(self.monthdays) * months
        if self.weeknos is not None:
            est["weeknos"] = 7 * len(self.weeknos) * (years + 2)
        if self.weekdays is not None or self.nth is not None:
            units = months if self.nth_in_month else years
            est["weekdays"] = (
                len(self.weekdays or ()) * ((hi - lo) // 7 + 1) + len(self.nth or ()) * units
            )
        if self.months is not None:
            est["months"] = 31 * months
        return est

    def _generate(self, lo: int, hi: int) -> set[int]:
        est = self._estimates(lo, hi)
        how = min(est, key=lambda k: est[k])
        if how == "all":
            return set(range(lo, hi + 1))
        if how == "months":
            return {o for _, _, a, b in _ranges(lo, hi, self.months) for o in range(a, b + 1)}
        if how == "monthdays":
            assert self.monthdays is not None
            out = set()
            for _, _, first, last in _ranges(lo, hi, self.months):
                for md in self.monthdays:
                    o = first + md - 1 if md > 0 else last + md + 1
                    if first <= o <= last:
                        out.add(o)
            return out
        if how == "yeardays":
            assert self.yeardays is not None
            out = set()
            for year in range(year_of(lo), year_of(hi) + 1):
                first, nxt = year_start(year), year_start(year + 1)
                for yd in self.yeardays:
                    o = first + yd - 1 if yd > 0 else nxt + yd
                    if first <= o < nxt:
                        out.add(o)
            return out
        if how == "weeknos":
            return self._weekno_days(lo, hi)
        return self._weekday_days(lo, hi)

    def _weekno_days(self, lo: int, hi: int) -> set[int]:
        assert self.weeknos is not None
        out: set[int] = set()
        for year in range(year_of(lo) - 1, year_of(hi) + 2):
            one = _week_one(year, self.wkst)
            weeks = (_week_one(year + 1, self.wkst) - one) // 7
            for number in self.weeknos:
                n = number if number > 0 else weeks + number + 1
                if 1 <= n <= weeks:
                    out.update(range(one + 7 * (n - 1), one + 7 * n))
        return {o for o in out if lo <= o <= hi}

    def _weekday_days(self, lo: int, hi: int) -> set[int]:
        out: set[int] = set()
        for wd in self.weekdays or ():
            out.update(range(lo + (wd - weekday(lo)) % 7, hi + 1, 7))
        if self.nth:
            if self.nth_in_month:
                units = [(a, b) for _, _, a, b in _ranges(lo, hi, self.months)]
            else:
                years = range(year_of(lo), year_of(hi) + 1)
                units = [(year_start(y), year_start(y + 1) - 1) for y in years]
            for first, last in units:
                for n, wd in self.nth:
                    if n > 0:
                        o = first + (wd - weekday(first)) % 7 + 7 * (n - 1)
                    else:
                        o = last - (weekday(last) - wd) % 7 + 7 * (n + 1)
                    if first <= o <= last and lo <= o <= hi:
                        out.add(o)
        return out
