"""The ISO-8601 forms of a day and time that the tools do not take, refused by name.

ISO-8601 has more ways to write a day than the tools read: an ordinal date (``2026-123``), a
week without its day (``2026-W14``) or outside its year (``2026-W54-1``), and the end of a day
as ``24:00``. Text in one of these forms, its letters in either case (RFC 3339 lets ``T`` and
``Z`` be ``t`` and ``z``; ``w`` is read as ``W`` alike), is refused saying what to write
instead: the calendar text of the time it means (:func:`suggesting`; the time reader reads
each suggestion, and where that is refused too, 0001-01-01 outside the supported times, the
refusal says why instead, or suggests what that refusal suggests). Text that means a day
after the calendar's last (``9999-12-31T24:00``, ``9999-W52-6``: 10000-01-01) is
``TimeOutOfRangeError``. A decimal fraction of the hour or minute (``09:30.5``) is refused
with the same time in seconds, digits of another script (full-width ``２０２６``) with the
text in ASCII digits, and a zone's name after the time or a date alone
(``2026-06-01T09:00 CET``, ``...+02:00[Europe/Berlin]``, ``2026-W23 CET``) saying to give the
zone in the caller's argument for it (the tools' ``timezone``) or the offset in the time (where
the caller has no such argument, the command line: the offset that zone has then,
``2026-06-01T09:00+02:00``; after a date, its midnight as an example): nothing is read by
guessing. Where a suggested text is refused in turn, what is suggested is where the chain of
suggestions leads (:func:`chain_end`), one text however long the chain.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import date, datetime
from decimal import ROUND_DOWN, Decimal
from typing import Final

from philont.domain.timepolicy import offset_text, out_of_range, validate_timezone, zone
from philont.errors import InvalidInputError

__all__ = ["DATE", "chain_end", "names_a_day", "refusal", "suggesting", "written_as_date"]

DATE: Final = (
    r"(?P<year>\d{4})"
    r"(?:(?P<sep>-?)(?P<month>\d{2})(?P=sep)(?P<mday>\d{2})"  # calendar: 2026-12-04, 20261204
    r"|-?(?P<ordinal>\d{3})"  # ordinal: 2026-123, 2026123
    r"|-?[Ww](?P<week>\d{2})(?:-?(?P<weekday>\d))?)"  # week: 2026-W14-1, 2026W141, 2026-W14
)
"""A date in one of ISO-8601's forms (calendar, ordinal, week with its day or without; basic
or extended; ``W`` in either case), as a pattern (``re.ASCII``): the one description of them.
The time readers' shapes (:mod:`philont.domain.timeparse`) are built on it, and which of its
forms name a day the tools read is :func:`names_a_day`'s to say."""
_FORM: Final = re.compile(
    DATE + r"(?:(?P<rest>[Tt ](?P<clock>[0-9:.,]+)(?P<offset>[Zz]|[+-][0-9:]+)?))?", re.ASCII
)
"""A :data:`DATE`, then a time of day and offset in the characters they use (loosely: what
the clock holds is Python's reader's to judge, but for ``24:00``)."""
_END_OF_DAY: Final = re.compile(r"24(?::?00(?::?00(?:[.,]0+)?)?)?", re.ASCII)
_LAST_DAY: Final = date.max.toordinal()
_ANY_DAY: Final = "give the calendar date, YYYY-MM-DD (e.g. 2026-12-04)"


