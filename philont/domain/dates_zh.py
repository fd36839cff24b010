"""Chinese date phrases ("2023年5月3日", "去年六月", "上周", "昨天", "三天前") as rules."""

from __future__ import annotations

import re
from datetime import date, timedelta

from philont.domain.date_windows import (
    MAX_YEAR,
    MIN_YEAR,
    Rule,
    Window,
    ago,
    day_window,
    month_window,
    months_back,
    recent_day,
    recent_month,
    valid_day,
    week_start,
    week_window,
    weekend_before,
    year_window,
)

__all__ = ["RULES"]

_ZH_DIGITS = {"〇": 0, "零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6}
_ZH_DIGITS |= {"七": 7, "八": 8, "九": 9}
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}


def _zh_number(text: str) -> int | None:
    """Arabic digits or a Chinese numeral up to 99 (十, 十二, 二十, 三十一); a year's digits
    one by one (二〇二三)."""
    if text.isdigit():
        return int(text)
    if "十" not in text:
        if not text or any(c not in _ZH_DIGITS for c in text):
            return None
        value = 0
        for c in text:
            value = value * 10 + _ZH_DIGITS[c]
        return value
    tens, _, ones = text.partition("十")
    if len(tens) > 1 or len(ones) > 1 or (tens and tens not in _ZH_DIGITS):
        return None
    if ones and ones not in _ZH_DIGITS:
        return None
    return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[ones] if ones else 0)


# --- Chinese ---------------------------------------------------------------------------------

_ZH_N = r"\d{1,2}|[一二三]?十[一二三四五六七八九]?|[一二三四五六七八九]"
_ZH_MONTH = r"(?P<month>\d{1,2}|十[一二]?|[一二三四五六七八九])\s*月(?!份?[前后])"
_ZH_DAY = rf"(?:\s*(?P<day>{_ZH_N})\s*[日号])"
_ZH_YEAR = r"(?P<year>\d{4}|[〇零一二三四五六七八九]{4})\s*年"
_ZH_REL_YEAR = {"前年": 2, "去年": 1, "今年": 0, "明年": -1}


def _zh_month_day(m: re.Match[str], year: int | None, today: date) -> tuple[Window, float] | None:
    month = _zh_number(m.group("month"))
    if month is None or not 1 <= month <= 12:
        return None
    day_text = m.groupdict().get("day")
    guessed = year is None
    confidence = 0.8 if guessed else 1.0
    if year is None:
        year, _ = recent_month(today, month)
    if day_text is None:
        return month_window(year, month), confidence
    day = _zh_number(day_text)
    if day is None:
        found = None
    elif guessed:
        found = recent_day(today, month, day)
    else:
        found = valid_day(year, month, day)
    if found is None:  # no such day (2月30日): the month is still named
        return month_window(year, month), confidence
    return day_window(found), confidence


def _zh_date(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    year = _zh_number(m.group("year"))
    if year is None or not MIN_YEAR <= year <= MAX_YEAR:
        return None
    return _zh_month_day(m, year, today)


def _zh_no_year(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    return _zh_month_day(m, None, today)


def _zh_rel_year_date(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    found = _zh_month_day(m, today.year - _ZH_REL_YEAR[m.group("rel")], today)
    return None if found is None else (found[0], 0.9)


def _zh_year(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    year = _zh_number(m.group("year"))
    if year is None or not MIN_YEAR <= year <= MAX_YEAR:
        return None
    return year_window(year), 1.0


_ZH_DAYS = {"大前天": 3, "前天": 2, "昨天": 1, "昨日": 1, "昨晚": 1, "今天": 0, "今日": 0}
_ZH_DAYS |= {"今晚": 0, "今早": 0}
_ZH_LAST_WEEK = "上个?星期|上个?礼拜|上周"
_ZH_THIS_WEEK = "这个?星期|这个?礼拜|这周|本周"


def _zh_relative(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    word = m.group(0)
    if word in _ZH_DAYS:
        return day_window(today - timedelta(days=_ZH_DAYS[word])), 0.9
    if word in _ZH_REL_YEAR:
        return year_window(today.year - _ZH_REL_YEAR[word]), 0.9
    if word in ("上个月", "上月"):
        return month_window(*months_back(today, 1)), 0.9
    if word in ("这个月", "本月"):
        return month_window(today.year, today.month), 0.9
    if word.endswith("周末"):
        if word[0] == "上":
            return weekend_before(today), 0.9
        saturday = week_start(today) + timedelta(days=5)
        return Window(saturday, saturday + timedelta(days=2), "weekend"), 0.9
    if re.fullmatch(_ZH_LAST_WEEK, word):
        return week_window(week_start(today) - timedelta(days=7)), 0.9
    return week_window(week_start(today)), 0.9


def _zh_weekday(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    monday = week_start(today) - timedelta(days=7 if m.group("which")[0] == "上" else 0)
    return day_window(monday + timedelta(days=_ZH_WEEKDAYS[m.group("wd")])), 0.9


_ZH_UNITS = {"天": "day", "日": "day", "周": "week", "星期": "week", "礼拜": "week"}
_ZH_UNITS |= {"个月": "month", "年": "year"}


def _zh_ago(m: re.Match[str], today: date) -> tuple[Window, float] | None:
    n = _zh_number(m.group("n"))
    written = m.group("unit")
    unit = _ZH_UNITS[written if written == "个月" else written.removeprefix("个")]
    window = None if n is None else ago(today, n, unit)
    return None if window is None else (window, 0.7)


RULES: tuple[Rule, ...] = (
    (re.compile(rf"{_ZH_YEAR}\s*{_ZH_MONTH}{_ZH_DAY}?"), _zh_date, False),
    (re.compile(rf"(?P<rel>前年|去年|今年|明年){_ZH_MONTH}{_ZH_DAY}?"), _zh_rel_year_date, True),
    (re.compile(rf"(?<![\d〇零一二三四五六七八九十年]){_ZH_MONTH}{_ZH_DAY}?"), _zh_no_year, False),
    (re.compile(rf"{_ZH_YEAR}(?!\s*[\d一二三四五六七八九十]+\s*月)"), _zh_year, False),
    (
        re.compile(rf"(?P<which>{_ZH_LAST_WEEK}|{_ZH_THIS_WEEK})(?P<wd>[一二三四五六日天])"),
        _zh_weekday,
        True,
    ),
    (
        re.compile(
            rf"大前天|前天|昨天|昨日|昨晚|今天|今日|今晚|今早|前年|去年|今年|明年|上个月|上月"
            rf"|这个月|本月|上个?周末|这个?周末|本周末|{_ZH_LAST_WEEK}|{_ZH_THIS_WEEK}"
        ),
        _zh_relative,
        True,
    ),
    (
        re.compile(
            r"(?P<n>\d{1,3}|[一二两三四五六七八九十]{1,3})\s*"
            r"(?P<unit>天|日|周|个?星期|个?礼拜|个月|年)(?:之|以)?前"
        ),
        _zh_ago,
        True,
    ),
)
