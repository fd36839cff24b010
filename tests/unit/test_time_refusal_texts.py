"""What a refusal of a time says to write is taken: every text a refusal suggests
(``details["suggestion"]``) by the reader that refused, and every example a refusal's message
gives ("e.g. ...": a time, a date, an offset, a zone), whoever refused (the time readers,
:func:`date_alone` called directly, an event's start and end). Generated over text built from
the pieces times are written with (every date form, a time with fractions, 24:00 and leap
seconds, offsets in and out of range, zones after the time, digits of other scripts) and any
text."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import timedelta
from fractions import Fraction

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from philont.domain import timeforms, timeparse
from philont.domain.timeparse import date_alone, event_times, parse_time
from philont.domain.timepolicy import validate_timezone
from philont.errors import InvalidInputError

ZONES = ("UTC", "Europe/Berlin", "Pacific/Kiritimati", "Etc/GMT+12", "America/Sao_Paulo")

Reader = Callable[[str, str], object]
READERS: dict[str, tuple[str, Reader]] = {
    "time": ("at", lambda text, tz: parse_time(text, field="at", tz=tz)),
    "end of a window": (
        "at",
        lambda text, tz: parse_time(text, field="at", tz=tz, end_of_day=True),
    ),
    "reminder": ("at", lambda text, tz: parse_time(text, field="at", tz=tz, needs_clock=True)),
    "command line": (  # no argument takes the zone
        "--since",
        lambda text, tz: parse_time(text, field="--since", tz=tz, zone_field=None),
    ),
    "date alone": ("at", lambda text, tz: date_alone(text, "at")),
    "event start": ("starts_at", lambda text, tz: event_times(text, None, tz=tz)),
    "timed event end": ("ends_at", lambda text, tz: event_times("2026-06-01T09:00Z", text, tz=tz)),
    "all-day event end": ("ends_at", lambda text, tz: event_times("2026-06-01", text, tz=tz)),
}

TIME_READERS = sorted(set(READERS) - {"date alone", "all-day event end"})
"""The readers that take a time of day."""

_FULL_WIDTH = str.maketrans({c: chr(ord(c) + 0xFEE0) for c in "0123456789-:T"})

days = st.one_of(
    st.builds(
        "{:04d}-{:02d}-{:02d}".format,
        st.sampled_from([0, 1, 2, 2026, 9998, 9999]),
        st.integers(0, 13),
        st.integers(0, 32),
    ),
    st.builds(
        "{:04d}{:02d}{:02d}".format,
        st.sampled_from([1, 2026, 9999]),
        st.integers(1, 12),
        st.integers(1, 31),
    ),
    st.builds("{:04d}-{:03d}".format, st.sampled_from([0, 1, 2026, 9999]), st.integers(0, 367)),
    st.builds(
        "{:04d}-W{:02d}{}".format,
        st.sampled_from([0, 1, 2026, 9999]),
        st.integers(0, 54),
        st.sampled_from(["", "-1", "-7", "-8", "-0"]),
    ),
    st.sampled_from(["2026-6-1", "+12026-01-01", "02026-01-01", "-0001-01-01", "2026-06-1"]),
)
clocks = st.sampled_from(
    ["", "T09:30", "t09:30", " 09:30", "T0930", "T24:00", "T23:59:60", "T09:30:00.5", "T9:30",
     "T09:30.5", "T09:30,25", "T09.5", "T0930.75", "T23:59.999999999", "T25:00", "T09:75",
     "T09:30.5.5", "T9.5", "T9:30.5", "T09:3,5", "T9:30:15.5", "T9", " 9:3"]
)  # fmt: skip
offsets = st.sampled_from(["", "Z", "z", "+02:00", "-14:00", "+14:00", "+05:75", "+24:00", "+0530"])
zones_in_text = st.sampled_from(
    ["", " CET", "[Europe/Berlin]", "[!Europe/Berlin]", " UTC+2", " utc+5:30", "[Nowhere/Zone]",
     " Europe/Berlin", " GMT-3", " PST", "[u-ca=hebrew]"]
)  # fmt: skip


@st.composite
def time_texts(draw: st.DrawFn) -> str:
    text = draw(days) + draw(clocks) + draw(offsets) + draw(zones_in_text)
    if draw(st.booleans()):
        text = text.translate(_FULL_WIDTH) if draw(st.booleans()) else text.replace("2", "٢")
    return text


texts = time_texts() | st.text(alphabet=st.characters(codec="utf-8"), max_size=30)


DAYS_OF_EVERY_FORM = [
    "2026-06-01", "2026-6-1", "2026-06-1", "20260601", "2026-152", "2026152", "2026-W23",
    "2026w23", "2026-W23-1", "2026W231", "0001-01-01", "9999-12-31", "2026-02-30", "2026-W54-1",
    "+12026-01-01",
]  # fmt: skip
"""A date of every form the readers know (calendar, ordinal, week, a week alone; basic,
extended, one-digit fields, an expanded year), some naming no day or none supported."""


def _refusal(reader: Reader, text: str, tz: str) -> InvalidInputError | None:
    try:
        reader(text, tz)
    except InvalidInputError as exc:
        return exc
    return None


REVIEWED = [
    "2026-W14", "2026-123T09:30", "2026-06-01T24:00Z", "2026-06-01T09:30.5", "2026-06-01T09.5",
    "２０２６-０６-０１", "٢٠٢٦-٠٦-٠١T09:00", "2026-06-01T09:00 CET", "0001-01-01",
    "9999-W52-5", "2026-06-01T09:00+05:75", "2026-06-01T09:00 UTC+2", "2026-06-01T9:30.5",
    "2026-06-01T9.5", "2026-6-1T09:30,5", "20260601T9:30", "2026-W23-1T9.5", "2026-152T9:30.5",
]  # fmt: skip


@given(text=texts, tz=st.sampled_from(ZONES), name=st.sampled_from(sorted(READERS)))
@example(text="0001-01-01", tz="Pacific/Kiritimati", name="timed event end")
@example(text="9999-12-31", tz="Etc/GMT+12", name="timed event end")
@example(text="9999-12-31 CET", tz="Pacific/Kiritimati", name="reminder")
@example(text="９９９９-１２-３１ CET", tz="Pacific/Kiritimati", name="reminder")
def test_every_text_a_refusal_suggests_is_taken_by_the_reader_that_refused(
    text: str, tz: str, name: str
) -> None:
    field, reader = READERS[name]
    refused = _refusal(reader, text, tz)
    if refused is None:
        return
    for suggested, in_zone in refused.details.get("suggestion", ()):
        again = _refusal(reader, suggested, in_zone or tz)
        if again is not None:  # refused for another argument only
            assert field not in (again.details.get("argument"), again.details.get("field")), (
                refused.message,
                again.message,
            )


_EXAMPLE = re.compile(r"e\.g\. ((?:'[^']*'(?:, )?)+|[^\s),;]+)")


def examples(message: str) -> list[str]:
    """The examples a message gives: each text after "e.g." (each zone of a list of them)."""
    found: list[str] = []
    for each in _EXAMPLE.findall(message):
        found += re.findall(r"'([^']*)'", each) if each.startswith("'") else [each]
    return found


def test_examples_are_found_in_each_kind_of_message() -> None:
    assert examples("x (e.g. 2026-12-04)") == ["2026-12-04"]
    assert examples("(e.g. +05:45); check") == ["+05:45"]
    assert examples("(e.g. 'Europe/Berlin', 'America/New_York', 'UTC')") == [
        "Europe/Berlin",
        "America/New_York",
        "UTC",
    ]
    assert examples("give the time too (e.g. 2026-06-01T09:00), in") == ["2026-06-01T09:00"]


def _taken(example_text: str, tz: str) -> None:
    """An example is taken as what it stands for: a zone, an offset (in a time), a time."""
    if "/" in example_text or example_text.isalpha():
        validate_timezone(example_text)
    elif example_text[0] in "+-":
        parse_time(f"2026-06-01T09:00{example_text}", field="at", tz=tz)
    else:
        parse_time(example_text, field="at", tz=tz)


@given(text=texts, tz=st.sampled_from(ZONES), name=st.sampled_from(sorted(READERS)))
@example(text="0001-01-01", tz="Pacific/Kiritimati", name="timed event end")
@example(text="9999-12-31", tz="Etc/GMT+12", name="timed event end")
@example(text="2026-06-01T09:00+05:75", tz="UTC", name="time")
@example(text="2026-06-01T09:00 Nowhere/Zone", tz="UTC", name="time")
def test_every_example_a_refusal_gives_is_taken(text: str, tz: str, name: str) -> None:
    refused = _refusal(READERS[name][1], text, tz)
    if refused is None:
        return
    for each in examples(refused.message):
        _taken(each, tz)


def test_a_bad_zone_names_examples_that_are_zones() -> None:
    try:
        validate_timezone("Nowhere/Zone")
    except InvalidInputError as exc:
        found = examples(exc.message)
    assert found
    for each in found:
        validate_timezone(each)


def test_the_reviewed_texts_are_refused_with_what_to_write() -> None:
    for text in REVIEWED:
        for name, (_, reader) in READERS.items():
            refused = _refusal(reader, text, "Europe/Berlin")
            if refused is not None:
                assert "is not an ISO-8601 time" not in refused.message, (name, refused.message)


@given(
    hour=st.integers(0, 23),
    minute=st.none() | st.integers(0, 59),
    digits=st.text(alphabet="0123456789", min_size=1, max_size=12),
    comma=st.booleans(),
    offset=st.sampled_from(["", "Z", "+05:30"]),
)
def test_a_decimal_fraction_of_an_hour_or_minute_is_refused_with_the_same_time_in_seconds(
    hour: int, minute: int | None, digits: str, comma: bool, offset: str
) -> None:
    """ISO-8601 lets the last field of a time carry a fraction (``09:30.5`` is 09:30:30);
    Python's reader does not: it was the generic refusal. The suggestion is that time, to
    the microsecond (truncated, as said when it is)."""
    clock = f"{hour:02d}" + ("" if minute is None else f":{minute:02d}")
    text = f"2026-06-01T{clock}{',' if comma else '.'}{digits}{offset}"
    refused = _refusal(READERS["time"][1], text, "UTC")
    assert refused is not None
    unit = "hour" if minute is None else "minute"
    assert f"gives a decimal fraction of the {unit}" in refused.message, refused.message
    ((suggested, _),) = refused.details["suggestion"]
    share = Fraction(f"0.{digits}") * (3600 if minute is None else 60)
    micros = int(share * 1_000_000)
    assert ("to the microsecond" in refused.message) == (micros != share * 1_000_000)
    start = parse_time(f"2026-06-01T{hour:02d}:{minute or 0:02d}{offset}", field="at")
    assert start is not None
    assert parse_time(suggested, field="at") == start + timedelta(microseconds=micros)


@given(
    day=st.sampled_from(["2026-06-01", "2026-6-1", "20260601", "2026-W23-1", "2026W231"]),
    fields=st.lists(st.integers(0, 59), min_size=1, max_size=3),
    narrow=st.lists(st.booleans(), min_size=3, max_size=3),
    digits=st.text(alphabet="0123456789", min_size=1, max_size=8),
    comma=st.booleans(),
    offset=st.sampled_from(["", "Z", "+05:30"]),
    name=st.sampled_from(TIME_READERS),
)
def test_a_field_of_one_digit_with_a_fraction_is_refused_saying_what_to_write(
    day: str,
    fields: list[int],
    narrow: list[bool],
    digits: str,
    comma: bool,
    offset: str,
    name: str,
) -> None:
    """A time with a field of one digit and a decimal fraction of its last field
    (``2026-06-01T9:30.5``, ``T9.5``, ``20260601T09:3,5``, after a date of any form that names
    a day) was the generic refusal: it is refused by name, suggesting a text the reader takes
    that means what the same time with two-digit fields means."""
    fields[0] %= 24
    written = [f"{v}" if n and v < 10 else f"{v:02d}" for v, n in zip(fields, narrow, strict=False)]
    assume(any(len(w) == 1 for w in written) or day in ("2026-6-1",))
    mark = "," if comma else "."
    text = f"{day}T{':'.join(written)}{mark}{digits}{offset}"
    _, reader = READERS[name]
    refused = _refusal(reader, text, "UTC")
    assert refused is not None
    assert "writes a field with one digit" in refused.message, refused.message
    ((suggested, _),) = refused.details["suggestion"]
    assert _refusal(reader, suggested, "UTC") is None, refused.message
    two_digits = f"2026-06-01T{':'.join(f'{v:02d}' for v in fields)}{mark}{digits}{offset}"
    assert parse_time(suggested, field="at") == _chain_end_time(two_digits)


def _chain_end_time(text: str) -> object:
    """The time the refusal of ``text`` suggests, or ``text``'s own."""
    refused = _refusal(READERS["time"][1], text, "UTC")
    if refused is None:
        return parse_time(text, field="at")
    ((suggested, _),) = refused.details["suggestion"]
    return parse_time(suggested, field="at")