def refusal(
    text: str, field: str, *, zone_field: str | None = "timezone", tz: str = "UTC"
) -> InvalidInputError | None:
    """The refusal of ``text`` (stripped) when it is date text of a form ISO-8601 has and
    this does not take (see the module), naming ``field``; None for text of any other form,
    a form that is taken included (what is wrong with it is Python's reader's to say).
    ``zone_field`` and ``tz`` are the caller's, as :func:`parse_time
    <philont.domain.timeparse.parse_time>` takes them: where a refusal says to give a zone."""
    other_digits = _other_digits(text, field)
    if other_digits is not None:
        return other_digits
    found = _FORM.fullmatch(text)
    if found is None:
        return _loose(text, field) or _zone_in_text(text, field, zone_field, tz)
    shown = f"{text[:60]!r}"
    day = _day(found, shown)
    if not isinstance(day, int):  # None: a calendar date that names no day (year 0 too)
        return _loose(text, field) if day is None else InvalidInputError.of(field, day)
    end_of_day = found["clock"] is not None and _END_OF_DAY.fullmatch(found["clock"]) is not None
    day += end_of_day
    if day > _LAST_DAY:
        ends = f"the end of {_day_text(day - 1)}, 00:00 of " if end_of_day else ""
        return out_of_range(field, f"{shown} ({ends}{_day_text(day)})")
    rest = f"T00:00{found['offset'] or ''}" if end_of_day else found["rest"] or ""
    written = f"{date.fromordinal(day).isoformat()}{rest}"
    midnight = " (24:00 is 00:00 of the next day)" if end_of_day else ""
    if found["ordinal"] is not None:
        what = f"{shown} is an ordinal date (day {int(found['ordinal'])} of {found['year']})"
        return suggesting(
            field,
            f"{what}, which is not taken",
            f": write the calendar date, {written}{midnight}",
            written,
        )
    if found["week"] is not None and found["weekday"] is None:
        iso = date.fromordinal(day).isocalendar()
        monday = "the end of its Monday" if end_of_day else "its Monday"
        week = f"{iso.year:04d}-W{iso.week:02d}-{iso.weekday}{rest}"
        return suggesting(
            field,
            f"{shown} names a week, not a day",
            f": add the weekday, 1 (Monday) to 7 (Sunday): {week} for {monday}, or its "
            f"calendar date, {written}{midnight}",
            week,
            written,
        )
    if end_of_day:
        return suggesting(
            field,
            f"{shown} ends a day with 24:00, which is not taken",
            f": write 00:00 of the next day, {written}",
            written,
        )
    fraction = _FRACTION.fullmatch(found["clock"] or "")
    if fraction is not None:
        return _fraction(text, found, fraction, field) or _loose(text, field)
    return _loose(text, field)  # a form that is taken, unless a field has one digit


def names_a_day(found: re.Match[str]) -> bool:
    """Whether ``found``, a match of a pattern built on :data:`DATE`, is of a form the tools
    read as a day: a calendar date, or a week date with its weekday. An ordinal date
    (Python's reader takes none) and a week alone (Python's reader guesses its Monday) are
    not: :func:`refusal` says what to write instead."""
    return found["ordinal"] is None and (found["week"] is None or found["weekday"] is not None)


def written_as_date(text: str) -> bool:
    """Whether ``text`` (stripped) is written as a date in one of ISO-8601's forms (calendar,
    ordinal, week; basic or extended), a time of day after it or not: text the time readers
    read as date text (taken, or refused by name), so digits alone of such a form
    (``20261204``, the ordinal ``2026123``) are a date, never a number."""
    return _FORM.fullmatch(text.strip()) is not None


def _other_digits(text: str, field: str) -> InvalidInputError | None:
    """The refusal of text that writes digits of another script (full-width ``２０２６``,
    Arabic-Indic ``٢٠٢٦``): the tools read ISO-8601's ASCII digits only, as they read no
    other form by guessing. It suggests the text with ASCII digits (and ASCII for full-width
    ``－``, ``：``, ``Ｔ``, ...) when that is all ASCII; None for text without such digits."""
    other = next((c for c in text if c.isdecimal() and not c.isascii()), None)
    if other is None:
        return None
    digits = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text)
    written = unicodedata.normalize("NFKC", digits)
    refused = (
        f"{text[:60]!r} writes digits of another script ({other!r}, "
        f"{unicodedata.name(other, 'a digit').lower()}), which are not taken"
    )
    if not written.isascii():
        return InvalidInputError.of(field, f"{refused}: write its digits as ASCII digits, 0-9")
    return suggesting(field, refused, f": write ASCII digits, {written}", written)


