"""The inclusive end of a window given as a date ("until 4 April"): the last millisecond of
that local day, also where the day's last hour happens twice (clocks going back at midnight,
as Santiago's do in April) or the next day starts after a gap."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain import timepolicy
from philont.domain.timeparse import parse_time

MIDNIGHT_CHANGERS = [
    "America/Santiago",
    "America/Asuncion",
    "America/Sao_Paulo",
    "Asia/Beirut",
    "Asia/Damascus",
    "America/Havana",
    "Pacific/Easter",
    "Europe/Berlin",
]


def _offset(zone: ZoneInfo, day: date) -> timedelta | None:
    return datetime.combine(day, time(12), zone).utcoffset()


def _change_days() -> list[tuple[str, date]]:
    """Every day (and the day before) on which one of these zones changed its offset,
    2000-2030."""
    found = []
    for name in MIDNIGHT_CHANGERS:
        zone = ZoneInfo(name)
        day = date(2000, 1, 1)
        while day < date(2031, 1, 1):
            after = day + timedelta(days=1)
            if _offset(zone, day) != _offset(zone, after):
                found += [(name, day), (name, after)]
            day = after
    return found


CHANGE_DAYS = _change_days()


def _check_last_millisecond(name: str, day: date) -> None:
    zone = ZoneInfo(name)
    end = parse_time(day.isoformat(), field="until", tz=name, end_of_day=True)
    assert end is not None
    next_ms = end + timedelta(milliseconds=1)
    assert end.astimezone(zone).date() <= day < next_ms.astimezone(zone).date(), (
        name,
        day,
        end.astimezone(zone),
        next_ms.astimezone(zone),
    )


def test_santiagos_repeated_last_hour_is_inside_the_day() -> None:
    end = parse_time("2026-04-04", field="until", tz="America/Santiago", end_of_day=True)
    assert end == datetime(2026, 4, 5, 3, 59, 59, 999_000, tzinfo=UTC)  # 23:59:59.999-04:00


@pytest.mark.parametrize(("name", "day"), CHANGE_DAYS[:: max(1, len(CHANGE_DAYS) // 400)])
def test_the_end_of_a_day_of_a_clock_change_is_its_last_millisecond(name: str, day: date) -> None:
    _check_last_millisecond(name, day)


@given(
    name=st.sampled_from(sorted(timepolicy._zone_names().values())),
    day=st.dates(min_value=date(1900, 1, 1), max_value=date(2100, 12, 31)),
)
def test_the_end_of_any_day_is_its_last_millisecond(name: str, day: date) -> None:
    zone = ZoneInfo(name)
    first = datetime.combine(day, time(0), zone).astimezone(UTC).astimezone(zone)
    after = datetime.combine(day + timedelta(days=1), time(0), zone)
    if first.date() > day or after.astimezone(UTC).astimezone(zone).date() < day:
        return  # a day the zone skipped (Samoa's 30 December 2011) has no millisecond
    _check_last_millisecond(name, day)
