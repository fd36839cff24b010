"""The ranking rules of message search: periods named in the query, a session's overall match,
and the answer to a question, as pure functions over score dicts."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain import timepolicy
from philont.domain.ranking import (
    QueryPeriod,
    RankingOptions,
    Turn,
    around,
    asks,
    fold_forms,
    lift_sessions,
    prefer_periods,
    query_periods,
    session_coverage,
    share_with_neighbours,
    total,
)

NOW = datetime(2023, 10, 20, 15, 0, tzinfo=UTC)
DAY_MS = 86_400_000


def ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)  # type: ignore[misc]


# --- keyword totals --------------------------------------------------------------------------


def test_a_message_scores_the_sum_of_its_terms() -> None:
    assert total([{1: 2.0, 2: 1.0}, {1: 0.5, 3: 4.0}, {}]) == {1: 2.5, 2: 1.0, 3: 4.0}


def test_messages_without_a_positive_score_are_no_candidates() -> None:
    assert total([{1: 0.0, 2: -1.0, 3: 1.0}]) == {3: 1.0}


# --- word forms ------------------------------------------------------------------------------


def test_a_form_counts_as_a_weaker_match_of_its_word() -> None:
    # words: 0 "buy", 1 "dave", 2 "bought" (a form of 0); then one CJK term
    terms = [{1: 4.0, 2: 1.0}, {3: 2.0}, {1: 6.0, 2: 6.0, 4: 2.0}, {5: 1.0}]
    folded = fold_forms(terms, (0, 1, 0), 0.5)
    assert folded == [{1: 4.0, 2: 3.0, 4: 1.0}, {3: 2.0}, {5: 1.0}]


def test_without_forms_the_terms_are_unchanged() -> None:
    terms = [{1: 1.0}, {2: 2.0}]
    assert fold_forms(terms, (0, 1), 0.5) == terms
    assert fold_forms(terms, (), 0.5) == terms


SCORES = st.dictionaries(st.integers(1, 30), st.floats(0.01, 100.0), max_size=8)


@given(st.data())
def test_folding_keeps_one_term_per_word_and_never_lowers_a_score(data: st.DataObject) -> None:
    words = data.draw(st.integers(1, 4))
    forms = data.draw(st.lists(st.integers(0, words - 1), max_size=4))
    form_of = tuple(range(words)) + tuple(forms)
    terms = data.draw(st.lists(SCORES, min_size=len(form_of), max_size=len(form_of) + 2))
    weight = data.draw(st.floats(0.0, 1.0))
    folded = fold_forms(terms, form_of, weight)
    assert len(folded) == len(terms) - len(forms)
    for i in range(words):
        assert all(folded[i][m] >= s for m, s in terms[i].items())
        for f, base in enumerate(form_of):
            if base == i:
                assert all(folded[i][m] >= weight * s for m, s in terms[f].items())
        assert set(folded[i]) == set().union(*(terms[f] for f, b in enumerate(form_of) if b == i))
    assert folded[words:] == terms[len(form_of) :]


@given(st.data())
def test_a_spelling_folds_into_its_term_at_full_weight(data: st.DataObject) -> None:
    """A term's decomposed spelling (``SearchPlan.spellings``) is that term: a message holding
    either scores the term's best, never a second term; a form's spelling is that form."""
    words = data.draw(st.integers(1, 4))
    forms = data.draw(st.lists(st.integers(0, words - 1), max_size=3))
    spelled = data.draw(st.lists(st.integers(0, words + len(forms) - 1), unique=True))
    form_of = tuple(range(words)) + tuple(forms) + tuple(spelled)
    spellings = tuple(range(words + len(forms), len(form_of)))
    terms = data.draw(st.lists(SCORES, min_size=len(form_of), max_size=len(form_of)))
    weight = data.draw(st.floats(0.0, 1.0))
    folded = fold_forms(terms, form_of, weight, spellings)
    assert len(folded) == words
    merged: list[dict[int, float]] = [dict(t) for t in terms[: words + len(forms)]]
    for s in spellings:  # each spelling's scores counted as its term's own
        into = merged[form_of[s]]
        for m, score in terms[s].items():
            into[m] = max(into.get(m, 0.0), score)
    own = fold_forms(merged, form_of[: words + len(forms)], weight)
    assert folded == own


# --- periods ---------------------------------------------------------------------------------


def test_a_named_period_is_stretched_forward_by_the_slack() -> None:
    [period] = query_periods("What did we eat on 3 May 2023?", NOW, RankingOptions())
    assert period.since_ms == ms(2023, 5, 3)
    assert period.until_ms == ms(2023, 5, 4) + 7 * DAY_MS - 1


def test_relative_periods_count_from_now_unless_turned_off() -> None:
    [period] = query_periods("what did we do last week", NOW, RankingOptions())
    assert period.since_ms == ms(2023, 10, 9)
    off = replace(RankingOptions(), period_relative=False)
    assert query_periods("what did we do last week", NOW, off) == []
    assert len(query_periods("what did we do in June", NOW, off)) == 1


def test_no_period_is_read_when_the_rule_is_off() -> None:
    assert query_periods("on 3 May 2023", NOW, RankingOptions.none()) == []


PHRASES = [
    "yesterday",
    "3 days ago",
    "next week",
    "last year",
    "上周",
    "明年",
    "tomorrow",
    "on 30 December 9999",
    "in 9999",
    "on 2 January 1",
    "in June",
    "last month",
]
ENDS = [timepolicy.MIN_INSTANT, timepolicy.MAX_INSTANT]
supported = st.one_of(
    st.sampled_from(ENDS),
    st.builds(
        timepolicy.clamp, st.sampled_from(ENDS), st.timedeltas(timedelta(-30), timedelta(30))
    ),
    st.datetimes(
        min_value=timepolicy.MIN_INSTANT.replace(tzinfo=None),
        max_value=timepolicy.MAX_INSTANT.replace(tzinfo=None),
        timezones=st.just(UTC),
    ),
)


@given(st.lists(st.sampled_from(PHRASES), min_size=1, max_size=3), supported, st.floats(0, 30))
def test_periods_near_the_ends_of_the_supported_times_stay_inside_them(
    phrases: list[str], now: datetime, slack: float
) -> None:
    options = replace(RankingOptions(), period_slack_days=slack)
    lowest, highest = timepolicy.MIN_EPOCH_MS, timepolicy.MAX_EPOCH_MS
    for p in query_periods(" and ".join(phrases), now, options):
        assert lowest <= p.since_ms and p.until_ms <= highest
    near = around(now, days=3)
    assert lowest <= near.since_ms <= near.until_ms <= highest


def window(since: int, until: int) -> QueryPeriod:
    [period] = query_periods("yesterday", NOW, RankingOptions())
    return replace(period, since_ms=since, until_ms=until)


def test_matches_inside_a_period_are_boosted_and_the_others_kept() -> None:
    own = {1: 4.0, 2: 3.0, 3: 1.0}
    at = {1: 50, 2: 150, 3: 250, 4: 150}  # 4: no keyword match, so no candidate
    assert prefer_periods(own, at, [window(100, 200)], 2.0) == {1: 4.0, 2: 9.0, 3: 1.0}


def test_a_match_inside_several_periods_is_boosted_once() -> None:
    own = {1: 1.0, 2: 1.0}
    periods = [window(0, 100), window(50, 150)]
    assert prefer_periods(own, {1: 75, 2: 500}, periods, 1.0) == {1: 2.0, 2: 1.0}


def test_no_period_or_no_weight_changes_nothing() -> None:
    own = {1: 1.0, 2: 2.0}
    assert prefer_periods(own, {1: 5, 2: 5}, [], 2.0) == own
    assert prefer_periods(own, {1: 5, 2: 5}, [window(0, 10)], 0.0) == own


@given(
    st.dictionaries(st.integers(1, 50), st.floats(0.01, 100)),
    st.dictionaries(st.integers(1, 60), st.integers(0, 1_000)),
    st.lists(st.tuples(st.integers(0, 1_000), st.integers(0, 1_000)), max_size=3),
    st.floats(0, 10),
)
def test_a_period_never_drops_a_match_or_lowers_a_score(
    own: dict[int, float],
    at: dict[int, int],
    bounds: list[tuple[int, int]],
    weight: float,
) -> None:
    preferred = prefer_periods(own, at, [window(a, b) for a, b in bounds], weight)
    assert set(preferred) == set(own)
    assert all(preferred[m] >= s for m, s in own.items())


# --- sessions --------------------------------------------------------------------------------


def test_a_session_covers_each_term_by_its_best_message() -> None:
    terms = [{1: 3.0, 2: 1.0, 7: 2.0}, {2: 5.0}, {3: 4.0}]
    sessions = {1: "a", 2: "a", 3: "b", 7: "b"}
    # a: term 0 best 3.0 (message 1) + term 1 5.0 (message 2); b: 2.0 + 4.0
    assert session_coverage(terms, sessions) == {"a": 8.0, "b": 6.0}


def _coverage_by_pairs(
    terms: list[dict[int, float]], session_of: dict[int, str]
) -> dict[str, float]:
    """session_coverage as it was first written: the best score per (session, term) pair,
    then each session's pairs summed in the order the pairs were first met."""
    per_term: dict[tuple[str, int], float] = {}
    for t, scores in enumerate(terms):
        for msg, score in scores.items():
            sid = session_of.get(msg)
            if sid is not None and score > per_term.get((sid, t), 0.0):
                per_term[(sid, t)] = score
    coverage: dict[str, float] = {}
    for (sid, _t), score in per_term.items():
        coverage[sid] = coverage.get(sid, 0.0) + score
    return coverage