_FRACTION: Final = re.compile(
    r"(?P<hour>\d{2})(?:(?P<colon>:?)(?P<minute>\d{2}))?[.,](?P<fraction>\d+)", re.ASCII
)
"""A time of day that ends with a decimal fraction of its hour (``09.5``) or minute
(``09:30.5``, ``0930,5``): ISO-8601 has it, Python's reader (and so the tools) does not."""


def _fraction(
    text: str, found: re.Match[str], fraction: re.Match[str], field: str
) -> InvalidInputError | None:
    """The refusal of a time of day with a decimal fraction of its hour or minute, suggesting
    the same time in seconds (to the microsecond, as times are read); None when the hour or
    minute itself is out of range (Python's reader says why)."""
    hour, minute, colon = int(fraction["hour"]), fraction["minute"], fraction["colon"] or ":"
    if hour > 23 or (minute is not None and int(minute) > 59):
        return None
    unit = "hour" if minute is None else "minute"
    share = Decimal(f"0.{fraction['fraction']}") * (3600 if minute is None else 60)
    micros = int((share * 1_000_000).to_integral_value(ROUND_DOWN))
    exact = micros == share * 1_000_000
    minutes, micros = divmod(micros + int(minute or 0) * 60_000_000, 60_000_000)
    seconds, micros = divmod(micros, 1_000_000)
    clock = f"{hour:02d}{colon}{minutes:02d}"
    if seconds or micros:
        clock += f"{colon}{seconds:02d}" + (f".{micros:06d}".rstrip("0") if micros else "")
    written = f"{text[: found.start('clock')]}{clock}{found['offset'] or ''}"
    return suggesting(
        field,
        f"{text[:60]!r} gives a decimal fraction of the {unit} ({found['clock']}), which is "
        "not taken",
        f": write it in {'minutes and ' if minute is None else ''}seconds, {written}"
        + ("" if exact else " (to the microsecond)"),
        written,
    )


def _day(found: re.Match[str], shown: str) -> int | str | None:
    """The day the date part of ``found`` names, as ``date.toordinal()`` (past 9999-12-31
    for a week date there); what is wrong when its form names none (an ordinal or week
    outside its year); None for a calendar date that is no day."""
    year = int(found["year"])
    if found["ordinal"] is not None:
        number = int(found["ordinal"])
        last = date(year, 12, 31).timetuple().tm_yday if year else 0
        if not 1 <= number <= last:
            days = f"{year} has {last} days" if year else "there is no year 0"
            return (
                f"{shown} is an ordinal date (day {number} of {year:04d}), which is not taken "
                f"({days}): {_ANY_DAY}"
            )
        return date(year, 1, 1).toordinal() + number - 1
    if found["week"] is not None:
        week, weekday = int(found["week"]), int(found["weekday"] or 1)
        if year == 0:
            return f"{shown} names a week of year 0000, and there is no year 0"
        weeks = _weeks_in(year)
        if not 1 <= week <= weeks:
            return (
                f"{shown} names week {week}, and {year} has ISO weeks 01 to {weeks}: "
                f"check the week, or {_ANY_DAY}"
            )
        if not 1 <= weekday <= 7:
            return (
                f"{shown} names weekday {weekday}; the weekday of a week date runs from "
                "1 (Monday) to 7 (Sunday)"
            )
        return _week_one(year) + (week - 1) * 7 + weekday - 1
    try:
        return date(year, int(found["month"]), int(found["mday"])).toordinal()
    except ValueError:
        return None  # Python's reader says why