@given(text=time_texts(), tz=st.sampled_from(ZONES))
def test_digits_of_another_script_are_refused_suggesting_ascii_digits(text: str, tz: str) -> None:
    """Full-width (``２０２６-０６-０１``) and Arabic-Indic digits were the generic refusal: the
    refusal names them and suggests the same text in ASCII, which reads as the ASCII text
    does (or what the ASCII text's refusal suggests, or says why that is refused too)."""
    if text.isascii():
        return
    refused = _refusal(READERS["time"][1], text, tz)
    assert refused is not None
    assert "digits of another script" in refused.message, refused.message
    ascii_text = unicodedata.normalize(
        "NFKC", "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in text)
    )
    as_ascii = _refusal(READERS["time"][1], ascii_text, tz)
    then = () if as_ascii is None else as_ascii.details.get("suggestion", ())
    for suggested, _ in refused.details.get("suggestion", ()):
        # the ASCII text, or what its own refusal suggests (the end of the chain)
        assert suggested in [ascii_text, *(t for t, _ in then)], refused.message
        assert parse_time(suggested, field="at", tz=tz) is not None


def test_date_alone_reads_what_its_refusal_suggests(monkeypatch: pytest.MonkeyPatch) -> None:
    """Called directly (not through parse_time), it gave its refusal's suggestions unread."""

    def suggests_no_day(text: str, field: str) -> InvalidInputError | None:
        if text == "2027-02-29":
            return None  # the generic refusal: no day
        return timeforms.suggesting(field, f"{text!r} is odd", ": write 2027-02-29", "2027-02-29")

    monkeypatch.setattr(timeforms, "refusal", suggests_no_day)
    with pytest.raises(InvalidInputError, match="is refused too") as raised:
        date_alone("2026-02-30", "at")
    assert "suggestion" not in raised.value.details


