"""The skill ranking score: volume x smoothed success rate x recency (Philont's scoreSkill)."""

from __future__ import annotations

import math
import struct
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.kinds import SkillKind
from philont.domain.skill_score import (
    NEGATIVE_RECENCY_TAU_DAYS,
    NEVER_USED_RECENCY,
    POSITIVE_RECENCY_TAU_DAYS,
    recency_factor,
    score_idle,
    score_skill,
    score_stored,
)
from philont.errors import InvalidInputError

NOW = datetime(2026, 6, 13, 12, 0, tzinfo=UTC)


def days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def test_the_constants_match_the_original() -> None:
    assert (POSITIVE_RECENCY_TAU_DAYS, NEGATIVE_RECENCY_TAU_DAYS, NEVER_USED_RECENCY) == (
        30.0,
        90.0,
        0.1,
    )


def test_a_never_used_new_skill_scores_ln2_times_a_half_times_a_tenth() -> None:
    score = score_skill(use_count=0, success_count=0, failure_count=0, last_used_at=None, now=NOW)
    assert score == pytest.approx(math.log(2) * 0.5 * 0.1)
    assert score == pytest.approx(0.0347, abs=1e-4)


@pytest.mark.parametrize(
    ("use_count", "successes", "failures", "days", "expected"),
    [
        (0, 0, 0, 0.0, math.log(2) * 0.5),
        (3, 3, 0, 0.0, math.log(5) * 4 / 5),
        (10, 2, 6, 0.0, math.log(12) * 3 / 10),
        (4, 4, 0, 30.0, math.log(6) * 5 / 6 * math.exp(-1)),
        (4, 4, 0, 60.0, math.log(6) * 5 / 6 * math.exp(-2)),
    ],
)
def test_the_score_is_volume_times_laplace_rate_times_recency(
    use_count: int, successes: int, failures: int, days: float, expected: float
) -> None:
    score = score_skill(
        use_count=use_count,
        success_count=successes,
        failure_count=failures,
        last_used_at=days_ago(days),
        now=NOW,
    )
    assert score == pytest.approx(expected)


def test_tau_is_an_e_folding_time_not_a_half_life() -> None:
    # Q-K6: Philont calls 30 days a "half-life", but the factor after 30 days is 1/e, not 0.5.
    # We keep the formula (same ranking as Philont) and name the constant for what it is.
    factor = recency_factor(last_used_at=days_ago(30), now=NOW, kind=SkillKind.POSITIVE)
    assert factor == pytest.approx(math.exp(-1))
    assert factor == pytest.approx(0.368, abs=1e-3)
    sixty = recency_factor(last_used_at=days_ago(60), now=NOW, kind=SkillKind.POSITIVE)
    assert sixty == pytest.approx(0.135, abs=1e-3)


def test_negative_skills_fade_three_times_slower() -> None:
    positive = recency_factor(last_used_at=days_ago(90), now=NOW, kind=SkillKind.POSITIVE)
    negative = recency_factor(last_used_at=days_ago(90), now=NOW, kind=SkillKind.NEGATIVE)
    assert positive == pytest.approx(math.exp(-3))
    assert negative == pytest.approx(math.exp(-1))


def test_a_never_used_skill_gets_the_fixed_recency_of_a_tenth() -> None:
    for kind in SkillKind:
        assert recency_factor(last_used_at=None, now=NOW, kind=kind) == NEVER_USED_RECENCY


def test_a_use_in_the_future_counts_as_now() -> None:
    assert recency_factor(
        last_used_at=NOW + timedelta(days=3), now=NOW, kind=SkillKind.POSITIVE
    ) == pytest.approx(1.0)


def test_a_used_skill_outranks_a_never_used_one_until_it_is_about_two_months_old() -> None:
    fresh = score_skill(use_count=0, success_count=0, failure_count=0, last_used_at=None, now=NOW)
    used_recently = score_skill(
        use_count=1, success_count=0, failure_count=0, last_used_at=days_ago(60), now=NOW
    )
    used_long_ago = score_skill(
        use_count=1, success_count=0, failure_count=0, last_used_at=days_ago(120), now=NOW
    )
    assert used_recently > fresh > used_long_ago


def test_failures_lower_the_score_and_successes_raise_it() -> None:
    def score(successes: int, failures: int) -> float:
        return score_skill(
            use_count=5,
            success_count=successes,
            failure_count=failures,
            last_used_at=days_ago(1),
            now=NOW,
        )

    assert score(5, 0) > score(3, 0) > score(3, 2) > score(0, 5)


@pytest.mark.parametrize(
    "bad",
    [
        {"use_count": -1},
        {"success_count": -1},
        {"failure_count": -2},
        {"use_count": True},
        {"use_count": 1.5},
        {"last_used_at": datetime(2026, 6, 1)},
        {"now": datetime(2026, 6, 13)},
    ],
)
def test_bad_inputs_are_refused(bad: dict[str, object]) -> None:
    args: dict[str, object] = {
        "use_count": 1,
        "success_count": 0,
        "failure_count": 0,
        "last_used_at": days_ago(1),
        "now": NOW,
    }
    args.update(bad)
    with pytest.raises(InvalidInputError):
        score_skill(**args)  # type: ignore[arg-type]