_LOOSE: Final = re.compile(
    r"(?:(?P<year>[+-]?\d{4,})-(?P<month>\d{1,2})-(?P<day>\d{1,2})"
    r"|(?P<date>[0-9Ww-]+))"  # a DATE of another form (20260601, 2026-W23-1): its own fields
    r"(?:(?P<sep>[Tt ])(?P<hour>\d{1,2})(?::(?P<minute>\d{1,2})(?::(?P<second>\d{1,2}))?)?"
    r"(?P<fraction>[.,]\d+)?)?"  # of the last field given: 9:30:15.5, 9:30.5, 9.5
    r"(?P<offset>[Zz]|[+-]\d{2}(?::?\d{2})?)?",
    re.ASCII,
)
"""A calendar date and time of day as people write them, with a field of one digit
(``2026-6-1``, ``T9:00``, ``T9.5``: with a fraction of its last field too; after a date of
any form, ``2026-W23-1T9:30.5``) or a year of more digits or a sign (ISO-8601's expanded
years, ``+12026-01-01``)."""
_DATE: Final = re.compile(DATE, re.ASCII)


def _loose(text: str, field: str) -> InvalidInputError | None:
    """The refusal of :data:`_LOOSE` text whose year is outside 0001..9999 (out of range,
    naming it), written in the expanded form (``+2026``, ``02026``) or with a field of one
    digit: what to write instead."""
    found = _LOOSE.fullmatch(text)
    if found is None or (found["date"] is not None and not _DATE.fullmatch(found["date"])):
        return None
    shown, year = f"{text[:60]!r}", found["year"] or "0000"
    number = int(year) if len(year) <= 20 else None
    if found["date"] is None and (number is None or not 1 <= number <= 9999):
        digits = year.lstrip("+")
        shown_year = digits if len(digits) <= 12 else f"{digits[:12]}... ({len(digits)} digits)"
        return out_of_range(field, f"{shown} (the year {shown_year})")
    parts = ("month", "day", "hour", "minute", "second")
    expanded = len(year) != 4
    if not expanded and all(found[p] is None or len(found[p]) == 2 for p in parts):
        return None  # what is wrong is Python's reader's to say
    two = {p: f"{int(found[p]):02d}" for p in parts if found[p] is not None}
    written = found["date"] or f"{number:04d}-{two['month']}-{two['day']}"
    if "hour" in two:
        written += found["sep"] + ":".join(two[p] for p in parts[2:] if p in two)
        written += found["fraction"] or ""  # a fraction of the hour or minute: said when read
    written += found["offset"] or ""
    why = (
        "writes the year with a sign or more than four digits (ISO-8601's expanded form), "
        "which is not taken"
        if expanded
        else "writes a field with one digit; ISO-8601 writes two (month, day, hour, minute, second)"
    )
    return suggesting(field, f"{shown} {why}", f": write {written}", written)


def suggesting(
    field: str,
    refused: str,
    advice: str,
    *texts: str | tuple[str, str | None],
    zone: str | None = None,
    example: bool = False,
) -> InvalidInputError:
    """The refusal of ``field``, ``refused`` + ``advice``, where ``advice`` suggests ``texts``
    to write instead (read in ``zone``, or a text's own, given as ``(text, zone)``; None: the
    caller's); ``example``: they are examples (a time of day, an offset), not the time meant.
    The refusal keeps them apart (``details["refused"]``, ``["advice"]``, ``["suggestion"]``)
    so that :func:`parse_time <philont.domain.timeparse.parse_time>` reads each suggested
    text as the caller's own, and where one is refused too suggests what that refusal
    suggests or says why instead."""
    return InvalidInputError.of(
        field,
        refused + advice,
        refused=refused,
        advice=advice,
        suggestion=tuple(t if isinstance(t, tuple) else (t, zone) for t in texts),
        **({"example": True} if example else {}),
    )


