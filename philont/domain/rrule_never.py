"""Rules that provably never occur, told cheaply from their parts (used by
:meth:`philont.domain.rrule_engine.Series.never_reason`, which checks a rule before it is
written)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from philont.domain.rrule import Freq
from philont.domain.rrule_days import weekday, year_start

if TYPE_CHECKING:
    from philont.domain.rrule_engine import Series

__all__ = ["never_reason"]

_PERIOD_KIND: Final = {Freq.YEARLY: "year", Freq.MONTHLY: "month", Freq.WEEKLY: "week"}


def never_reason(series: Series) -> str | None:
    """Why the rule can never produce an occurrence, when its parts tell that cheaply
    (bounded work; None means "not obviously empty")."""
    rule, days = series.rule, series.days
    if series.grid is not None:
        if not series.grid.offsets:
            return f"BYSETPOS picks positions that no single {rule.freq.name} period has"
        series.work.spend(1 if series.grid.full else len(series.grid.units))
        if not series.grid.reachable():
            return "its BYHOUR/BYMINUTE/BYSECOND values never fall on the INTERVAL grid"
    else:
        bound = days.max_per_range(_PERIOD_KIND.get(rule.freq, "day")) * len(series.times)
        if rule.bysetpos and all(abs(p) > bound for p in rule.bysetpos):
            return f"BYSETPOS asks for positions beyond the {bound} a period can hold"
        if rule.freq is Freq.MONTHLY and days.months is not None:
            reached = {(series.origin + k * rule.interval) % 12 + 1 for k in range(12)}
            if not reached & days.months:
                return "with this INTERVAL and start it never reaches its BYMONTH months"
        if rule.freq is Freq.DAILY and days.weekdays is not None and days.nth is None:
            first = weekday(series.origin)
            reached = {(first + k * rule.interval) % 7 for k in range(7)}
            if not reached & days.weekdays:
                return "with this INTERVAL and start it never reaches its BYDAY days"
    if days.restricts and not any(
        days.candidates(year_start(y), year_start(y + 1) - 1, work=series.work)
        for y in range(2000, 2400)  # the Gregorian calendar repeats every 400 years
    ):
        return "no date satisfies all of its parts"
    return None