@given(
    idle_us=st.one_of(st.none(), st.integers(min_value=-(10**16), max_value=10**16)),
    counts=st.tuples(*[st.integers(min_value=0, max_value=10**6)] * 3),
    kind=st.sampled_from(list(SkillKind)),
)
def test_score_idle_on_stored_times_equals_score_skill_on_datetimes(
    idle_us: int | None, counts: tuple[int, int, int], kind: SkillKind
) -> None:
    # The prefix ranks stored epoch values without building datetimes: the same float.
    uses, successes, failures = counts
    last = None if idle_us is None else NOW - timedelta(microseconds=idle_us)
    expected = score_skill(
        use_count=uses,
        success_count=successes,
        failure_count=failures,
        last_used_at=last,
        now=NOW,
        kind=kind,
    )
    got = score_idle(
        use_count=uses,
        success_count=successes,
        failure_count=failures,
        idle_days=None if idle_us is None else idle_us / 86_400_000_000,
        kind=kind,
    )
    assert got == expected


# --- score_stored: the prefix's ranking over stored rows is score_idle ----------------------


class _Stored(NamedTuple):
    use_count: Any
    success_count: Any
    failure_count: Any
    last_used_at: Any
    kind: Any


_NOW_US = 1_780_000_000_000_123
_counter = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.sampled_from([0, 1, 2, -1, True, 1.0, None, "3"]),
)
_stored = st.builds(
    _Stored,
    use_count=_counter,
    success_count=_counter,
    failure_count=_counter,
    last_used_at=st.one_of(
        st.none(), st.integers(min_value=0, max_value=_NOW_US // 500), st.just(_NOW_US // 1000)
    ),
    kind=st.sampled_from(["positive", "negative", "Negative", "", None, "other"]),
)


def _one_by_one(rows: list[_Stored], now_us: int) -> list[object]:
    """What the prefix computed per row before: score_idle of the stored values."""
    out: list[object] = []
    for r in rows:
        last = r.last_used_at
        try:
            out.append(
                score_idle(
                    use_count=r.use_count,
                    success_count=r.success_count,
                    failure_count=r.failure_count,
                    idle_days=None if last is None else (now_us - last * 1000) / 86_400_000_000,
                    kind=SkillKind.NEGATIVE if r.kind == "negative" else SkillKind.POSITIVE,
                )
            )
        except InvalidInputError as exc:
            return [type(exc)]
    return out


@given(st.lists(_stored, max_size=20), st.sampled_from([_NOW_US, _NOW_US + 86_400_000_000 * 400]))
def test_score_stored_is_score_idle_of_each_row(rows: list[_Stored], now_us: int) -> None:
    expected = _one_by_one(rows, now_us)
    try:
        got: list[object] = list(score_stored(rows, now_us))
    except InvalidInputError as exc:
        got = [type(exc)]
    assert [(type(x), struct.pack("<d", x) if isinstance(x, float) else x) for x in got] == [
        (type(x), struct.pack("<d", x) if isinstance(x, float) else x) for x in expected
    ]


def _formula(row: _Stored, now_us: int) -> float:
    """The score as the module's docstring writes it, term by term: ln(2 + uses) x (successes
    + 1) / (successes + failures + 2) x recency (0.1 never used; else exp(-idle days / tau),
    a future use counting as now)."""
    volume = math.log(2 + row.use_count)
    success_rate = (row.success_count + 1) / (row.success_count + row.failure_count + 2)
    if row.last_used_at is None:
        return volume * success_rate * NEVER_USED_RECENCY
    idle_days = (now_us - row.last_used_at * 1000) / 86_400_000_000
    tau = NEGATIVE_RECENCY_TAU_DAYS if row.kind == "negative" else POSITIVE_RECENCY_TAU_DAYS
    return volume * success_rate * math.exp(-max(0.0, idle_days) / tau)


_valid_counter = st.integers(min_value=0, max_value=10**6)


@given(
    st.lists(
        st.builds(
            _Stored,
            use_count=_valid_counter,
            success_count=_valid_counter,
            failure_count=_valid_counter,
            last_used_at=st.one_of(st.none(), st.integers(min_value=0, max_value=_NOW_US // 500)),
            kind=st.sampled_from(["positive", "negative", "Negative", "other"]),
        ),
        max_size=20,
    ),
    st.sampled_from([_NOW_US, _NOW_US + 86_400_000_000 * 400]),
)
def test_score_stored_is_the_formula_to_the_last_bit(rows: list[_Stored], now_us: int) -> None:
    """score_stored computes each row's score by position (no keyword call per row): the very
    float the formula gives, so the prefix ranks skills as before."""
    got = score_stored(rows, now_us)
    assert [struct.pack("<d", x) for x in got] == [
        struct.pack("<d", _formula(r, now_us)) for r in rows
    ]
