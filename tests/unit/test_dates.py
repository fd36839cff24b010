"""Date phrases in English and Chinese become time windows relative to a given now; ambiguous
words are left alone and no text makes the parser raise."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from philont.domain import dates
from philont.domain.dates import Period, find_period, find_periods

# Friday 20 October 2023, 15:00 UTC: its week runs Monday 16 to Sunday 22 October.
NOW = datetime(2023, 10, 20, 15, 0, tzinfo=UTC)

# (text, first day, day after the last, granularity, relative)
CASES: list[tuple[str, date, date, str, bool]] = [
    # English, absolute
    ("on 3 May 2023", date(2023, 5, 3), date(2023, 5, 4), "day", False),
    ("on 3rd May, 2023", date(2023, 5, 3), date(2023, 5, 4), "day", False),
    ("on May 3, 2023", date(2023, 5, 3), date(2023, 5, 4), "day", False),
    (
        "What did Melanie paint on October 13, 2023?",
        date(2023, 10, 13),
        date(2023, 10, 14),
        "day",
        False,
    ),
    ("the 3rd of March", date(2023, 3, 3), date(2023, 3, 4), "day", False),
    ("on 25 December", date(2022, 12, 25), date(2022, 12, 26), "day", False),
    ("2023-05-03", date(2023, 5, 3), date(2023, 5, 4), "day", False),
    ("May 2023", date(2023, 5, 1), date(2023, 6, 1), "month", False),
    ("in May 2023", date(2023, 5, 1), date(2023, 6, 1), "month", False),
    ("Sept 2022", date(2022, 9, 1), date(2022, 10, 1), "month", False),
    ("in June", date(2023, 6, 1), date(2023, 7, 1), "month", False),
    ("during December", date(2022, 12, 1), date(2023, 1, 1), "month", False),
    ("In March", date(2023, 3, 1), date(2023, 4, 1), "month", False),
    ("last June", date(2023, 6, 1), date(2023, 7, 1), "month", False),
    ("in 2022", date(2022, 1, 1), date(2023, 1, 1), "year", False),
    ("the last week of October 2023", date(2023, 10, 25), date(2023, 11, 1), "week", False),
    ("the first weekend of October 2023", date(2023, 10, 7), date(2023, 10, 9), "weekend", False),
    # English, relative to NOW
    ("yesterday", date(2023, 10, 19), date(2023, 10, 20), "day", True),
    ("today", date(2023, 10, 20), date(2023, 10, 21), "day", True),
    ("the day before yesterday", date(2023, 10, 18), date(2023, 10, 19), "day", True),
    ("last week", date(2023, 10, 9), date(2023, 10, 16), "week", True),
    ("this week", date(2023, 10, 16), date(2023, 10, 23), "week", True),
    ("last weekend", date(2023, 10, 14), date(2023, 10, 16), "weekend", True),
    ("last month", date(2023, 9, 1), date(2023, 10, 1), "month", True),
    ("last year", date(2022, 1, 1), date(2023, 1, 1), "year", True),
    ("two weeks ago", date(2023, 10, 2), date(2023, 10, 9), "week", True),
    ("3 days ago", date(2023, 10, 17), date(2023, 10, 18), "day", True),
    ("a month ago", date(2023, 9, 1), date(2023, 10, 1), "month", True),
    ("last Monday", date(2023, 10, 16), date(2023, 10, 17), "day", True),
    ("last Friday", date(2023, 10, 13), date(2023, 10, 14), "day", True),
    ("the past week", date(2023, 10, 13), date(2023, 10, 21), "day", True),
    # Chinese, absolute
    ("2023年5月3日", date(2023, 5, 3), date(2023, 5, 4), "day", False),
    ("二〇二三年五月三号", date(2023, 5, 3), date(2023, 5, 4), "day", False),
    ("2023年5月", date(2023, 5, 1), date(2023, 6, 1), "month", False),
    ("2022年", date(2022, 1, 1), date(2023, 1, 1), "year", False),
    ("5月3号那天", date(2023, 5, 3), date(2023, 5, 4), "day", False),
    ("十二月", date(2022, 12, 1), date(2023, 1, 1), "month", False),
    ("十月二十日", date(2023, 10, 20), date(2023, 10, 21), "day", False),
    # Chinese, relative to NOW
    ("昨天", date(2023, 10, 19), date(2023, 10, 20), "day", True),
    ("前天", date(2023, 10, 18), date(2023, 10, 19), "day", True),
    ("上周", date(2023, 10, 9), date(2023, 10, 16), "week", True),
    ("上个星期", date(2023, 10, 9), date(2023, 10, 16), "week", True),
    ("上周三", date(2023, 10, 11), date(2023, 10, 12), "day", True),
    ("上周末", date(2023, 10, 14), date(2023, 10, 16), "weekend", True),
    ("上个月", date(2023, 9, 1), date(2023, 10, 1), "month", True),
    ("去年", date(2022, 1, 1), date(2023, 1, 1), "year", True),
    ("去年六月", date(2022, 6, 1), date(2022, 7, 1), "month", True),
    ("今年三月五号", date(2023, 3, 5), date(2023, 3, 6), "day", True),
    ("三天前", date(2023, 10, 17), date(2023, 10, 18), "day", True),
    ("两个月前", date(2023, 8, 1), date(2023, 9, 1), "month", True),
    ("两个星期之前", date(2023, 10, 2), date(2023, 10, 9), "week", True),
]


@pytest.mark.parametrize(("text", "first", "stop", "granularity", "relative"), CASES)
def test_a_date_phrase_becomes_its_window(
    text: str, first: date, stop: date, granularity: str, relative: bool
) -> None:
    period = find_period(text, NOW)
    assert period is not None, text
    assert (period.start.date(), period.end.date()) == (first, stop)
    assert (period.granularity, period.relative) == (granularity, relative)
    assert period.start.tzinfo is UTC and period.start.time() == datetime.min.time()
    assert text[period.span[0] : period.span[1]] == period.text


@pytest.mark.parametrize(
    "text",
    [
        "May I ask you something?",
        "we will march forward together",
        "in march we will see",  # a month name that is also a word counts only capitalised
        "13",
        "2023",
        "room 2023 on floor 3",
        "call me at 5 or 6",
        "on Monday",  # a bare weekday: past or next?
        "recently",
        "the other day",
        "a few days ago",
        "几天前",
        "一个月",  # "one month" (a duration), not a date
        "每月",
        "in 1066",  # outside the years read as years
        "1234567 days ago",
        "",
    ],
)
def test_ambiguous_or_vague_text_names_no_period(text: str) -> None:
    assert find_periods(text, NOW) == []
    assert find_period(text, NOW) is None


def test_an_impossible_day_leaves_only_its_month() -> None:
    [period] = find_periods("on 31 February 2023", NOW)
    assert (period.text, period.granularity) == ("February 2023", "month")
    [period] = find_periods("2023年2月30日", NOW)
    assert (period.start.date(), period.granularity) == (date(2023, 2, 1), "month")


def test_the_surer_longer_reading_wins_where_phrases_overlap() -> None:
    [period] = find_periods("What happened on 3 May 2023?", NOW)
    assert period.text == "3 May 2023" and period.confidence == 1.0
    [period] = find_periods("去年六月十五日", NOW)
    assert (period.start.date(), period.granularity) == (date(2022, 6, 15), "day")


def test_a_date_without_a_year_is_its_most_recent_occurrence() -> None:
    assert find_period("on 25 October", NOW).start.date() == date(2022, 10, 25)  # type: ignore[union-attr]
    assert find_period("on 20 October", NOW).start.date() == date(2023, 10, 20)  # type: ignore[union-attr]
    explicit = find_period("on 25 October 2023", NOW)
    assert (
        explicit is not None and explicit.confidence > find_period("on 25 October", NOW).confidence
    )  # type: ignore[union-attr]


def test_several_phrases_are_all_found_in_order() -> None:
    periods = find_periods("between March 2023 and yesterday, and 上个月", NOW)
    assert [p.text for p in periods] == ["March 2023", "yesterday", "上个月"]
    assert [p.relative for p in periods] == [False, True, True]


def test_windows_are_in_the_zone_of_now() -> None:
    tokyo = timezone(timedelta(hours=9))
    now = datetime(2023, 10, 20, 1, 0, tzinfo=tokyo)  # still the 19th in UTC
    period = find_period("yesterday", now)
    assert period is not None
    assert period.start == datetime(2023, 10, 19, tzinfo=tokyo)
    assert period.end - period.start == timedelta(days=1)


def test_a_naive_now_is_read_as_utc() -> None:
    period = find_period("yesterday", NOW.replace(tzinfo=None))
    assert period is not None and period.start.tzinfo is UTC


@settings(max_examples=400, deadline=None)
@given(
    st.text(max_size=120)
    | st.lists(
        st.sampled_from(
            [
                "on",
                "in",
                "last",
                "May",
                "march",
                "3",
                "31",
                "2023",
                "1900",
                "9999",
                "of",
                "week",
                "weekend",
                "ago",
                "two",
                "a",
                "年",
                "月",
                "日",
                "号",
                "上周",
                "去年",
                "十",
                "三",
                "前",
                "个月",
                "天",
                ",",
                " ",
                "the",
                "first",
                "June",
                "Sept",
            ]
        ),
        max_size=12,
    ).map(" ".join),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31))
    | st.just(NOW.replace(tzinfo=None)),
)
def test_no_text_and_no_now_makes_it_raise(text: str, now: datetime) -> None:
    periods = find_periods(text, now.replace(tzinfo=UTC))
    taken: list[tuple[int, int]] = []
    for p in periods:
        assert isinstance(p, Period)
        assert p.start < p.end and p.start.tzinfo is not None
        assert 0 <= p.span[0] < p.span[1] <= len(text) and text[slice(*p.span)] == p.text
        assert 0 < p.confidence <= 1
        assert all(p.span[1] <= a or b <= p.span[0] for a, b in taken)  # no overlaps
        taken.append(p.span)
    assert [p.span for p in periods] == sorted(p.span for p in periods)


@given(st.one_of(st.none(), st.integers(), st.binary()))
def test_non_text_gives_no_period(value: object) -> None:
    assert find_periods(value, NOW) == []  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "on",
                "in",
                "the",
                "past",
                "last",
                "this",
                "next",
                "day",
                "days",
                "week",
                "weekend",
                "month",
                "year",
                "ago",
                "two",
                "a",
                "3",
                "2023",
                "May",
                "June",
                "Monday",
                "yesterday",
                "today",
                "tonight",
                "morning",
                "年",
                "月",
                "日",
                "号",
                "上周",
                "上个星期",
                "礼拜",
                "去年",
                "前天",
                "今天",
                "本周",
                "这个月",
                "三",
                "前",
                "十",
                "天",
                "个月",
                "of",
                ",",
                "and",
            ]
        ),
        max_size=8,
    ).map(" ".join)
)
def test_the_quick_check_never_hides_a_phrase(text: str) -> None:

    found = dates._candidates(text, NOW.date())
    assert not found or dates._HINT.search(text) is not None


_MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _last_before(today: date, month: int, day: int) -> date:
    """The most recent ``month``/``day`` not after ``today``, counted back a day at a time."""
    found = today
    while (found.month, found.day) != (month, day):
        found -= timedelta(days=1)
    return found


@settings(max_examples=300, deadline=None)
@given(
    today=st.dates(date(1910, 1, 1), date(2190, 12, 31)),
    when=st.one_of(st.dates(date(2000, 1, 1), date(2000, 12, 31)), st.just(date(2000, 2, 29))),
    form=st.sampled_from(["on {d} {M}", "on {M} {d}", "the {M} {d}th", "{m}月{d}日", "{m}月{d}号"]),
)
def test_a_day_without_a_year_is_its_last_occurrence_leap_days_too(
    today: date, when: date, form: str
) -> None:
    # 29 February named without a year is the last leap day (up to eight years back), not
    # nothing (English) or the guessed year's February (Chinese) when that year has none.
    text = form.format(d=when.day, m=when.month, M=_MONTH_NAMES[when.month - 1])
    now = datetime.combine(today, datetime.min.time(), tzinfo=UTC) + timedelta(hours=12)
    period = find_period(text, now)
    expected = _last_before(today, when.month, when.day)
    assert period is not None, text
    assert (period.start.date(), period.end.date(), period.granularity) == (
        expected,
        expected + timedelta(days=1),
        "day",
    ), text
