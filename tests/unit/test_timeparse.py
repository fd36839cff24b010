"""How times are printed for the model: UTC ISO-8601 with milliseconds and ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given
from hypothesis import strategies as st

from philont.domain.timeparse import iso


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
