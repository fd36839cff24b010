"""The one source of "now": aware UTC datetimes truncated to the millisecond we store."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    """Current time in UTC, truncated to milliseconds (storage precision), so a value read
    back from the database equals the value written."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
