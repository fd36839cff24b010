"""Reading model answers: a table of real-looking answers, then fuzzing — nothing escapes,
nothing half-written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont.domain.kinds import SkillKind
from philont.learning.parse import (
    MAX_ANSWER_CHARS,
    MAX_ITEMS,
    MAX_SUMMARY_CHARS,
    first_object,
    parse_extraction,
    parse_skills,
    parse_summary,
)
from philont.learning.verify import ModelJudge
from philont.learning.window import Run, ToolCall
from philont.llm import ScriptedModel
from philont.schemas.learning import Verdict
from philont.services.skills import NAME_PATTERN

NEGATIVE_TEMPLATE = "## Trigger\nrelative times\n## Avoid\nrunning now\n## Instead\nschedule it"


def skill(name: str = "unzip-archive", **overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": name,
        "description": "Unpack a zip archive",
        "trigger_keywords": ["zip", "unzip"],
        "action_template": "1. unzip -d <dir> <file>\n2. list <dir>",
    }
    item.update(overrides)
    return item


GOOD = json.dumps(
    [skill(), skill("avoid-immediate-run", kind="negative", action_template=NEGATIVE_TEMPLATE)]
)

# (answer, names kept, reasons of the rejected items (substrings), answer-level problem)
CASES: list[tuple[str, str, list[str], list[str], str | None]] = [
    ("plain array", GOOD, ["unzip-archive", "avoid-immediate-run"], [], None),
    ("json fence", f"```json\n{GOOD}\n```", ["unzip-archive", "avoid-immediate-run"], [], None),
    ("bare fence", f"```\n{GOOD}\n```", ["unzip-archive", "avoid-immediate-run"], [], None),
    (
        "prose around, with brackets in the prose",
        f"Here are the skills [2 found]:\n{GOOD}\nLet me know [if] you need more.",
        ["unzip-archive", "avoid-immediate-run"],
        [],
        None,
    ),
    ("empty array", "[]", [], [], None),
    ("no JSON at all", "I could not find any reusable skill.", [], [], "no JSON array"),
    (
        "wrapped in an object",
        json.dumps({"skills": [skill()]}),
        ["unzip-archive"],
        [],
        None,
    ),
    (
        "truncated in the middle of the second item",
        GOOD[: GOOD.index("avoid-immediate-run") + 10],
        ["unzip-archive"],
        [],
        None,
    ),
    (
        "truncated inside an unclosed fence",
        "```json\n" + GOOD[: GOOD.index("avoid-immediate-run") + 10],
        ["unzip-archive"],
        [],
        None,
    ),
    (
        "raw line breaks inside strings",
        '[{"name": "a-b", "description": "x", "trigger_keywords": [], '
        '"action_template": "line 1\nline 2"}]',
        ["a-b"],
        [],
        None,
    ),
    (
        "wrong types",
        json.dumps(
            [
                skill("kw-is-text", trigger_keywords="zip unzip"),
                skill("desc-is-number", description=3),
                skill("odd-kind", kind="maybe"),
                skill("kw-with-number", trigger_keywords=["zip", 7]),
                "just a string",
                skill("fine-one"),
            ]
        ),
        ["fine-one"],
        [
            "trigger_keywords must be a list",
            "description must be a string",
            "kind must be",
            "must all be strings",
            "must be an object",
        ],
        None,
    ),
    (
        "a negative skill without the three headings",
        json.dumps([skill("avoid-x", kind="negative", action_template="just don't")]),
        [],
        ["## Trigger"],
        None,
    ),
    (
        "hostile names: SQL, FTS syntax, case, spaces, too long, leading hyphen",
        json.dumps(
            [
                skill("x'; DROP TABLE memory_skills; --"),
                skill('unzip" OR name MATCH "*'),
                skill("NEAR(zip unzip)"),
                skill("Unzip-Archive"),
                skill("unzip archive"),
                skill("a" * 81),
                skill("-leading"),
                skill("ok-%_name"),
            ]
        ),
        [],
        ["kebab-case"] * 8,
        None,
    ),
    (
        "hostile text that is not storable",
        '[{"name": "nul-inside", "description": "a\\u0000b", "trigger_keywords": [], '
        '"action_template": "t"}, {"name": "surrogate", "description": "\\ud800", '
        '"trigger_keywords": [], "action_template": "t"}]',
        [],
        ["NUL", "surrogate"],
        None,
    ),
    (
        "the same name twice",
        json.dumps([skill(), skill(description="again")]),
        ["unzip-archive"],
        ["twice"],
        None,
    ),
    (  # the item holding it is rejected; the whole answer was unreadable
        "NaN is not JSON",
        '[{"name": "a", "x": NaN}, ' + json.dumps(skill("fine-one")) + "]",
        ["fine-one"],
        ["NaN is not JSON"],
        None,
    ),
    (  # the rest was lost and the answer said to be cut off
        "an item that is no JSON, between two that are",
        "[" + json.dumps(skill("one")) + ", {'name': 'two'}, " + json.dumps(skill("three")) + "]",
        ["one", "three"],
        ["not JSON"],
        None,
    ),
]


@pytest.mark.parametrize(
    ("answer", "kept", "reasons", "problem"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_table_of_model_answers_reads_as_expected(
    answer: str, kept: list[str], reasons: list[str], problem: str | None
) -> None:
    result = parse_skills(answer)
    assert [p.name for p in result.proposals] == kept
    assert len(result.rejected) == len(reasons)
    for rejected, reason in zip(result.rejected, reasons, strict=True):
        assert reason in rejected.reason
    if problem is None:
        assert result.problem is None
    else:
        assert result.problem is not None and problem in result.problem


def test_a_parsed_negative_skill_keeps_its_kind_and_template() -> None:
    result = parse_skills(GOOD)
    negative = result.proposals[1]
    assert negative.kind == SkillKind.NEGATIVE
    assert negative.content.action_template == NEGATIVE_TEMPLATE
    assert result.proposals[0].content.trigger_keywords == ("zip", "unzip")


def test_a_one_megabyte_answer_is_read_only_up_to_the_limit() -> None:
    answer = "x" * MAX_ANSWER_CHARS + GOOD
    result = parse_skills(answer)
    assert result.proposals == ()
    assert result.problem is not None and "first" in result.problem


def test_an_answer_with_too_many_items_keeps_the_first_ones() -> None:
    items = [skill(f"skill-{i}") for i in range(MAX_ITEMS + 7)]
    result = parse_skills(json.dumps(items))
    assert len(result.proposals) == MAX_ITEMS
    assert len(result.rejected) == 7
    assert all("more than" in r.reason for r in result.rejected)


def test_an_answer_of_a_million_brackets_is_a_problem_not_a_crash() -> None:
    for answer in ("[" * MAX_ANSWER_CHARS, "{" * 100_000 + "]", '["' * 300_000):
        result = parse_skills(answer)
        assert result.proposals == ()


def test_extraction_actions_keep_their_arguments_and_refuse_other_actions() -> None:
    answer = json.dumps(
        [
            {"action": "store_fact", "namespace": "user", "key": "city", "value": "Berlin"},
            {"action": "store_note", "content": "prefers short answers", "importance": 0.6},
            {"action": "delete_everything"},
            {"namespace": "user"},
            42,
        ]
    )
    result = parse_extraction(f"Sure:\n```json\n{answer}\n```")
    assert [(a.action, a.arguments) for a in result.actions] == [
        ("store_fact", {"namespace": "user", "key": "city", "value": "Berlin"}),
        ("store_note", {"content": "prefers short answers", "importance": 0.6}),
    ]
    assert [r.index for r in result.rejected] == [2, 3, 4]


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("  The user moved to Berlin.  ", "The user moved to Berlin."),
        ("```\nFenced summary.\n```", "Fenced summary."),
        ("", None),
        ("   ", None),
        ("a\x00b", "ab"),
    ],
)
def test_a_summary_is_the_answer_text_cleaned(answer: str, expected: str | None) -> None:
    assert parse_summary(answer) == expected


def test_a_runaway_summary_is_cut_with_a_marker() -> None:
    summary = parse_summary("word " * 10_000)
    assert summary is not None
    assert len(summary) < MAX_SUMMARY_CHARS + 100
    assert summary.endswith("characters]")


def test_the_first_accepted_object_is_found_among_prose_and_fences() -> None:
    answer = 'Thinking {not json} ... {"other": 1} then ```json\n{"verdict": "verified"}\n```'
    found = first_object(answer, lambda obj: "verdict" in obj)
    assert found == {"verdict": "verified"}
    assert first_object("no object here", lambda obj: True) is None


# --- fuzzing ------------------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
names = st.from_regex(NAME_PATTERN, fullmatch=True)
plain_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=40
).filter(str.strip)
keyword_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="\x00"), max_size=10
)
proposal_items = st.fixed_dictionaries(
    {
        "name": names,
        "description": plain_text,
        "trigger_keywords": st.lists(keyword_text, max_size=4),
        "action_template": plain_text,
    },
    optional={"when_to_use": plain_text, "kind": st.just("positive")},
)
prose = st.text(alphabet=st.characters(exclude_characters="[]{}`"), max_size=60)
skill_keys = ["name", "description", "trigger_keywords", "action_template", "kind", "when_to_use"]
messy_items = st.dictionaries(st.sampled_from(skill_keys), json_values, max_size=6)


def _check_invariants(result: Any) -> None:
    names_seen = [p.name for p in result.proposals]
    assert len(names_seen) == len(set(names_seen))
    assert len(result.proposals) <= MAX_ITEMS
    for proposal in result.proposals:
        assert NAME_PATTERN.fullmatch(proposal.name)
        for text in (proposal.content.description, proposal.content.action_template):
            assert text.strip() and "\x00" not in text
            text.encode("utf-8")
        assert all(isinstance(k, str) and k.strip() == k for k in proposal.content.trigger_keywords)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_any_text_gives_a_result_never_an_exception(answer: str) -> None:
    _check_invariants(parse_skills(answer))
    parse_extraction(answer)
    parse_summary(answer)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(messy_items, json_values), max_size=6), prose, prose)
def test_any_json_shape_gives_a_result_and_only_well_formed_proposals(
    items: list[Any], before: str, after: str
) -> None:
    result = parse_skills(before + json.dumps(items) + after)
    _check_invariants(result)
    if any(isinstance(item, dict) for item in items):
        assert len(result.proposals) + len(result.rejected) == len(items)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(proposal_items, min_size=1, max_size=5, unique_by=lambda item: item["name"]),
    prose,
    prose,
    st.booleans(),
)
def test_well_formed_proposals_survive_any_wrapping(
    items: list[dict[str, Any]], before: str, after: str, fenced: bool
) -> None:
    body = json.dumps(items, ensure_ascii=False)
    answer = f"{before}\n```json\n{body}\n```\n{after}" if fenced else f"{before}{body}{after}"
    result = parse_skills(answer)
    assert [p.name for p in result.proposals] == [item["name"] for item in items]
    assert result.rejected == ()


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(proposal_items, min_size=1, max_size=5, unique_by=lambda item: item["name"]),
    st.data(),
)
def test_a_cut_off_answer_keeps_whole_items_only(items: list[dict[str, Any]], data: Any) -> None:
    body = json.dumps(items, ensure_ascii=False)
    cut = data.draw(st.integers(min_value=0, max_value=len(body)))
    result = parse_skills(body[:cut])
    whole = parse_skills(body).proposals
    assert result.proposals == whole[: len(result.proposals)]
    _check_invariants(result)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["verdict", "reason", "other"]), json_values), prose)
def test_any_judge_answer_gives_a_verdict_never_an_exception(
    answer: dict[str, Any], before: str
) -> None:
    # {"verdict": ["verified"]} was a TypeError (unhashable): the batch failed as a model
    # error, and was asked again without end
    judge = ModelJudge(ScriptedModel(lambda prompt: before + json.dumps(answer)))
    run = Run("goal", (ToolCall(1, "s", "t", {}, "ok", True, datetime.now(UTC)),), "done")
    result = judge.judge(run)
    verdict = answer.get("verdict")
    expected = verdict if isinstance(verdict, str) and verdict in set(Verdict) else "unsure"
    assert result.verdict == Verdict(expected)
    assert isinstance(result.reason, str)


UNREADABLE_ITEMS = st.one_of(
    st.integers(4_301, 6_000).map(lambda n: '{"name": "big", "value": ' + "9" * n + "}"),
    st.sampled_from(["NaN", "Infinity", "-Infinity"]).map(lambda c: '{"value": ' + c + "}"),
    st.integers(1_100, 3_000).map(lambda n: '{"value": ' + "[" * n + "]" * n + "}"),
    st.integers(1_100, 3_000).map(lambda n: "[" * n + "]" * n),
    st.sampled_from(["{'name': 'x'}", '{"a": 1,}', '{"a": [1, 2,]}', '{"a" 1}', '{"a": tru}']),
)


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(proposal_items, min_size=1, max_size=4, unique_by=lambda item: item["name"]),
    UNREADABLE_ITEMS,
    st.data(),
)
def test_an_item_the_decoder_cannot_read_loses_only_itself(
    items: list[dict[str, Any]], bad: str, data: st.DataObject
) -> None:
    # A number of more than 4,300 digits, a NaN, a value nested too deep or an item that is
    # no JSON made the whole answer unreadable or ended it there ("cut off"): every other
    # item was lost (the batch was asked again, and its last attempt kept nothing).
    at = data.draw(st.integers(0, len(items)))
    texts = [json.dumps(item, ensure_ascii=False) for item in items]
    answer = "[" + ", ".join([*texts[:at], bad, *texts[at:]]) + "]"
    result = parse_skills(answer)
    assert [p.name for p in result.proposals] == [item["name"] for item in items]
    assert [r.index for r in result.rejected] == [at]
    assert result.problem is None and not result.truncated
    notes = [{"action": "store_note", "content": item["name"]} for item in items]
    texts = [json.dumps(note) for note in notes]
    answer = "[" + ", ".join([*texts[:at], bad, *texts[at:]]) + "]"
    extraction = parse_extraction(answer)
    assert [a.arguments for a in extraction.actions] == [{"content": n["content"]} for n in notes]
    assert [r.index for r in extraction.rejected] == [at]
    assert extraction.problem is None and not extraction.truncated
