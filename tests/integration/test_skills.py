"""SkillService on a real SQLite file: storage, honest usage, the grade ladder, disuse decay."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session, sessionmaker
from structlog.testing import capture_logs

from philont.db.models import AccessLogEntry, Skill
from philont.domain.kinds import AccessTarget, SkillKind
from philont.domain.maturity import DEFAULT_DISUSE_AFTER, Grade, caveat
from philont.errors import (
    ConflictError,
    InvalidInputError,
    SkillNotFoundError,
    SkillNotUsableError,
)
from philont.schemas.skills import GradeChange
from philont.services.skills import SkillService
from tests.conftest import FakeClock
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)


@pytest.fixture
def skills(session: Session, clock: FakeClock) -> SkillService:
    return SkillService(joined(session, clock))


def make(skills: SkillService, name: str = "berlin-rent", **kwargs: Any) -> str:
    skills.create(
        name,
        kwargs.pop("description", "Compare Berlin rents"),
        kwargs.pop("trigger_keywords", "rent, Warmmiete apartment"),
        kwargs.pop("action_template", "1. fetch listings\n2. compare"),
        **kwargs,
    )
    return name


def outcomes(skills: SkillService, name: str, pattern: str) -> Grade:
    """Record outcomes from a pattern such as 'SSF' and return the final grade."""
    record = None
    for letter in pattern:
        record = skills.record_outcome(name, success=letter == "S")
    assert record is not None
    return record.grade


def skill_count(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Skill)) or 0)


# --- creating and reading ----------------------------------------------------------------------


def test_a_new_skill_starts_as_a_draft_with_zeroed_counters(
    skills: SkillService, clock: FakeClock
) -> None:
    record = skills.create("berlin-rent", "Compare rents", ["rent"], "do it")
    assert record.grade == Grade.DRAFT
    assert record.kind == SkillKind.POSITIVE
    assert (record.use_count, record.success_count, record.failure_count) == (0, 0, 0)
    assert record.consecutive_failures == 0
    assert record.last_used_at is None
    assert record.created_at == clock.now
    assert record.callable is True
    assert record.recipe is None


def test_keywords_given_as_text_are_split_on_whitespace_and_commas_and_stored_compactly(
    skills: SkillService, session: Session
) -> None:
    record = skills.create("rent", "d", " rent, Warmmiete  apartment,,房租 ", "t")
    assert record.trigger_keywords == ["rent", "Warmmiete", "apartment", "房租"]
    raw = session.scalar(text("SELECT trigger_keywords FROM memory_skills WHERE name = 'rent'"))
    assert raw == '["rent","Warmmiete","apartment","房租"]'


def test_keywords_given_as_a_list_keep_phrases_and_drop_blanks_and_duplicates(
    skills: SkillService,
) -> None:
    record = skills.create("never-rm-rf", "d", ["rm -rf", " ", "delete", "rm -rf"], "t")
    assert record.trigger_keywords == ["rm -rf", "delete"]


def test_a_blank_when_to_use_is_stored_as_null(skills: SkillService, session: Session) -> None:
    skills.create("a-skill", "d", "k", "t", when_to_use="   ")
    assert session.scalar(text("SELECT when_to_use FROM memory_skills")) is None


def test_get_finds_a_skill_by_its_exact_name_and_logs_the_access(
    skills: SkillService, session: Session
) -> None:
    created = skills.create("berlin-rent", "d", "k", "t")
    found = skills.get("berlin-rent")
    assert found == created
    assert skills.get("Berlin-Rent") is None
    entries = session.scalars(select(AccessLogEntry)).all()
    assert [(e.target_type, e.target_id) for e in entries] == [(AccessTarget.SKILL, created.id)]


def test_get_without_recording_access_writes_nothing(
    skills: SkillService, session: Session
) -> None:
    make(skills)
    assert skills.get("berlin-rent", record_access=False) is not None
    assert session.scalar(select(func.count()).select_from(AccessLogEntry)) == 0


def test_get_of_an_unknown_skill_returns_none_and_logs_nothing(
    skills: SkillService, session: Session
) -> None:
    assert skills.get("nothing-here") is None
    assert skills.get_by_id("no-such-id") is None
    assert session.scalar(select(func.count()).select_from(AccessLogEntry)) == 0


def test_get_by_id_returns_the_same_record(skills: SkillService) -> None:
    created = skills.create("berlin-rent", "d", "k", "t")
    assert skills.get_by_id(created.id) == created


# --- usage is not success (Q-K1) -------------------------------------------------------------


def test_fetching_a_skill_twice_does_not_confirm_it(skills: SkillService, clock: FakeClock) -> None:
    make(skills)
    skills.get("berlin-rent")
    skills.record_usage("berlin-rent")
    clock.advance(minutes=5)
    record = skills.record_usage("berlin-rent")
    assert record.grade == Grade.DRAFT
    assert record.success_count == 0
    assert record.use_count == 2
    assert record.last_used_at == clock.now
    assert record.last_success_at is None


def test_using_a_skill_twice_does_not_confirm_it_either(skills: SkillService) -> None:
    make(skills)
    skills.use("berlin-rent")
    used = skills.use("berlin-rent")
    assert used.skill.grade == Grade.DRAFT
    assert (used.skill.use_count, used.skill.success_count) == (2, 0)


def test_use_returns_the_template_with_the_grade_caveat(skills: SkillService) -> None:
    make(skills, action_template="step one")
    used = skills.use("berlin-rent")
    assert used.name == "berlin-rent"
    assert used.action_template == "step one"
    assert used.caveat == caveat(Grade.DRAFT)


@pytest.mark.parametrize("grade", [Grade.PLAYBOOK, Grade.DEPRECATED])
def test_use_refuses_playbooks_and_deprecated_skills_and_counts_nothing(
    skills: SkillService, grade: Grade
) -> None:
    make(skills, grade=Grade.PLAYBOOK)
    skills.set_grade("berlin-rent", grade, reason="test")
    with pytest.raises(SkillNotUsableError) as caught:
        skills.use("berlin-rent")
    assert caught.value.details["grade"] == grade.value
    record = skills.get("berlin-rent")
    assert record is not None
    assert record.use_count == 0
    assert record.callable is False
    assert skills.is_callable("berlin-rent") is False


def test_use_of_an_unknown_skill_is_not_found(skills: SkillService) -> None:
    with pytest.raises(SkillNotFoundError):
        skills.use("nothing-here")


def test_an_outcome_does_not_count_a_use(skills: SkillService) -> None:
    make(skills)
    record = skills.record_outcome("berlin-rent", success=True)
    assert (record.use_count, record.success_count) == (0, 1)
    assert record.last_used_at is None


# --- the ladder through the service ----------------------------------------------------------


def test_two_credited_successes_confirm_a_draft(skills: SkillService) -> None:
    make(skills)
    assert skills.record_outcome("berlin-rent", success=True).grade == Grade.DRAFT
    assert skills.record_outcome("berlin-rent", success=True).grade == Grade.CONFIRMED


def test_five_successes_take_a_draft_through_confirmed_to_stable(skills: SkillService) -> None:
    make(skills)
    grades = [skills.record_outcome("berlin-rent", success=True).grade for _ in range(5)]
    assert grades == [
        Grade.DRAFT,
        Grade.CONFIRMED,
        Grade.CONFIRMED,
        Grade.CONFIRMED,
        Grade.STABLE,
    ]


def test_a_draft_with_a_failure_on_record_is_not_confirmed_by_two_successes(
    skills: SkillService,
) -> None:
    make(skills)
    assert outcomes(skills, "berlin-rent", "FSS") == Grade.DRAFT


@pytest.mark.parametrize(
    ("start", "expected"),
    [
        (Grade.STABLE, Grade.CONFIRMED),
        (Grade.CONFIRMED, Grade.DRAFT),
        (Grade.DRAFT, Grade.DRAFT),
    ],
)
def test_a_failure_demotes_one_tier(skills: SkillService, start: Grade, expected: Grade) -> None:
    make(skills, grade=start)
    assert skills.record_outcome("berlin-rent", success=False).grade == expected


def test_three_consecutive_failures_deprecate(skills: SkillService) -> None:
    make(skills, grade=Grade.STABLE)
    grades = [skills.record_outcome("berlin-rent", success=False).grade for _ in range(3)]
    assert grades == [Grade.CONFIRMED, Grade.DRAFT, Grade.DEPRECATED]
    record = skills.get("berlin-rent")
    assert record is not None
    assert record.consecutive_failures == 3


def test_a_success_resets_the_failure_streak(skills: SkillService) -> None:
    make(skills)
    assert outcomes(skills, "berlin-rent", "FFSFF") == Grade.DRAFT
    record = skills.get("berlin-rent")
    assert record is not None
    assert (record.success_count, record.failure_count, record.consecutive_failures) == (1, 4, 2)


def test_a_high_failure_ratio_deprecates_a_proven_skill(skills: SkillService) -> None:
    make(skills)
    assert outcomes(skills, "berlin-rent", "SSSSS") == Grade.STABLE
    assert outcomes(skills, "berlin-rent", "F") == Grade.CONFIRMED  # 1/5 = 0.2
    assert outcomes(skills, "berlin-rent", "SF") == Grade.DEPRECATED  # 2/6 > 0.3


def test_a_deprecated_skill_never_promotes_itself(skills: SkillService) -> None:
    make(skills)
    assert outcomes(skills, "berlin-rent", "FFF") == Grade.DEPRECATED
    assert outcomes(skills, "berlin-rent", "SSSSSSSSSS") == Grade.DEPRECATED


def test_a_playbook_never_moves(skills: SkillService) -> None:
    make(skills, grade=Grade.PLAYBOOK)
    assert outcomes(skills, "berlin-rent", "SSSSSS") == Grade.PLAYBOOK
    assert outcomes(skills, "berlin-rent", "FFFF") == Grade.PLAYBOOK


def test_set_grade_revives_a_deprecated_skill_as_a_fresh_draft(skills: SkillService) -> None:
    make(skills)
    outcomes(skills, "berlin-rent", "FFF")
    revived = skills.set_grade("berlin-rent", Grade.DRAFT, reason="recipe fixed by hand")
    assert revived.grade == Grade.DRAFT
    assert revived.failure_count == 3  # counters are kept ...
    assert revived.consecutive_failures == 0  # ... but the streak that deprecated it is not
    assert revived.callable is True
    assert skills.record_outcome("berlin-rent", success=False).grade == Grade.DRAFT


def test_set_grade_accepts_the_grade_as_text_and_makes_a_playbook(skills: SkillService) -> None:
    make(skills)
    assert skills.set_grade("berlin-rent", "playbook", reason="lesson").grade == Grade.PLAYBOOK


def test_grade_changes_are_logged_and_plain_outcomes_are_not(skills: SkillService) -> None:
    make(skills)
    with capture_logs() as logs:
        skills.record_outcome("berlin-rent", success=True)
        skills.record_outcome("berlin-rent", success=True)
    changes = [e for e in logs if e["event"] == "skill.grade_changed"]
    assert changes == [
        {
            "event": "skill.grade_changed",
            "log_level": "info",
            "name": "berlin-rent",
            "old": "draft",
            "new": "confirmed",
            "reason": "outcome:success",
        }
    ]


def test_every_grade_change_is_stored_and_logged_alike(
    skills: SkillService, clock: FakeClock
) -> None:
    # the ladder, a hand-set grade and disuse all go through one change: same row, same event
    make(skills)
    with capture_logs() as logs:
        outcomes(skills, "berlin-rent", "SS")
        skills.set_grade("berlin-rent", Grade.STABLE, reason="by hand")
        clock.advance(days=91)
        skills.apply_disuse()
    changes = [
        (e["old"], e["new"], e["reason"]) for e in logs if e["event"] == "skill.grade_changed"
    ]
    assert changes == [
        ("draft", "confirmed", "outcome:success"),
        ("confirmed", "stable", "by hand"),
        ("stable", "confirmed", "disuse"),
    ]
    assert skills.get("berlin-rent").grade == Grade.CONFIRMED
    assert skills.apply_disuse() == []  # the disuse drop restarted the period


def test_an_outcome_credited_late_never_moves_last_success_backwards(
    skills: SkillService, clock: FakeClock
) -> None:
    make(skills)
    latest = clock.now
    skills.record_outcome("berlin-rent", success=True, at=latest)
    record = skills.record_outcome("berlin-rent", success=True, at=latest - timedelta(hours=2))
    assert record.last_success_at == latest
    failed = skills.record_outcome("berlin-rent", success=False, at=latest - timedelta(hours=1))
    assert failed.last_failure_at == latest - timedelta(hours=1)


def test_counters_are_atomic_across_two_sessions_on_the_same_file(
    engine: Engine, clock: FakeClock
) -> None:
    factory = sessionmaker(bind=engine, expire_on_commit=False)
    with factory() as setup, setup.begin():
        SkillService(joined(setup, clock)).create("berlin-rent", "d", "k", "t")

    first = factory()
    # The first session reads the skill (its identity map now holds success_count == 0) ...
    with first.begin():
        assert SkillService(joined(first, clock)).get("berlin-rent") is not None
    # ... another session (another process, as far as SQLite is concerned) records an outcome,
    with factory() as second, second.begin():
        SkillService(joined(second, clock)).record_outcome("berlin-rent", success=True)
    # ... and the first session's own outcome must add to it, not overwrite it.
    with first.begin():
        record = SkillService(joined(first, clock)).record_outcome("berlin-rent", success=True)
    first.close()
    assert (record.success_count, record.grade) == (2, Grade.CONFIRMED)
    with factory() as check:
        joined(check, clock)  # on PostgreSQL: this transaction is the test agent's
        stored = check.execute(
            text("SELECT success_count, maturity FROM memory_skills WHERE name = 'berlin-rent'")
        ).one()
    assert tuple(stored) == (2, "confirmed")


# --- disuse decay ------------------------------------------------------------------------------


def test_the_default_disuse_period_is_ninety_days() -> None:
    assert timedelta(days=90) == DEFAULT_DISUSE_AFTER


def test_a_stable_skill_unused_for_exactly_ninety_days_keeps_its_grade(
    skills: SkillService, clock: FakeClock
) -> None:
    make(skills, grade=Grade.STABLE)
    skills.record_usage("berlin-rent")
    clock.advance(days=90)
    assert skills.apply_disuse() == []
    clock.advance(milliseconds=1)
    assert skills.apply_disuse() == [GradeChange("berlin-rent", Grade.STABLE, Grade.CONFIRMED)]


def test_disuse_drops_one_tier_per_period_not_all_at_once(
    skills: SkillService, clock: FakeClock
) -> None:
    make(skills, grade=Grade.STABLE)
    clock.advance(days=400)
    assert skills.apply_disuse() == [("berlin-rent", Grade.STABLE, Grade.CONFIRMED)]
    assert skills.apply_disuse() == []  # the drop re-anchored the clock
    clock.advance(days=60)
    assert skills.apply_disuse() == []
    clock.advance(days=31)
    assert skills.apply_disuse() == [("berlin-rent", Grade.CONFIRMED, Grade.DRAFT)]
    clock.advance(days=365)
    assert skills.apply_disuse() == []  # a draft never decays further
    record = skills.get("berlin-rent")
    assert record is not None
    assert record.grade == Grade.DRAFT


def test_disuse_takes_an_explicit_now_and_period(skills: SkillService, clock: FakeClock) -> None:
    make(skills, grade=Grade.CONFIRMED)
    later = clock.now + timedelta(days=11)
    changes = skills.apply_disuse(now=later, after=timedelta(days=10))
    assert changes == [("berlin-rent", Grade.CONFIRMED, Grade.DRAFT)]


def test_a_recent_use_or_outcome_protects_from_disuse(
    skills: SkillService, clock: FakeClock
) -> None:
    make(skills, "used", grade=Grade.STABLE)
    make(skills, "credited", grade=Grade.STABLE)
    clock.advance(days=80)
    skills.record_usage("used")
    skills.record_outcome("credited", success=True)
    clock.advance(days=80)
    assert skills.apply_disuse() == []


@given(
    grade=st.sampled_from([Grade.CONFIRMED, Grade.STABLE]),
    outcomes=st.lists(st.tuples(st.booleans(), st.integers(-400, 0)), max_size=4),
    wait=st.integers(0, 200),
)
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_a_skill_is_not_unused_for_longer_than_it_exists(
    skills: SkillService,
    clock: FakeClock,
    grade: Grade,
    outcomes: list[tuple[bool, int]],
    wait: int,
) -> None:
    """Outcomes credited with times before the skill was made (``at``, the time of an action
    the reflector read late) do not make it look unused since then: it drops for disuse only
    once the period has passed since it was made."""
    name = make(skills, f"made-{uuid.uuid4().hex[:8]}", grade=grade)  # one database for all
    made = clock.now
    for ok, days in outcomes:
        skills.record_outcome(name, success=ok, at=made + timedelta(days=days))
    now_graded = skills.get(name, record_access=False)
    assert now_graded is not None
    changes = [c for c in skills.apply_disuse(now=made + timedelta(days=wait)) if c.name == name]
    proven = now_graded.grade in (Grade.CONFIRMED, Grade.STABLE)
    assert bool(changes) == (proven and wait > DEFAULT_DISUSE_AFTER.days)


def test_drafts_playbooks_and_deprecated_skills_never_decay(
    skills: SkillService, clock: FakeClock
) -> None:
    make(skills, "a-draft")
    make(skills, "a-playbook", grade=Grade.PLAYBOOK)
    make(skills, "a-deprecated", grade=Grade.CONFIRMED)
    skills.set_grade("a-deprecated", Grade.DEPRECATED, reason="test")
    clock.advance(days=1000)
    assert skills.apply_disuse() == []


def test_set_grade_restarts_the_disuse_period(skills: SkillService, clock: FakeClock) -> None:
    make(skills)
    clock.advance(days=200)
    skills.set_grade("berlin-rent", Grade.STABLE, reason="imported from a trusted source")
    clock.advance(days=89)
    assert skills.apply_disuse() == []
    clock.advance(days=2)
    assert skills.apply_disuse() == [("berlin-rent", Grade.STABLE, Grade.CONFIRMED)]


def test_disuse_refuses_a_non_positive_period(skills: SkillService) -> None:
    with pytest.raises(InvalidInputError):
        skills.apply_disuse(after=timedelta(0))


# --- listing ------------------------------------------------------------------------------------


def test_list_ranks_by_score_and_leaves_out_deprecated_skills(
    skills: SkillService, clock: FakeClock
) -> None:
    for name in ("never-used", "used-long-ago", "used-today", "dead"):
        make(skills, name)
    skills.record_usage("used-long-ago")
    skills.set_grade("dead", Grade.DEPRECATED, reason="test")
    clock.advance(days=120)
    skills.record_usage("used-today")
    assert [r.name for r in skills.list()] == ["used-today", "never-used", "used-long-ago"]
    assert "dead" in [r.name for r in skills.list(include_deprecated=True)]
    assert [r.name for r in skills.list(limit=1)] == ["used-today"]


def test_list_filters_by_kind(skills: SkillService) -> None:
    make(skills, "do-this")
    make(skills, "avoid-that", kind="negative")
    assert [r.name for r in skills.list(kind=SkillKind.NEGATIVE)] == ["avoid-that"]
    assert [r.name for r in skills.list(kind="positive")] == ["do-this"]


def test_list_callable_only_leaves_out_playbooks(skills: SkillService) -> None:
    make(skills, "a-draft")
    make(skills, "a-playbook", grade=Grade.PLAYBOOK)
    assert [r.name for r in skills.list(callable_only=True)] == ["a-draft"]


# --- updating and deleting ----------------------------------------------------------------------


def test_update_changes_text_and_keeps_counters_grade_and_kind(skills: SkillService) -> None:
    make(skills, source="clawhub:rent@1.0", when_to_use="renting")
    outcomes(skills, "berlin-rent", "SS")
    record = skills.update(
        "berlin-rent", description="Compare rents in Berlin", trigger_keywords="miete"
    )
    assert record.description == "Compare rents in Berlin"
    assert record.trigger_keywords == ["miete"]
    assert (record.grade, record.success_count) == (Grade.CONFIRMED, 2)
    assert record.kind == SkillKind.POSITIVE
    assert record.source == "clawhub:rent@1.0"
    assert record.when_to_use == "renting"


def test_update_flips_kind_only_when_asked(skills: SkillService) -> None:
    make(skills)
    assert skills.update("berlin-rent", action_template="new").kind == SkillKind.POSITIVE
    assert skills.update("berlin-rent", kind="negative").kind == SkillKind.NEGATIVE


def test_update_clears_source_with_none_and_when_to_use_with_blank(skills: SkillService) -> None:
    make(skills, source="github:x", when_to_use="sometimes")
    record = skills.update("berlin-rent", source=None, when_to_use="")
    assert (record.source, record.when_to_use) == (None, None)


def test_update_of_an_unknown_skill_is_not_found(skills: SkillService) -> None:
    with pytest.raises(SkillNotFoundError):
        skills.update("nothing-here", description="x")


def test_delete_removes_the_skill_once(skills: SkillService) -> None:
    make(skills)
    assert skills.delete("berlin-rent") is True
    assert skills.get("berlin-rent") is None
    assert skills.delete("berlin-rent") is False


# --- bad input: a typed error and nothing written --------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        {"name": "Berlin-Rent"},
        {"name": "-leading-dash"},
        {"name": "has space"},
        {"name": "trailing-newline\n"},
        {"name": "x" * 81},
        {"name": ""},
        {"name": 42},
        {"description": "   "},
        {"description": None},
        {"action_template": ""},
        {"trigger_keywords": 3},
        {"trigger_keywords": ["ok", 7]},
        {"trigger_keywords": None},
        {"kind": "neutral"},
        {"grade": "excellent"},
        {"grade": Grade.DEPRECATED},
        {"grade": 0.9},
        {"source": 5},
        {"when_to_use": ["a"]},
    ],
)
def test_bad_input_to_create_is_refused_and_nothing_is_written(
    skills: SkillService, session: Session, bad: dict[str, Any]
) -> None:
    args: dict[str, Any] = {
        "name": "good-name",
        "description": "d",
        "trigger_keywords": "k",
        "action_template": "t",
    }
    args.update(bad)
    with pytest.raises(InvalidInputError):
        skills.create(**args)
    assert skill_count(session) == 0


def test_a_duplicate_name_is_a_conflict_and_nothing_is_written(
    skills: SkillService, session: Session
) -> None:
    make(skills)
    with pytest.raises(ConflictError):
        make(skills, description="another")
    assert skill_count(session) == 1
    record = skills.get("berlin-rent")
    assert record is not None
    assert record.description == "Compare Berlin rents"


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.record_usage("nothing-here"),
        lambda s: s.record_outcome("nothing-here", success=True),
        lambda s: s.set_grade("nothing-here", Grade.DRAFT, reason="x"),
        lambda s: s.is_callable("nothing-here"),
    ],
)
def test_an_unknown_skill_is_not_found(skills: SkillService, call: Any) -> None:
    with pytest.raises(SkillNotFoundError):
        call(skills)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.record_outcome("berlin-rent", success=1),
        lambda s: s.record_outcome("berlin-rent", success="yes"),
        lambda s: s.record_outcome("berlin-rent", success=True, at=0.9),
        lambda s: s.set_grade("berlin-rent", "excellent", reason="x"),
        lambda s: s.set_grade("berlin-rent", Grade.STABLE, reason="  "),
        lambda s: s.update("berlin-rent", description=""),
        lambda s: s.update("berlin-rent", kind="neutral"),
        lambda s: s.update("berlin-rent", trigger_keywords=[1]),
        lambda s: s.list(limit=0),
        lambda s: s.list(limit=True),
        lambda s: s.get(None),
    ],
)
def test_wrongly_typed_arguments_are_refused_and_nothing_changes(
    skills: SkillService, call: Any
) -> None:
    before = skills.get(make(skills), record_access=False)
    with pytest.raises(InvalidInputError):
        call(skills)
    assert skills.get("berlin-rent", record_access=False) == before
