"""Date text of a form ISO-8601 has that the tools do not take (an ordinal date, a week date
without its day or outside its year, the end of a day as 24:00): refused by name, saying what
to write instead, and what it says to write means the time that was meant."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain import timepolicy
from philont.domain.timeparse import event_times, parse_time
from philont.errors import InvalidInputError, TimeOutOfRangeError

GENERIC = "is not an ISO-8601"
times = st.sampled_from(
    ["", "T09:30", "T0930", " 23:59:59", "T00:00Z", "T12:00+05:30", "T07:15-03:00"]
)
years = st.integers(min_value=2, max_value=9998)  # inside the supported times in every zone


def _refusal(text: str) -> str:
    with pytest.raises(InvalidInputError) as raised:
        parse_time(text, field="at", tz="Europe/Berlin")
    message = raised.value.message
    assert message.startswith("at: "), message
    assert GENERIC not in message, message  # the form is named, not the generic refusal
    return message


def _same(suggested: str, meant: str) -> None:
    """The text the refusal suggests is read as the time that was meant."""
    assert parse_time(suggested, field="at", tz="Europe/Berlin") == parse_time(
        meant, field="at", tz="Europe/Berlin"
    )


@given(year=years, day=st.integers(min_value=1, max_value=366), at=times, dash=st.booleans())
def test_an_ordinal_date_is_refused_with_its_calendar_date(
    year: int, day: int, at: str, dash: bool
) -> None:
    text = f"{year:04d}{'-' if dash else ''}{day:03d}{at}"
    message = _refusal(text)
    assert f"ordinal date (day {day} of {year:04d})" in message
    last = date(year, 12, 31).timetuple().tm_yday
    if day > last:
        assert f"({year} has {last} days)" in message
        return
    calendar = (date(year, 1, 1) + timedelta(days=day - 1)).isoformat()
    found = re.search(r"write the calendar date, (.*)$", message)
    assert found is not None, message
    assert found[1] == f"{calendar}{at}"
    _same(found[1], f"{calendar}{at}")


@given(year=years, week=st.integers(min_value=1, max_value=53), at=times.filter(bool))
def test_a_week_without_its_day_is_refused_with_its_monday(year: int, week: int, at: str) -> None:
    weeks = date(year, 12, 28).isocalendar().week
    message = _refusal(f"{year:04d}-W{week:02d}{at}")
    if week > weeks:
        assert f"{year} has ISO weeks 01 to {weeks}" in message
        return
    found = re.search(r"\(Sunday\): (.+) for its Monday, or its calendar date, (.*)$", message)
    assert found is not None, message
    monday = date.fromisocalendar(year, week, 1)
    _same(found[1], f"{monday.isoformat()}{at}")
    _same(found[2], f"{monday.isoformat()}{at}")


@given(
    year=years,
    week=st.sampled_from([0, 54, 60, 99]) | st.integers(min_value=0, max_value=99),
    day=st.integers(min_value=0, max_value=9),
    at=times,
)
def test_a_week_date_outside_its_year_or_week_is_refused_by_name(
    year: int, week: int, day: int, at: str
) -> None:
    weeks = date(year, 12, 28).isocalendar().week
    text = f"{year:04d}-W{week:02d}-{day}{at}"
    if 1 <= week <= weeks and 1 <= day <= 7:
        assert parse_time(text, field="at") is not None  # a real week date is taken
        return
    message = _refusal(text)
    if not 1 <= week <= weeks:
        assert f"names week {week}, and {year} has ISO weeks 01 to {weeks}" in message
    else:
        assert f"names weekday {day}; the weekday of a week date runs from 1" in message


@given(
    day=st.dates(min_value=date(1, 1, 2), max_value=date(9999, 12, 28)),
    end=st.sampled_from(["24", "24:00", "2400", "24:00:00", "240000", "24:00:00.0", "24:00:00,0"]),
    offset=st.sampled_from(["", "Z", "+02:00", "-0330", "+14:00"]),
    sep=st.sampled_from("T "),
)
def test_the_end_of_a_day_as_24_00_is_refused_with_the_next_midnight(
    day: date, end: str, offset: str, sep: str
) -> None:
    message = _refusal(f"{day.isoformat()}{sep}{end}{offset}")
    found = re.search(r"write 00:00 of the next day, (.*)$", message)
    assert found is not None, message
    midnight = datetime.combine(day, time()) + timedelta(days=1)
    _same(found[1], midnight.isoformat() + offset)


def test_the_other_refusals_say_what_pythons_reader_found() -> None:
    for text, reason in [
        ("2026-04-31T09:00", "day is out of range for month"),
        ("2026-02-29", "day is out of range for month"),
        ("2026-04-01T25:00", "hour must be in 0..23"),
    ]:
        with pytest.raises(InvalidInputError, match=re.escape(reason)):
            parse_time(text, field="at")


def test_a_reminder_at_an_ordinal_date_says_which_day_it_is() -> None:
    # what the model reads back from the tool (the same parse_time)
    with pytest.raises(InvalidInputError, match=r"write the calendar date, 2026-05-03T09:00"):
        parse_time("2026-123T09:00", field="at", tz="UTC", needs_clock=True)
    assert parse_time("2026-05-03T09:00", field="at") == datetime(2026, 5, 3, 9, tzinfo=UTC)


# --- every spelling of the forms, at the ends of the calendar, through every entry point -------

CLOCKS = ["09:30", "0930", "23:59:59", "24:00", "24", "2400", "24:00:00.0"]
OFFSETS = ["", "Z", "z", "+02:00", "-0330", "+14:00"]
edge_years = st.sampled_from([0, 1, 2, 9998, 9999]) | st.integers(min_value=0, max_value=9999)
NOTE = " (24:00 is 00:00 of the next day)"


@st.composite
def spelled(draw: st.DrawFn) -> tuple[str, str, str | None]:
    """(text, what the refusal names, or "taken"/"out of range", and the calendar text of the
    time it means): a calendar, ordinal or week date (a week alone too) in any spelling (basic
    or extended, ``W`` or ``w``; ``T``, ``t`` or a space; ``Z`` or ``z``; space around), of
    any year 0000 .. 9999, with or without a time of day (24:00 among them)."""
    form = draw(st.sampled_from(["calendar", "ordinal", "week", "week alone"]))
    year, dash = draw(edge_years), draw(st.sampled_from(["-", ""]))
    clock = draw(st.none() | st.sampled_from(CLOCKS))
    offset = "" if clock is None else draw(st.sampled_from(OFFSETS))
    at = "" if clock is None else f"{draw(st.sampled_from('Tt '))}{clock}{offset}"
    pad = draw(st.sampled_from(["", " ", "\t", " \n"]))
    midnight = clock is not None and clock.startswith("24")
    named = ""
    if form == "calendar":
        first = date(max(year, 1), 1, 1)
        day = draw(st.dates(min_value=first, max_value=first.replace(month=12, day=31)))
        head, day_number = f"{day.year:04d}{dash}{day:%m}{dash}{day:%d}", day.toordinal()
    elif form == "ordinal":
        number = draw(st.sampled_from([1, 365, 366]) | st.integers(min_value=0, max_value=367))
        head = f"{year:04d}{dash}{number:03d}"
        named = f"ordinal date (day {number} of {year:04d})"
        last = date(year, 12, 31).timetuple().tm_yday if year else 0
        if not 1 <= number <= last:
            why = f"({year} has {last} days)" if year else "(there is no year 0)"
            return f"{pad}{head}{at}{pad[::-1]}", why, None
        day_number = date(year, 1, 1).toordinal() + number - 1
    else:
        week = draw(st.sampled_from([1, 52, 53]) | st.integers(min_value=0, max_value=54))
        weekday = 1 if form == "week alone" else draw(st.integers(min_value=0, max_value=9))
        head = f"{year:04d}{dash}{draw(st.sampled_from('Ww'))}{week:02d}"
        head += "" if form == "week alone" else f"{dash}{weekday}"
        text = f"{pad}{head}{at}{pad[::-1]}"
        if year == 0:
            return text, "there is no year 0", None
        weeks = date(year, 12, 28).isocalendar().week
        if not 1 <= week <= weeks:
            return text, f"names week {week}, and {year} has ISO weeks 01 to {weeks}", None
        if not 1 <= weekday <= 7:
            return text, f"names weekday {weekday}; the weekday of a week date runs from", None
        day_number = date.fromisocalendar(year, week, 1).toordinal() + weekday - 1
        named = "names a week, not a day" if form == "week alone" else ""
    text = f"{pad}{head}{at}{pad[::-1]}"
    day_number += midnight
    if day_number > date.max.toordinal():  # 9999-12-31T24:00, 9999-W52-6: 10000-01-01
        return text, "out of range", None
    meant = date.fromordinal(day_number).isoformat()
    meant += f"T00:00{offset}" if midnight else at
    if not named:
        named = "ends a day with 24:00, which is not taken" if midnight else "taken"
    return text, named, meant


def _time_or_refusal(text: str, tz: str = "Europe/Berlin") -> object:
    try:
        return parse_time(text, field="at", tz=tz)
    except InvalidInputError as exc:
        return type(exc)


def _suggestions(message: str) -> list[str]:
    """The texts a refusal says to write."""
    message = message.removesuffix(NOTE)
    found = re.findall(r"\(Sunday\): (.+) for (?:the end of )?its Monday", message)
    for lead in ("write the calendar date", "write 00:00 of the next day", "its calendar date"):
        found += re.findall(rf"{lead}, (.+)$", message)
    return found


def _every_reading(text: str) -> list[object]:
    """What each reader of a time makes of ``text``: a tool's time (a window's start and end,
    a reminder's time), an event's start and end, the command line's --since (the one
    parser); a refusal as the error. Any other exception fails the test."""
    from philont.cli.values import _time

    calls: list[Callable[[], object]] = [
        lambda: parse_time(text, field="at", tz="Europe/Berlin"),
        lambda: parse_time(text, field="at", tz="America/Los_Angeles", end_of_day=True),
        lambda: parse_time(text, field="at", tz="Asia/Tokyo", needs_clock=True),
        lambda: event_times(text, None, tz="Pacific/Kiritimati")[0],
        lambda: event_times("2026-06-01T09:00Z", text, tz="UTC")[1],
        lambda: _time(field="at")(text),
    ]
    out: list[object] = []
    for call in calls:
        try:
            out.append(call())
        except InvalidInputError as exc:
            out.append(exc)
    return out


@given(spelled())
def test_every_spelling_of_a_form_is_taken_or_refused_by_name(
    case: tuple[str, str, str | None],
) -> None:
    """Lowercase ``w``, ``t``, ``z``, space around the text, the years 0001 and 9999: an
    ordinal date, a week alone or outside its year, 24:00 are refused by name in every
    reader, and what the refusal says to write means the time that was meant; a day past
    9999-12-31 is out of range by name; a week date is read as its calendar date."""
    text, named, meant = case
    readings = _every_reading(text)
    if named == "taken":
        assert meant is not None
        assert _time_or_refusal(text) == _time_or_refusal(meant), text
        by_cli = readings[-1]  # in UTC, as parse_time's default (20261204: a date there too)
        if isinstance(by_cli, InvalidInputError):
            by_cli = type(by_cli)
        assert by_cli == _time_or_refusal(text, "UTC"), text
        return
    for reading in readings:
        assert isinstance(reading, InvalidInputError), (text, reading)
        message = reading.message
        assert message.split(": ")[0] in ("at", "starts_at", "ends_at"), message
        assert GENERIC not in message, message
        if named == "out of range":
            assert isinstance(reading, TimeOutOfRangeError), message
            assert "(10000-01-0" in message or "00:00 of 10000-01-0" in message, message
        else:
            assert named in message, message
            if isinstance(reading, TimeOutOfRangeError):  # the day meant, in that reader
                assert "is refused too: " in message and "outside the supported" in message
    if meant is not None:
        suggested = _suggestions(readings[0].message)  # type: ignore[union-attr]
        # none where the time meant is refused too (0001-001: 0001-01-01, out of range)
        assert bool(suggested) != (_time_or_refusal(meant) is TimeOutOfRangeError), readings[0]
        for each in suggested:
            assert _time_or_refusal(each) == _time_or_refusal(meant), (text, each, meant)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("2026-w14-1", None),
        ("2026-w14-1t09:00z", None),
        ("2026-w14", "names a week, not a day"),
        ("2026-12-31T24:00", "write 00:00 of the next day, 2027-01-01T00:00"),
        ("9999-12-31T24:00", "(the end of 9999-12-31, 00:00 of 10000-01-01) is outside"),
        ("9999-W52-6", "'9999-W52-6' (10000-01-01) is outside the supported times"),
        ("2026-123T24:00", "write the calendar date, 2026-05-04T00:00"),
    ],
)
def test_the_forms_the_brief_named(text: str, named: str | None) -> None:
    if named is None:
        assert parse_time(text, field="at") is not None
        return
    with pytest.raises(InvalidInputError, match=re.escape(named)):
        parse_time(text, field="at")


# --- a zone named in the text ----------------------------------------------------------------

ZONE_WORDS = st.sampled_from(
    ["Europe/Berlin", "europe/berlin", "America/New_York", "UTC", "CET", "Asia/Kolkata"]
)
NOT_ZONES = st.sampled_from(["PST", "CEST", "BST", "UTC+2", "GMT-0530", "UT+5:45", "Mars/Olympus"])


ZONE_IN_TEXT = {
    "at": st.sampled_from(
        ["2026-06-01T09:00", "2026-06-01 09:30:15", "20260601T0900", "20261025T0230"]
    ),  # the last, a repeated hour in Europe/Berlin and CET
    "offset": st.sampled_from(["", "Z", "+02:00", "-0330"]),
    "zone": ZONE_WORDS | NOT_ZONES,
    "bracket": st.sampled_from(["[", "[!", " "]),
}
"""A time, an offset or none, then a zone's name or a word that is none, in brackets or after
a space."""


@given(**ZONE_IN_TEXT)
def test_a_zone_named_in_the_text_is_refused_saying_where_to_give_it(
    at: str, offset: str, zone: str, bracket: str
) -> None:
    """``...T09:00+02:00[Europe/Berlin]`` (RFC 9557), ``...T09:00 CET``, ``... UTC+2``: the
    refusal names the zone as one (in `timezone`, canonical) or says it is none, and the time
    it says to give is read."""
    text = f"{at}{offset}{bracket}{zone}{']' if bracket != ' ' else ''}"
    with pytest.raises(InvalidInputError) as refused:
        parse_time(text, field="at", tz="Asia/Tokyo")
    message = refused.value.message
    assert f"{text!r} names a zone in the text, which is not read" in message, message
    try:
        canonical = timepolicy.validate_timezone(zone)
    except InvalidInputError:
        canonical = ""
        assert f"{zone!r} is n" in message, message  # "is none", "is no IANA zone name"
    else:
        assert f"{canonical!r} in `timezone`" in message, message
    given_alone = re.search(r"give (\d\S*(?: \d\S*)?) alone", message)
    assert (given_alone is not None) == bool(canonical or offset), message
    if given_alone is not None:
        assert given_alone[1] == f"{at}{offset}"
        assert parse_time(given_alone[1], field="at", tz=canonical or "UTC") is not None
    plus = re.fullmatch(r"(?:UTC|GMT|UT)([+-])(\d{1,2}):?(\d{2})?", zone)
    if plus is not None and not offset:
        shift = timedelta(hours=int(plus[2]), minutes=int(plus[3] or 0))
        meant = datetime.fromisoformat(at).replace(
            tzinfo=timezone(shift if plus[1] == "+" else -shift)
        )
        suggested = re.search(r"offset in the time \((.+?)\)", message)
        assert suggested is not None, message
        assert parse_time(suggested[1], field="at") == meant, message


@given(**ZONE_IN_TEXT)
def test_without_a_zone_argument_a_zone_in_the_text_is_refused_with_its_offset(
    at: str, offset: str, zone: str, bracket: str
) -> None:
    """A caller with no argument for the zone (``zone_field=None``: the command line) is never
    told to give one: a zone's name without an offset is refused suggesting the time with the
    offset that zone has then (read as the zone's wall time, in any ``tz``); with an offset,
    the time alone."""
    text = f"{at}{offset}{bracket}{zone}{']' if bracket != ' ' else ''}"
    with pytest.raises(InvalidInputError) as refused:
        parse_time(text, field="--since", tz="Asia/Tokyo", zone_field=None)
    message = refused.value.message
    assert "`" not in message, message
    suggestions = refused.value.details.get("suggestion", ())
    assert all(in_zone is None for _, in_zone in suggestions), suggestions
    try:
        canonical = timepolicy.validate_timezone(zone)
    except InvalidInputError:
        return
    assert len(suggestions) == 1, message
    read = parse_time(suggestions[0][0], field="--since", tz="Asia/Tokyo", zone_field=None)
    meant = datetime.fromisoformat(at + offset.replace("Z", "+00:00"))
    if meant.tzinfo is None:
        meant = meant.replace(tzinfo=timepolicy.zone(canonical))  # a repeated hour: the first
    assert read == meant.astimezone(UTC), message  # as UTC: a repeated hour compares unequal


@pytest.mark.parametrize(
    "text",
    ["2026-06-01T09:00 PM", "2026-06-01T09:00 tomorrow", "2026-06-01T09:00+02:00[u-ca=hebrew]"],
)
def test_a_word_that_is_no_zone_gets_the_plain_refusal(text: str) -> None:
    with pytest.raises(InvalidInputError, match=GENERIC) as refused:
        parse_time(text, field="at")
    assert "names a zone" not in refused.value.message


# --- one-digit fields and expanded years -----------------------------------------------------


@given(
    at=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
    short=st.sets(st.sampled_from(["month", "day", "hour", "minute", "second"])),
    year_form=st.sampled_from(["", "+", "0"]),
    clock=st.sampled_from(["", "T", "t", " "]),
    seconds=st.booleans(),
    offset=st.sampled_from(["", "Z", "+02:00", "-0330"]),
)
def test_one_digit_fields_and_expanded_years_are_refused_with_the_text_to_write(
    at: datetime, short: set[str], year_form: str, clock: str, seconds: bool, offset: str
) -> None:
    """``2026-6-1``, ``T9:00``, ``+2026-06-01``, ``02026-06-01``: refused saying what to write
    (each field with two digits, the year with four), and that text means the time meant."""
    fields = {"month": at.month, "day": at.day, "hour": at.hour, "minute": at.minute}
    fields["second"] = at.second

    def two(name: str) -> str:
        value = fields[name]
        return str(value) if name in short and value < 10 else f"{value:02d}"

    def written(year: str, field: Callable[[str], str]) -> str:
        text = f"{year}-{field('month')}-{field('day')}"
        if clock:
            text += f"{clock}{field('hour')}:{field('minute')}"
            text += f":{field('second')}" if seconds else ""
        return text + (offset if clock else "")

    text = written(f"{year_form}{at.year:04d}", two)
    meant = written(f"{at.year:04d}", lambda name: f"{fields[name]:02d}")
    if text == meant:
        return  # nothing to refuse
    with pytest.raises(InvalidInputError) as refused:
        parse_time(text, field="at", tz="Europe/Berlin")
    message = refused.value.message
    assert GENERIC not in message, message
    suggested = re.search(r": write (.+)$", message)
    assert suggested is not None, message
    assert suggested[1] == meant, message
    assert _time_or_refusal(suggested[1]) == _time_or_refusal(meant)


@pytest.mark.parametrize("year", ["10000", "99999", "+12026", "-2026", "0000", "9" * 5000])
def test_a_year_outside_0001_to_9999_is_out_of_range_by_name(year: str) -> None:
    with pytest.raises(TimeOutOfRangeError, match=r"\(the year [-0-9]") as refused:
        parse_time(f"{year}-06-01T09:00Z", field="at")
    assert len(refused.value.message) < 300


# --- what a refusal says to write is read ----------------------------------------------------

_TEXT = r"(\d(?:[^\s,()]|,\d)*(?: \d(?:[^\s,()]|,\d)*)?)"
"""A time's text in a message (a space between date and time, a decimal comma allowed)."""
SUGGESTED = [
    re.compile(rf"write (?:the calendar date, |00:00 of the next day, )?{_TEXT}"),
    re.compile(rf"\(Sunday\): {_TEXT} for"),
    re.compile(rf"its calendar date, {_TEXT}"),
    re.compile(rf"offset in the time \({_TEXT}\)"),
    re.compile(rf"give {_TEXT} alone(?: and '([^']+)' in `timezone`)?"),
    re.compile(rf"give the time too \(e\.g\. {_TEXT}\)"),
]
"""Where a refusal names a text to write instead (its examples of a form, ``e.g. +02:00`` for
a zone whose offset is not known, are none), and the zone it says to read it in."""
EDGE_DAYS = st.sampled_from(["0001-01-01", "0001-01-02", "9999-12-30", "9999-12-31"]) | st.dates(
    min_value=date(1, 1, 1), max_value=date(9999, 12, 31)
).map(date.isoformat)


@st.composite
def refusable(draw: st.DrawFn) -> str:
    """Text of the forms refused with a text to write instead, at the ends of the calendar too:
    the forms of :func:`spelled`, a zone after a time (any case; ``UTC+h:mm`` with offsets no
    place uses, minutes past 59), a field of one digit."""
    kind = draw(st.sampled_from(["form", "zone", "loose"]))
    if kind == "form":
        return draw(spelled())[0]
    day = draw(EDGE_DAYS)
    if kind == "loose":
        clock = draw(st.sampled_from(["", "T9:00", " 9:05:3", "T23:5", "T0:00:00,5"]))
        offset = draw(st.sampled_from(["", "Z", "+14:00", "-12:00"])) if clock else ""
        return day.replace("-0", "-") + clock + offset
    clock = draw(st.sampled_from(["T09:00", " 00:00", "T23:59:59", "T12:00"]))
    offset = draw(st.sampled_from(["", "Z", "+14:00", "-12:00", "+15:00", "-0330"]))
    hours, minutes = draw(st.integers(0, 30)), draw(st.none() | st.integers(0, 99))
    plus = f"{draw(st.sampled_from(['+', '-']))}{hours}"
    plus += "" if minutes is None else f"{draw(st.sampled_from([':', '']))}{minutes:02d}"
    name = draw(st.sampled_from(["UTC", "utc", "Utc", "GMT", "gmt", "UT"]))
    word = draw(
        st.sampled_from(["CET", "cet", "Asia/Tokyo", "europe/berlin", "Pacific/Kiritimati"])
        | st.sampled_from(["PST", "Etc/GMT+12", "utc", "Utc", "America/Los_Angeles"])
        | st.just(name + plus)
    )
    around = draw(st.sampled_from([" ", "[", "[!"]))
    return f"{day}{clock}{offset}{around}{word}{']' if around != ' ' else ''}"


@given(
    text=refusable(),
    tz=st.sampled_from(["UTC", "Europe/Berlin", "Pacific/Kiritimati", "Etc/GMT+12"]),
    end_of_day=st.booleans(),
    needs_clock=st.booleans(),
)
def test_what_a_refusal_says_to_write_is_read(
    text: str, tz: str, end_of_day: bool, needs_clock: bool
) -> None:
    """Every text a refusal says to write (a calendar date for an ordinal or week date, 00:00
    of the next day for 24:00, the offset of ``UTC+2``, the time alone for a zone, two digits
    for one) is read by the same call: where none would be (``UTC+24``, ``UTC+5:75``,
    ``0001-001``: a day outside the supported times), the refusal says why instead."""
    readers: list[Callable[[str, str], object]] = [
        lambda value, zone: parse_time(
            value, field="at", tz=zone, end_of_day=end_of_day, needs_clock=needs_clock
        ),
        lambda value, zone: event_times(value, None, tz=zone),  # an event's start
    ]
    for read in readers:
        try:
            read(text, tz)
        except InvalidInputError as exc:
            message = exc.message
        else:
            continue
        for pattern in SUGGESTED:
            for found in pattern.finditer(message):
                in_zone = found[2] if found.re.groups > 1 and found[2] else tz
                try:
                    read(found[1], in_zone)
                except InvalidInputError as refused:
                    raise AssertionError(
                        f"{message}\n-> {found[1]!r} in {in_zone}: {refused}"
                    ) from None


@given(
    text=refusable()
    | st.sampled_from(["2026-06-01T09:00+05:75", "2026-06-01T09:00+24:00", "2026-06-01"]),
    tz=st.sampled_from(["UTC", "Europe/Berlin"]),
    zone_field=st.sampled_from([None, "timezone", "tz"]),
    needs_clock=st.booleans(),
)
def test_a_refusal_names_no_argument_but_the_callers_zone_argument(
    text: str, tz: str, zone_field: str | None, needs_clock: bool
) -> None:
    """Where a refusal says to name a zone, it names the argument the caller says it has
    (``zone_field``), and none where it has none; what it suggests is read by the same call."""
    try:
        parse_time(text, field="at", tz=tz, needs_clock=needs_clock, zone_field=zone_field)
    except InvalidInputError as exc:
        refused = exc
    else:
        return
    named = set(re.findall(r"`([^`]*)`", refused.message))
    assert named <= ({zone_field} if zone_field else set()), refused.message
    for suggested, in_zone in refused.details.get("suggestion", ()):
        assert in_zone is None or zone_field is not None, refused.message
        parse_time(
            suggested,
            field="at",
            tz=in_zone or tz,
            needs_clock=needs_clock,
            zone_field=zone_field,
        )


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("2026-06-01T09:00 UTC+24", "UTC offset +24:00 is not one any place uses"),
        ("2026-06-01T09:00 UTC+14:30", "UTC offset +14:30 is not one any place uses"),
        ("2026-06-01T09:00 UTC+23:59", "UTC offset +23:59 is not one any place uses"),
        ("2026-06-01T09:00 UTC+5:75", "minutes and seconds must run from 00 to 59"),
        ("0001-001", "0001-01-01, is refused too: 0001-01-01T00:00:00+00:00 is outside"),
        ("2026-06-01T09:00 cet", "give 2026-06-01T09:00 alone and 'CET' in `timezone`"),
        ("2026-06-01T09:00 utc", "give 2026-06-01T09:00 alone and 'UTC' in `timezone`"),
        ("2026-06-01T09:00 Utc", "give 2026-06-01T09:00 alone and 'UTC' in `timezone`"),
        ("2026-06-01T09:00 utc+2", "offset in the time (2026-06-01T09:00+02:00)"),
        ("2026-06-01T09:00 gmt-5:30", "offset in the time (2026-06-01T09:00-05:30)"),
    ],
)
def test_the_suggestions_the_review_named(text: str, named: str) -> None:
    with pytest.raises(InvalidInputError) as refused:
        parse_time(text, field="at")
    assert named in refused.value.message, refused.value.message
    assert "names a zone" in refused.value.message or "ordinal" in refused.value.message


@pytest.mark.parametrize("text", ["2026-06-01T09:00 noon", "2026-06-01T09:00 pm"])
def test_a_lowercase_word_that_names_no_zone_gets_the_plain_refusal(text: str) -> None:
    with pytest.raises(InvalidInputError, match=GENERIC):
        parse_time(text, field="at")
