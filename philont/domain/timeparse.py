"""Times from the model: ISO-8601 text or epoch milliseconds to aware datetimes, or a clear error.

The original silently dropped what it could not parse and read offset-less text in the server's
local zone (spec Q-S7). Here: an offset or ``Z`` is honoured (an offset no place uses, beyond
-12:00 .. +14:00, is refused: :func:`philont.domain.timepolicy.real_offset`); text without one
(and a bare date, read as midnight) is read in the zone the caller states; epoch milliseconds
are UTC (a number the size of epoch seconds is refused,
:func:`philont.domain.timepolicy.seconds_sized`); anything else raises ``InvalidInputError``
naming the field.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from philont.domain import timeforms, wallclock
from philont.domain.timepolicy import (
    given_epoch_ms,
    instant,
    is_utc,
    no_place,
    offset_text,
    real_offset,
    validate_timezone,
    without_offset,
    zone,
)
from philont.errors import InvalidInputError, InvalidTimeRangeError, TimeOutOfRangeError

__all__ = [
    "all_day_span",
    "date_alone",
    "event_times",
    "given_wall",
    "iso",
    "parse_time",
    "shown_at",
    "wall_note",
    "zone",
]


def parse_time(
    value: str | int | float | None,
    *,
    field: str,
    tz: str = "UTC",
    end_of_day: bool = False,
    needs_clock: bool = False,
    zone_field: str | None = "timezone",
) -> datetime | None:
    """``None``/blank -> None; epoch ms (int) -> UTC; ISO-8601 text -> the instant, in UTC.

    A bare date (``2026-01-10``, or another form of :func:`date_alone`) is that day's midnight
    in ``tz``, or with ``end_of_day`` (the inclusive end of a window: "until 10 January") its
    last millisecond; with ``needs_clock``
    (the moment a reminder fires) it is refused by name: midnight is rarely what was meant.

    ``tz`` must be an IANA zone (:func:`philont.domain.timepolicy.validate_timezone`) and is
    checked even when no time is given, so a bad zone never passes silently. Every result lies
    in the supported range (:func:`philont.domain.timepolicy.instant`); times outside it, or
    at the ends of the calendar where a zone offset overflows, are ``InvalidInputError``.

    ``zone_field`` is the caller's argument that names the zone (the tools' ``timezone``),
    which a refusal tells to use for a time without an offset; None where the caller has no
    such argument (the command line): the refusal then says such a time is read in ``tz``,
    and suggests the offset itself (:func:`philont.domain.timepolicy.without_offset`).

    A refusal that suggests a text to write instead (:func:`philont.domain.timeforms.
    suggesting`) is checked here (:func:`_checked`): each suggestion is read with the same
    arguments, and when one is refused too, the refusal suggests what that refusal suggests
    (the end of the chain) or says why instead.
    """
    try:
        return _parse_time(value, field, tz, end_of_day, needs_clock, zone_field)
    except InvalidInputError as exc:
        raise _checked(
            exc,
            lambda text, in_zone: _parse_time(
                text, field, in_zone or tz, end_of_day, needs_clock, zone_field
            ),
        ) from exc


def _checked(
    exc: InvalidInputError, read: Callable[[str, str | None], object]
) -> InvalidInputError:
    """``exc``, when each text it suggests (:func:`philont.domain.timeforms.suggesting`) is
    taken by ``read`` (the text, the zone to read it in or None: the caller's; the reader
    without this check: each text is read once) or refused only for another argument.

    A suggestion refused in turn with a text to write instead (not an example) in the same
    zone is replaced by where that leads (:func:`philont.domain.timeforms.chain_end`), in the
    advice too: ``2026-152T09:30.5`` says to write ``2026-06-01T09:30:30``, the end of the
    chain. Any other refusal of a suggestion gives the refusal of what ``exc`` refused and why
    the time it means is refused too: the innermost reason only (``details["reason"]``), once
    however long the chain, with what that refusal suggests (checked in turn)."""
    field = exc.details.get("argument", "")

    def refused_by(text: str, in_zone: str | None) -> InvalidInputError | None:
        try:
            read(text, in_zone)
        except InvalidInputError as refused:
            if field in (refused.details.get("argument"), refused.details.get("field")):
                return refused
        return None  # taken, or refused for another argument only: the text stands

    written: dict[str, tuple[str, str | None]] = {}
    for text, in_zone in exc.details.get("suggestion", ()):
        end = timeforms.chain_end(text, in_zone, refused_by)
        if not isinstance(end, InvalidInputError):
            if end != (text, in_zone):
                written[text] = end
            continue

        def in_its_zone(then: str, zone: str | None, chain_zone: str | None = in_zone) -> object:
            return read(then, zone or chain_zone)  # the zone the chain was read in

        refused = _checked(end, in_its_zone)  # what it suggests in turn (an example)
        then = refused.details.get("suggestion", ())
        meant = f"{text} in {in_zone!r}" if in_zone else text
        why = refused.details.get("reason") or refused.message.removeprefix(f"{field}: ")
        kind = TimeOutOfRangeError if isinstance(refused, TimeOutOfRangeError) else None
        return (kind or InvalidInputError).of(
            field,
            f"{exc.details['refused']}; the time it means, {meant}, is refused too: {why}",
            reason=why,
            **({"suggestion": tuple((t, z or in_zone) for t, z in then)} if then else {}),
        )
    if not written or "advice" not in exc.details:
        return exc
    longest_first = sorted(written, key=len, reverse=True)
    advice = re.sub(
        "|".join(map(re.escape, longest_first)),
        lambda found: written[found[0]][0],
        exc.details["advice"],
    )
    return timeforms.suggesting(
        field,
        exc.details["refused"],
        advice,
        *(written.get(t, (t, z)) for t, z in exc.details["suggestion"]),
        example=bool(exc.details.get("example")),
    )


def _parse_time(
    value: str | int | float | None,
    field: str,
    tz: str,
    end_of_day: bool,
    needs_clock: bool,
    zone_field: str | None,
) -> datetime | None:
    where = zone(validate_timezone(tz))
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInputError(f"{field}: expected an ISO-8601 time or epoch milliseconds")
    if isinstance(value, float):
        if not value.is_integer():  # NaN and the infinities are not integers either
            raise InvalidInputError(f"{field}: epoch milliseconds must be a whole number")
        value = int(value)
    if isinstance(value, int):
        return given_epoch_ms(value, field)
    text = value.strip()
    if not text:
        return None
    day = _date_alone(text, field)
    if day is not None:
        if needs_clock:
            example = f"{day.isoformat()}T09:00"
            where_said = (
                f"in `{zone_field}` or with an offset"
                if zone_field
                else f"with an offset (without one it is read in {tz})"
            )
            raise timeforms.suggesting(
                field,
                f"{text!r} is a date without a time of day",
                f"; give the time too (e.g. {example}), {where_said}",
                example,
                example=True,
            )
        _a_day_of(day, where, field, tz)
        if end_of_day:
            return _day_end(day, where, field)
        parsed = datetime.combine(day, time(0))
    else:
        parsed = _date_and_time(text, field, zone_field, tz)
    if parsed.tzinfo is None:
        return instant(parsed.replace(tzinfo=where), field)
    found = instant(parsed, field)  # a time outside the calendar says so first
    real_offset(parsed, field, zone_field, tz)
    return found


def _a_day_of(day: date, where: ZoneInfo, field: str, tz: str) -> None:
    """Refuse a day the zone skipped whole (Samoa's 30 December 2011, Kiritimati's 31 December
    1994), as an all-day event of that day alone is refused (:func:`all_day_span`; a span of
    days covers the days of it the zone has). Read as a start it was the next day's, and as a
    window's end the instant before: "since and until that day" was refused as a window that
    ends before it starts, and a fact's validity began a day late without a word. At the
    calendar's ends the range check speaks instead."""
    try:
        start, after = (wallclock.day_start(d, where) for d in (day, day + timedelta(days=1)))
    except OverflowError:
        return
    if start is not None and start == after:
        raise InvalidInputError.of(field, f"{day.isoformat()} is not a day in {tz}")