def _zone_in_text(
    text: str, field: str, zone_field: str | None, tz: str
) -> InvalidInputError | None:
    """The refusal of a time or a date alone followed by a zone's name, in brackets as RFC
    9557 writes it (``2026-06-01T09:00+02:00[Europe/Berlin]``) or after a space
    (``2026-06-01T09:00 CET``, ``2026-06-01 UTC+2``): the zone is not read from the text; it
    says where to give it: in ``zone_field``, the caller's argument for the zone, or where the
    caller has none (None: the command line) the time with the offset that zone has then, a
    time without an offset being read in ``tz`` (after a date alone, which means the day's
    start or its end, a time with the offset is an example: its midnight). The time may be of
    any form :data:`_FORM` or :data:`_LOOSE` takes: what is wrong with it is said when its
    suggestion is read (``2026-06-01T9:00 CET``: give ``2026-06-01T09:00``; ``2026-W23 CET``:
    give ``2026-06-01``). None for text of any other form."""
    if text.endswith("]") and "[" in text:
        time_text, zone_name = text[: text.index("[")], text[text.index("[") + 1 : -1]
        zone_name = zone_name.removeprefix("!")  # RFC 9557's "critical" flag
        if "=" in zone_name:  # a tag (u-ca=hebrew), not a zone
            return None
    elif len(split := text.rsplit(None, 1)) == 2 and _zone_like(split[1]):
        time_text, zone_name = split
    else:
        return None
    time_text = time_text.strip()
    found = _FORM.fullmatch(time_text) or _LOOSE.fullmatch(time_text)
    if found is None:
        return None
    clocked = found[found.re.groupindex.get("clock", "hour")] is not None
    if not clocked and found["offset"] is not None:
        return None  # a date with an offset is no form (2026-06-01+02:00)
    try:
        canonical: str | None = validate_timezone(zone_name)
    except InvalidInputError:
        canonical = None
    shown = f"{text[:80]!r} names a zone in the text, which is not read"
    if found["offset"] is not None:
        where = (
            f"; {zone_name[:40]!r} is no IANA zone name"
            if not canonical
            else ""
            if zone_field is None
            else f", and {canonical!r} in `{zone_field}` where its wall time is shown"
        )
        return suggesting(
            field,
            shown,
            f": give {time_text} alone (its offset names the instant){where}",
            time_text,
            zone=canonical if zone_field else None,
        )
    if canonical and zone_field is not None:
        return suggesting(
            field,
            shown,
            f": give {time_text} alone and {canonical!r} in `{zone_field}`",
            time_text,
            zone=canonical,
        )
    # a date alone is a day, its start (or its end, for the end of a window): what it says to
    # give is a time with an offset, its midnight an example
    wall = time_text if clocked else f"{time_text}T00:00"
    alone = (
        f"a time without an offset is read in {tz}" if clocked else f"a date alone is read in {tz}"
    )
    if canonical:  # no argument takes the zone: the offset it has at that wall time
        offset_there = _offset_at(wall, canonical, field)
        if offset_there is None:  # the time is refused in the zone: reading it says why
            return suggesting(
                field,
                shown,
                f": give it with its UTC offset in {canonical!r} ({alone})",
                (time_text, canonical),
            )
        meant = f"{wall}{offset_there}"
        advice = (
            f": give it with its UTC offset in {canonical!r}, {meant} ({alone})"
            if clocked
            else f": give a time with its UTC offset in {canonical!r} (e.g. {meant}, the day's "
            f"midnight; {alone})"
        )
        return suggesting(field, shown, advice, meant, example=not clocked)
    offset = _UTC_OFFSET.fullmatch(zone_name)
    if offset is None or offset["sign"] is None:
        meant, example = f"{wall}+02:00", True
    else:
        meant = f"{wall}{offset['sign']}{int(offset['hours']):02d}:{offset['minutes'] or '00'}"
        example = not clocked
    where = (
        f"; {zone_name[:40]!r} is no IANA zone name, and {alone}"
        if zone_field is None
        else f", or the {'time' if clocked else 'date'} alone and an IANA zone in "
        f"`{zone_field}` (e.g. 'Europe/Berlin'; {zone_name[:40]!r} is none)"
    )
    give = (
        f"its UTC offset in the time ({'e.g. ' if example else ''}{meant})"
        if clocked
        else f"a time with its UTC offset (e.g. {meant}, the day's midnight)"
    )
    return suggesting(field, shown, f": give {give}{where}", meant, example=example)


