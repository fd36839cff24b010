"""Cron schedules in a zone against a brute-force oracle (tests/cron_oracle.py), around the
zone's changes of offset.

The oracle knows nothing of croniter, ``fold`` or philont: it walks every wall-clock minute of a
window, matches it with its own reading of the five fields (Vixie cron's: the day-of-month and
day-of-week fields are ORed only when neither contains ``*``), and places each matching minute
from the zone's UTC offsets alone: at the earliest instant whose local time is that minute, or,
for a minute no instant shows (the spring gap), at the minute moved forward by the gap. So every
intended local time fires exactly once: none lost in the gap (02:30 fires at 03:30), none
doubled in the overlap (the first 02:30 only). ``next_cron`` stepped from any instant must
give exactly the oracle's instants, strictly increasing.
"""

from __future__ import annotations

import functools
import itertools
import os
import zoneinfo
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from philont.domain.recurrence import (
    MissedRunPolicy,
    cron_schedule,
    next_after,
    next_cron,
    validate_cron,
)
from philont.domain.timepolicy import validate_timezone
from philont.errors import InvalidInputError
from tests.cron_oracle import offset as _offset
from tests.cron_oracle import oracle as _oracle

HEAVY = os.environ.get("PHILONT_HEAVY") == "1"
_WINDOW = timedelta(hours=30)
_MOST = 150  # fires compared per example (a minutely cron fires 1,800 times in the window)


@functools.cache
def _changes(zone_name: str, year: int) -> tuple[datetime, ...]:
    """The instants (to the minute) at which the zone changes its UTC offset in ``year``."""
    zone = zoneinfo.ZoneInfo(zone_name)
    found = []
    at = datetime(year, 1, 1, tzinfo=UTC)
    while at.year == year:
        nxt = at + timedelta(hours=12)
        if _offset(at, zone) != _offset(nxt, zone):
            lo, hi = at, nxt
            while hi - lo > timedelta(minutes=1):
                mid = lo + (hi - lo) / 2
                lo, hi = (mid, hi) if _offset(mid, zone) == _offset(lo, zone) else (lo, mid)
            found.append(hi.replace(second=0, microsecond=0))
        at = nxt
    return tuple(found)


_NOTABLE = (
    "Europe/Berlin",
    "America/New_York",
    "America/Santiago",  # clocks change at midnight: 00:00-01:00 does not exist
    "America/Havana",
    "Australia/Lord_Howe",  # a half-hour change
    "Antarctica/Troll",  # a two-hour change
    "Africa/Casablanca",  # summer time suspended for Ramadan, twice a year
    "Pacific/Apia",  # skipped 30 December 2011
    "Asia/Tehran",
    "Pacific/Chatham",
)


def _usable(zone: str) -> bool:
    try:
        return validate_timezone(zone) == zone
    except Exception:
        return False


_ALL_ZONES = tuple(sorted(z for z in zoneinfo.available_timezones() if _usable(z)))


@st.composite
def _starts(draw: st.DrawFn) -> tuple[str, datetime]:
    """A zone and an instant shortly before one of its changes of offset (when it has one in
    the drawn year)."""
    zone = draw(st.sampled_from(_NOTABLE) | st.sampled_from(_ALL_ZONES))
    year = draw(st.sampled_from([2011, 2022]) | st.integers(1975, 2045))
    changes = _changes(zone, year)
    if changes:
        at = draw(st.sampled_from(changes))
    else:
        at = datetime(year, 1, 1, tzinfo=UTC) + timedelta(days=draw(st.integers(0, 364)))
    return zone, at - timedelta(minutes=draw(st.integers(0, 26 * 60)))


def _part(values: st.SearchStrategy[int], steps: list[int]) -> st.SearchStrategy[str]:
    one = values.map(str)
    ranges = st.tuples(values, values).map(sorted).map(lambda r: f"{r[0]}-{r[1]}")
    return st.one_of(
        st.just("*"),
        st.sampled_from(steps).map(lambda n: f"*/{n}"),
        st.lists(one, min_size=1, max_size=4).map(",".join),
        ranges,
        st.tuples(ranges, st.sampled_from(steps)).map(lambda p: f"{p[0]}/{p[1]}"),
    )


_minutes = _part(st.sampled_from([0, 15, 30, 45]) | st.integers(0, 59), [5, 10, 15, 20, 30])
_hours = _part(st.sampled_from([0, 1, 2, 3, 23]) | st.integers(0, 23), [1, 2, 3, 6])
_days = st.just("*") | _part(st.integers(1, 31), [2, 3, 7])
_months = st.just("*") | _part(st.integers(1, 12), [2, 3])
_weekdays = st.just("*") | _part(st.integers(0, 7), [2, 3])
_crons = st.tuples(_minutes, _hours, _days, _months, _weekdays).map(" ".join)


