"""``rank_valid`` (the prefix's fact ranking over many rows) is ``is_valid_at`` + ``rank_score``.

The batch writes the two rules out in one loop for speed; these properties hold it to the
rules themselves: the same facts kept, in the same order, with the same floats (bit for bit,
NaN included), and the same kind of error where a rule refuses a value.
"""

from __future__ import annotations

import math
import struct
from typing import Any, NamedTuple

from hypothesis import example, given
from hypothesis import strategies as st

from philont.domain.facts import is_valid_at, rank_score, rank_valid


class Row(NamedTuple):
    namespace: Any
    confidence: Any
    fact_kind: Any
    created_at: Any
    last_accessed_at: Any
    decay_tau_days: Any
    valid_from: Any
    valid_until: Any


NOW = 1_780_000_000_000
_ms = st.integers(min_value=NOW - 10**12, max_value=NOW + 10**11)
_near = st.one_of(st.none(), _ms, st.sampled_from([NOW, NOW - 1, NOW + 1]))
_tau = st.one_of(
    st.none(),
    st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0, 60.0, math.inf, -math.inf]),
    st.floats(allow_nan=False),
    st.integers(min_value=-3, max_value=10**6),
)
_namespace = st.sampled_from(
    ["user", "user.home", "project", "project.x", "context", "session.a", "world", "Context", ""]
)
_confidence = st.one_of(
    st.floats(), st.sampled_from([0.0, 1.0, 0.5, -0.0]), st.integers(-2, 2), st.booleans()
)

rows = st.builds(
    Row,
    namespace=_namespace,
    confidence=_confidence,
    fact_kind=st.sampled_from(["state", "event", "other"]),
    created_at=_ms,
    last_accessed_at=_near,
    decay_tau_days=_tau,
    valid_from=_near,
    valid_until=_near,
)


def _expected(facts: list[Row], now_ms: int) -> list[tuple[float, Row]]:
    return [
        (
            -rank_score(
                namespace=f.namespace,
                confidence=f.confidence,
                created_ms=f.created_at,
                accessed_ms=f.last_accessed_at,
                tau_override=f.decay_tau_days,
                now_ms=now_ms,
            ),
            f,
        )
        for f in facts
        if is_valid_at(
            fact_kind=f.fact_kind,
            valid_from_ms=f.valid_from,
            valid_until_ms=f.valid_until,
            at_ms=now_ms,
        )
    ]


def _bits(value: Any) -> tuple[type, bytes]:
    """A score as its type and exact bits (NaN equals NaN, -0.0 differs from 0.0)."""
    return type(value), struct.pack("<d", value)


@given(st.lists(rows, max_size=30), st.one_of(st.just(NOW), _ms))
@example([Row("user", 1.0, "state", NOW, None, None, NOW, NOW)], NOW)  # window edges are in
@example([Row("context", 0.5, "state", NOW + 5, None, 0.0, None, None)], NOW)  # future, tau 0
@example([Row("world", math.nan, "event", NOW - 9, NOW, -1.0, NOW + 1, NOW - 1)], NOW)
def test_rank_valid_is_the_two_rules(facts: list[Row], now_ms: int) -> None:
    expected = _expected(facts, now_ms)
    got = rank_valid(facts, now_ms)
    assert [f for _s, f in got] == [f for _s, f in expected]
    assert [_bits(s) for s, _f in got] == [_bits(s) for s, _f in expected]


_bad = st.sampled_from(["x", b"1", [1], math.nan, None])


@given(rows, st.sampled_from(Row._fields), _bad)
def test_rank_valid_refuses_what_the_rules_refuse(row: Row, field: str, bad: Any) -> None:
    """A stored value of another kind raises the error the rules raise (the prefix then reads
    the row again as its column's kind), or is ranked alike when the rules accept it."""
    broken = row._replace(**{field: bad})
    try:
        expected: Any = _expected([broken], NOW)
    except Exception as exc:  # the rules' own error is the expectation
        expected = type(exc)
    try:
        got: Any = rank_valid([broken], NOW)
    except Exception as exc:
        got = type(exc)
    if isinstance(expected, list) and isinstance(got, list):
        assert [(_bits(s), f) for s, f in got] == [(_bits(s), f) for s, f in expected]
    else:
        assert got == expected
