"""A model's answer object that gives a key twice over lists (``{"facts": [...], "facts":
[...]}``) cannot be read: which list was meant cannot be known. It was read silently (dict()
kept the last list under a key the reader looks for; under another key the scan went on to
the first list inside). Now the answer is unreadable as a whole (its ``problem``, the loop's
malformed-answer path: reported, the batch retried), as repeated keys are refused elsewhere
(tools, MCP, an item of an answer)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from philont.learning.parse import parse_extraction, parse_skills

_NOTE = st.fixed_dictionaries(
    {"action": st.just("store_note"), "content": st.text(min_size=1, max_size=10)}
)
_SKILL = st.fixed_dictionaries(
    {
        "name": st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True),
        "description": st.just("d"),
        "trigger_keywords": st.just(["k"]),
        "action_template": st.just("1. do"),
    }
)
_KEYS = st.sampled_from(["actions", "items", "skills", "facts", "notes", "results"])
_PROSE = st.text(st.characters(exclude_characters="[]{}`"), max_size=30)


def _object(pairs: list[tuple[str, Any]]) -> str:
    """A JSON object of ``pairs`` in order, repeated keys kept (json.dumps cannot write one)."""
    return "{" + ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in pairs) + "}"


@st.composite
def _answers(draw: st.DrawFn, item: st.SearchStrategy[dict[str, Any]]) -> tuple[str, str]:
    """An answer whose object gives one key twice over lists, among other keys, in prose or a
    fence; and that key."""
    key = draw(_KEYS)
    lists = draw(st.lists(st.lists(item, max_size=3), min_size=2, max_size=3))
    lists[draw(st.integers(0, len(lists) - 1))] = draw(st.lists(item, min_size=1, max_size=3))
    others = draw(st.lists(st.tuples(st.sampled_from(["why", "note"]), st.text(max_size=5))))
    pairs: list[tuple[str, Any]] = [(key, value) for value in lists] + others[:1]
    pairs = draw(st.permutations(pairs))
    body = _object(pairs)
    if draw(st.booleans()):
        body = f"```json\n{body}\n```"
    return f"{draw(_PROSE)}{body}{draw(_PROSE)}", key


@settings(max_examples=200)
@given(_answers(_NOTE))
def test_an_extraction_answer_with_a_key_twice_over_lists_is_unreadable(
    answer_key: tuple[str, str],
) -> None:
    answer, key = answer_key
    result = parse_extraction(answer)
    assert result.actions == () and result.rejected == ()
    assert result.problem is not None
    assert f"the key {key!r} appears twice in the answer's object" in result.problem


@settings(max_examples=200)
@given(_answers(_SKILL))
def test_a_reflection_answer_with_a_key_twice_over_lists_is_unreadable(
    answer_key: tuple[str, str],
) -> None:
    answer, key = answer_key
    result = parse_skills(answer)
    assert result.proposals == () and result.problem is not None
    assert f"the key {key!r} appears twice" in result.problem


@settings(max_examples=100)
@given(st.lists(_NOTE, min_size=1, max_size=3), _KEYS, st.text(max_size=5))
def test_a_key_given_twice_elsewhere_is_no_problem_of_the_answer(
    items: list[dict[str, Any]], key: str, text: str
) -> None:
    # twice over text beside the list: the list is clear; twice inside an item: that item only
    wrapped = _object([("actions", items), ("why", text), ("why", text)])
    assert parse_extraction(wrapped).problem is None
    assert len(parse_extraction(wrapped).actions) == len(items)
    ambiguous_item = _object([("action", "store_note"), ("content", "a"), ("content", "b")])
    listed = "[" + ", ".join([ambiguous_item, *map(json.dumps, items)]) + "]"
    result = parse_extraction(f"{{{json.dumps(key)}: {listed}}}" if key == "actions" else listed)
    assert result.problem is None and len(result.rejected) == 1
    assert len(result.actions) == len(items)