def _day_end(day: date, where: ZoneInfo, field: str) -> datetime:
    """The last millisecond of a local day: just before the next day's first instant. Where
    the clocks go back at midnight (Santiago, in April: 24:00 becomes 23:00) the day's last
    hour happens twice, and 23:59:59.999 read once (the first pass) would end it an hour
    early; where the next day starts after a gap, its first instant is after the gap."""
    try:
        after = wallclock.day_start(day + timedelta(days=1), where)
    except OverflowError:
        after = None
    if after is None:  # the day after leaves the calendar: read the day's last time itself
        return instant(datetime.combine(day, time(23, 59, 59, 999_000), where), field)
    return instant(after - timedelta(milliseconds=1), field)


_TIME_SHAPE = re.compile(
    timeforms.DATE  # read only where it names a day (timeforms.names_a_day)
    + r"[Tt ]\d{2}(?::?\d{2}(?::?(?P<second>\d{2})(?:[.,]\d+)?)?)?"  # T or a space, the time
    r"(?:[Zz]|(?P<offset>[+-](?P<hours>\d{2})(?::?(?P<minutes>\d{2})"  # the offset
    r"(?::?(?P<seconds>\d{2})(?:[.,]\d+)?)?)?))?",
    re.ASCII,
)
"""A date (:data:`philont.domain.timeforms.DATE`) and a time of day in one of ISO-8601's
forms (with RFC 3339's space for the ``T``; its letters ``T``, ``W``, ``Z`` in either case, as
RFC 3339 allows ``t`` and ``z``).
Python's reader takes more, and guesses: any character between the date and the time
(``2026-04-01x09:00``), nothing of what follows a NUL (``2026-04-01T09:00Z\x00 or later``),
the Monday of a week given without its day (``2026-W14T09:00``); text outside this shape is
refused instead."""


