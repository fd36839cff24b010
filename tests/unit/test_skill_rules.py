"""Skill rules of reflection: CJK-aware similarity, create/update/merge/refuse, the draft cap."""

from __future__ import annotations

import unicodedata
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.kinds import SkillKind
from philont.domain.maturity import Grade
from philont.domain.similarity import SkillText, near_duplicates, similarity, tokens
from philont.domain.skill_rules import (
    DraftSkill,
    KnownSkill,
    Refusal,
    SkillContent,
    WriteAction,
    decide_write,
    drafts_to_prune,
    is_external_source,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)

# --- tokens and similarity ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("unzip-archive", {"unzip", "archive"}),
        ("Unzip the ZIP file", {"unzip", "the", "zip", "file"}),
        ("a b c", set()),  # single latin letters carry nothing
        ("会议纪要", {"会议", "议纪", "纪要"}),  # bigrams, not single characters
        ("整理 会议纪要", {"整理", "会议", "议纪", "纪要"}),
        ("查", {"查"}),  # a lone CJK character is a token
        ("orders-注文する", {"orders", "注文", "文す", "する"}),
        ("회의록 정리", {"회의", "의록", "정리"}),
        ("café_menu", {"café", "menu"}),
        ("", set()),
    ],
)
def test_tokens_count_cjk_by_bigrams_and_words_by_runs(text: str, expected: set[str]) -> None:
    assert tokens(text) == expected


@pytest.mark.parametrize(
    ("a", "b", "low", "high"),
    [
        # Philont scored Chinese names 0 (Q-K5); reordered CJK words share most bigrams
        (SkillText("整理会议纪要"), SkillText("会议纪要整理"), 0.6, 0.7),
        (SkillText("整理会议纪要"), SkillText("预订机票"), 0.0, 0.0),
        (SkillText("unzip-archive"), SkillText("unzip-archive"), 1.0, 1.0),
        # the when-to-use counts: same name words, different situations
        (
            SkillText("summarize-report", "when the user sends a PDF report"),
            SkillText("summarize-report", "在用户发送会议录音时"),
            0.1,
            0.3,
        ),
        # no when-to-use: the description stands in for it
        (
            SkillText("book-flight", None, "book a flight ticket online"),
            SkillText("flight-booking", None, "book a flight ticket online"),
            0.7,
            0.9,
        ),
    ],
)
def test_similarity_compares_names_and_when_to_use(
    a: SkillText, b: SkillText, low: float, high: float
) -> None:
    assert low <= similarity(a, b) <= high
    assert similarity(a, b) == similarity(b, a)


def test_near_duplicates_are_sorted_best_first_then_by_name_and_cut() -> None:
    pool = [SkillText(n) for n in ("zip-files-fast", "unzip-files", "files-unzip", "bake-bread")]
    hits = near_duplicates(SkillText("unzip-files"), pool, threshold=0.25)
    assert [(h.name, s) for h, s in hits] == [
        ("files-unzip", 1.0),
        ("unzip-files", 1.0),
        ("zip-files-fast", 0.25),
    ]
    assert near_duplicates(SkillText("unzip-files"), pool, threshold=0.25, limit=1) == hits[:1]
    assert near_duplicates(SkillText("---"), pool) == []


@given(st.text(max_size=30), st.text(max_size=30))
def test_similarity_is_a_symmetric_fraction(a: str, b: str) -> None:
    score = similarity(SkillText(a), SkillText(b))
    assert 0.0 <= score <= 1.0
    assert score == similarity(SkillText(b), SkillText(a))
    if tokens(a):
        assert similarity(SkillText(a), SkillText(a)) == 1.0


@given(st.text(st.characters(codec="utf-8"), max_size=30))
def test_a_text_and_its_decomposed_form_have_the_same_tokens(text: str) -> None:
    """A skill written decomposed (NFD, as macOS writes) is the same text: ``café`` with
    ``e`` + U+0301 was ``caf`` and a dropped ``e``, ``회의록`` in jamo one Latin-like run."""
    assert tokens(unicodedata.normalize("NFD", text)) == tokens(text)


@pytest.mark.parametrize("text", ["café menu", "회의록 정리", "Việt nam", "ガギグ"])
def test_decomposed_names_are_near_duplicates(text: str) -> None:
    decomposed = unicodedata.normalize("NFD", text)
    assert similarity(SkillText(decomposed), SkillText(text)) == 1.0


