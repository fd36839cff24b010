"""Skill recipes: storage, callability, and revisions that keep their own outcome counts."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from philont.db.models import SkillRecipe, SkillRevision
from philont.domain.maturity import Grade
from philont.errors import (
    ConflictError,
    InvalidInputError,
    SkillNotFoundError,
    SkillNotUsableError,
)
from philont.services.skills import RecipeNotFoundError, SkillService
from tests.conftest import FakeClock
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

STEPS = ["open the listings", "compute rent per m²"]
VERIFY = "the table has one row per listing"
POLICY = ["web_fetch: read-only", "no purchases"]


@pytest.fixture
def skills(session: Session, clock: FakeClock) -> SkillService:
    service = SkillService(joined(session, clock))
    service.create("berlin-rent", "Compare Berlin rents", "rent", "v1 template")
    return service


def record(skills: SkillService, pattern: str) -> None:
    for letter in pattern:
        skills.record_outcome("berlin-rent", success=letter == "S")


def rows(session: Session, model: type[Any]) -> int:
    return int(session.scalar(select(func.count()).select_from(model)) or 0)


def test_a_first_recipe_is_revision_one_and_makes_a_complete_skill_callable(
    skills: SkillService,
) -> None:
    record_ = skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    assert record_.recipe is not None
    assert record_.recipe.revision == 1
    assert record_.recipe.steps == STEPS
    assert record_.recipe.verification == VERIFY
    assert record_.recipe.tool_policy == POLICY
    assert record_.callable is True
    assert skills.is_callable("berlin-rent") is True


def test_recipe_lists_are_stored_as_compact_json(skills: SkillService, session: Session) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    steps_json, policy_json = session.execute(
        text("SELECT steps_json, tool_policy_json FROM philont_skill_recipes")
    ).one()
    assert steps_json == '["open the listings","compute rent per m²"]'
    assert policy_json == '["web_fetch: read-only","no purchases"]'


@pytest.mark.parametrize(
    "recipe",
    [
        {"steps": STEPS, "verification": None, "tool_policy": POLICY},
        {"steps": STEPS, "verification": "   ", "tool_policy": POLICY},
        {"steps": STEPS, "verification": VERIFY, "tool_policy": []},
        {"steps": STEPS, "verification": VERIFY, "tool_policy": ["  "]},
        {"steps": [], "verification": VERIFY, "tool_policy": POLICY},
    ],
)
def test_an_incomplete_recipe_makes_the_skill_not_callable(
    skills: SkillService, recipe: dict[str, Any]
) -> None:
    record_ = skills.set_recipe("berlin-rent", **recipe)
    assert record_.recipe is not None
    assert record_.callable is False
    assert skills.is_callable("berlin-rent") is False


def test_use_refuses_a_skill_with_an_incomplete_recipe_and_counts_nothing(
    skills: SkillService,
) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=None, tool_policy=POLICY)
    with pytest.raises(SkillNotUsableError, match="recipe is incomplete"):
        skills.use("berlin-rent")
    record_ = skills.get("berlin-rent", record_access=False)
    assert record_ is not None
    assert record_.use_count == 0


def test_completing_the_recipe_makes_the_skill_usable(skills: SkillService) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=None, tool_policy=POLICY)
    skills.revise_recipe("berlin-rent", verification=VERIFY)
    used = skills.use("berlin-rent")
    assert used.skill.recipe is not None
    assert used.skill.recipe.revision == 2
    assert used.skill.use_count == 1


def test_list_callable_only_leaves_out_skills_with_incomplete_recipes(
    skills: SkillService,
) -> None:
    skills.create("complete", "d", "k", "t")
    skills.set_recipe("complete", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=[])
    skills.create("no-recipe", "d", "k", "t")
    names = {r.name for r in skills.list(callable_only=True)}
    assert names == {"complete", "no-recipe"}


def test_setting_a_recipe_twice_is_a_conflict(skills: SkillService) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    with pytest.raises(ConflictError, match="revise_recipe"):
        skills.set_recipe("berlin-rent", steps=["x"], verification="y", tool_policy=["z"])


def test_revise_recipe_keeps_history_and_per_revision_counts(
    skills: SkillService, clock: FakeClock
) -> None:
    set_at = clock.now
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    record(skills, "FSF")  # revision 1: 1 success out of 3
    clock.advance(days=2)
    revised_at = clock.now
    revised = skills.revise_recipe(
        "berlin-rent", steps=["use the rent index API"], action_template="v2 template"
    )
    assert revised.recipe is not None
    assert revised.recipe.revision == 2
    assert revised.recipe.verification == VERIFY  # untouched fields are kept
    assert revised.action_template == "v2 template"
    assert (revised.success_count, revised.failure_count) == (1, 2)  # totals are kept
    record(skills, "SSS")  # revision 2: 3 out of 3

    first, second = skills.revisions("berlin-rent")
    assert (first.revision, first.success_count, first.failure_count) == (1, 1, 2)
    assert first.success_rate == pytest.approx(1 / 3)
    assert first.steps == STEPS
    assert first.action_template == "v1 template"
    assert (first.created_at, first.replaced_at, first.current) == (set_at, revised_at, False)
    assert (second.revision, second.success_count, second.failure_count) == (2, 3, 0)
    assert second.success_rate == 1.0
    assert second.steps == ["use the rent index API"]
    assert second.action_template == "v2 template"
    assert (second.created_at, second.replaced_at, second.current) == (revised_at, None, True)


def test_every_revision_is_kept_in_order(skills: SkillService, clock: FakeClock) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    for n in range(2, 5):
        clock.advance(hours=1)
        record(skills, "S")
        skills.revise_recipe("berlin-rent", description=f"description {n}")
    history = skills.revisions("berlin-rent")
    assert [r.revision for r in history] == [1, 2, 3, 4]
    assert [r.success_count for r in history] == [1, 1, 1, 0]
    assert [r.description for r in history] == [
        "Compare Berlin rents",
        "description 2",
        "description 3",
        "description 4",
    ]
    assert [r.current for r in history] == [False, False, False, True]


def test_outcomes_before_the_first_recipe_are_kept_as_revision_zero(
    skills: SkillService,
) -> None:
    record(skills, "SF")
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    record(skills, "S")
    before, current = skills.revisions("berlin-rent")
    assert (before.revision, before.success_count, before.failure_count) == (0, 1, 1)
    assert before.steps == []
    assert (current.revision, current.success_count, current.failure_count) == (1, 1, 0)


RUN = st.one_of(
    st.tuples(st.just("run"), st.booleans()),
    st.tuples(st.just("recipe"), st.just(False)),
    st.tuples(st.just("settle"), st.just(False)),
)


@given(plan=st.lists(RUN, max_size=12))
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_each_revision_counts_the_runs_that_fetched_it(
    skills: SkillService, clock: FakeClock, plan: list[tuple[str, bool]]
) -> None:
    """Runs fetch the skill (before it has a recipe, or under one of its revisions), recipes
    are set and revised, and the outcomes of the runs so far are recorded later (as the
    reflector does, with the time of the fetch). Each revision counts exactly the outcomes of
    the runs that fetched it; revision 0, the skill before its first recipe, is kept when one
    of its runs had an outcome, also when that outcome came after the recipe (it was charged
    to revision 1, which that run never read)."""
    name = f"rent-{uuid.uuid4().hex[:8]}"  # the examples share one database
    skills.create(name, "Compare rents", "rent", "v0 template")
    revision = 0
    pending: list[tuple[datetime, bool, int]] = []
    expected: dict[int, list[int]] = {}

    def settle() -> None:
        for fetched_at, ok, fetched in pending:
            skills.record_outcome(name, success=ok, retrieved_at=fetched_at)
            expected.setdefault(fetched, [0, 0])[not ok] += 1
        pending.clear()

    for step, ok in [*plan, ("settle", False)]:
        clock.advance(minutes=1)
        if step == "run":
            pending.append((clock.now, ok, revision))
        elif step == "settle":
            settle()
        elif revision == 0:
            skills.set_recipe(name, steps=STEPS, verification=VERIFY, tool_policy=POLICY)
            revision = 1
        else:
            skills.revise_recipe(name, steps=[f"step of revision {revision + 1}"])
            revision += 1

    kept = {r.revision: [r.success_count, r.failure_count] for r in skills.revisions(name)}
    if revision == 0:
        assert kept == {}
        return
    wanted = {r: expected.get(r, [0, 0]) for r in range(1, revision + 1)}
    if 0 in expected:
        wanted[0] = expected[0]
    assert kept == wanted


def test_a_skill_without_a_recipe_has_no_revisions(skills: SkillService) -> None:
    assert skills.revisions("berlin-rent") == []


def test_revising_a_skill_without_a_recipe_is_refused(
    skills: SkillService, session: Session
) -> None:
    with pytest.raises(RecipeNotFoundError):
        skills.revise_recipe("berlin-rent", steps=["x"])
    assert rows(session, SkillRevision) == 0


def test_revising_with_nothing_to_change_is_refused(skills: SkillService, session: Session) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    with pytest.raises(InvalidInputError):
        skills.revise_recipe("berlin-rent")
    assert rows(session, SkillRevision) == 0


def test_a_stored_grade_anchor_is_not_a_recipe(skills: SkillService, clock: FakeClock) -> None:
    clock.advance(days=1)
    record_ = skills.set_grade("berlin-rent", Grade.CONFIRMED, reason="reviewed")
    assert record_.recipe is None
    assert record_.callable is True
    assert skills.revisions("berlin-rent") == []
    after = skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    assert after.recipe is not None
    assert after.recipe.revision == 1


def test_deleting_a_skill_removes_its_recipe_and_history(
    skills: SkillService, session: Session
) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    skills.revise_recipe("berlin-rent", steps=["x"])
    assert skills.delete("berlin-rent") is True
    assert (rows(session, SkillRecipe), rows(session, SkillRevision)) == (0, 0)


def test_the_database_cascades_a_delete_made_by_other_software(
    skills: SkillService, session: Session
) -> None:
    # Philont schema-31 software deletes skills with plain SQL and foreign_keys = ON.
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    skills.revise_recipe("berlin-rent", steps=["x"])
    session.execute(text("DELETE FROM memory_skills WHERE name = 'berlin-rent'"))
    session.expunge_all()
    assert (rows(session, SkillRecipe), rows(session, SkillRevision)) == (0, 0)


@pytest.mark.parametrize(
    "bad",
    [
        {"steps": "one step as text"},
        {"steps": ["ok", 3]},
        {"steps": None},
        {"verification": 42},
        {"tool_policy": "read-only"},
        {"tool_policy": [None]},
    ],
)
def test_bad_recipe_input_is_refused_and_nothing_is_written(
    skills: SkillService, session: Session, bad: dict[str, Any]
) -> None:
    args: dict[str, Any] = {"steps": STEPS, "verification": VERIFY, "tool_policy": POLICY}
    args.update(bad)
    with pytest.raises(InvalidInputError):
        skills.set_recipe("berlin-rent", **args)
    assert rows(session, SkillRecipe) == 0


def test_bad_revision_input_is_refused_and_nothing_is_written(
    skills: SkillService, session: Session
) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    with pytest.raises(InvalidInputError):
        skills.revise_recipe("berlin-rent", steps=["fine"], description="  ")
    assert rows(session, SkillRevision) == 0
    record_ = skills.get("berlin-rent", record_access=False)
    assert record_ is not None
    assert record_.recipe is not None
    assert (record_.recipe.revision, record_.recipe.steps) == (1, STEPS)


def test_recipes_of_an_unknown_skill_are_not_found(skills: SkillService) -> None:
    with pytest.raises(SkillNotFoundError):
        skills.set_recipe("nothing-here", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    with pytest.raises(SkillNotFoundError):
        skills.revisions("nothing-here")


def test_revision_times_use_the_clock(skills: SkillService, clock: FakeClock) -> None:
    skills.set_recipe("berlin-rent", steps=STEPS, verification=VERIFY, tool_policy=POLICY)
    clock.advance(days=3)
    skills.revise_recipe("berlin-rent", verification="checked twice")
    first, _ = skills.revisions("berlin-rent")
    assert first.replaced_at is not None
    assert first.replaced_at - first.created_at == timedelta(days=3)