@given(text=texts, tz=st.sampled_from(ZONES), name=st.sampled_from(sorted(READERS)))
@example(text="0001-001", tz="UTC", name="reminder")
@example(text="٢٠٢٦-W14T09:00 CET", tz="UTC", name="reminder")
@example(text="٢٠٢٦-W14T09:00", tz="UTC", name="time")
@example(text="2026-W14T09:00 CET", tz="UTC", name="command line")
def test_a_refusal_gives_one_reason_and_shows_what_it_suggests(
    text: str, tz: str, name: str
) -> None:
    """A chain of refusals (``0001-001`` for a reminder: an ordinal date, then a date without
    a time, then a day outside the supported times) gave each reason nested in the next,
    "refused too: ... refused too: ...": now only the innermost. Every text the refusal
    suggests is the one its message says to write."""
    refused = _refusal(READERS[name][1], text, tz)
    if refused is None:
        return
    assert refused.message.count("refused too") <= 1, refused.message
    suggestions = refused.details.get("suggestion", ())
    for suggested, _ in suggestions:
        assert suggested in refused.message, (suggested, refused.message)
    # several texts only where the text itself is a week without its day (its Monday or its
    # calendar date); a chain through one ends at its calendar date: ٢٠٢٦-W23, 2026-W23 CET
    if len(suggestions) > 1:
        assert "names a week, not a day" in refused.message, refused.message
        assert "refused too" not in refused.message, refused.message


