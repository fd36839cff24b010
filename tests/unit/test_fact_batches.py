"""The prefix and ``FactService.list`` check and score every current fact in one pass
(``valid_at``, ``rank_scores``): each answer must be the same value, bit for bit, that the rule
gives one fact at a time (``is_valid_at``, ``rank_score``, written out here as the rules
state them), and a stored value of another kind is still read again row by row."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain import decay
from philont.domain.facts import is_valid_at, rank_score, rank_scores, valid_at
from philont.errors import InvalidInputError
from philont.services.fact_base import holding, score_raw, scores_raw, valid_raw, valid_raws

NOW_MS = 1_780_000_000_000
DAY = decay.MS_PER_DAY


def _score_one(
    ns: str, conf: float, created: int, accessed: int | None, tau: Any, now: int
) -> float:
    """The rule, one fact at a time, as decay's docstrings state it."""
    if tau is None:
        roots = {"user": math.inf, "project": 60.0, "context": 1.0, "session": 1.0}
        tau = roots.get(ns.split(".", 1)[0], 365.0)
    tau = math.inf if tau < 0 else float(tau)
    age = (now - (created if accessed is None else accessed)) / DAY
    if math.isinf(tau):
        return conf * 1.0
    age = 0.0 if age < 0 else age
    if tau == 0:
        return conf if age == 0 else 0.0
    return conf * math.exp(-age / tau)


def _valid_one(kind: str, start: int | None, until: int | None, at_ms: int) -> bool:
    if kind == "event":
        return True
    if start is not None and start > at_ms:
        return False
    return not (until is not None and until < at_ms)


_times = st.integers(min_value=NOW_MS - 800 * DAY, max_value=NOW_MS + 30 * DAY)
_facts = st.lists(
    st.tuples(
        st.sampled_from(["user", "user.work", "project.x", "context", "session.a", "notes", "x"]),
        st.one_of(st.floats(min_value=0, max_value=1), st.integers(min_value=0, max_value=1)),
        _times,
        st.one_of(st.none(), _times),
        st.sampled_from([None, None, -1.0, -5.0, 0.0, -0.0, 0.5, 1, 30.0, 365.0]),
    ),
    max_size=40,
)


@given(facts=_facts, now_ms=_times)
def test_rank_scores_are_each_facts_rank_score_exactly(facts: list[Any], now_ms: int) -> None:
    scores = rank_scores(facts, now_ms)
    assert scores == [_score_one(*f, now_ms) for f in facts]
    assert scores == [
        rank_score(
            namespace=ns,
            confidence=c,
            created_ms=cr,
            accessed_ms=ac,
            tau_override=tau,
            now_ms=now_ms,
        )
        for ns, c, cr, ac, tau in facts
    ]


_windows = st.lists(
    st.tuples(
        st.sampled_from(["state", "event", "other"]),
        st.one_of(st.none(), _times),
        st.one_of(st.none(), _times),
    ),
    max_size=40,
)


@given(windows=_windows, at_ms=_times)
def test_valid_at_is_each_facts_is_valid_at(windows: list[Any], at_ms: int) -> None:
    expected = [_valid_one(*w, at_ms) for w in windows]
    assert valid_at(windows, at_ms) == expected
    assert [
        is_valid_at(fact_kind=k, valid_from_ms=s, valid_until_ms=u, at_ms=at_ms)
        for k, s, u in windows
    ] == expected


def test_a_bad_stored_score_input_fails_the_batch_as_it_fails_one_fact() -> None:
    good = ("user", 0.5, NOW_MS, None, None)
    with pytest.raises(InvalidInputError):
        rank_scores([good, ("user", 0.5, NOW_MS, None, math.nan)], NOW_MS)
    with pytest.raises(ValueError, match="no finite number"):
        rank_scores([good, ("user", math.inf, NOW_MS, None, None)], NOW_MS)


class _Row(NamedTuple):
    id: int
    namespace: str
    key: str
    confidence: Any
    fact_kind: str
    created_at: Any
    valid_from: Any
    valid_until: Any
    last_accessed_at: Any
    decay_tau_days: Any


def _row(i: int, **changes: Any) -> _Row:
    return _Row(
        i, "project.p", f"k{i}", 0.9, "state", NOW_MS - i * DAY, None, None, None, None
    )._replace(**changes)


def test_a_value_of_another_kind_is_read_again_row_by_row() -> None:
    # text where a number is stored (SQLite keeps what it is given): the batch fails on it,
    # and every row is then read as one row is (the text row read as its column's kind)
    rows = [
        _row(1),
        _row(2, confidence="0.25"),
        _row(3, valid_until="soon", last_accessed_at=NOW_MS - 3),
        _row(4, fact_kind="event", valid_from=NOW_MS + DAY),
    ]
    assert scores_raw(rows, NOW_MS) == [score_raw(r, NOW_MS) for r in rows]
    assert valid_raws(rows, NOW_MS) == [valid_raw(r, NOW_MS) for r in rows]


class _Version(NamedTuple):
    id: str
    namespace: str
    key: str
    fact_kind: str
    created_at: int
    occurred_at: int | None
    valid_from: int | None
    valid_until: int | None


def _state(i: str, key: str, created: int, start: int | None, until: int | None) -> _Version:
    return _Version(i, "n", key, "state", created, None, start, until)


def test_holding_replaces_a_lapsed_state_by_what_holds_and_looks_up_only_those_keys() -> None:
    now = NOW_MS
    rows = [
        _state("a1", "a", now - 9, None, None),  # holds
        _state("b2", "b", now - 5, now + DAY, None),  # lapsed (yet to begin): b1 held before
        _state("c2", "c", now - 5, None, now - DAY),  # lapsed, and nothing else holds
        _state("d1", "d", now - 9, None, None),  # d: one current version holds,
        _state("d2", "d", now - 5, None, now - DAY),  # another lapsed: d is not looked up
    ]
    older = [
        _state("b1", "b", now - 50, None, None),
        _state("c1", "c", now - 50, None, now - 2 * DAY),
        _state("d0", "d", now - 50, None, None),
        rows[3],  # the lapsed key's other current version, as the SQL of the prefix reads it
    ]
    looked: list[bool] = []

    def others() -> list[_Version]:
        looked.append(True)
        return older

    assert [r.id for r in holding(rows, now, others)] == ["a1", "b1", "d1"]
    assert looked == [True]  # one read
    assert [r.id for r in holding(rows[:1] + rows[3:4], now, others)] == ["a1", "d1"]
    assert looked == [True]  # everything held: no read
    assert [r.id for r in holding(rows[2:3], now, others)] == []
