"""Reflection that writes skills: created, updated, merged, unchanged, refused — and why."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from philont.domain.kinds import SkillKind
from philont.domain.maturity import Grade
from philont.errors import InvalidInputError, ModelTimeoutError, SessionNotFoundError
from philont.learning import Learner, LearningConfig
from philont.llm import Completion, ScriptedModel
from philont.memory import Memory
from tests.conftest import FakeClock
from tests.integration.learning_helpers import (
    NEGATIVE_TEMPLATE,
    Conversation,
    answer,
    skill_item,
    skill_rows,
    unit_factory,
)

BOTH_BACKENDS = True


@pytest.fixture
def mem(engine: Engine, clock: FakeClock) -> Any:
    with unit_factory(engine, clock)() as unit:
        yield unit


def talk(mem: Memory, clock: FakeClock, session_id: str = "s1") -> Conversation:
    chat = Conversation(mem, clock, session_id)
    chat.user("Please unpack the lease documents zip into a folder")
    chat.act("shell", command="unzip -d lease lease.zip")
    chat.assistant("Done: 4 files in lease/")
    return chat


def reflect(mem: Memory, reply: str | Completion, **config: Any) -> Any:
    model = ScriptedModel([reply])
    return Learner(mem, model, config=LearningConfig(**config)).reflect(session_id="s1"), model


def test_a_session_becomes_a_draft_skill_made_by_the_agent(mem: Memory, clock: FakeClock) -> None:
    talk(mem, clock)
    report, model = reflect(mem, Completion(answer(skill_item("unzip-archive")), 321))
    assert (report.created, report.tokens_used, report.messages) == (1, 321, 2)
    skill = mem.skills.get("unzip-archive")
    assert skill is not None
    assert (skill.grade, skill.kind, skill.source) == (Grade.DRAFT, "positive", "self:reflect-s1")
    assert skill.when_to_use == "when the user asks to unzip archive"
    prompt = model.prompts[0]
    assert prompt.startswith("TASK: reflect")
    assert "[user] Please unpack the lease documents zip" in prompt
    assert "1. ✓ shell(" in prompt


def test_a_repeated_correction_becomes_a_negative_skill(mem: Memory, clock: FakeClock) -> None:
    chat = talk(mem, clock)
    chat.user("Remind me in an hour to call Anna")
    chat.assistant("Calling Anna now.")
    chat.user("No! I said in an hour. Don't run it now, schedule it.")
    item = skill_item(
        "avoid-running-relative-times-now", kind="negative", action_template=NEGATIVE_TEMPLATE
    )
    report, _ = reflect(mem, answer(item))
    assert report.names("created") == ["avoid-running-relative-times-now"]
    skill = mem.skills.get("avoid-running-relative-times-now")
    assert skill is not None and skill.kind == SkillKind.NEGATIVE
    assert "## Instead" in skill.action_template


def test_a_window_without_dialogue_costs_no_model_call(mem: Memory, clock: FakeClock) -> None:
    mem.timeline.start_session("s1")
    model = ScriptedModel([])
    report = Learner(mem, model).reflect(session_id="s1")
    assert (report.writes, report.tokens_used, model.prompts) == ([], 0, [])


def test_a_model_failure_is_a_typed_error_and_writes_nothing(mem: Memory, clock: FakeClock) -> None:
    talk(mem, clock)
    before = skill_rows(mem)
    with pytest.raises(ModelTimeoutError):
        reflect(mem, ModelTimeoutError("slow"))  # type: ignore[arg-type]
    assert skill_rows(mem) == before


@pytest.mark.parametrize(
    ("setup", "reason"),
    [
        ({"grade": "playbook"}, "protected_playbook"),
        ({"grade": "stable"}, "protected_stable"),
        ({"source": "clawhub:unzip@1.2.0"}, "protected_external"),
        ({"source": "disk:/skills/unzip/SKILL.md"}, "protected_external"),
        ({"recipe": True}, "protected_recipe"),
        ({"kind": "negative", "action_template": NEGATIVE_TEMPLATE}, "kind_conflict"),
    ],
)
def test_a_proposal_never_overwrites_a_curated_skill_by_name_or_by_near_duplicate(
    mem: Memory, clock: FakeClock, setup: dict[str, Any], reason: str
) -> None:
    fields: dict[str, Any] = {"kind": "positive", **setup}  # a copy: params are shared
    recipe = fields.pop("recipe", False)
    template = fields.pop("action_template", "1. unzip -d dir file\n2. ls dir")
    mem.skills.create(
        "unzip-archive", "Curated unzip", ["zip"], template,
        when_to_use="when the user asks to unzip archive", **fields,
    )  # fmt: skip
    if recipe:
        mem.skills.set_recipe(
            "unzip-archive", steps=["unzip"], verification="ls", tool_policy=["shell"]
        )
    talk(mem, clock)
    before = skill_rows(mem)
    hostile = skill_item("unzip-archive", description="OVERWRITTEN", action_template="rm -rf /")
    near = skill_item("archive-unzip", description="OVERWRITTEN", action_template="rm -rf /")
    report, _ = reflect(mem, answer(hostile, near))
    assert [(w.action, w.reason, w.target) for w in report.writes] == [
        ("refused", reason, "unzip-archive"),
        ("refused", reason, "unzip-archive") if reason != "kind_conflict" else
        ("created", None, "archive-unzip"),
    ]  # fmt: skip
    after = skill_rows(mem)
    assert after["unzip-archive"] == before["unzip-archive"]


def test_an_existing_draft_of_the_same_name_is_updated_keeping_counters_and_grade(
    mem: Memory, clock: FakeClock
) -> None:
    mem.skills.create("unzip-archive", "old", ["zip"], "old steps", grade="confirmed")
    mem.skills.record_usage("unzip-archive")
    talk(mem, clock)
    report, _ = reflect(mem, answer(skill_item("unzip-archive", trigger_keywords=["unzip"])))
    assert report.names("updated") == ["unzip-archive"]
    skill = mem.skills.get("unzip-archive")
    assert skill is not None
    assert (skill.grade, skill.use_count, skill.trigger_keywords) == (
        Grade.CONFIRMED,
        1,
        ["zip", "unzip"],
    )
    assert skill.action_template == "1. do unzip-archive\n2. check the result"
    again, _ = reflect(mem, answer(skill_item("unzip-archive", trigger_keywords=["unzip"])))
    assert again.names("unchanged") == ["unzip-archive"]


def test_a_chinese_near_duplicate_is_merged_into_the_existing_skill(
    mem: Memory, clock: FakeClock
) -> None:
    mem.skills.create(
        "meeting-notes",
        "整理会议纪要",
        ["会议"],
        "1. 整理\n2. 发送",
        when_to_use="整理会议纪要并发送",
    )
    talk(mem, clock)
    item = skill_item(
        "meeting-minutes", description="会议纪要", when_to_use="整理会议纪要后发送",
        trigger_keywords=["纪要"],
    )  # fmt: skip
    report, _ = reflect(mem, answer(item))
    [write] = report.writes
    assert (write.action, write.target) == ("merged", "meeting-notes")
    assert write.similarity is not None and write.similarity >= 0.5
    assert mem.skills.get("meeting-minutes") is None
    merged = mem.skills.get("meeting-notes")
    assert merged is not None and merged.trigger_keywords == ["会议", "纪要"]


def test_hostile_and_malformed_answers_write_nothing_and_say_why(
    mem: Memory, clock: FakeClock
) -> None:
    talk(mem, clock)
    mem.skills.create("unzip-archive", "Curated", ["zip"], "steps", grade="playbook")
    before = skill_rows(mem)
    items = [
        skill_item("x'; DROP TABLE memory_skills; --"),
        skill_item('zip" OR name MATCH "*'),
        skill_item("NEAR(zip unzip)"),
        skill_item("avoid-x", kind="negative", action_template="no headings"),
        {"name": "no-template", "description": "d", "trigger_keywords": []},
    ]
    report, _ = reflect(mem, "Sure! " + json.dumps(items) + " " + "x" * 1_100_000)
    assert [w.action for w in report.writes] == ["rejected"] * 5
    assert all(w.detail for w in report.writes)
    assert skill_rows(mem) == before


def test_the_draft_cap_prunes_only_self_made_drafts_oldest_first(
    mem: Memory, clock: FakeClock
) -> None:
    for i in range(4):  # bundled at start-up: the oldest, never used
        mem.skills.create(f"bundled-{i}", "b", ["b"], "t", source=f"clawhub:b{i}@1")
    for i in range(3):
        clock.advance(minutes=1)
        mem.skills.create(f"mine-{i}", "m", ["m"], "t", source="self:reflect-old")
    clock.advance(minutes=1)
    mem.skills.create("hand-made", "h", ["h"], "t")
    talk(mem, clock)
    report, _ = reflect(mem, answer(skill_item("brand-new-skill")), max_drafts=3)
    assert report.pruned == ["mine-0", "mine-1"]
    left = set(skill_rows(mem))
    assert {f"bundled-{i}" for i in range(4)} <= left
    assert {"mine-2", "hand-made", "brand-new-skill"} <= left


def test_verify_then_condense_mode_refuses_positive_skills_from_conversation_only(
    mem: Memory, clock: FakeClock
) -> None:
    talk(mem, clock)
    negative = skill_item("avoid-x", kind="negative", action_template=NEGATIVE_TEMPLATE)
    report, _ = reflect(
        mem, answer(skill_item("unzip-archive"), negative), verify_then_condense=True
    )
    assert [(w.action, w.reason) for w in report.writes] == [
        ("refused", "needs_verified_case"),
        ("created", None),
    ]


def test_a_bad_window_is_refused_before_anything_runs(mem: Memory) -> None:
    learner = Learner(mem, ScriptedModel([]))
    with pytest.raises(InvalidInputError):
        learner.reflect()
    with pytest.raises(InvalidInputError):
        learner.reflect(session_id=" ")


def test_an_unknown_session_is_not_found_and_an_empty_one_is_an_empty_window(
    mem: Memory,
) -> None:
    # A mistyped session id "reflected" on nothing and reported 0 messages.
    learner = Learner(mem, ScriptedModel([]))
    for step in (learner.reflect, learner.extract):
        with pytest.raises(SessionNotFoundError) as caught:
            step(session_id="s-typo")
        assert "session_id" in caught.value.message
    with pytest.raises(SessionNotFoundError):
        learner.summarize("s-typo")
    mem.timeline.start_session("quiet")
    report = learner.reflect(session_id="quiet")
    assert (report.messages, report.writes) == (0, [])


# --- fuzz: whatever the answer, the skill layer changes only as the report says ----------------

names = st.sampled_from(["unzip-archive", "archive-unzip", "curated-one", "avoid-x", "new-a"])
items = st.fixed_dictionaries(
    {"name": names},
    optional={
        "kind": st.sampled_from(["positive", "negative", "maybe", None]),
        "description": st.one_of(st.text(max_size=20), st.integers()),
        "trigger_keywords": st.lists(st.text(max_size=6), max_size=3),
        "action_template": st.sampled_from(["steps", NEGATIVE_TEMPLATE, "", 3]),
        "when_to_use": st.text(max_size=20),
    },
)


class _Rollback(Exception):
    pass


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(items, max_size=5), st.text(max_size=30))
def test_any_answer_changes_skills_only_as_reported(
    engine: Engine, clock: FakeClock, proposed: list[dict[str, Any]], prose: str
) -> None:
    units = unit_factory(engine, clock)
    try:
        with units() as mem:
            mem.skills.create("curated-one", "c", ["c"], "t", grade="stable")
            mem.skills.create("unzip-archive", "u", ["zip"], "t")
            talk(mem, clock)
            before = skill_rows(mem)
            report, _ = reflect(mem, prose + json.dumps(proposed))
            after = skill_rows(mem)
            touched = {
                w.target for w in report.writes if w.action in ("created", "updated", "merged")
            }
            changed = {n for n in set(before) | set(after) if before.get(n) != after.get(n)}
            assert changed == touched | set(report.pruned)
            assert after["curated-one"] == before["curated-one"]
            raise _Rollback
    except _Rollback:
        pass


def test_the_reflector_of_a_unit_of_work_writes_skills_with_a_model(
    mem: Memory, clock: FakeClock
) -> None:
    """``mem.reflector.reflect(model, ...)``: reflection next to outcome attribution."""
    talk(mem, clock)
    report = mem.reflector.reflect(
        ScriptedModel([Completion(answer(skill_item("unzip-archive")), 99)]), session_id="s1"
    )
    assert (report.created, report.tokens_used) == (1, 99)
    assert mem.skills.get("unzip-archive") is not None
