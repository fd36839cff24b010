"""Date phrases in English and Chinese text -> time windows, given a reference ``now``.

"on 3 May 2023", "May 2023", "in June", "last week", "two weeks ago", "2023年5月3日", "上周",
"去年六月", "昨天" ... each become a :class:`Period`: a half-open window ``[start, end)`` of aware
datetimes in ``now``'s zone, with its granularity, whether it was relative to ``now``, how sure
the reading is, and where the phrase sits in the text. Anything ambiguous is left alone: a month
name that is also an ordinary word ("May I ask", "march forward") counts only capitalised and
next to a date cue; bare numbers, bare weekdays and vague words ("recently", "the other day")
never make a period. A phrase without a year means its most recent occurrence not after
``now`` (questions about a history look back). Pure: no database, never raises on any text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, tzinfo

from philont.domain import dates_en, dates_zh
from philont.domain.date_windows import Granularity, Window

__all__ = ["Granularity", "Period", "find_period", "find_periods"]

MAX_SCAN_CHARS = 2_000
"""Only this many leading characters are read (a date phrase sits in a question, not a book)."""

_HINT = re.compile(
    r"\d|[年月日号天周星礼昨今去前上这本]|\b(?:january|february|march|april|may|june|july|august"
    r"|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec"
    r"|yesterday|today|tonight|morning|days?|weeks?|weekends?|months?|years?|ago|last|past)\b",
    re.IGNORECASE,
)
"""Every phrase any rule reads holds one of these: text without any is not scanned further."""


@dataclass(frozen=True)
class Period:
    """A time window named in text: ``start <= t < end`` (aware datetimes in ``now``'s zone).

    ``relative``: the phrase counts from ``now`` ("last week", "昨天"); ``confidence`` (0..1):
    1.0 for a full explicit date, lower when a year or the exact span had to be assumed;
    ``span``: the phrase's character offsets in the text, ``text`` the phrase itself.
    """

    start: datetime
    end: datetime
    granularity: Granularity
    relative: bool
    confidence: float
    span: tuple[int, int]
    text: str


def _midnight(day: date, zone: tzinfo | None) -> datetime:
    return datetime.combine(day, time(0), tzinfo=zone)


# --- finding ---------------------------------------------------------------------------------


def _candidates(text: str, today: date) -> list[tuple[float, int, int, Window, bool]]:
    found: list[tuple[float, int, int, Window, bool]] = []
    for pattern, read, relative in dates_en.RULES + dates_zh.RULES:
        for m in pattern.finditer(text):
            try:
                result = read(m, today)
            except (ValueError, OverflowError, KeyError):  # a date outside the calendar
                result = None
            if result is not None:
                window, confidence = result
                found.append((confidence, m.start(), m.end(), window, relative))
    return found


def find_periods(text: str, now: datetime) -> list[Period]:
    """Every date phrase of ``text`` (in order), read relative to ``now`` (aware; a naive one
    is taken as UTC). Where phrases overlap, the surer then the longer reading wins ("3 May
    2023" over "May 2023"). Never raises for any ``str``; non-text gives ``[]``."""
    if not isinstance(text, str) or not isinstance(now, datetime):
        return []
    zone = now.tzinfo or UTC
    text = text[:MAX_SCAN_CHARS]
    if _HINT.search(text) is None:
        return []
    try:
        candidates = _candidates(text, now.date())
    except (ValueError, OverflowError):  # pragma: no cover - every reader guards itself
        return []
    candidates.sort(key=lambda c: (-c[0], -(c[2] - c[1]), c[1]))
    taken: list[tuple[int, int]] = []
    out: list[Period] = []
    for confidence, start, end, w, relative in candidates:
        if any(start < b and a < end for a, b in taken):
            continue
        try:
            first, stop = _midnight(w.first, zone), _midnight(w.stop, zone)
        except (ValueError, OverflowError):  # pragma: no cover - guarded by the readers
            continue
        taken.append((start, end))
        out.append(
            Period(first, stop, w.granularity, relative, confidence, (start, end), text[start:end])
        )
    return sorted(out, key=lambda p: p.span)


def find_period(text: str, now: datetime) -> Period | None:
    """The surest date phrase of ``text`` (the first of equals), or None."""
    periods = find_periods(text, now)
    if not periods:
        return None
    return max(periods, key=lambda p: (p.confidence, -p.span[0]))