def _date_and_time(
    text: str, field: str, zone_field: str | None = "timezone", tz: str = "UTC"
) -> datetime:
    """ISO-8601 text of a date and a time (:data:`_TIME_SHAPE`) as a datetime, naive when it
    carries no offset; anything else is ``InvalidInputError`` naming ``field`` (and where a
    time without an offset is placed: ``zone_field``, ``tz``, as :func:`parse_time`)."""
    shape = _TIME_SHAPE.fullmatch(text)
    if shape is not None and not timeforms.names_a_day(shape):
        shape = None  # an ordinal date or a week alone: timeforms.refusal says what to write
    if shape is not None and shape["second"] == "60":
        raise InvalidInputError.of(
            field,
            f"{text[:60]!r} names a leap second (second 60); times here count no leap seconds "
            "(as POSIX and JavaScript time do): give second 59 or the next minute",
        )
    if shape is not None and shape["offset"] is not None:
        _check_offset(shape, text, field, zone_field, tz)
    try:
        if shape is None:
            raise ValueError("not of ISO-8601's shape")
        return datetime.fromisoformat(text.upper())  # its letters are T, W, Z in either case
    except ValueError as exc:
        why = "" if shape is None else _why(exc)
        raise (
            timeforms.refusal(text, field, zone_field=zone_field, tz=tz)
            or InvalidInputError.of(
                field,
                f"{text[:60]!r} is not an ISO-8601 time{why} (e.g. 2026-04-22T09:00:00+02:00)",
            )
        ) from exc


def _check_offset(
    shape: re.Match[str], text: str, field: str, zone_field: str | None, tz: str
) -> None:
    """Refuse the UTC offset of ``text`` (matched by :data:`_TIME_SHAPE`) when its minutes or
    seconds pass 59 (Python's reader carried them over: ``+05:75`` was +06:15) or its hours
    reach 24 (Python's refusal spoke of timedeltas)."""
    offset = shape["offset"]
    if any(int(shape[part] or 0) > 59 for part in ("minutes", "seconds")):
        raise InvalidInputError.of(
            field,
            f"{text[:60]!r} has UTC offset {offset}, whose minutes and seconds must run from "
            f"00 to 59 (e.g. +05:45); check the offset, or give the time without one "
            f"{without_offset(zone_field, tz)}",
        )
    if int(shape["hours"]) >= 24:
        raise no_place(field, offset, zone_field, tz)


def _why(exc: ValueError) -> str:
    """The reason Python's reader gave for refusing text of ISO-8601's shape (``: day is out
    of range for month``), or nothing when it only says the text is no ISO-8601."""
    reason = str(exc)
    return "" if reason.startswith("Invalid isoformat") else f": {reason[:80]}"


_DATE_SHAPE = re.compile(timeforms.DATE, re.ASCII)
"""Text written as a date alone in one of ISO-8601's forms
(:data:`philont.domain.timeforms.DATE`): calendar (``2026-12-04``, ``20261204``), ordinal
(``2026-123``) or week date (``2026-W49-5``, ``2026W495``; ``2026-W49``, a week, is no day,
nor is an ordinal date one the tools read: each is refused saying what to write).
What is a date is decided by this form, never by the text's length: ``20261204`` is the day
4 December 2026 wherever ``2026-12-04`` is (a whole day, refused for a reminder's time), and
ten characters that are no date (``1767225600``) are no date either."""