@pytest.mark.parametrize(
    ("name", "text", "written", "in_zone"),
    [
        ("time", "2026-152T09:30.5", "write the calendar date, 2026-06-01T09:30:30", None),
        ("event start", "2026-152T09:30.5", "2026-06-01T09:30:30", None),
        ("time", "2026-W23T09:30.5", "2026-W23-1T09:30:30 for its Monday", None),
        ("time", "2026-W23T09:30.5", "its calendar date, 2026-06-01T09:30:30", None),
        ("time", "2026-06-01T9:00 CET", "give 2026-06-01T09:00 alone and 'CET'", "CET"),
        ("time", "2026-6-1T9:00[Europe/Berlin]", "give 2026-06-01T09:00 alone", "Europe/Berlin"),
        ("reminder", "2026-06-01 9:30 Utc", "give 2026-06-01 09:30 alone and 'UTC'", "UTC"),
        ("time", "2026-06-01T9:00+02:00 CET", "give 2026-06-01T09:00+02:00 alone", "CET"),
        ("time", "2026-6-1T9:00 UTC+2", "offset in the time (2026-06-01T09:00+02:00)", None),
        ("time", "2026-06-01T9:00 PST", "(e.g. 2026-06-01T09:00+02:00)", None),
        ("time", "２０２６-６-１T09:00", "write ASCII digits, 2026-06-01T09:00", None),
        ("command line", "2026-06-01T9:00 CET", "in 'CET', 2026-06-01T09:00+02:00", None),
        ("command line", "2026-152T09:30.5[Europe/Berlin]", "2026-06-01T09:30:30+02:00", None),
        ("command line", "2026-06-01T24:00 CET", "in 'CET', 2026-06-02T00:00+02:00", None),
        ("command line", "2026-6-1T9:00+02:00 CET", "give 2026-06-01T09:00+02:00 alone", None),
    ],
)
def test_a_suggestion_refused_in_turn_is_replaced_by_the_end_of_the_chain(
    name: str, text: str, written: str, in_zone: str | None
) -> None:
    """``2026-152T09:30.5`` said "the time it means, 2026-06-01T09:30.5, is refused too"
    and ``2026-06-01T9:00 CET`` (a one-digit hour and a zone) was the generic refusal: each
    now says what to write, the text that is taken."""
    refused = _refusal(READERS[name][1], text, "UTC")
    assert refused is not None
    assert written in refused.message, refused.message
    assert "refused too" not in refused.message, refused.message
    for suggested, zone in refused.details["suggestion"]:
        assert zone == in_zone
        assert _refusal(READERS[name][1], suggested, zone or "UTC") is None


