"""English date phrases ("on 3 May 2023", "in June", "last week", "two weeks ago") as rules."""

from __future__ import annotations

import re
from datetime import date, timedelta

from philont.domain.date_windows import (
    MAX_AGO,
    MAX_YEAR,
    MIN_YEAR,
    Rule,
    Window,
    ago,
    day_window,
    month_start,
    month_window,
    months_back,
    next_month,
    recent_day,
    recent_month,
    valid_day,
    week_start,
    week_window,
    weekend_before,
    year_window,
)

__all__ = ["RULES"]

# --- numbers and names -----------------------------------------------------------------------

_MONTHS = {
    name: i + 1
    for i, names in enumerate(
        (
            "january jan",
            "february feb",
            "march mar",
            "april apr",
            "may",
            "june jun",
            "july jul",
            "august aug",
            "september sep sept",
            "october oct",
            "november nov",
            "december dec",
        )
    )
    for name in names.split()
}
_AMBIGUOUS_MONTHS = frozenset({"may", "march", "mar", "jan", "dec", "sep", "oct", "nov", "jun"})
"""Month names that are also ordinary words or names: they count only capitalised."""
_FULL_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|November|December"
)
_ANY_MONTH = _FULL_MONTHS + "|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec"

_WEEKDAYS = {
    name: i
    for i, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
_EN_NUMBERS = {
    name: i + 1
    for i, name in enumerate(
        (
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        )
    )
} | {"a": 1, "an": 1, "a couple of": 2, "couple of": 2}


def _en_number(text: str) -> int | None:
    text = " ".join(text.lower().split())
    if text.isdigit():
        return int(text)
    return _EN_NUMBERS.get(text)


# --- English ---------------------------------------------------------------------------------

_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?(?!\d)"
_MONTH = rf"(?P<month>{_ANY_MONTH})\.?"
_YEAR = r"(?P<year>\d{4})(?!\d)"
_CUE = r"(?:in|during|since|until|till|by|of|throughout|early|mid|late|before|after)"


def _month_of(m: re.Match[str]) -> int | None:
    """The month a match names; an ambiguous name must be written capitalised."""
    word = m.group("month")
    lowered = word.lower()
    if lowered in _AMBIGUOUS_MONTHS and not word[0].isupper():
        return None
    return _MONTHS.get(lowered)


def _year_of(m: re.Match[str]) -> int | None:
    text = m.groupdict().get("year")
    if text is None:
        return None
    year = int(text)
    return year if MIN_YEAR <= year <= MAX_YEAR else None


def _en_date(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    month = _month_of(m)
    if month is None:
        return None
    day = int(m.group("day"))
    year = _year_of(m)
    if m.group("year") is not None and year is None:
        return None
    if year is None:
        found = recent_day(today, month, day)
        return (day_window(found), 0.8) if found is not None else None
    found = valid_day(year, month, day)
    return (day_window(found), 1.0) if found is not None else None


def _en_month_year(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    month, year = _month_of(m), _year_of(m)
    if month is None or year is None:
        return None
    return month_window(year, month), 1.0


def _en_cued_month(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    month = _month_of(m)
    if month is None:
        return None
    cue = m.group("cue").lower()
    if cue == "this":
        return month_window(today.year, month), 0.8
    year, month = recent_month(today, month, strictly_before=cue == "last")
    return month_window(year, month), 0.8


def _en_year(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    year = _year_of(m)
    return None if year is None else (year_window(year), 1.0)


def _en_iso(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    year = _year_of(m)
    found = None if year is None else valid_day(year, int(m.group("m")), int(m.group("d")))
    return None if found is None else (day_window(found), 1.0)


_EN_DAYS = {"today": 0, "tonight": 0, "this morning": 0, "yesterday": 1}


def _en_relative_day(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    phrase = " ".join(m.group(0).lower().split())
    if phrase == "the day before yesterday":
        return day_window(today - timedelta(days=2)), 0.9
    return day_window(today - timedelta(days=_EN_DAYS[phrase])), 0.9


def _en_last_unit(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    which, unit = m.group("which").lower(), m.group("unit").lower()
    back = {"last": 1, "this": 0, "next": -1}[which]
    if unit == "weekend":
        if back == 1:
            return weekend_before(today), 0.8
        saturday = week_start(today) + timedelta(days=5 + 7 * max(-back, 0))
        return Window(saturday, saturday + timedelta(days=2), "weekend"), 0.8
    if unit == "week":
        return week_window(week_start(today) - timedelta(days=7 * back)), 0.8
    if unit == "month":
        return month_window(*months_back(today, back)), 0.8
    return year_window(today.year - back), 0.8


def _en_past_unit(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    """A rolling window ending today: "the past week", "the last 3 days"."""
    n = _en_number(m.group("n") or m.group("n2") or "one")
    unit = m.group("unit").lower()
    if n is None or n < 1 or n > MAX_AGO:
        return None
    days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * n
    return Window(today - timedelta(days=days), today + timedelta(days=1), "day"), 0.7


def _en_ago(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    n = _en_number(m.group("n"))
    window = None if n is None else ago(today, n, m.group("unit").lower())
    return None if window is None else (window, 0.7)


def _en_part_of_month(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    """The first or last week (seven days) or weekend (Saturday and Sunday) of a month."""
    month = _month_of(m)
    if month is None:
        return None
    year = _year_of(m)
    if m.group("year") is not None and year is None:
        return None
    confidence = 1.0 if year is not None else 0.8
    if year is None:
        year, _ = recent_month(today, month)
    first, stop = month_start(year, month), next_month(year, month)
    last = m.group("pos").lower() == "last"
    if m.group("unit").lower() == "week":
        start = stop - timedelta(days=7) if last else first
        return Window(start, start + timedelta(days=7), "week"), confidence
    if last:
        saturday = stop - timedelta(days=(stop.weekday() - 5) % 7 or 7)
    else:
        saturday = first + timedelta(days=(5 - first.weekday()) % 7)
    return Window(saturday, saturday + timedelta(days=2), "weekend"), confidence


def _en_last_weekday(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    wanted = _WEEKDAYS[m.group("wd").lower()]
    back = (today.weekday() - wanted) % 7 or 7
    return day_window(today - timedelta(days=back)), 0.7


_I = re.IGNORECASE
_EN_COUNT = r"\d{1,3}|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
RULES: tuple[Rule, ...] = (
    (re.compile(r"\b(?P<year>\d{4})-(?P<m>\d{1,2})-(?P<d>\d{1,2})(?!\d)"), _en_iso, False),
    (re.compile(rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?", _I), _en_date, False),
    (re.compile(rf"\b{_MONTH}\s+(?:the\s+)?{_DAY}(?:,?\s+{_YEAR})?", _I), _en_date, False),
    (re.compile(rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}", _I), _en_month_year, False),
    (
        re.compile(
            rf"\b(?:the\s+)?(?P<pos>first|last)\s+(?P<unit>week|weekend)\s+of\s+"
            rf"(?P<month>{_FULL_MONTHS})(?:,?\s+{_YEAR})?",
            _I,
        ),
        _en_part_of_month,
        False,
    ),
    (
        re.compile(
            rf"\b(?P<cue>{_CUE}|last|this)\s+(?:the\s+month\s+of\s+)?(?P<month>{_FULL_MONTHS})\b",
            _I,
        ),
        _en_cued_month,
        False,
    ),
    (re.compile(rf"\b(?:{_CUE}|for)\s+(?:the\s+year\s+)?{_YEAR}", _I), _en_year, False),
    (
        re.compile(
            r"\b(?:the\s+day\s+before\s+yesterday|yesterday|today|tonight|this\s+morning)\b", _I
        ),
        _en_relative_day,
        True,
    ),
    (
        re.compile(
            r"\b(?P<which>last|this|next)\s+(?P<unit>week|month|year|weekend)\b(?!\s+of\b)", _I
        ),
        _en_last_unit,
        True,
    ),
    (
        re.compile(
            rf"\b(?:the\s+)?(?:past\s+(?:(?P<n>{_EN_COUNT})\s+)?|last\s+(?P<n2>{_EN_COUNT})\s+)"
            r"(?P<unit>day|week|month|year)s?\b(?!\s+of\b)",
            _I,
        ),
        _en_past_unit,
        True,
    ),
    (
        re.compile(
            r"\b(?P<n>\d{1,3}|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve"
            r"|(?:a\s+)?couple\s+of)\s+(?P<unit>day|week|month|year)s?\s+ago\b",
            _I,
        ),
        _en_ago,
        True,
    ),
    (
        re.compile(
            r"\blast\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b", _I
        ),
        _en_last_weekday,
        True,
    ),
)
