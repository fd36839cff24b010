"""The memory prefix: ranked, capped, deterministic, and honest about what it left out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.orm import Session

from philont.db.queries import skills as skill_rows
from philont.db.queries.skills import RankedSkill
from philont.domain.maturity import Grade
from philont.domain.tokens import default_estimator
from philont.errors import InvalidInputError
from philont.learning.cursor import write_cursor
from philont.services.facts import FactService
from philont.services.notes import NoteService
from philont.services.prefix import (
    KEPT_VALUE_CHARS,
    MemoryPrefix,
    PrefixLimits,
    _fact_line,
    _frame_tokens,
    _is_callable,
    _kept_fact_line,
)
from philont.services.skills import SkillService
from tests.conftest import FakeClock
from tests.support import joined


def _seed(session: Session, clock: FakeClock) -> None:
    facts = FactService(joined(session, clock))
    facts.store("context", "location", "a café in Kreuzberg")
    clock.advance(days=3)
    facts.store("user.home", "city", "Berlin", confidence=0.9)
    facts.store("project.flat", "budget", 1400)
    skills = SkillService(joined(session, clock))
    skills.create("unzip-archive", "Unpack zip files", "zip unzip", "1. unzip -d out file.zip")
    skills.create("old-way", "A broken method", "broken", "do it", grade=Grade.PLAYBOOK)
    skills.create(
        "avoid-sudo-pip", "Never sudo pip install", "pip sudo", "## Trigger\n...", kind="negative"
    )
    NoteService(joined(session, clock)).add("User is vegetarian", importance=0.9)


def test_facts_are_ranked_by_decay_score_and_carry_time_tags(
    session: Session, clock: FakeClock
) -> None:
    _seed(session, clock)
    clock.advance(days=3)
    text = MemoryPrefix(joined(session, clock)).build().text
    assert text.index("user.home.city") < text.index("context.location")
    assert "[state ? → ∞ | recorded" in text


def test_only_callable_skills_are_offered_and_lessons_are_listed_apart(
    session: Session, clock: FakeClock
) -> None:
    _seed(session, clock)
    text = MemoryPrefix(joined(session, clock)).build().text
    assert "- unzip-archive [draft" in text
    assert "old-way" not in text  # a playbook is never callable
    lessons = text.index("## Lessons")
    assert text.index("avoid-sudo-pip") > lessons


def test_the_same_memory_gives_the_same_prefix(session: Session, clock: FakeClock) -> None:
    _seed(session, clock)
    builder = MemoryPrefix(joined(session, clock))
    assert builder.build(environment="Linux").text == builder.build(environment="Linux").text


def test_the_cap_is_respected_and_what_was_left_out_is_counted(
    session: Session, clock: FakeClock
) -> None:
    facts = FactService(joined(session, clock))
    for i in range(60):
        facts.store("user", f"k{i}", "x" * 50)
        clock.advance(minutes=1)
    result = MemoryPrefix(joined(session, clock)).build(limits=PrefixLimits(budget_tokens=400))
    assert result.tokens <= 400
    fact_section = next(s for s in result.sections if s.name == "facts")
    assert fact_section.shown > 0 and fact_section.omitted == 60 - fact_section.shown
    assert f"({fact_section.omitted} more facts not shown)" in result.text


def test_building_the_prefix_does_not_refresh_fact_access(
    session: Session, clock: FakeClock
) -> None:
    facts = FactService(joined(session, clock))
    stored = facts.store("user", "name", "Lena")
    clock.advance(days=10)
    MemoryPrefix(joined(session, clock)).build()
    again = facts.get_by_id(stored.id)
    assert again is not None and again.last_accessed_at == stored.last_accessed_at
    assert clock.now - stored.created_at == timedelta(days=10)


@pytest.mark.parametrize("budget", [True, "2000", 2000.0, None, 0, -5, "frame-1"])
def test_a_budget_that_cannot_hold_the_frame_is_refused_by_name(
    session: Session, clock: FakeClock, budget: object
) -> None:
    frame = _frame_tokens(default_estimator)
    limits = PrefixLimits(budget_tokens=frame - 1 if budget == "frame-1" else budget)  # type: ignore[arg-type]
    with pytest.raises(
        InvalidInputError, match=rf"^limits: budget_tokens must be an integer >= {frame}"
    ) as caught:
        MemoryPrefix(joined(session, clock)).build(limits=limits)
    assert caught.value.details["argument"] == "limits"


def test_the_least_budget_gives_the_frame_alone(session: Session, clock: FakeClock) -> None:
    _seed(session, clock)
    frame = _frame_tokens(default_estimator)
    result = MemoryPrefix(joined(session, clock)).build(limits=PrefixLimits(budget_tokens=frame))
    assert result.text == "[Memory — what I already know; no need to ask again]\n[End of memory]"
    assert result.tokens == frame
    assert all(s.shown == 0 and s.omitted > 0 for s in result.sections)


def test_lessons_do_not_take_the_places_of_skills(session: Session, clock: FakeClock) -> None:
    # The skills section shows the best `limits.skills` callable positive skills (spec §16:
    # negatives are removed before the first 15 are taken), however well lessons rank.
    skills = SkillService(joined(session, clock))
    for i in range(3):
        skills.create(f"lesson-{i}", "Do not", "x", "## Trigger\n...", kind="negative")
        skills.create(f"skill-{i}", "Does", "y", "1. do it")
    for i in range(3):
        for _ in range(5):
            skills.record_usage(f"lesson-{i}")
    result = MemoryPrefix(joined(session, clock)).build(limits=PrefixLimits(skills=2))
    section = next(s for s in result.sections if s.name == "skills")
    assert (section.shown, section.omitted) == (2, 0)
    assert result.text.count("\n- skill-") == 2


@pytest.mark.parametrize("later_days", [1, 45, 400, 4000])
def test_a_prefix_at_a_given_now_does_not_depend_on_the_clock(
    session: Session, clock: FakeClock, later_days: int
) -> None:
    # Skills were ranked at the clock's time, not at `now`: a recently used skill sank below a
    # never-used one in a prefix asked for at the time of that use, once the clock moved on.
    skills = SkillService(joined(session, clock))
    skills.create("never-used", "Never used", "a", "1. a")
    skills.create("just-used", "Used right now", "b", "1. b")
    skills.record_usage("just-used")
    at = clock.now
    expected = MemoryPrefix(joined(session, clock)).build(now=at).text
    assert expected.index("just-used") < expected.index("never-used")
    clock.advance(days=later_days)
    assert MemoryPrefix(joined(session, clock)).build(now=at).text == expected


@given(blank=st.text(alphabet=" \t\n\r\u3000\u00a0\u2028", max_size=6))
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_blank_environment_or_plan_adds_no_section(
    session: Session, clock: FakeClock, blank: str
) -> None:
    # "   " gave "## Runtime environment" over an empty line.
    builder = MemoryPrefix(joined(session, clock))
    empty = builder.build()
    result = builder.build(environment=blank, plan=blank)
    assert result.text == empty.text
    assert [s.name for s in result.sections] == [s.name for s in empty.sections]


@given(
    namespaces=st.lists(
        st.sampled_from(["system", "system.loop", "systems", "user", "user.system", "project.x"]),
        min_size=1,
        max_size=6,
        unique=True,
    ),
    pinned=st.booleans(),
    cursor=st.booleans(),
)
@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_the_runtimes_own_state_is_no_fact_of_the_prefix(
    session: Session, clock: FakeClock, namespaces: list[str], pinned: bool, cursor: bool
) -> None:
    """``system`` and below hold the runtime's own state (the consolidator's cursor, pinned:
    it outranked every fact on every turn); the prefix shows every other fact, ``systems``
    and ``user.system`` too, and counts only those."""
    nested = session.begin_nested()  # the examples share one session
    try:
        mem = joined(session, clock)
        for ns in namespaces:
            rec = mem.facts.store(ns, "k", "v")
            if pinned:
                mem.facts.pin(rec.id)
        if cursor:
            write_cursor(mem, 1_781_409_600_000)
        result = MemoryPrefix(joined(session, clock)).build()
        shown = {line[2:].split(" = ")[0] for line in result.text.splitlines() if " = " in line}
        wanted = {f"{ns}.k" for ns in namespaces if ns.partition(".")[0] != "system"}
        assert shown == wanted
        counted = sum(s.shown + s.omitted for s in result.sections if s.name == "facts")
        assert counted == len(wanted)
    finally:
        nested.rollback()


# --- fact lines are kept for the values they were formatted from ---------------------------


def test_a_fact_line_follows_every_write_in_place_by_another_connection(tmp_path: Path) -> None:
    # The strongest case for a kept line: another connection rewrites a fact's value and
    # times in place (same namespace and key, same row): the next prefix shows the new values.
    from philont.db.engine import create_engine
    from philont.store import Store

    now = datetime(2026, 6, 14, 4, 0, tzinfo=UTC)
    path = tmp_path / "m.sqlite"
    ours = Store.open(path, clock=lambda: now)
    other = Store(create_engine(path), clock=lambda: now)
    try:
        with ours.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            first = mem.prefix.build().text
        assert 'user.city = "Berlin" [state ? → ∞ | recorded 2026-06-14T04:00:00.000Z]' in first
        with other.begin() as mem:
            mem.session.execute(
                text(
                    "UPDATE memory_facts SET value_json = :v, created_at = created_at - 86400000"
                    " WHERE namespace = 'user' AND key = 'city'"
                ),
                {"v": '"Paris"'},
            )
        with ours.begin(write=False) as mem:
            second = mem.prefix.build().text
        assert 'user.city = "Paris" [state ? → ∞ | recorded 2026-06-13T04:00:00.000Z]' in second
        assert "Berlin" not in second
    finally:
        other.close()
        ours.close()


_ms = st.one_of(st.none(), st.integers(-(10**15), 10**15), st.sampled_from([0, 1, 1000]))
_line_args = st.tuples(
    st.sampled_from(["user", "user.home", "project"]),
    st.sampled_from(["k", "city", "名"]),
    st.sampled_from(['"Berlin"', "1", "true", '{"a": 1}', '"a\\nb"', "1.0", "[1, 2]"]),
    st.sampled_from(["state", "event"]),
    st.one_of(st.integers(0, 10**13), st.sampled_from([1, 1.0, True, 1000, 1000.0])),
    _ms,
    _ms,
    _ms,
)


@given(st.lists(_line_args, min_size=1, max_size=30))
def test_a_kept_fact_line_is_the_line_of_its_values(calls: list[tuple[Any, ...]]) -> None:
    # Kept or not, a line is what formatting its values gives (equal values of another type,
    # 1 and 1.0 and True, are kept apart).
    for args in calls + calls[::-1]:
        assert _kept_fact_line(*args) == _fact_line(*args)


def test_lines_of_long_values_are_formatted_but_not_kept(
    session: Session, clock: FakeClock
) -> None:
    facts = FactService(joined(session, clock))
    facts.store("user", "essay", "x" * KEPT_VALUE_CHARS)  # stored with its quotes: longer
    facts.store("user", "city", "Berlin")
    before = _kept_fact_line.cache_info()
    text = MemoryPrefix(joined(session, clock)).build().text
    after = _kept_fact_line.cache_info()
    assert 'user.city = "Berlin"' in text
    assert f'user.essay = "{"x" * 198}…' in text  # cut to 200 characters
    assert (after.hits + after.misses) - (before.hits + before.misses) == 1  # the city's only


# --- "may this skill be called" is kept for the stored values it was answered from ----------

_recipe_text = st.one_of(
    st.none(),
    st.sampled_from(['["pack"]', '["  "]', "[]", '"pack"', "not json", '["a", 1]', "", "ok"]),
    st.just('["' + "s" * KEPT_VALUE_CHARS + '"]'),  # too long to keep: answered anew
    st.integers(-2, 2),
    st.binary(max_size=4),
)
_skill_rows = st.builds(
    RankedSkill,
    name=st.just("s"),
    description=st.just("d"),
    when_to_use=st.none(),
    kind=st.just("positive"),
    maturity=st.sampled_from(["draft", "confirmed", "stable", "playbook", "deprecated", "x"]),
    use_count=st.just(0),
    success_count=st.just(0),
    failure_count=st.just(0),
    last_used_at=st.none(),
    revision=st.one_of(st.none(), st.integers(-1, 3), st.sampled_from([1.0, True, "1"])),
    steps=_recipe_text,
    verification=_recipe_text,
    tool_policy=_recipe_text,
)


def _answer(row: RankedSkill, check: Any) -> Any:
    try:
        return check(row)
    except Exception as exc:  # a stored value of the wrong kind: the same error either way
        return type(exc)


@given(st.lists(_skill_rows, min_size=1, max_size=30))
def test_a_kept_callable_answer_is_the_answer_of_its_values(rows: list[RankedSkill]) -> None:
    # Kept or not, the answer is what the rule gives for the row's stored values (equal values
    # of another type, 1 and 1.0 and True, are kept apart; a row of unhashable or long values
    # is answered without being kept).
    for row in rows + rows[::-1]:
        assert _answer(row, _is_callable) == _answer(row, skill_rows.is_callable)


def test_a_skill_is_checked_again_when_its_recipe_changes_in_place(
    session: Session, clock: FakeClock
) -> None:
    # The same skill, grade and recipe revision: only the verification text changes (another
    # program's UPDATE). The next prefix reads the new values and no longer offers the skill.
    skills = SkillService(joined(session, clock))
    skills.create("pack-boxes", "Pack the boxes", "pack", "1. pack")
    skills.set_recipe("pack-boxes", steps=["pack"], verification="counted", tool_policy=["tape"])
    assert "- pack-boxes [draft" in MemoryPrefix(joined(session, clock)).build().text
    session.execute(text("UPDATE philont_skill_recipes SET verification = ' '"))
    assert "pack-boxes" not in MemoryPrefix(joined(session, clock)).build().text