@given(
    day=st.sampled_from(DAYS_OF_EVERY_FORM),
    clock=st.sampled_from(
        [
            "",
            "T9:00",
            "T09:0",
            " 9:30:05",
            "T9:30:5",
            "T09:00",
            "T23:59:60",
            "T24:00",
            "T09:30.5",
            "T9.5",
            "T9:30.5",
            "T9:30:05.5",
        ]
    ),
    offset=st.sampled_from(["", "Z", "+02:00"]),
    zone=st.sampled_from(
        [" CET", " Europe/Berlin", "[Europe/Berlin]", " UTC+2", " utc+2", " PST", " GMT-3"]
    ),
    name=st.sampled_from(
        ["time", "end of a window", "reminder", "event start", "timed event end", "command line"]
    ),
    tz=st.sampled_from(ZONES),
)
@example(day="2026-06-01", clock="", offset="", zone=" CET", name="command line", tz="UTC")
@example(day="2026-06-01", clock="", offset="", zone=" utc+2", name="time", tz="UTC")
@example(day="2026-W23", clock="", offset="", zone=" CET", name="time", tz="UTC")
@example(day="2026-W23", clock="T09:00", offset="", zone=" CET", name="command line", tz="UTC")
def test_a_time_of_any_form_followed_by_a_zone_is_refused_naming_the_zone(
    day: str, clock: str, offset: str, zone: str, name: str, tz: str
) -> None:
    """The zone in the text was named only after a time Python's reader takes; any other
    time before it (a field of one digit, a leap second) gave the generic refusal, and so did
    a date alone (``2026-06-01 CET``, ``2026-W23 CET``); a week without its day before it gave
    two suggestions (its Monday, its calendar date) behind a second reason. Every form the
    readers know, with a zone word after it, is refused naming the zone with one reason or one
    suggestion, which the reader takes (or refuses for another argument only)."""
    assume(clock or not offset)  # a date with an offset is no form
    text = f"{day}{clock}{offset}{zone}"
    field, reader = READERS[name]
    refused = _refusal(reader, text, tz)
    assert refused is not None
    assert "names a zone in the text" in refused.message, refused.message
    if name == "command line":  # it has no argument for the zone: none is named
        assert "`" not in refused.message, refused.message
    assert refused.message.count("refused too") <= 1, refused.message
    suggestions = refused.details.get("suggestion", ())
    assert len(suggestions) <= 1, refused.message
    for suggested, in_zone in suggestions:
        again = _refusal(reader, suggested, in_zone or tz)
        if again is not None:  # refused for another argument only
            assert field not in (again.details.get("argument"), again.details.get("field")), (
                refused.message,
                again.message,
            )