def date_alone(value: object, field: str) -> date | None:
    """The day a date-alone text names (:data:`_DATE_SHAPE`); None for anything else. Text of
    that form that names no day (``2027-02-29``, ``2026-W49``) is refused by ``field``; a
    text the refusal suggests is read here too (:func:`_checked`), as :func:`parse_time`
    reads its own."""
    try:
        return _date_alone(value, field)
    except InvalidInputError as exc:
        raise _checked(exc, lambda suggested, _zone: _date_alone(suggested, field)) from exc


def _date_alone(value: object, field: str) -> date | None:
    """:func:`date_alone` without the reading of what its refusal suggests."""
    if not isinstance(value, str) or (found := _DATE_SHAPE.fullmatch(value.strip())) is None:
        return None
    text = found[0]
    try:
        if not timeforms.names_a_day(found):
            raise ValueError("not a day the tools read")
        return date.fromisoformat(text.upper())
    except ValueError as exc:
        raise timeforms.refusal(text, field) or InvalidInputError.of(
            field, f"{text!r} is not an ISO-8601 date naming a day{_why(exc)} (e.g. 2026-12-04)"
        ) from exc


def all_day_span(
    first: date, last: date | None, tz: str, names: tuple[str, str] = ("first_day", "last_day")
) -> tuple[datetime, datetime]:
    """An all-day event from day ``first`` to day ``last`` (inclusive; None: the one day) in
    the zone ``tz``, as the instants Philont's columns hold: the first instant of ``first``
    (its midnight, or the end of a gap that skips midnight) and the first instant of the day
    after ``last``, the end exclusive as in iCalendar. ``names`` are the arguments the days
    came from, for the refusals."""
    where = zone(validate_timezone(tz))
    end_day = first if last is None else last
    if end_day < first:
        raise InvalidTimeRangeError(first, end_day, names=names, what="all-day event")
    try:
        start, end = (
            wallclock.day_start(first, where),
            wallclock.day_start(end_day + timedelta(days=1), where),
        )
    except OverflowError:
        start = end = None
    for name, at, day in ((names[0], start, first), (names[1], end, end_day)):
        if at is None:
            raise TimeOutOfRangeError(
                f"{name}: {day.isoformat()} is outside the supported times in {tz}",
                argument=name,
            )
    assert start is not None and end is not None
    if end == start:  # the zone skipped the whole of it
        raise InvalidInputError.of(names[0], f"{first.isoformat()} is not a day in {tz}")
    return start, end


def event_times(
    starts_at: str | int | None, ends_at: str | int | None, *, tz: str
) -> tuple[datetime, datetime | None]:
    """A calendar event's start and end from a caller's values (:func:`parse_time` each).

    A date alone (``2026-12-04``) for ``starts_at`` makes an all-day event on that day of
    ``tz`` (:func:`all_day_span`); ``ends_at`` is then its last day, a date too, inclusive
    (``2026-12-06``: three days), or absent (one day). A date and a time together are refused,
    naming both arguments: which one was meant cannot be guessed.
    """
    try:
        return _event_times(starts_at, ends_at, tz)
    except InvalidInputError as exc:
        given = {"starts_at": starts_at, "ends_at": ends_at}
        field = exc.details.get("argument")
        raise _checked(
            exc,
            lambda text, in_zone: _event_times(**(given | {str(field): text}), tz=in_zone or tz),
        ) from exc


def _event_times(
    starts_at: str | int | None, ends_at: str | int | None, tz: str
) -> tuple[datetime, datetime | None]:
    # the readers without their check of suggestions: event_times checks them, once
    first = _date_alone(starts_at, "starts_at")
    last = _date_alone(ends_at, "ends_at")
    if first is not None:
        if ends_at is not None and last is None and not _blank(ends_at):
            raise InvalidInputError.of_together(
                ("starts_at", "ends_at"),
                "starts_at is a date alone, so this is an all-day event: give ends_at as a "
                "date too (its last day, e.g. 2026-12-06), or give starts_at a time",
            )
        return all_day_span(first, last, tz, ("starts_at", "ends_at"))
    if last is not None:
        raise InvalidInputError.of_together(
            ("starts_at", "ends_at"),
            f"a date alone ({last.isoformat()}) cannot end a timed event: give the time it "
            f"ends{_example_end(last, tz)}, or give starts_at as a date too for an all-day event",
        )
    start = _parse_time(starts_at, "starts_at", tz, False, False, "timezone")
    if start is None:
        raise InvalidInputError.of("starts_at", "required: an ISO-8601 time or a date")
    return start, _parse_time(ends_at, "ends_at", tz, False, False, "timezone")