_msg_ids = st.integers(min_value=1, max_value=40)
_term_scores = st.dictionaries(
    _msg_ids, st.floats(min_value=-5.0, max_value=1e6, allow_nan=False), max_size=25
)


@given(
    st.lists(_term_scores, max_size=6),
    st.dictionaries(_msg_ids, st.sampled_from("abcde"), max_size=30),
)
def test_session_coverage_is_the_sum_of_each_terms_best_per_session(
    terms: list[dict[int, float]], session_of: dict[int, str]
) -> None:
    """One pass per term (a dict of sessions) gives the very floats, in the same order, that
    the pairs of (session, term) gave: the lift, and so the ranking, is unchanged."""
    got = session_coverage(terms, session_of)
    expected = _coverage_by_pairs(terms, session_of)
    assert list(got.items()) == list(expected.items())
    own = total(terms)
    assert lift_sessions(own, terms, session_of, 0.5) == _lift_by(own, expected, session_of)


def _lift_by(
    own: dict[int, float], coverage: dict[str, float], session_of: dict[int, str]
) -> dict[int, float]:
    top = max(coverage.values(), default=0.0)
    if top <= 0 or len(coverage) < 2:
        return dict(own)
    return {
        m: s * (1.0 + 0.5 * (coverage.get(session_of[m], 0.0) / top) ** 2) if m in session_of else s
        for m, s in own.items()
    }


