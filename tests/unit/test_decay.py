"""Decay scoring of facts: namespace time constants, pins, overrides and forget candidates."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain import decay
from philont.domain.decay import (
    DEFAULT_FORGET_THRESHOLD,
    DEFAULT_TAU_DAYS,
    PIN_SENTINEL,
    effective_tau_days,
    is_forget_candidate,
    is_pinned,
    namespace_tau_days,
    score,
    score_fact,
    validate_tau_override,
)
from philont.errors import InvalidInputError

NOW = datetime(2026, 6, 13, 12, 0, tzinfo=UTC)


def _days_ago(days: float) -> datetime:
    return NOW - timedelta(days=days)


def test_the_constants_match_the_original() -> None:
    assert (PIN_SENTINEL, DEFAULT_TAU_DAYS, DEFAULT_FORGET_THRESHOLD) == (-1.0, 365.0, 0.05)


@pytest.mark.parametrize(
    ("namespace", "expected"),
    [
        ("user", math.inf),
        ("user.preferences.food", math.inf),
        ("project", 60.0),
        ("project.philont", 60.0),
        ("context", 1.0),
        ("context.location", 1.0),
        ("session", 1.0),
        ("session.x.y", 1.0),
        ("decisions", 365.0),
        ("custom.thing", 365.0),
        ("User", 365.0),  # case-sensitive
        ("users", 365.0),  # the root must match exactly
        ("", 365.0),
        (".user", 365.0),
    ],
)
def test_the_namespace_root_decides_the_default_time_constant(
    namespace: str, expected: float
) -> None:
    assert namespace_tau_days(namespace) == expected


@pytest.mark.parametrize(
    ("tau", "expected"),
    [(None, False), (-1.0, True), (-0.5, True), (0.0, False), (30.0, False), (math.inf, False)],
)
def test_only_a_negative_tau_marks_a_fact_as_pinned(tau: float | None, expected: bool) -> None:
    assert is_pinned(tau) is expected


@pytest.mark.parametrize(
    ("namespace", "tau", "expected"),
    [
        ("project", None, 60.0),
        ("user", None, math.inf),
        ("project", PIN_SENTINEL, math.inf),
        ("context", -7.0, math.inf),
        ("user", 10.0, 10.0),
        ("context", 90.0, 90.0),
        ("project", 0.0, 0.0),
    ],
)
def test_the_effective_tau_prefers_pins_then_overrides_then_the_namespace(
    namespace: str, tau: float | None, expected: float
) -> None:
    assert effective_tau_days(namespace, tau) == expected


def test_a_nan_stored_tau_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        effective_tau_days("project", math.nan)


@given(st.none() | st.floats() | st.integers() | st.booleans() | st.text(max_size=5))
def test_an_inherited_tau_is_a_valid_override_that_keeps_whether_the_fact_decays(
    stored: object,
) -> None:
    inherited = decay.inherited_tau(stored)

    if inherited is not None:
        assert decay.validate_tau_override(inherited) == inherited
    number = isinstance(stored, int | float) and not isinstance(stored, bool)
    never_decays = number and (stored < 0 or stored == math.inf)  # type: ignore[operator]
    assert is_pinned(inherited) is never_decays
    if inherited is not None and not never_decays:
        assert inherited == stored


@pytest.mark.parametrize("value", [0.001, 1, 60.0, 1e6, PIN_SENTINEL, -1])
def test_a_positive_finite_tau_or_the_pin_sentinel_is_a_valid_override(value: float) -> None:
    assert validate_tau_override(value) == float(value)


@pytest.mark.parametrize("value", [0, 0.0, -0.0, -2.0, -0.5, math.inf, -math.inf, math.nan])
def test_zero_other_negatives_and_non_finite_taus_are_refused_as_overrides(value: float) -> None:
    with pytest.raises(InvalidInputError):
        validate_tau_override(value)


@pytest.mark.parametrize("value", [True, "60", None])
def test_non_numbers_are_refused_as_overrides(value: object) -> None:
    with pytest.raises(InvalidInputError):
        validate_tau_override(value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("confidence", "age_days", "tau", "expected"),
    [
        (1.0, 5, 60.0, 0.9200444),  # a project fact touched 5 days ago
        (1.0, 180, 60.0, 0.04978707),  # a project fact untouched for 180 days
        (0.5, 180, 60.0, 0.02489353),  # the score scales with confidence
        (0.9, 60, 60.0, 0.9 * math.exp(-1)),
        (0.8, 0, 1.0, 0.8),
        (1.0, 365, 365.0, math.exp(-1)),
        (0.7, -3, 60.0, 0.7),  # a future anchor counts as age 0
    ],
)
def test_the_score_is_confidence_times_exp_of_minus_age_over_tau(
    confidence: float, age_days: float, tau: float, expected: float
) -> None:
    got = score(confidence=confidence, age=timedelta(days=age_days), tau_days=tau)
    assert got == pytest.approx(expected, rel=1e-6)


def test_an_infinite_tau_returns_the_confidence_unchanged() -> None:
    assert score(confidence=0.42, age=timedelta(days=10_000), tau_days=math.inf) == 0.42


@pytest.mark.parametrize(
    ("age", "expected"),
    [(timedelta(0), 0.9), (timedelta(milliseconds=1), 0.0), (timedelta(days=1), 0.0)],
)
def test_a_zero_tau_decays_instantly_instead_of_giving_nan(age: timedelta, expected: float) -> None:
    assert score(confidence=0.9, age=age, tau_days=0.0) == expected


@pytest.mark.parametrize("tau", [-1.0, math.nan])
def test_scoring_with_an_unresolved_pin_or_nan_tau_is_refused(tau: float) -> None:
    with pytest.raises(InvalidInputError):
        score(confidence=1.0, age=timedelta(days=1), tau_days=tau)


def test_a_project_fact_accessed_five_days_ago_scores_about_092() -> None:
    got = score_fact(
        namespace="project.philont",
        confidence=1.0,
        created_at=_days_ago(400),
        last_accessed_at=_days_ago(5),
        decay_tau_days=None,
        now=NOW,
    )
    assert got == pytest.approx(0.92, abs=0.001)


def test_a_never_accessed_fact_decays_from_its_creation() -> None:
    got = score_fact(
        namespace="project",
        confidence=1.0,
        created_at=_days_ago(180),
        last_accessed_at=None,
        decay_tau_days=None,
        now=NOW,
    )
    assert got == pytest.approx(0.0498, abs=0.0001)


def test_a_user_fact_never_decays() -> None:
    got = score_fact(
        namespace="user.home",
        confidence=0.8,
        created_at=_days_ago(3650),
        last_accessed_at=None,
        decay_tau_days=None,
        now=NOW,
    )
    assert got == 0.8


def test_a_pinned_fact_never_decays() -> None:
    got = score_fact(
        namespace="context.location",
        confidence=0.6,
        created_at=_days_ago(3650),
        last_accessed_at=_days_ago(3650),
        decay_tau_days=PIN_SENTINEL,
        now=NOW,
    )
    assert got == 0.6


def test_an_explicit_tau_overrides_the_namespace_default() -> None:
    got = score_fact(
        namespace="user",
        confidence=1.0,
        created_at=_days_ago(10),
        last_accessed_at=None,
        decay_tau_days=10.0,
        now=NOW,
    )
    assert got == pytest.approx(math.exp(-1))


def test_the_age_is_the_same_across_timezones() -> None:
    berlin = timezone(timedelta(hours=2))
    got = score_fact(
        namespace="project",
        confidence=1.0,
        created_at=(NOW - timedelta(days=60)).astimezone(berlin),
        last_accessed_at=None,
        decay_tau_days=None,
        now=NOW,
    )
    assert got == pytest.approx(math.exp(-1))


@pytest.mark.parametrize("field", ["created_at", "last_accessed_at", "now"])
def test_naive_datetimes_are_refused(field: str) -> None:
    kwargs: dict[str, datetime] = {
        "created_at": _days_ago(1),
        "last_accessed_at": _days_ago(1),
        "now": NOW,
    }
    kwargs[field] = kwargs[field].replace(tzinfo=None)
    with pytest.raises(InvalidInputError):
        score_fact(namespace="project", confidence=1.0, decay_tau_days=None, **kwargs)


def _berlin_and_cafe(cafe_age_days: float) -> tuple[float, float]:
    berlin = score_fact(
        namespace="user.home",
        confidence=0.7,
        created_at=_days_ago(365),
        last_accessed_at=None,
        decay_tau_days=None,
        now=NOW,
    )
    cafe = score_fact(
        namespace="context.location",
        confidence=1.0,
        created_at=_days_ago(cafe_age_days),
        last_accessed_at=None,
        decay_tau_days=None,
        now=NOW,
    )
    return berlin, cafe


def test_a_fresh_context_fact_outranks_an_old_user_fact_of_lower_confidence() -> None:
    berlin, cafe = _berlin_and_cafe(0)
    assert cafe > berlin


def test_the_user_moving_to_berlin_last_year_outranks_a_three_day_old_cafe_visit() -> None:
    berlin, cafe = _berlin_and_cafe(3)
    assert berlin == pytest.approx(0.7)
    assert cafe == pytest.approx(math.exp(-3))
    assert berlin > cafe


@pytest.mark.parametrize(
    ("value", "threshold", "expected"),
    [
        (0.0, DEFAULT_FORGET_THRESHOLD, True),
        (0.0499, DEFAULT_FORGET_THRESHOLD, True),
        (0.05, DEFAULT_FORGET_THRESHOLD, False),  # strictly below
        (0.9, DEFAULT_FORGET_THRESHOLD, False),
        (0.15, 0.2, True),
        (math.nan, DEFAULT_FORGET_THRESHOLD, False),
    ],
)
def test_a_fact_is_a_forget_candidate_only_strictly_below_the_threshold(
    value: float, threshold: float, expected: bool
) -> None:
    assert is_forget_candidate(value, threshold) is expected


def test_the_default_forget_threshold_applies_when_none_is_given() -> None:
    assert decay.is_forget_candidate(0.04) is True


@given(
    age_ms=st.integers(min_value=-(10**13), max_value=10**13),
    confidence=st.floats(min_value=0, max_value=1),
    tau=st.sampled_from([0.0, 0.5, 1.0, 60.0, 365.0, math.inf]),
)
def test_score_days_on_stored_milliseconds_equals_score_on_a_timedelta(
    age_ms: int, confidence: float, tau: float
) -> None:
    # Ranking code scores stored epoch ms without building datetimes; it must rank exactly as
    # the datetime form (the same float, not merely a close one).
    by_days = decay.score_days(
        confidence=confidence, age_days=age_ms / decay.MS_PER_DAY, tau_days=tau
    )
    assert by_days == score(confidence=confidence, age=timedelta(milliseconds=age_ms), tau_days=tau)