def _example_end(day: date, tz: str) -> str:
    """`` (e.g. <day>T11:00)``, an end of a timed event on ``day``; nothing where that time
    is refused in ``tz`` (the first and last days of the calendar)."""
    example = f"{day.isoformat()}T11:00"
    try:
        parse_time(example, field="ends_at", tz=tz)
    except InvalidInputError:
        return ""
    return f" (e.g. {example})"


def wall_note(value: object, *, field: str, tz: str) -> str | None:
    """What the caller should know about a local time given without an offset (read in
    ``tz``) that the zone's clocks skip or show twice: where :func:`parse_time` placed it (a
    skipped time moves forward by the gap; a repeated one is its first instant). None for
    anything else (an offset, epoch milliseconds, a date alone, a time shown once)."""
    naive = given_wall(value, field=field)
    if naive is None:
        return None
    try:
        where = zone(validate_timezone(tz))
        first = naive.replace(tzinfo=where, fold=0)
        shown = first.astimezone(UTC).astimezone(where)
        second = naive.replace(tzinfo=where, fold=1)
    except (ValueError, OverflowError, InvalidInputError):
        return None
    wall = naive.strftime("%Y-%m-%d %H:%M")
    if shown.replace(tzinfo=None) != naive:
        return (
            f"{field}: {wall} does not exist in {tz} (the clocks skip it); taken as "
            f"{shown.isoformat()}"
        )
    if first.utcoffset() != second.utcoffset():
        return (
            f"{field}: {wall} happens twice in {tz} (the clocks go back); taken as the first, "
            f"{first.isoformat()}; give {second.isoformat()} for the second"
        )
    return None


def given_wall(value: object, *, field: str) -> datetime | None:
    """The naive local time of a text time given without an offset (read in the caller's
    zone); None for anything else (an offset, epoch milliseconds, a date alone, bad text)."""
    if not isinstance(value, str) or date_alone(value, field) is not None:
        return None
    try:
        naive = _date_and_time(value.strip(), field)
    except InvalidInputError:
        return None
    return naive if naive.tzinfo is None else None


def _blank(value: object) -> bool:
    return isinstance(value, str) and not value.strip()


def iso(value: datetime) -> str:
    """UTC ISO-8601 with milliseconds and ``Z``, as the original prints times."""
    utc = value if value.tzinfo is UTC else value.astimezone(UTC)
    # %-formatting the fields takes half the time of strftime or an f-string with format
    # specs (the prefix prints a few hundred of these per turn).
    return "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ" % (  # noqa: UP031 - measured fastest
        utc.year,
        utc.month,
        utc.day,
        utc.hour,
        utc.minute,
        utc.second,
        utc.microsecond // 1000,
    )


def shown_at(value: datetime, tz: str | None) -> str:
    """How a tool's text shows an instant that belongs to a zone: its wall time there with the
    zone's offset at that instant, then the UTC instant, ``2026-03-30 09:00+02:00 Europe/Berlin
    = 2026-03-30T07:00:00.000Z`` (the offset tells the two passes of a repeated hour apart;
    seconds appear when the wall time has them). No zone, a UTC zone, or a zone that cannot
    be read (a row another program wrote): :func:`iso` alone."""
    if tz is None or is_utc(tz):
        return iso(value)
    try:
        local = value.astimezone(zone(tz))
    except (InvalidInputError, ValueError, OverflowError):
        return iso(value)
    off = offset_text(local.utcoffset() or timedelta(0))
    wall = "%04d-%02d-%02d %02d:%02d" % (  # noqa: UP031 - as iso(): years below 1000 too
        local.year,
        local.month,
        local.day,
        local.hour,
        local.minute,
    )
    wall += f":{local.second:02d}" if local.second else ""
    return f"{wall}{off} {tz} = {iso(value)}"