def test_the_best_covering_session_lifts_its_matches_most() -> None:
    terms = [{1: 2.0, 3: 2.0}, {2: 2.0}]
    own = total(terms)
    lifted = lift_sessions(own, terms, {1: "a", 2: "a", 3: "b"}, 0.5)
    # a covers 4.0 (factor 1.5); b covers 2.0, half of a (factor 1 + 0.5 * 0.25)
    assert lifted == {1: 3.0, 2: 3.0, 3: 2.25}
    assert lifted[1] > lifted[3]  # tied before: the message of the better session wins


def test_one_session_or_an_unknown_session_leaves_scores_alone() -> None:
    terms = [{1: 2.0, 2: 1.0, 9: 5.0}]
    own = total(terms)
    assert lift_sessions(own, terms, {1: "a", 2: "a"}, 0.5) == own
    lifted = lift_sessions(own, terms, {1: "a", 2: "b"}, 0.5)
    assert lifted[9] == own[9]  # outside the weighed pool: unchanged
    assert lift_sessions(own, terms, {1: "a", 2: "b"}, 0.0) == own


# --- the answer to a question ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("What games did you play?", True),
        ("Nice! What games did you play? I love charades.", True),
        ("你们玩了什么游戏？", True),
        ("We played charades.", False),
        ("", False),
    ],
)
def test_a_message_asks_when_it_holds_a_question_mark(content: str, expected: bool) -> None:
    assert asks(content) is expected


WEIGHTS = ((1, 0.5), (-1, 0.2), (2, 0.2), (-2, 0.1))


def turns(*specs: Turn) -> dict[int, Turn]:
    return dict(enumerate(specs, start=1))


def test_the_answer_to_a_question_keeps_the_larger_share() -> None:
    conv = turns(("s", "user", True), ("s", "assistant", False))
    shared = share_with_neighbours({1: 10.0}, [1], conv, WEIGHTS, reaction_share=0.25)
    assert shared == {1: 10.0, 2: 5.0}


def test_a_reaction_to_a_statement_earns_the_reaction_share() -> None:
    conv = turns(("s", "user", False), ("s", "assistant", False), ("s", "user", False))
    shared = share_with_neighbours({1: 10.0}, [1], conv, WEIGHTS, reaction_share=0.25)
    assert shared == {1: 10.0, 2: 2.5, 3: 2.0}
    plain = share_with_neighbours({1: 10.0}, [1], conv, WEIGHTS, reaction_share=-1.0)
    assert plain == {1: 10.0, 2: 5.0, 3: 2.0}


def test_context_stops_at_the_session_border_and_at_filtered_messages() -> None:
    conv = turns(("s", "user", True), ("t", "assistant", False), ("s", "user", False))
    del conv[3]  # filtered out by the search (say, by role): earns nothing
    shared = share_with_neighbours({1: 10.0}, [1], conv, WEIGHTS, reaction_share=0.25)
    assert shared == {1: 10.0}


def test_shares_add_up_from_several_sources() -> None:
    conv = turns(("s", "user", False), ("s", "assistant", True), ("s", "user", False))
    shared = share_with_neighbours({1: 10.0, 3: 4.0}, [1, 3], conv, WEIGHTS, 0.25)
    assert shared == pytest.approx({1: 10.0 + 0.1 * 4.0, 2: 2.5 + 0.2 * 4.0, 3: 4.0 + 0.2 * 10.0})
