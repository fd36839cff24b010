"""The one time policy: IANA zone names only, and instants every layer can hold and show."""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from philont.domain import timepolicy
from philont.domain.timeparse import parse_time, shown_at
from philont.domain.timepolicy import (
    MAX_EPOCH_MS,
    MAX_INSTANT,
    MIN_EPOCH_MS,
    MIN_INSTANT,
    clamp,
    from_epoch_ms,
    instant,
    shifted,
    stored_instant,
    validate_timezone,
)
from philont.errors import InvalidInputError, TimeOutOfRangeError
from philont.schemas import inputs

IANA_NAMES = sorted(timepolicy._zone_names().values())
MACHINE_KEYS = ["localtime", "posixrules", "Factory", "right/UTC", "posix/Europe/Berlin"]
# What a machine's zoneinfo directory answers to besides IANA names (the root of the old
# mismatch: ZoneInfo("right/UTC") loads, so anything built on it accepted these).
zone_like_text = st.sampled_from(IANA_NAMES) | st.sampled_from(MACHINE_KEYS) | st.text(max_size=30)


def _always_utc(name: str) -> bool:
    """Offset 0 and no summer time at both ends of the calendar and twice a year 1800-2100
    (where every zone's history lies): what "this zone is UTC" means."""
    where = zoneinfo.ZoneInfo(name)
    probes = [MIN_INSTANT, MAX_INSTANT]
    probes += [datetime(y, m, 1, tzinfo=UTC) for y in range(1800, 2101) for m in (1, 7)]
    return all(p.astimezone(where).utcoffset() == timedelta(0) for p in probes)


UTC_ZONES = sorted(name for name in IANA_NAMES if _always_utc(name))


def test_every_zone_whose_clock_is_utc_and_no_other_is_utc() -> None:
    # The one rule for "is this zone UTC" (a one-shot in it is stored as Philont's own, times
    # in it are shown as the UTC instant): GMT, Etc/GMT-0, Greenwich were missed by a list.
    assert {"UTC", "Etc/GMT", "Etc/GMT-0", "Etc/Greenwich", "Zulu", "GMT0"} <= set(UTC_ZONES)
    assert [name for name in IANA_NAMES if timepolicy.is_utc(name)] == UTC_ZONES
    assert "Africa/Abidjan" not in UTC_ZONES  # GMT since 1912, local mean time before
    assert "Europe/London" not in UTC_ZONES


@given(name=st.sampled_from(UTC_ZONES), case=st.sampled_from([str.lower, str.upper, str]))
def test_a_utc_zone_in_any_spelling_is_utc_and_shown_as_the_instant_alone(
    name: str, case: Callable[[str], str]
) -> None:
    spelled = case(name)
    assert timepolicy.is_utc(f" {spelled} ")
    at = datetime(2026, 3, 29, 1, 30, tzinfo=UTC)
    assert shown_at(at, spelled) == "2026-03-29T01:30:00.000Z"


@pytest.mark.parametrize("value", [None, 0, "", "GMT+1", "Etc/GMT+1", "Factory", "right/UTC"])
def test_anything_else_is_not_utc(value: object) -> None:
    assert not timepolicy.is_utc(value)


def test_the_edges_of_the_calendar_named_in_the_issue_are_invalid_input() -> None:
    for text in ("0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"):
        with pytest.raises(TimeOutOfRangeError, match="outside the supported times"):
            parse_time(text, field="at")
        # Services check their datetimes with the same policy (the shared input type).
        with pytest.raises(InvalidInputError, match=r"at: .* is outside the supported times"):
            inputs.check(inputs.AwareTime, datetime.fromisoformat(text), "at")


def test_the_first_and_last_supported_instants_are_accepted_and_show_in_every_zone() -> None:
    for edge in (MIN_INSTANT, MAX_INSTANT):
        assert instant(edge, "t") == edge
        for name in ("Pacific/Kiritimati", "Etc/GMT+12", "America/Metlakatla"):
            edge.astimezone(zoneinfo.ZoneInfo(name))  # the margin keeps this from overflowing
    assert from_epoch_ms(MIN_EPOCH_MS, "t") == MIN_INSTANT
    assert from_epoch_ms(MAX_EPOCH_MS, "t") == MAX_INSTANT


@pytest.mark.parametrize("ms", [MIN_EPOCH_MS - 1, MAX_EPOCH_MS + 1, 8_640_000_000_000_000, 2**70])
def test_epoch_milliseconds_outside_the_range_are_refused(ms: int) -> None:
    with pytest.raises(TimeOutOfRangeError):
        from_epoch_ms(ms, "t")
    with pytest.raises(TimeOutOfRangeError):
        parse_time(ms, field="t")


@pytest.mark.parametrize("name", [*MACHINE_KEYS, "", " ", "+02:00", "CEST", "Berlin", "utc/"])
def test_machine_keys_offsets_and_abbreviations_are_not_zones(name: str) -> None:
    with pytest.raises(InvalidInputError):
        validate_timezone(name)


