"""The one time policy: which zone names are accepted and which instants every layer can hold.

Zones: the names of the IANA time zone database as the ``tzdata`` package ships it (the same
list on every machine), canonical spelling. Machine-specific keys that a system zoneinfo
directory also answers to (``localtime``, ``posixrules``, ``right/UTC``, ``posix/...``,
``Factory``) are refused: they mean "whatever this machine is set to" or are not places.

Instants: from ``MIN_INSTANT`` (0001-01-02T00:00Z) to ``MAX_INSTANT`` (9999-12-30T23:59:59.999Z).
The day of margin at each end of Python's calendar guarantees that every stored instant can be
shown in every zone (UTC offsets are below 24 hours), so no later layer can overflow on it.
Anything outside, or an aware time whose conversion to UTC already overflows, is invalid input.
"""

from __future__ import annotations

import functools
import zoneinfo
from datetime import UTC, datetime, timedelta
from importlib import resources
from typing import Final

from philont.errors import InvalidInputError, TimeOutOfRangeError

__all__ = [
    "MAX_EPOCH_MS",
    "MAX_INSTANT",
    "MAX_OFFSET",
    "MIN_EPOCH_MS",
    "MIN_INSTANT",
    "MIN_OFFSET",
    "SECONDS_SIZED_MS",
    "clamp",
    "forward_in_gap",
    "from_epoch_ms",
    "given_epoch_ms",
    "instant",
    "is_utc",
    "no_place",
    "offset_text",
    "out_of_range",
    "real_offset",
    "seconds_sized",
    "shifted",
    "shown_integer",
    "stored_instant",
    "supported_utc",
    "validate_timezone",
    "without_offset",
    "zone",
]

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
MIN_INSTANT: Final = datetime(1, 1, 2, tzinfo=UTC)
MAX_INSTANT: Final = datetime(9999, 12, 30, 23, 59, 59, 999_000, tzinfo=UTC)
MIN_EPOCH_MS: Final = -62_135_510_400_000
"""``MIN_INSTANT`` in epoch milliseconds."""
MAX_EPOCH_MS: Final = 253_402_214_399_999
"""``MAX_INSTANT`` in epoch milliseconds."""

SECONDS_SIZED_MS: Final = 100_000_000_000
"""Epoch milliseconds a caller gives (a model, a command line) are at least this large in size
(12 digits), or 0: a smaller number (1966-10-31 .. 1973-03-03 as milliseconds) is the size of
epoch *seconds* of any time up to the year 5138, the commonest time mistake, which read as
milliseconds was silently a time in January 1970. Those days are still given as ISO-8601 text.
Stored values are not judged by this (``stored_instant``)."""

MIN_OFFSET: Final = timedelta(hours=-12)
MAX_OFFSET: Final = timedelta(hours=14)
"""The UTC offsets places use (Etc/GMT+12 .. Kiritimati), and have used since 1867. RFC 3339
lets text carry up to +/-23:59; an offset outside these is a typo (``+15:00`` for
``+05:00``), not a place."""

_RANGE_TEXT: Final = "0001-01-02T00:00:00Z .. 9999-12-30T23:59:59.999Z"
_EXCLUDED_ZONES: Final = frozenset({"Factory", "localtime", "posixrules"})


# --- zones -----------------------------------------------------------------------------------


@functools.cache
def _zone_names() -> dict[str, str]:
    """casefolded name -> canonical name, from the tzdata package's list of IANA zones."""
    listed = resources.files("tzdata").joinpath("zones").read_text(encoding="utf-8").split()
    return {name.casefold(): name for name in listed if name not in _EXCLUDED_ZONES}