def _refusing(chain: dict[str, InvalidInputError]) -> Callable[[str, str | None], object]:
    def refused_by(text: str, _zone: str | None) -> InvalidInputError | None:
        return chain.get(text)

    return refused_by


def test_a_chain_of_suggestions_ends_at_the_first_text_taken() -> None:
    """timeforms.chain_end, the one walk of what refusals suggest (the time readers' check of
    a refusal's suggestions, the command line's offset of a zone named in the text): the
    last of several texts (a week: the calendar date) is followed; an example, a text in
    another zone, a refusal with nothing to write end the chain; a refusal that suggests
    itself ends it too, never a loop."""
    a_week = timeforms.suggesting("at", "a week", ": write w1 or d1", "w1", "d1")
    chain = {
        "start": timeforms.suggesting("at", "one", ": write 2026-W23", "2026-W23"),
        "2026-W23": a_week,
        "d1": timeforms.suggesting("at", "a fraction", ": write d2", "d2"),
    }
    assert timeforms.chain_end("start", None, _refusing(chain)) == ("d2", None)
    assert timeforms.chain_end("start", "CET", _refusing(chain)) == ("d2", "CET")
    stops = [
        timeforms.suggesting("at", "no clock", ": e.g. x", "x", example=True),
        timeforms.suggesting("at", "a zone", ": give x in CET", "x", zone="CET"),
        InvalidInputError.of("at", "no day"),
    ]
    for stop in stops:
        assert timeforms.chain_end("t", "UTC", _refusing({"t": stop})) is stop
    itself = timeforms.suggesting("at", "odd", ": write t", "t")
    assert timeforms.chain_end("t", None, _refusing({"t": itself})) is itself


@given(text=texts, tz=st.sampled_from(ZONES), name=st.sampled_from(sorted(READERS)))
@example(text="2026-123T09:30", tz="UTC", name="event start")
@example(text="2026-152T09:30.5", tz="UTC", name="timed event end")
def test_each_text_is_read_once_however_many_readers_wrap_it(text: str, tz: str, name: str) -> None:
    """An event's start read through ``event_times`` was checked by two readers: a refused
    ``starts_at`` read its suggestion twice (parse_time's check, then event_times')."""
    field, reader = READERS[name]
    seen: list[object] = []
    inner = timeparse._parse_time

    def counting(value: object, at: str, *args: object) -> object:
        if at == field:
            seen.append(value)
        return inner(value, at, *args)  # type: ignore[arg-type]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(timeparse, "_parse_time", counting)
        _refusal(reader, text, tz)
    assert len(seen) == len(set(map(repr, seen))), seen


@given(text=st.sampled_from(DAYS_OF_EVERY_FORM) | texts)
def test_what_is_written_as_a_date_is_what_date_alone_reads_or_refuses(text: str) -> None:
    """timeforms.DATE is the one description of the date forms: text the command line takes
    as a date (``written_as_date``) is text ``date_alone`` reads as a day or refuses by name;
    an ordinal date (``2026-152``) was a date to one and no date to the other."""
    assume(not re.search("[Tt ]", text.strip()))  # a date alone, without a time of day
    try:
        read = date_alone(text, "at") is not None
    except InvalidInputError:
        read = True
    assert read == timeforms.written_as_date(text), text
