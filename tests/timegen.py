"""Hypothesis strategies for times, zone names and recurrence rules, shared by the unit, tool and
property tests (extremes on purpose: the ends of the calendar, every FREQ with BYSETPOS, COUNT,
INTERVAL and UNTIL at their limits)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import strategies as st

from philont.domain.rrule import MAX_INTERVAL, Freq

WEEKDAYS = ("MO", "TU", "WE", "TH", "FR", "SA", "SU")

ZONES = (
    "UTC",
    "Europe/Berlin",
    "Pacific/Kiritimati",  # UTC+14
    "Etc/GMT+12",  # UTC-12
    "Pacific/Apia",  # skipped a whole day in 2011
    "America/Sao_Paulo",
    "Australia/Lord_Howe",  # half-hour DST
)
NOT_ZONES = (
    "localtime",
    "posixrules",
    "right/UTC",
    "posix/Europe/Berlin",
    "Factory",
    "+02:00",
    "CEST",
    "Europe/Nowhere",
    "",
)
zone_names = st.sampled_from(ZONES + NOT_ZONES) | st.text(max_size=12)

EDGE_TEXTS = (
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-14:00",
    "0001-01-01T00:00:00Z",
    "0001-01-02T00:00:00Z",
    "9999-12-30T23:59:59.999Z",
    "9999-12-31T23:59:59Z",
    "9999-12-31",
    "0001-01-01",
    "1970-01-01T00:00:00Z",
)


def _iso(local: datetime, offset_minutes: int | None) -> str:
    if offset_minutes is None:
        return local.isoformat()
    return local.replace(tzinfo=timezone(timedelta(minutes=offset_minutes))).isoformat()


time_texts = st.sampled_from(EDGE_TEXTS) | st.builds(
    _iso,
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.none() | st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1),
)
epoch_ms = st.sampled_from(
    [0, -62_135_596_800_000, 253_402_300_799_999, 8_640_000_000_000_000, -(2**63), 2**63 - 1]
) | st.integers(min_value=-(2**64), max_value=2**64)
time_values = time_texts | epoch_ms
"""What a model may pass as a time: ISO text (with or without an offset) or epoch milliseconds."""


# --- rules ---------------------------------------------------------------------------------------


def _int_list(draw: st.DrawFn, low: int, high: int, negative: bool, most: int = 3) -> str:
    values = draw(st.lists(st.integers(min_value=low, max_value=high), min_size=1, max_size=most))
    if negative:
        values = [v * draw(st.sampled_from((1, -1))) for v in values]
    return ",".join(str(v) for v in sorted(set(values)))


@st.composite
def dense_rules(draw: st.DrawFn) -> tuple[str, datetime, timedelta]:
    """(rule, naive start, how far into the series to look) for rules that occur often: every
    FREQ, small intervals, day parts every year has (BYMONTHDAY up to 28 or -1, 1st-4th or last
    weekdays), and a distance of a few thousand periods at most, so an oracle that walks every
    occurrence from the start (dateutil) gets there quickly."""
    freq = draw(st.sampled_from(list(Freq)))
    parts = [f"FREQ={freq.name}", f"INTERVAL={draw(st.integers(1, 3))}"]
    if draw(st.booleans()):
        parts.append("BYMONTH=" + _int_list(draw, 1, 12, False, 6))
    if freq is not Freq.WEEKLY and draw(st.booleans()):
        parts.append("BYMONTHDAY=" + draw(st.sampled_from(["1", "-1", "1,15", "28", "2,-2,10"])))
    if draw(st.booleans()):
        if freq in (Freq.MONTHLY, Freq.YEARLY) and draw(st.booleans()):
            days = {
                f"{draw(st.sampled_from([1, 2, 3, 4, -1]))}{d}"
                for d in draw(st.lists(st.sampled_from(WEEKDAYS), min_size=1, max_size=3))
            }
        else:
            days = set(draw(st.lists(st.sampled_from(WEEKDAYS), min_size=2, max_size=5)))
        parts.append("BYDAY=" + ",".join(sorted(days)))
    if freq is Freq.YEARLY and draw(st.integers(0, 4)) == 0:
        parts.append("BYWEEKNO=" + draw(st.sampled_from(["1", "20", "-1", "1,26,52"])))
    for name, high in (("BYHOUR", 23), ("BYMINUTE", 59), ("BYSECOND", 59)):
        if draw(st.integers(0, 3)) == 0:
            parts.append(f"{name}=" + _int_list(draw, 0, high, False, 4))
    if len(parts) > 2 and draw(st.integers(0, 4)) == 0:
        parts.append("BYSETPOS=" + draw(st.sampled_from(["1", "-1", "1,-1", "2"])))
    if draw(st.integers(0, 4)) == 0:
        parts.append("WKST=" + draw(st.sampled_from(WEEKDAYS)))
    start = draw(st.datetimes(min_value=datetime(1990, 1, 1), max_value=datetime(2040, 1, 1)))
    unit = {Freq.HOURLY: 3600, Freq.MINUTELY: 60, Freq.SECONDLY: 1}.get(freq, 86_400)
    skip = timedelta(seconds=unit * draw(st.integers(0, 2000)))
    return ";".join(parts), start.replace(microsecond=0), skip


@st.composite
def extreme_rules(draw: st.DrawFn) -> tuple[str, datetime, str]:
    """(rule, aware start, zone): every FREQ with INTERVAL, COUNT, UNTIL and BYSETPOS at their
    extremes, any BYxxx lists, starts anywhere in the supported calendar (edges included).
    Many of these rules are invalid or never occur on purpose."""
    freq = draw(st.sampled_from(list(Freq)))
    limit = MAX_INTERVAL[freq]
    parts = [f"FREQ={freq.name}"]
    if draw(st.booleans()):
        interval = draw(
            st.sampled_from([1, 2, 7, 60, 366, 86_399, limit, limit + 1, 99_999_999, 10**17])
            | st.integers(1, 1000)
        )
        parts.append(f"INTERVAL={interval}")
    ending = draw(st.integers(0, 3))
    if ending == 1:
        count = draw(st.sampled_from([1, 2, 10**6, 10**9, 10**18 - 1]) | st.integers(1, 10**5))
        parts.append(f"COUNT={count}")
    elif ending == 2:
        until = draw(
            st.sampled_from(["00010101", "00010102T000000Z", "99991231", "99991231T235959Z"])
            | st.dates(min_value=datetime(1, 1, 1).date()).map(lambda d: d.strftime("%Y%m%d"))
        )
        parts.append(f"UNTIL={until}")
    for name, low, high, neg in (
        ("BYMONTH", 1, 12, False),
        ("BYMONTHDAY", 1, 31, True),
        ("BYYEARDAY", 1, 366, True),
        ("BYWEEKNO", 1, 53, True),
        ("BYHOUR", 0, 23, False),
        ("BYMINUTE", 0, 59, False),
        ("BYSECOND", 0, 59, False),
    ):
        if draw(st.integers(0, 3)) == 0:
            parts.append(f"{name}=" + _int_list(draw, low, high, neg))
    if draw(st.integers(0, 2)) == 0:
        days = draw(st.lists(st.sampled_from(WEEKDAYS), min_size=1, max_size=7))
        if freq in (Freq.MONTHLY, Freq.YEARLY) and draw(st.booleans()):
            days = [f"{draw(st.integers(-53, 53).filter(bool))}{d}" for d in days]
        parts.append("BYDAY=" + ",".join(sorted(set(days))))
    if draw(st.integers(0, 2)) == 0:
        parts.append("BYSETPOS=" + draw(st.sampled_from(["1", "-1", "366", "-366", "2,5"])))
    start = draw(
        st.sampled_from(
            [datetime(1, 1, 2, tzinfo=UTC), datetime(9999, 12, 30, 23, 59, 59, tzinfo=UTC)]
        )
        | st.datetimes(
            min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
        )
    )
    return ";".join(parts), start, draw(st.sampled_from(ZONES))
