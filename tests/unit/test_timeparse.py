"""How times are printed for the model: UTC ISO-8601 with milliseconds and ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from philont.domain.timeparse import iso, shown_at


def test_iso_prints_utc_with_milliseconds_and_z() -> None:
    assert iso(datetime(2026, 1, 2, 3, 4, 5, 678_999, tzinfo=UTC)) == "2026-01-02T03:04:05.678Z"
    berlin = timezone(timedelta(hours=2))
    assert iso(datetime(2026, 6, 1, 1, 30, tzinfo=berlin)) == "2026-05-31T23:30:00.000Z"


@given(
    st.datetimes(min_value=datetime(1000, 1, 2), max_value=datetime(9999, 12, 30)),
    st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_iso_matches_the_javascript_to_iso_string_layout(local: datetime, offset_min: int) -> None:
    value = local.replace(tzinfo=timezone(timedelta(minutes=offset_min)))
    utc = value.astimezone(UTC)
    expected = f"{utc:%Y-%m-%dT%H:%M:%S}.{utc.microsecond // 1000:03d}Z"
    assert iso(value) == expected


def test_shown_at_gives_the_wall_time_with_its_offset_at_the_ends_of_the_calendar() -> None:
    # local mean time: offsets with seconds, and years below 1000 keep four digits
    assert shown_at(datetime(900, 1, 1, 12, tzinfo=UTC), "America/Santiago") == (
        "0900-01-01 07:17:15-04:42:45 America/Santiago = 0900-01-01T12:00:00.000Z"
    )
    assert shown_at(datetime(1, 1, 2, tzinfo=UTC), "America/New_York") == (
        "0001-01-01 19:03:58-04:56:02 America/New_York = 0001-01-02T00:00:00.000Z"
    )


def test_shown_at_is_the_utc_instant_alone_without_a_zone_to_show() -> None:
    at = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)
    for tz in (None, "UTC", "Etc/UTC", "Not/AZone"):  # the last: a row another program wrote
        assert shown_at(at, tz) == iso(at)
    assert shown_at(at, "Europe/Berlin") == (  # the first pass of the repeated hour
        "2026-10-25 02:30+02:00 Europe/Berlin = 2026-10-25T00:30:00.000Z"
    )