@pytest.mark.parametrize(
    ("given_name", "canonical"),
    [("europe/berlin", "Europe/Berlin"), (" UTC ", "UTC"), ("us/pacific", "US/Pacific")],
)
def test_a_zone_is_returned_in_its_canonical_spelling(given_name: str, canonical: str) -> None:
    assert validate_timezone(given_name) == canonical


@given(name=zone_like_text)
def test_every_accepted_zone_name_is_an_iana_name_and_loads(name: str) -> None:
    try:
        canonical = validate_timezone(name)
    except InvalidInputError:
        return
    assert canonical in IANA_NAMES
    assert not canonical.startswith(("right/", "posix/")) and canonical not in MACHINE_KEYS
    zoneinfo.ZoneInfo(canonical)


@given(name=zone_like_text)
def test_parse_time_applies_the_same_zone_policy_even_without_a_time(name: str) -> None:
    try:
        expected = validate_timezone(name)
    except InvalidInputError:
        with pytest.raises(InvalidInputError):
            parse_time(None, field="t", tz=name)
        return
    assert expected
    assert parse_time(None, field="t", tz=name) is None


@given(
    local=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59)),
    offset_minutes=st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1),
)
def test_any_aware_datetime_is_an_instant_in_range_or_time_out_of_range(
    local: datetime, offset_minutes: int
) -> None:
    value = local.replace(tzinfo=timezone(timedelta(minutes=offset_minutes)))
    try:
        got = instant(value, "t")
    except TimeOutOfRangeError:
        return
    assert MIN_INSTANT <= got <= MAX_INSTANT and got == value and got.tzinfo is UTC


@given(
    value=st.one_of(
        st.none(),
        st.integers(min_value=-(2**80), max_value=2**80),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=40),
        st.datetimes(min_value=datetime(1, 1, 1)).map(lambda d: d.isoformat()),
        st.builds(
            lambda d, m: d.replace(tzinfo=timezone(timedelta(minutes=m))).isoformat(),
            st.datetimes(min_value=datetime(1, 1, 1)),
            st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1),
        ),
    ),
    tz=zone_like_text,
)
def test_parse_time_returns_a_supported_instant_or_invalid_input(value: object, tz: str) -> None:
    try:
        got = parse_time(value, field="t", tz=tz)  # type: ignore[arg-type]
    except InvalidInputError:
        return
    assert got is None or (MIN_INSTANT <= got <= MAX_INSTANT and got.tzinfo is UTC)


@given(raw=st.one_of(st.integers(), st.floats(), st.text(max_size=10), st.binary(max_size=4)))
def test_a_stored_value_is_an_instant_or_invalid_input_never_a_crash(raw: object) -> None:
    try:
        got = stored_instant(raw, "starts_at")
    except InvalidInputError as exc:
        assert "starts_at" in str(exc)
        return
    assert MIN_INSTANT <= got <= MAX_INSTANT


def test_shifted_refuses_to_leave_the_range_and_clamp_stays_inside_it() -> None:
    with pytest.raises(TimeOutOfRangeError):
        shifted(MAX_INSTANT, timedelta(days=1), "end")
    with pytest.raises(TimeOutOfRangeError):
        shifted(MAX_INSTANT, timedelta(days=999_999_999), "end")
    assert clamp(MAX_INSTANT, timedelta(days=999_999_999)) == MAX_INSTANT
    assert clamp(MIN_INSTANT, -timedelta(days=999_999_999)) == MIN_INSTANT
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    assert clamp(moment, timedelta(days=1)) == moment + timedelta(days=1)


@given(
    local=st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(9999, 12, 29)),
    minutes=st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1),
    seconds=st.sampled_from([0, 0, 0, 17]),
)
@example(local=datetime(2000, 1, 1), minutes=-861, seconds=0)  # -14:21, a zone's local mean time
@example(local=datetime(2000, 1, 1), minutes=-13 * 60, seconds=0)
def test_an_offset_no_place_uses_is_refused_by_name_and_every_real_one_is_read(
    local: datetime, minutes: int, seconds: int
) -> None:
    # RFC 3339 text may carry up to +/-23:59; places use -12:00 .. +14:00 (and, before 1868,
    # a few local mean times beyond: Manila's -15:56:08, -14:21 of another), never +15:00 or
    # -13:00.
    offset = timedelta(minutes=minutes, seconds=seconds if minutes >= 0 else -seconds)
    text = local.replace(tzinfo=timezone(offset)).isoformat()
    real = timedelta(hours=-12) <= offset <= timedelta(hours=14)
    if real or offset in timepolicy._local_mean_times():
        assert parse_time(text, field="at") == local.replace(tzinfo=timezone(offset))
    else:
        with pytest.raises(InvalidInputError, match="is not one any place uses") as caught:
            parse_time(text, field="at")
        assert caught.value.details["argument"] == "at"
        assert not isinstance(caught.value, TimeOutOfRangeError)