def validate_timezone(name: object) -> str:
    """The canonical spelling of an IANA zone name (``europe/berlin`` -> ``Europe/Berlin``).

    Raises ``InvalidInputError`` for anything that is not a zone of the IANA database:
    offsets (``+02:00``), abbreviations (``CEST``), machine-local keys (``localtime``,
    ``posixrules``) and the ``right/`` and ``posix/`` variants of real zones.
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError.of(
            "timezone", f"must be an IANA zone name such as 'Europe/Berlin' or 'UTC', got {name!r}"
        )
    canonical = _zone_names().get(name.strip().casefold())
    if canonical is None:
        raise InvalidInputError.of(
            "timezone",
            f"{name[:80]!r} is not an IANA zone name (e.g. 'Europe/Berlin', "
            "'America/New_York', 'UTC')",
            timezone=name[:80],
        )
    return canonical


def _tzif(canonical: str) -> bytes:
    return resources.files("tzdata.zoneinfo").joinpath(*canonical.split("/")).read_bytes()


@functools.cache
def _utc_zones() -> frozenset[str]:
    """The zones that are UTC: tzdata's names for Etc/UTC and Etc/GMT (UTC, Zulu, Universal,
    GMT, Etc/GMT-0, Greenwich, ...), found by their data, so no alias is ever missed."""
    roots = {_tzif("Etc/UTC"), _tzif("Etc/GMT")}
    return frozenset(name for name in _zone_names().values() if _tzif(name) in roots)


def is_utc(name: object) -> bool:
    """Whether ``name`` is an IANA zone whose clock is UTC at every instant, in any spelling
    :func:`validate_timezone` accepts (``utc``, ``Etc/GMT``, ``Zulu``); False for every other
    value. The one test of "is this zone UTC": a reminder in such a zone is stored as
    Philont stores its own (no zone), and times in it are shown as the UTC instant alone."""
    if not isinstance(name, str):
        return False
    canonical = _zone_names().get(name.strip().casefold())
    return canonical is not None and canonical in _utc_zones()


@functools.lru_cache(maxsize=64)
def _zone(canonical: str) -> zoneinfo.ZoneInfo:
    return zoneinfo.ZoneInfo(canonical)


def zone(name: object) -> zoneinfo.ZoneInfo:
    """The ``ZoneInfo`` of an accepted zone name (see :func:`validate_timezone`)."""
    return _zone(validate_timezone(name))


def offset_text(offset: timedelta) -> str:
    """A UTC offset as ISO-8601 writes it, ``+02:00``, ``-04:56:02`` (seconds when it has them)."""
    sign, size = ("-", -offset) if offset < timedelta(0) else ("+", offset)
    minutes, seconds = divmod(int(size.total_seconds()), 60)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}" + (f":{seconds:02d}" if seconds else "")


@functools.cache
def _local_mean_times() -> frozenset[timedelta]:
    """The offsets outside ``MIN_OFFSET..MAX_OFFSET`` that a zone's clock once showed: local
    mean times before 1868 (Manila's -15:56:08, Sitka's +14:58:47), each a zone's first."""
    first = (MIN_INSTANT.astimezone(_zone(name)).utcoffset() for name in _zone_names().values())
    return frozenset(o for o in first if o is not None and not MIN_OFFSET <= o <= MAX_OFFSET)


def real_offset(
    value: datetime, field: str, zone_field: str | None = "timezone", tz: str = "UTC"
) -> datetime:
    """``value`` when its UTC offset (naive: none) is one a place uses, ``MIN_OFFSET`` to
    ``MAX_OFFSET``, or the local mean time of a zone outside them (what :func:`shown_at
    <philont.domain.timeparse.shown_at>` prints for such a zone's old dates, so it reads
    back); anything else is ``InvalidInputError`` naming ``field`` (and, as
    :func:`without_offset`, where a time without an offset is placed)."""
    offset = value.utcoffset()
    if offset is None or MIN_OFFSET <= offset <= MAX_OFFSET or offset in _local_mean_times():
        return value
    raise no_place(field, offset_text(offset), zone_field, tz)


def no_place(
    field: str, offset: str, zone_field: str | None = "timezone", tz: str = "UTC"
) -> InvalidInputError:
    """The refusal of ``field``, whose UTC offset (as text, ``+15:00``) no place uses."""
    return InvalidInputError.of(
        field,
        f"UTC offset {offset} is not one any place uses "
        "(they run from -12:00 to +14:00); check the offset, or give the time without one "
        f"{without_offset(zone_field, tz)}",
    )


def without_offset(zone_field: str | None, tz: str) -> str:
    """How a refusal says where a time given without a UTC offset is placed: in the zone the
    caller names in its argument ``zone_field`` (the tools' ``timezone``), or, where the
    caller has no such argument (the command line: None), in ``tz``, the zone it is read in.
    A refusal never names an argument its reader does not have."""
    if zone_field is None:
        return f"(it is then read in {tz})"
    return f"and name its zone in `{zone_field}`"


# --- instants --------------------------------------------------------------------------------


def out_of_range(field: str, shown: str) -> TimeOutOfRangeError:
    """The refusal of ``field``, whose value ``shown`` lies outside the supported times."""
    return TimeOutOfRangeError(f"{field}: {shown} {_OUTSIDE}", field=field)


_OUTSIDE: Final = f"is outside the supported times ({_RANGE_TEXT})"


def forward_in_gap(value: datetime) -> datetime:
    """``value`` with ``fold=0`` when it is a wall time its zone skips: such a time means the
    instant a gap later (02:30 on the Berlin spring day is 03:30 summer time), whatever its
    ``fold``. PEP 495 reads a skipped time with ``fold=1`` by the offset after the gap, an
    instant *before* the wall time written (01:30 winter time), while Philont reads every
    skipped time forward, as RFC 5545 §3.3.5 and :mod:`philont.domain.wallclock` do, so a
    reminder or an event is never moved earlier than the time it was given. A repeated time
    (the autumn overlap) keeps its ``fold``: there both readings are real instants of that
    wall time, and ``fold=1`` names the second. The offset may raise as :meth:`utcoffset`
    does."""
    if not value.fold:
        return value
    after, before = value.utcoffset(), value.replace(fold=0).utcoffset()
    if after is not None and before is not None and after > before:
        return value.replace(fold=0)  # the offset grows across the change: a gap
    return value


