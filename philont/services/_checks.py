"""Input checks the services share: aware datetimes at storage precision, time windows, limits,
non-blank text and LIKE escaping. Each raises ``InvalidInputError`` (or
``InvalidTimeRangeError``) before anything is written."""

from __future__ import annotations

from datetime import datetime

from philont.domain.timepolicy import instant
from philont.errors import InvalidInputError, InvalidTimeRangeError

MAX_QUERY_LIMIT = 10_000


def aware(value: object, name: str) -> datetime:
    """An aware datetime as UTC at storage precision (milliseconds), inside the supported
    range (:func:`philont.domain.timepolicy.instant`); naive ones are refused, not guessed."""
    utc = instant(value, name)
    return utc.replace(microsecond=utc.microsecond // 1000 * 1000)


def window(since: object, until: object) -> tuple[datetime | None, datetime | None]:
    """Inclusive time bounds (either may be None); an end before the start is refused."""
    start = None if since is None else aware(since, "since")
    end = None if until is None else aware(until, "until")
    if start is not None and end is not None and end < start:
        raise InvalidTimeRangeError(start, end, what="until before since")
    return start, end


def check_limit(value: object, name: str = "limit", maximum: int = MAX_QUERY_LIMIT) -> int:
    """An int in 1..maximum (booleans are not numbers here)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise InvalidInputError(f"{name} must be an integer in 1..{maximum}, got {value!r}")
    return value


def storable(value: str, name: str) -> str:
    """Text SQLite can store: valid Unicode (no lone surrogates, which arrive from invalid
    UTF-8 decoded with ``surrogateescape``)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{name} is not valid Unicode text (a lone surrogate at position {exc.start})"
        ) from exc
    return value


def text(value: object, name: str, max_length: int) -> str:
    """Non-blank, storable text, stripped, at most ``max_length`` characters."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{name} must be non-blank text, got {value!r}")
    value = storable(value.strip(), name)
    if len(value) > max_length:
        raise InvalidInputError(f"{name} is {len(value)} characters long; at most {max_length}")
    return value


def like_escape(value: str) -> str:
    """Escape ``\\``, ``%`` and ``_`` for ``LIKE ... ESCAPE '\\'``."""
    return value.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
