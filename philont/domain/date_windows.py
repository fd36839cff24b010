"""Calendar windows for date phrases: days, weeks, weekends, months and years as date ranges."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Literal

Granularity = Literal["day", "weekend", "week", "month", "year"]

MIN_YEAR, MAX_YEAR = 1900, 2199
"""Years outside this range are not read as years (four digits are often something else)."""

MAX_AGO = 500
"""``N units ago`` with N above this is not read as a date."""


def month_start(year: int, month: int) -> date:
    return date(year, month, 1)


def next_month(year: int, month: int) -> date:
    return date(year + month // 12, month % 12 + 1, 1)


def months_back(day: date, n: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 - n
    return index // 12, index % 12 + 1


def week_start(day: date) -> date:
    """The Monday of ``day``'s week (ISO weeks)."""
    return day - timedelta(days=day.weekday())


@dataclass(frozen=True)
class Window:
    """Days ``first <= d < stop`` and what they are (a day, a week ...)."""

    first: date
    stop: date  # exclusive
    granularity: Granularity


def day_window(day: date) -> Window:
    return Window(day, day + timedelta(days=1), "day")


def month_window(year: int, month: int) -> Window:
    return Window(month_start(year, month), next_month(year, month), "month")


def year_window(year: int) -> Window:
    return Window(date(year, 1, 1), date(year + 1, 1, 1), "year")


def week_window(monday: date) -> Window:
    return Window(monday, monday + timedelta(days=7), "week")


def weekend_before(today: date) -> Window:
    """The last Saturday-Sunday that ended before ``today``'s week-end began."""
    saturday = week_start(today) - timedelta(days=2)
    return Window(saturday, saturday + timedelta(days=2), "weekend")


def recent_month(today: date, month: int, *, strictly_before: bool = False) -> tuple[int, int]:
    """The year of the most recent ``month`` not after ``today``'s month (or before it)."""
    year = today.year
    if month > today.month or (strictly_before and month == today.month):
        year -= 1
    return year, month


def valid_day(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


LEAP_GAP = 8
"""The longest run of years without a 29 February (1896 to 1904; 2096 to 2104)."""


def recent_day(today: date, month: int, day: int) -> date | None:
    """The most recent ``month``/``day`` not after ``today`` (a date named without its year),
    or None if no year holds that day (30 February). A 29 February is the last leap day:
    the guessed year and the one before it may both lack one."""
    for back in range(LEAP_GAP + 1):
        found = valid_day(today.year - back, month, day)
        if found is not None and found <= today:
            return found
    return None


def ago(today: date, n: int, unit: str) -> Window | None:
    """``n`` units before ``today``: that day, that week, that month or that year."""
    if n < 1 or n > MAX_AGO:
        return None
    if unit == "day":
        return day_window(today - timedelta(days=n))
    if unit == "week":
        return week_window(week_start(today) - timedelta(days=7 * n))
    if unit == "month":
        return month_window(*months_back(today, n))
    if today.year - n < MIN_YEAR:
        return None
    return year_window(today.year - n)


Reader = Callable[[re.Match[str], date], "tuple[Window, float] | None"]
Rule = tuple[re.Pattern[str], Reader, bool]
"""A phrase's pattern, its reader (window and confidence, or None), and whether it counts from
``now`` ("last week") rather than naming a date ("May 2023")."""