def _fires(expr: str) -> bool:
    """False for the few drawn expressions that never fire (30 February): refused on write."""
    try:
        validate_cron(expr)
    except InvalidInputError as exc:
        assert "never fires" in str(exc)
        return False
    return True


def _walk(expr: str, zone: str, start: datetime, end: datetime) -> list[datetime]:
    fired, at = [], start
    while len(fired) < _MOST:
        at = next_cron(expr, at, zone)
        if at > end:
            break
        fired.append(at)
    return fired


@settings(max_examples=150, deadline=None)
@given(case=_starts(), expr=_crons)
@example(case=("Europe/Berlin", datetime(2026, 3, 28, 22, tzinfo=UTC)), expr="*/30 * * * *")
@example(case=("Europe/Berlin", datetime(2026, 10, 24, 22, tzinfo=UTC)), expr="*/30 * * * *")
@example(case=("Europe/Berlin", datetime(2026, 3, 28, 22, tzinfo=UTC)), expr="0 2 * * *")
@example(case=("Europe/Berlin", datetime(2026, 10, 24, 22, tzinfo=UTC)), expr="0 2 * * *")
@example(case=("Europe/Berlin", datetime(2026, 3, 28, 22, tzinfo=UTC)), expr="30 1 * * *")
@example(case=("Europe/Berlin", datetime(2026, 10, 24, 22, tzinfo=UTC)), expr="30 1 * * *")
# Lost 02:30 in the spring gap: after the shifted 02:00 fired (at 03:00), the search went on
# from 03:00 and skipped the other gap time, 02:30, which belongs at 03:30.
@example(case=("Europe/Berlin", datetime(2026, 3, 28, 22, tzinfo=UTC)), expr="*/30 2 * * *")
@example(case=("America/Santiago", datetime(2025, 9, 6, 12, tzinfo=UTC)), expr="*/30 0 * * *")
# croniter ORs the two day fields whenever neither is exactly '*'; cron ORs them only when
# neither contains '*': "every other day, on Mondays" is not "odd days, and Mondays".
@example(case=("UTC", datetime(2026, 1, 1, tzinfo=UTC)), expr="0 9 */2 * 1")
# croniter reads a range naming one value as '*': "1-1" (the 1st) fired every day.
@example(case=("UTC", datetime(2026, 1, 1, tzinfo=UTC)), expr="0 9 1-1 * *")
@example(case=("UTC", datetime(2026, 1, 1, tzinfo=UTC)), expr="5-5 3-3 * * *")
def test_cron_fires_once_per_local_time_as_the_brute_force_oracle_says(
    case: tuple[str, datetime], expr: str
) -> None:
    _agrees_with_the_oracle(case, expr)


@pytest.mark.reliability
@settings(max_examples=3000 if HEAVY else 600, deadline=None)
@given(case=_starts(), expr=_crons)
def test_heavy_cron_fires_once_per_local_time_as_the_brute_force_oracle_says(
    case: tuple[str, datetime], expr: str
) -> None:
    _agrees_with_the_oracle(case, expr)


def _agrees_with_the_oracle(case: tuple[str, datetime], expr: str) -> None:
    assume(_fires(expr))
    zone, start = case
    end = start + _WINDOW
    got = _walk(expr, zone, start, end)
    want = _oracle(expr, zone, start, end)[:_MOST]
    assert got == want
    assert all(a < b for a, b in itertools.pairwise(got))


@settings(max_examples=60, deadline=None)
@given(case=_starts(), expr=_crons, poll=st.integers(1, 120), late=st.integers(0, 59))
def test_polling_a_cron_schedule_never_fires_a_local_time_twice_nor_skips_one(
    case: tuple[str, datetime], expr: str, poll: int, late: int
) -> None:
    # The scheduler's view: a poller that wakes every `poll` minutes (`late` seconds past the
    # minute) claims what is due and moves the schedule on (MissedRunPolicy.CATCH_UP, so no
    # occurrence may be dropped). Every oracle instant must be claimed, once, in order.
    assume(_fires(expr))
    zone, start = case
    end = start + _WINDOW
    rec = cron_schedule(expr, zone)
    due = next_cron(expr, start, zone)
    claimed = []
    now = start
    while now <= end and len(claimed) < _MOST:
        now += timedelta(minutes=poll, seconds=late)
        while due <= now and len(claimed) < _MOST:
            claimed.append(due)
            nxt = next_after(rec, due=due, now=now, policy=MissedRunPolicy.CATCH_UP)
            assert nxt is not None and nxt > due
            due = nxt
    want = _oracle(expr, zone, start, now)[: len(claimed)]
    assert claimed == want