# --- create / update / merge / refuse -------------------------------------------------------

CONTENT = SkillContent("Unpack a zip archive", ("zip",), "1. unzip\n2. list", None)


def known(
    name: str,
    *,
    grade: Grade = Grade.DRAFT,
    kind: SkillKind = SkillKind.POSITIVE,
    source: str | None = None,
    has_recipe: bool = False,
    content: SkillContent = CONTENT,
) -> KnownSkill:
    return KnownSkill(name, kind, grade, source, has_recipe, content, T0)


NEW = SkillContent("Unpack zip files into a folder", ("unzip",), "1. unzip -d dir\n2. ls dir")

U, V = "unzip-archive", "archive-unzip"
POS, NEG = SkillKind.POSITIVE, SkillKind.NEGATIVE
PLAYBOOK, STABLE, DEPRECATED = Grade.PLAYBOOK, Grade.STABLE, Grade.DEPRECATED
R = Refusal
CREATE, UPDATE, MERGE, REFUSE = (
    WriteAction.CREATE,
    WriteAction.UPDATE,
    WriteAction.MERGE,
    WriteAction.REFUSE,
)

# (case, proposal name, proposal kind, the skill of that name, others, action, refusal, target)
DECISIONS = [
    ("a new name", "bake-bread", POS, None, [], CREATE, None, "bake-bread"),
    ("same name, a draft", U, POS, known(U), [], UPDATE, None, U),
    ("same name, confirmed", U, POS, known(U, grade=Grade.CONFIRMED), [], UPDATE, None, U),
    ("same name, self-made", U, POS, known(U, source="self:reflect-x"), [], UPDATE, None, U),
    ("same name, a playbook", U, POS, known(U, grade=PLAYBOOK), [], REFUSE, R.PLAYBOOK, U),
    ("same name, stable", U, POS, known(U, grade=STABLE), [], REFUSE, R.STABLE, U),
    ("same name, a recipe", U, POS, known(U, has_recipe=True), [], REFUSE, Refusal.RECIPE, U),
    ("same name, from disk", U, POS, known(U, source="disk:x"), [], REFUSE, R.EXTERNAL, U),
    ("same name, a package", U, POS, known(U, source="clawhub:u@1"), [], REFUSE, R.EXTERNAL, U),
    ("same name, deprecated", U, POS, known(U, grade=DEPRECATED), [], REFUSE, R.DEPRECATED, U),
    ("same name, other kind", U, NEG, known(U), [], REFUSE, Refusal.KIND_CONFLICT, U),
    ("near-duplicate draft", V, POS, None, [known(U)], MERGE, None, U),
    ("near-dup. playbook", V, POS, None, [known(U, grade=PLAYBOOK)], REFUSE, R.PLAYBOOK, U),
    ("near-dup. package", V, POS, None, [known(U, source="github:x")], REFUSE, R.EXTERNAL, U),
    ("near-dup. other kind", V, POS, None, [known(U, kind=NEG)], CREATE, None, V),
    ("near-dup. deprecated", V, POS, None, [known(U, grade=DEPRECATED)], CREATE, None, V),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "kind", "same_name", "others", "action", "refusal", "target"),
    [case[1:] for case in DECISIONS],
    ids=[case[0] for case in DECISIONS],
)
def test_a_proposal_is_created_updated_merged_or_refused_by_the_rules(
    name: str,
    kind: SkillKind,
    same_name: KnownSkill | None,
    others: list[KnownSkill],
    action: WriteAction,
    refusal: Refusal | None,
    target: str,
) -> None:
    decision = decide_write(name, kind, NEW, same_name=same_name, others=others)
    assert (decision.action, decision.refusal, decision.target) == (action, refusal, target)
    assert decision.detail
    assert (decision.content is not None) == (
        action in {WriteAction.CREATE, WriteAction.UPDATE, WriteAction.MERGE}
    )


def test_an_update_keeps_the_old_keywords_and_when_to_use_the_model_left_out() -> None:
    old = known("unzip-archive", content=SkillContent("d", ("zip", "archive"), "t", "zip files"))
    decision = decide_write("unzip-archive", SkillKind.POSITIVE, NEW, same_name=old, others=[])
    assert decision.content == SkillContent(
        NEW.description, ("zip", "archive", "unzip"), NEW.action_template, "zip files"
    )