@given(
    sign=st.sampled_from("+-"),
    parts=st.lists(st.integers(min_value=0, max_value=99), min_size=1, max_size=3),
    colons=st.booleans(),
)
@example(sign="+", parts=[5, 75], colons=True)  # was read as +06:15
@example(sign="+", parts=[25, 0], colons=True)  # was "offset must be a timedelta strictly ..."
def test_any_offset_as_written_is_read_as_written_or_refused_by_name(
    sign: str, parts: list[int], colons: bool
) -> None:
    # Python's reader carries minutes and seconds past 59 over (+05:75 is +06:15) and refuses
    # 24 hours or more in words about timedeltas: an offset is read as written or refused.
    written = sign + (":" if colons else "").join(f"{p:02d}" for p in parts)
    text = f"2026-06-01T09:00{written}"
    hours, minutes, seconds = [*parts, 0, 0][:3]
    try:
        read = parse_time(text, field="at")
    except InvalidInputError as refused:
        message = refused.message
        assert message.startswith("at: ") and "timedelta" not in message, message
        if minutes > 59 or seconds > 59:
            assert f"has UTC offset {written}, whose minutes and seconds must run" in message
        else:
            assert "is not one any place uses" in message, message
        return
    assert minutes <= 59 and seconds <= 59 and hours < 24, text
    offset = timedelta(hours=hours, minutes=minutes, seconds=seconds)
    meant = datetime(2026, 6, 1, 9, tzinfo=timezone(offset if sign == "+" else -offset))
    assert read == meant, text


@given(
    zone=st.sampled_from(IANA_NAMES),
    at=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30)),
)
@example(zone="Asia/Manila", at=datetime(1800, 1, 1))  # -15:56:08, local mean time
@example(zone="America/Metlakatla", at=datetime(1800, 1, 1))  # +15:13:42
@example(zone="UTC", at=datetime(2026, 1, 1))
def test_every_wall_time_shown_reads_back_with_its_offset(zone: str, at: datetime) -> None:
    # What shown_at prints for an item (local mean times of old dates included) is text a
    # model may send back: it names the same instant.
    utc = at.replace(microsecond=0, tzinfo=UTC)
    parts = shown_at(utc, zone).split(" ")
    if len(parts) == 1:  # a UTC zone: the instant alone
        return
    assert parse_time(f"{parts[0]}T{parts[1]}", field="at") == utc


ISO_ALPHABET = frozenset("0123456789TtZzW+-:., ")


@given(
    local=st.datetimes(min_value=datetime(1900, 1, 2), max_value=datetime(9999, 12, 29)),
    offset=st.none() | st.integers(min_value=-12 * 60, max_value=14 * 60),
    sep=st.sampled_from(["T", "t", " "]),
    junk=st.characters(codec="utf-8").filter(lambda c: c not in ISO_ALPHABET),
    where=st.integers(min_value=1, max_value=40),
)
def test_time_text_is_read_only_in_iso_8601s_shape_never_guessed(
    local: datetime, offset: int | None, sep: str, junk: str, where: int
) -> None:
    # Python's reader took any character between date and time (2026-04-01x09:00) and ignored
    # what followed a NUL (2026-04-01T09:00Z\x00 or later): read as something else, silently.
    tz = None if offset is None else timezone(timedelta(minutes=offset))
    text = local.replace(tzinfo=tz).isoformat(sep=sep)
    assert parse_time(text, field="at") == local.replace(tzinfo=tz or UTC)
    spoiled = text[:where] + junk + text[where:]
    if spoiled.strip() != text:  # junk at an end that is whitespace is only trimmed
        with pytest.raises(InvalidInputError) as caught:
            parse_time(spoiled, field="at")
        assert caught.value.details["argument"] == "at"


@pytest.mark.parametrize(
    "text",
    [
        "2026-04-01T09:00Z\x00x",
        "2026-04-01x09:00",
        "2026-04-01\x0009:00",
        "2026-04-01\n09:00",
    ],
)
def test_text_pythons_reader_guessed_at_is_refused(text: str) -> None:
    with pytest.raises(InvalidInputError, match="is not an ISO-8601 time"):
        parse_time(text, field="at")


@pytest.mark.parametrize("text", ["2026-W14T09:00Z", "2026W14T09:00Z"])
def test_a_week_without_its_day_is_refused_not_read_as_its_monday(text: str) -> None:
    with pytest.raises(InvalidInputError, match="names a week, not a day"):
        parse_time(text, field="at")


@pytest.mark.parametrize("text", ["2016-12-31T23:59:60Z", "2016-12-31 235960.5+01:00"])
def test_a_leap_second_is_refused_as_one(text: str) -> None:
    with pytest.raises(InvalidInputError, match="names a leap second"):
        parse_time(text, field="at")


@given(digits=st.integers(min_value=21, max_value=4300), negative=st.booleans())
def test_a_huge_epoch_millisecond_value_is_refused_by_its_size_not_echoed(
    digits: int, negative: bool
) -> None:
    value = (-1 if negative else 1) * 10 ** (digits - 1)
    with pytest.raises(TimeOutOfRangeError) as caught:
        from_epoch_ms(value, "at")
    assert f"~10^{digits - 1} ms" in str(caught.value) and len(str(caught.value)) < 200
    assert timepolicy.shown_integer(10**20 - 1) == str(10**20 - 1)