def supported_utc(value: datetime) -> datetime:
    """An aware datetime as UTC inside the supported range, or ``ValueError`` saying why (for
    validators that name the argument themselves; :func:`instant` is the typed variant). A
    skipped wall time is read forward (:func:`forward_in_gap`)."""
    try:
        value = forward_in_gap(value)
        offset = value.utcoffset()
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"its zone has no offset here ({exc})") from exc
    if offset is None:
        raise ValueError(
            f"must be timezone-aware, got naive {value.isoformat()} (which zone is it in?)"
        )
    try:
        utc = value.astimezone(UTC)
    except (OverflowError, ValueError) as exc:
        raise ValueError(f"{value.isoformat()} {_OUTSIDE}") from exc
    if not MIN_INSTANT <= utc <= MAX_INSTANT:
        raise ValueError(f"{value.isoformat()} {_OUTSIDE}")
    return utc


def instant(value: object, field: str) -> datetime:
    """An aware datetime as the same instant in UTC, inside ``MIN_INSTANT..MAX_INSTANT``.

    Naive datetimes are refused (which zone would they be in?); so is anything outside the
    range, including times whose conversion to UTC overflows (``0001-01-01T00:00+14:00``):
    :class:`~philont.errors.TimeOutOfRangeError`, a kind of ``InvalidInputError``.
    """
    if not isinstance(value, datetime):
        raise InvalidInputError(f"{field} must be a datetime, got {type(value).__name__}")
    try:
        return supported_utc(value)
    except ValueError as exc:
        if value.tzinfo is None or _OUTSIDE not in str(exc):
            raise InvalidInputError(f"{field}: {exc}", field=field) from exc
        raise TimeOutOfRangeError(f"{field}: {exc}", field=field) from exc


def shown_integer(value: int) -> str:
    """An integer a caller gave, for a message: whole up to 20 digits, else its size
    (``~10^4000``): a number of thousands of digits is not echoed back, and Python refuses to
    write one of more than 4300 digits at all."""
    if -(10**20) < value < 10**20:
        return str(value)
    size = abs(value)
    magnitude = int((size.bit_length() - 1) * 0.30102999566398120)  # log10, or one below
    magnitude += size >= 10 ** (magnitude + 1)
    return f"{'-' if value < 0 else ''}~10^{magnitude}"


def from_epoch_ms(value: object, field: str) -> datetime:
    """Whole epoch milliseconds (an int) as an aware UTC datetime inside the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(
            f"{field}: epoch milliseconds must be an integer, got {value!r:.80}"
        )
    if not MIN_EPOCH_MS <= value <= MAX_EPOCH_MS:
        raise out_of_range(field, f"{shown_integer(value)} ms")
    return EPOCH + timedelta(0, 0, 0, value)


def seconds_sized(value: int) -> str | None:
    """Why ``value`` is refused as epoch milliseconds a caller gave (:data:`SECONDS_SIZED_MS`),
    naming the time it means as seconds and the milliseconds to send for it; None: it is not."""
    if value == 0 or not -SECONDS_SIZED_MS < value < SECONDS_SIZED_MS:
        return None  # 0 is the same instant in seconds and in milliseconds
    as_ms = (EPOCH + timedelta(milliseconds=value)).isoformat().replace("+00:00", "Z")
    meant = ""
    if MIN_EPOCH_MS <= value * 1000 <= MAX_EPOCH_MS:
        as_s = (EPOCH + timedelta(seconds=value)).isoformat().replace("+00:00", "Z")
        meant = f"; for {as_s} send {value * 1000}"
    return (
        f"{value} looks like epoch seconds, but this takes epoch milliseconds (as milliseconds "
        f"it is {as_ms}){meant}, or ISO-8601 text (a time from 1966-10-31 to 1973-03-03 only "
        "as text)"
    )


def given_epoch_ms(value: object, field: str) -> datetime:
    """Whole epoch milliseconds a caller gave, as :func:`from_epoch_ms`; a seconds-sized
    number (:func:`seconds_sized`) is refused by ``field``."""
    if isinstance(value, int) and not isinstance(value, bool):
        problem = seconds_sized(value)
        if problem is not None:
            raise InvalidInputError.of(field, problem)
    return from_epoch_ms(value, field)


def stored_instant(raw: object, field: str) -> datetime:
    """A value read from an epoch-ms column (whatever another program put there) as an instant,
    or ``InvalidInputError`` naming the field: text, floats and out-of-range integers included.
    """
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)  # SQLite hands back REAL for values written as 1.7e12
    return from_epoch_ms(raw, field)


def shifted(value: datetime, delta: timedelta, field: str) -> datetime:
    """``value + delta``, or ``TimeOutOfRangeError`` when that leaves the supported range."""
    try:
        moved = value + delta
    except OverflowError as exc:
        raise out_of_range(field, f"{value.isoformat()} + {delta}") from exc
    return instant(moved, field)


def clamp(value: datetime, delta: timedelta = timedelta(0)) -> datetime:
    """``value + delta`` in UTC, clamped to ``MIN_INSTANT..MAX_INSTANT`` (never raises)."""
    try:
        moved = (value + delta).astimezone(UTC)
    except OverflowError:
        upward = delta > timedelta(0) or (delta == timedelta(0) and value.year > 5000)
        return MAX_INSTANT if upward else MIN_INSTANT
    return min(max(moved, MIN_INSTANT), MAX_INSTANT)