def test_a_proposal_that_changes_nothing_is_unchanged() -> None:
    old = known("unzip-archive")
    same = decide_write("unzip-archive", SkillKind.POSITIVE, CONTENT, same_name=old, others=[])
    assert same.action == WriteAction.UNCHANGED
    merged = decide_write(
        "archive-unzip", SkillKind.POSITIVE, CONTENT, same_name=None, others=[old]
    )
    assert (merged.action, merged.target) == (WriteAction.UNCHANGED, "unzip-archive")


def test_a_chinese_near_duplicate_is_merged_where_philont_created_a_second_skill() -> None:
    old = known("meeting-notes", content=SkillContent("d", (), "t", "整理会议纪要并发送"))
    new = SkillContent("d2", (), "t2", "整理会议纪要后发送")
    decision = decide_write(
        "meeting-minutes", SkillKind.POSITIVE, new, same_name=None, others=[old]
    )
    assert decision.action == WriteAction.MERGE
    assert decision.similarity is not None and decision.similarity >= 0.5


@pytest.mark.parametrize(
    ("source", "external"),
    [
        (None, False),
        ("", False),
        ("self:reflect-range", False),
        ("self:doc-to-skill:x", False),
        ("clawhub:unzip@1.0", True),
        ("github:a/b", True),
        ("disk:/skills/x", True),
        ("plan-failure:123", True),
    ],
)
def test_external_sources_are_the_set_ones_not_made_by_the_agent(
    source: str | None, external: bool
) -> None:
    assert is_external_source(source) is external


# --- the draft cap ------------------------------------------------------------------------------


def draft(
    name: str, *, score: float = 0.0347, age_days: int = 0, source: str | None = None,
    recipe: bool = False,
) -> DraftSkill:  # fmt: skip
    return DraftSkill(name, name, source, recipe, score, T0 + timedelta(days=100 - age_days))


def test_the_cap_never_deletes_external_drafts_even_when_they_are_the_oldest_and_unused() -> None:
    bundled = [draft(f"bundled-{i}", age_days=50 + i, source=f"clawhub:b{i}@1") for i in range(5)]
    mine = [draft(f"mine-{i}", age_days=i) for i in range(4)]
    pruned = drafts_to_prune([*bundled, *mine], cap=2)
    assert [d.name for d in pruned] == ["mine-3", "mine-2"]  # oldest of mine, not the bundled


def test_the_cap_prunes_lowest_score_first_and_breaks_ties_by_age_then_id() -> None:
    drafts = [
        draft("b-young", age_days=1),
        draft("a-old", age_days=9),
        draft("c-old", age_days=9),
        draft("used", score=0.5, age_days=30),
        draft("with-recipe", age_days=40, recipe=True),
    ]
    assert [d.name for d in drafts_to_prune(drafts, cap=1)] == ["a-old", "c-old", "b-young"]
    assert [d.name for d in drafts_to_prune(list(reversed(drafts)), cap=1)] == [
        "a-old",
        "c-old",
        "b-young",
    ]
    assert drafts_to_prune(drafts, cap=4) == []
    assert drafts_to_prune(drafts, cap=-1) == []


@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, "self:r", "clawhub:x@1", "github:y"]),
            st.booleans(),
            st.floats(min_value=0, max_value=2),
            st.integers(min_value=0, max_value=5),
        ),
        max_size=25,
    ),
    st.integers(min_value=0, max_value=10),
)
def test_after_pruning_at_most_cap_prunable_drafts_remain_and_nothing_else_moves(
    specs: list[tuple[str | None, bool, float, int]], cap: int
) -> None:
    drafts = [
        draft(f"d{i}", source=s, recipe=r, score=sc, age_days=a)
        for i, (s, r, sc, a) in enumerate(specs)
    ]
    pruned = drafts_to_prune(drafts, cap)
    assert all(d.prunable for d in pruned)
    left = [d for d in drafts if d not in pruned]
    assert sum(d.prunable for d in left) == min(cap, sum(d.prunable for d in drafts))
    if pruned:
        worst_kept = min((d.score, d.created_at, d.id) for d in left if d.prunable) if cap else None
        best_pruned = max((d.score, d.created_at, d.id) for d in pruned)
        assert worst_kept is None or best_pruned < worst_kept