def _offset_at(time_text: str, canonical: str, field: str) -> str | None:
    """The UTC offset (``+02:00``) zone ``canonical`` has at the wall time ``time_text`` (of a
    form :data:`_FORM` or :data:`_LOOSE` takes, without an offset), read where its refusals'
    suggestions lead (:func:`chain_end`); None where no time is read from it (refused for its
    own reason) or the zone's offset there leaves the calendar."""
    end = chain_end(time_text, None, lambda text, _zone: refusal(text, field))
    if isinstance(end, InvalidInputError):
        return None
    try:
        wall = datetime.fromisoformat(end[0].upper())
        there = wall.replace(tzinfo=zone(canonical)).utcoffset()
    except (OverflowError, ValueError):
        return None
    return None if there is None else offset_text(there)


_LONGEST_CHAIN: Final = 8
"""More steps than any chain of refusals takes (each suggests a text of a form taken, or
nearer one): a bound, never reached, against a refusal that would suggest itself."""


def chain_end(
    text: str,
    in_zone: str | None,
    refused_by: Callable[[str, str | None], InvalidInputError | None],
) -> tuple[str, str | None] | InvalidInputError:
    """Where a suggested ``text`` (read in ``in_zone``; None: the caller's zone) leads: the
    first text ``refused_by`` takes (returns None for), ``text`` itself or the text its refusal
    suggests to write instead (:func:`suggesting`), in turn, with its zone: the end of the
    chain. A refusal that suggests several texts (a week: its Monday, or its calendar date;
    they mean the same time) is followed by its last, the calendar text, so a chain is one
    text. A refusal that suggests none, only examples, or a text in another zone ends the chain
    and is returned: why the text is refused."""
    refused: InvalidInputError | None = None
    for _ in range(_LONGEST_CHAIN):
        refused = refused_by(text, in_zone)
        if refused is None:
            return text, in_zone
        then = refused.details.get("suggestion", ())
        if not then or refused.details.get("example") or then[-1][1] not in (None, in_zone):
            return refused
        text = then[-1][0]
    assert refused is not None
    return refused


_UTC: Final = r"(?:UTC|GMT|UT)(?:(?P<sign>[+-])(?P<hours>\d{1,2})(?::?(?P<minutes>\d{2}))?)?"
_UTC_OFFSET: Final = re.compile(_UTC, re.ASCII | re.IGNORECASE)
"""UTC, GMT or UT, in any case, with an offset or without (``UTC+2``, ``gmt-5:30``)."""
_ZONE_LIKE: Final = re.compile(
    rf"(?i:{_UTC})|(?!AM$|PM$)[A-Z]{{2,5}}|[A-Za-z_]+(?:/[\w+-]+)+", re.ASCII
)
"""A word after a time that is meant as its zone: an IANA name (``Europe/Berlin``), an
abbreviation in capitals (``CET``, ``PST``; not ``AM``/``PM``), UTC or GMT with an offset
(:data:`_UTC_OFFSET`, in any case)."""


def _zone_like(word: str) -> bool:
    """Whether ``word``, after a time, is meant as its zone: :data:`_ZONE_LIKE`, or a zone's
    name in another case (``cet``, ``Utc``: what it names is not in doubt; ``noon`` is no
    zone)."""
    if _ZONE_LIKE.fullmatch(word):
        return True
    try:
        validate_timezone(word)
    except InvalidInputError:
        return False
    return True


def _weeks_in(year: int) -> int:
    return date(year, 12, 28).isocalendar().week  # 28 December lies in the year's last week


def _week_one(year: int) -> int:
    """The Monday of ISO week 1 of ``year``, as ``date.toordinal()``: the week holding 4
    January (for the year 1, 0001-01-01 itself, a Monday)."""
    fourth = date(year, 1, 4)
    return fourth.toordinal() - fourth.weekday()


def _day_text(day: int) -> str:
    """A day as ``date.toordinal()``, ISO-8601's text even past 9999-12-31 (10000-01-01)."""
    if day <= _LAST_DAY:
        return date.fromordinal(day).isoformat()
    return f"10000-01-{day - _LAST_DAY:02d}"  # a week date or 24:00 passes it by 3 days at most
