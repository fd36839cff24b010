"""The skill maturity ladder, disuse decay, caveats and the callability rules."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from philont.domain.maturity import (
    CONFIRMED_MIN_SUCCESS,
    DEFAULT_DISUSE_AFTER,
    DEPRECATED_CONSECUTIVE_FAILURES,
    DEPRECATED_FAILURE_RATIO,
    DEPRECATED_RATIO_MIN_SUCCESS,
    STABLE_MAX_FAILURE_RATIO,
    STABLE_MIN_SUCCESS,
    Grade,
    Outcome,
    caveat,
    disuse_grade,
    is_callable,
    next_grade,
    parse_grade,
    recipe_is_callable,
)
from philont.errors import InvalidInputError

S = Outcome.SUCCESS
F = Outcome.FAILURE
NOW = datetime(2026, 6, 13, 12, 0, tzinfo=UTC)


def test_the_thresholds_match_the_original() -> None:
    assert (
        CONFIRMED_MIN_SUCCESS,
        STABLE_MIN_SUCCESS,
        STABLE_MAX_FAILURE_RATIO,
        DEPRECATED_CONSECUTIVE_FAILURES,
        DEPRECATED_RATIO_MIN_SUCCESS,
        DEPRECATED_FAILURE_RATIO,
    ) == (2, 5, 0.1, 3, 5, 0.3)


def test_grades_are_stored_as_their_lowercase_names() -> None:
    assert [g.value for g in Grade] == ["playbook", "draft", "confirmed", "stable", "deprecated"]


# (current, successes, failures, consecutive_failures, expected)
SUCCESS_CASES = [
    pytest.param(Grade.PLAYBOOK, 10, 0, 0, Grade.PLAYBOOK, id="playbook-never-promoted"),
    pytest.param(Grade.DEPRECATED, 50, 0, 0, Grade.DEPRECATED, id="deprecated-never-revived"),
    pytest.param(Grade.DRAFT, 1, 0, 0, Grade.DRAFT, id="draft-one-success-stays"),
    pytest.param(Grade.DRAFT, 2, 0, 0, Grade.CONFIRMED, id="draft-two-clean-successes-confirm"),
    pytest.param(Grade.DRAFT, 3, 1, 0, Grade.DRAFT, id="draft-with-any-failure-stays"),
    pytest.param(Grade.DRAFT, 10, 0, 0, Grade.CONFIRMED, id="draft-never-skips-to-stable"),
    pytest.param(Grade.CONFIRMED, 4, 0, 0, Grade.CONFIRMED, id="confirmed-four-successes-stays"),
    pytest.param(Grade.CONFIRMED, 5, 0, 0, Grade.STABLE, id="confirmed-five-successes-stabilise"),
    pytest.param(Grade.CONFIRMED, 10, 1, 0, Grade.CONFIRMED, id="confirmed-ratio-0.1-is-not-<0.1"),
    pytest.param(Grade.CONFIRMED, 11, 1, 0, Grade.STABLE, id="confirmed-ratio-just-under-0.1"),
    pytest.param(Grade.CONFIRMED, 5, 1, 0, Grade.CONFIRMED, id="confirmed-ratio-0.2-stays"),
    pytest.param(Grade.STABLE, 100, 0, 0, Grade.STABLE, id="stable-is-the-top"),
]

FAILURE_CASES = [
    pytest.param(Grade.PLAYBOOK, 0, 9, 9, Grade.PLAYBOOK, id="playbook-never-demoted"),
    pytest.param(Grade.DEPRECATED, 0, 9, 9, Grade.DEPRECATED, id="deprecated-stays"),
    pytest.param(Grade.DRAFT, 0, 1, 1, Grade.DRAFT, id="draft-cannot-go-lower"),
    pytest.param(Grade.DRAFT, 0, 2, 2, Grade.DRAFT, id="draft-two-in-a-row-stays"),
    pytest.param(Grade.DRAFT, 0, 3, 3, Grade.DEPRECATED, id="draft-three-in-a-row-deprecated"),
    pytest.param(Grade.CONFIRMED, 3, 1, 1, Grade.DRAFT, id="confirmed-demoted-one-tier"),
    pytest.param(Grade.CONFIRMED, 3, 3, 3, Grade.DEPRECATED, id="confirmed-three-in-a-row"),
    pytest.param(Grade.CONFIRMED, 4, 2, 1, Grade.DRAFT, id="ratio-ignored-below-5-successes"),
    pytest.param(Grade.CONFIRMED, 5, 2, 1, Grade.DEPRECATED, id="confirmed-ratio-0.4-deprecated"),
    pytest.param(Grade.STABLE, 20, 1, 1, Grade.CONFIRMED, id="stable-demoted-one-tier"),
    pytest.param(Grade.STABLE, 20, 2, 2, Grade.CONFIRMED, id="stable-two-in-a-row-one-tier"),
    pytest.param(Grade.STABLE, 10, 3, 3, Grade.DEPRECATED, id="stable-three-in-a-row"),
    pytest.param(Grade.STABLE, 10, 3, 1, Grade.CONFIRMED, id="stable-ratio-0.3-is-not->0.3"),
    pytest.param(Grade.STABLE, 10, 4, 1, Grade.DEPRECATED, id="stable-ratio-0.4-deprecated"),
    pytest.param(Grade.STABLE, 5, 2, 1, Grade.DEPRECATED, id="stable-ratio-at-exactly-5-wins"),
]


@pytest.mark.parametrize(
    ("current", "successes", "failures", "consecutive", "expected"), SUCCESS_CASES
)
def test_a_success_promotes_at_most_one_tier_when_the_thresholds_are_met(
    current: Grade, successes: int, failures: int, consecutive: int, expected: Grade
) -> None:
    got = next_grade(
        current,
        successes=successes,
        failures=failures,
        consecutive_failures=consecutive,
        outcome=S,
    )
    assert got is expected


@pytest.mark.parametrize(
    ("current", "successes", "failures", "consecutive", "expected"), FAILURE_CASES
)
def test_a_failure_deprecates_on_a_streak_or_bad_ratio_and_otherwise_demotes_one_tier(
    current: Grade, successes: int, failures: int, consecutive: int, expected: Grade
) -> None:
    got = next_grade(
        current,
        successes=successes,
        failures=failures,
        consecutive_failures=consecutive,
        outcome=F,
    )
    assert got is expected


def test_the_ladder_accepts_plain_strings_from_the_database() -> None:
    got = next_grade(
        Grade("draft"), successes=2, failures=0, consecutive_failures=0, outcome=Outcome("success")
    )
    assert got is Grade.CONFIRMED


@pytest.mark.parametrize("field", ["successes", "failures", "consecutive_failures"])
def test_negative_counters_are_refused(field: str) -> None:
    counters = {"successes": 1, "failures": 1, "consecutive_failures": 1}
    counters[field] = -1
    with pytest.raises(InvalidInputError):
        next_grade(Grade.DRAFT, outcome=F, **counters)


@pytest.mark.parametrize(
    ("grade", "expected"),
    [
        (Grade.PLAYBOOK, False),
        (Grade.DRAFT, True),
        (Grade.CONFIRMED, True),
        (Grade.STABLE, True),
        (Grade.DEPRECATED, False),
    ],
)
def test_only_draft_confirmed_and_stable_skills_are_callable(grade: Grade, expected: bool) -> None:
    assert is_callable(grade) is expected


@pytest.mark.parametrize(
    ("grade", "expected"),
    [
        (Grade.PLAYBOOK, "[lesson only — not callable]"),
        (Grade.DRAFT, "[draft — not yet proven, verify before relying on it]"),
        (Grade.CONFIRMED, "[confirmed]"),
        (Grade.STABLE, "[stable]"),
        (Grade.DEPRECATED, "[deprecated — proven unreliable, use only as a counter-example]"),
    ],
)
def test_every_grade_has_its_own_caveat(grade: Grade, expected: str) -> None:
    assert caveat(grade) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("playbook", Grade.PLAYBOOK),
        ("draft", Grade.DRAFT),
        ("confirmed", Grade.CONFIRMED),
        ("stable", Grade.STABLE),
        ("deprecated", Grade.DEPRECATED),
        ("Stable", Grade.DRAFT),  # stored values are exact
        ("", Grade.DRAFT),
        ("gold", Grade.DRAFT),
        (None, Grade.DRAFT),
    ],
)
def test_parsing_a_grade_falls_back_to_draft_for_unknown_values(
    value: str | None, expected: Grade
) -> None:
    assert parse_grade(value) is expected


def test_parsing_a_grade_uses_the_given_fallback() -> None:
    assert parse_grade("nonsense", fallback=Grade.PLAYBOOK) is Grade.PLAYBOOK


# (current, days since last use or None, days since creation, expected)
DISUSE_CASES = [
    pytest.param(Grade.STABLE, 91, 400, Grade.CONFIRMED, id="stable-unused-91-days"),
    pytest.param(Grade.STABLE, 500, 900, Grade.CONFIRMED, id="stable-drops-only-one-tier"),
    pytest.param(Grade.CONFIRMED, 91, 400, Grade.DRAFT, id="confirmed-unused-91-days"),
    pytest.param(Grade.STABLE, 90, 400, Grade.STABLE, id="exactly-90-days-is-not-older"),
    pytest.param(Grade.STABLE, 10, 400, Grade.STABLE, id="recently-used"),
    pytest.param(Grade.CONFIRMED, None, 91, Grade.DRAFT, id="never-used-falls-back-to-creation"),
    pytest.param(Grade.CONFIRMED, None, 30, Grade.CONFIRMED, id="never-used-but-new"),
    pytest.param(Grade.DRAFT, 500, 900, Grade.DRAFT, id="draft-unaffected"),
    pytest.param(Grade.PLAYBOOK, 500, 900, Grade.PLAYBOOK, id="playbook-unaffected"),
    pytest.param(Grade.DEPRECATED, 500, 900, Grade.DEPRECATED, id="deprecated-unaffected"),
]


@pytest.mark.parametrize(("current", "used_days_ago", "created_days_ago", "expected"), DISUSE_CASES)
def test_a_long_unused_proven_skill_drops_one_tier(
    current: Grade, used_days_ago: int | None, created_days_ago: int, expected: Grade
) -> None:
    last_used_at = None if used_days_ago is None else NOW - timedelta(days=used_days_ago)
    got = disuse_grade(
        current,
        last_used_at=last_used_at,
        created_at=NOW - timedelta(days=created_days_ago),
        now=NOW,
    )
    assert got is expected


def test_the_default_disuse_period_is_ninety_days() -> None:
    assert DEFAULT_DISUSE_AFTER / timedelta(days=1) == 90


def test_a_custom_disuse_period_is_honoured() -> None:
    got = disuse_grade(
        Grade.STABLE,
        last_used_at=NOW - timedelta(days=8),
        created_at=NOW - timedelta(days=100),
        now=NOW,
        after=timedelta(days=7),
    )
    assert got is Grade.CONFIRMED


def test_a_re_anchored_clock_loses_one_tier_per_period_not_all_at_once() -> None:
    # The service passes the moment of the previous disuse demotion as the new anchor.
    created = NOW - timedelta(days=400)
    first = disuse_grade(Grade.STABLE, last_used_at=None, created_at=created, now=NOW)
    same_day = disuse_grade(first, last_used_at=NOW, created_at=created, now=NOW)
    a_period_later = disuse_grade(
        first, last_used_at=NOW, created_at=created, now=NOW + timedelta(days=91)
    )
    assert (first, same_day, a_period_later) == (Grade.CONFIRMED, Grade.CONFIRMED, Grade.DRAFT)


@pytest.mark.parametrize("after", [timedelta(0), timedelta(days=-1)])
def test_a_non_positive_disuse_period_is_refused(after: timedelta) -> None:
    with pytest.raises(InvalidInputError):
        disuse_grade(Grade.STABLE, last_used_at=None, created_at=NOW, now=NOW, after=after)


def test_naive_datetimes_are_refused_for_disuse() -> None:
    with pytest.raises(InvalidInputError):
        disuse_grade(Grade.STABLE, last_used_at=None, created_at=NOW, now=NOW.replace(tzinfo=None))


@pytest.mark.parametrize(
    ("steps", "verification", "tool_policy", "expected"),
    [
        (["run pandoc"], "the .docx opens", ["bash"], True),
        (["a", "b"], "ok", ["bash", "read_file"], True),
        (None, "the .docx opens", ["bash"], False),
        ([], "the .docx opens", ["bash"], False),
        (["  "], "the .docx opens", ["bash"], False),
        (["run pandoc"], None, ["bash"], False),
        (["run pandoc"], "", ["bash"], False),
        (["run pandoc"], " \n\t", ["bash"], False),
        (["run pandoc"], "the .docx opens", None, False),
        (["run pandoc"], "the .docx opens", [], False),
        (["run pandoc"], "the .docx opens", [""], False),
    ],
)
def test_a_callable_recipe_needs_steps_a_verification_and_a_tool_policy(
    steps: list[str] | None, verification: str | None, tool_policy: list[str] | None, expected: bool
) -> None:
    got = recipe_is_callable(steps=steps, verification=verification, tool_policy=tool_policy)
    assert got is expected
