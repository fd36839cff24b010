"""A brute-force cron oracle, independent of croniter, ``fold`` and philont: every wall-clock
minute of a window is matched by its own reading of the five fields (Vixie cron's: the
day-of-month and day-of-week fields are ORed only when neither contains ``*``) and placed from
the zone's UTC offsets alone, at the earliest instant whose local time it is, or, for a minute
no instant shows (the spring gap), moved forward by the gap."""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

_FIELDS = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))


def _values(text: str, lo: int, hi: int) -> set[int]:
    out: set[int] = set()
    for part in text.split(","):
        body, _, step = part.partition("/")
        if body == "*":
            first, last = lo, hi
        elif "-" in body:
            first, last = map(int, body.split("-"))
        else:
            first = int(body)
            last = hi if step else first
        out.update(range(first, last + 1, int(step or 1)))
    return out


def _matcher(expr: str) -> Callable[[datetime], bool]:
    fields = expr.split()
    minutes, hours, days, months, weekdays = (
        _values(text, lo, hi) for text, (lo, hi) in zip(fields, _FIELDS, strict=True)
    )
    weekdays = {d % 7 for d in weekdays}
    either = "*" not in fields[2] and "*" not in fields[4]

    def match(wall: datetime) -> bool:
        if wall.minute not in minutes or wall.hour not in hours or wall.month not in months:
            return False
        day, weekday = wall.day in days, wall.isoweekday() % 7 in weekdays
        return (day or weekday) if either else (day and weekday)

    return match


def offset(at: datetime, zone: zoneinfo.ZoneInfo) -> timedelta:
    return at.astimezone(zone).utcoffset() or timedelta(0)


def oracle(expr: str, zone_name: str, start: datetime, end: datetime) -> list[datetime]:
    """Every instant in ``(start, end]`` the cron names, by brute force."""
    zone = zoneinfo.ZoneInfo(zone_name)
    offsets = {offset(start + timedelta(minutes=m), zone) for m in range(-2880, 4 * 2880, 15)}
    match = _matcher(expr)
    wall = (start + min(offsets) - timedelta(hours=1)).replace(tzinfo=None, second=0, microsecond=0)
    last = (end + max(offsets) + timedelta(hours=1)).replace(tzinfo=None)
    fired: set[datetime] = set()
    while wall <= last:
        if match(wall):
            shown = [
                (wall - o).replace(tzinfo=UTC)
                for o in offsets
                if offset((wall - o).replace(tzinfo=UTC), zone) == o
            ]
            if shown:
                fired.add(min(shown))
            else:  # in a gap: moved forward by it (the offset in force just before the gap)
                before = (wall - max(offsets)).replace(tzinfo=UTC)
                fired.add((wall - offset(before, zone)).replace(tzinfo=UTC))
        wall += timedelta(minutes=1)
    return sorted(at for at in fired if start < at <= end)
