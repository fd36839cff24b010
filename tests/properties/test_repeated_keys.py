"""JSON text with a key given twice in one object is refused, never guessed, on every path
that reads JSON from outside: ``tools.call`` / ``check_arguments`` (text or bytes), the MCP
transport (``tools/call``), and the learning loop's answers (the item holding it is rejected,
the others are read).

Python's ``json`` kept the last value silently (``{"namespace": "user", ..., "namespace":
"evil"}`` stored under ``evil``); other readers keep the first, so the log, a proxy and the
tool could each see another call.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from philont import tools
from philont.learning.parse import parse_extraction, parse_skills

Pairs = list[tuple[str, Any]]


class Obj:
    """A JSON object as written: its pairs in order, keys possibly repeated."""

    def __init__(self, pairs: Pairs) -> None:
        self.pairs = pairs


def render(value: Any) -> str:
    if isinstance(value, Obj):
        inner = ",".join(f"{json.dumps(k)}:{render(v)}" for k, v in value.pairs)
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    return json.dumps(value)


def repeats(value: Any) -> bool:
    if isinstance(value, Obj):
        keys = [k for k, _ in value.pairs]
        return len(set(keys)) != len(keys) or any(repeats(v) for _, v in value.pairs)
    if isinstance(value, list):
        return any(repeats(v) for v in value)
    return False


KEYS = st.sampled_from(["a", "b", "value", "名", ""])
values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.lists(st.tuples(KEYS, inner), max_size=4).map(Obj)
    ),
    max_leaves=10,
).filter(lambda v: v is not None)  # a null value is "not given": refused for itself


def arguments(value: Any, *, twice: str | None) -> str:
    """store_fact's arguments with ``value``; ``twice`` names an argument given again."""
    pairs: Pairs = [("namespace", "user"), ("key", "k"), ("value", value)]
    if twice is not None:
        pairs.append((twice, dict(pairs)[twice]))
    return render(Obj(pairs))


@settings(max_examples=300)
@given(value=values, twice=st.none() | st.sampled_from(["namespace", "key", "value"]))
@example(value="v", twice="namespace")
@example(value=Obj([("a", 1), ("a", 2)]), twice=None)
def test_a_key_given_twice_is_refused_by_the_tools(value: Any, twice: str | None) -> None:
    text = arguments(value, twice=twice)
    ambiguous = twice is not None or repeats(value)
    for given_as in (text, text.encode()):
        checked = tools.check_arguments("store_fact", given_as)
        if ambiguous:
            assert checked.error_code == "invalid_arguments", text
            assert checked.error is not None and "appears twice in one JSON object" in checked.error
        else:
            assert checked.error_code is None, (text, checked.error)


def test_a_call_with_a_key_given_twice_writes_nothing(tmp_path: Any) -> None:
    from philont import Store

    with Store.open(tmp_path / "m.sqlite") as store:
        text = '{"namespace":"user","key":"k","value":"v","namespace":"evil"}'
        result = tools.call("store_fact", text, db=store)
        assert result.error_code == "invalid_arguments"
        with store.begin() as mem:
            assert mem.facts.list("*") == []


@settings(max_examples=200)
@given(value=values, twice=st.none() | st.sampled_from(["namespace", "value"]), rid=st.integers())
def test_the_mcp_transport_refuses_it_with_the_request_id(
    value: Any, twice: str | None, rid: int
) -> None:
    pytest.importorskip("mcp")
    from mcp.shared.message import SessionMessage

    from philont.mcp.transport import check_line

    line = f'{{"jsonrpc":"2.0","id":{rid},"method":"tools/call","params":{{"name":"store_fact",'
    line += f'"arguments":{arguments(value, twice=twice)}}}}}'
    checked = check_line(line.encode())
    if twice is None and not repeats(value):
        assert isinstance(checked, SessionMessage)
        return
    assert isinstance(checked, str), checked
    answer = json.loads(checked)
    assert answer["id"] == rid
    assert (answer["error"]["code"], answer["error"]["data"]["code"]) == (
        -32602,
        "invalid_arguments",
    )


@settings(max_examples=200)
@given(value=values, twice=st.none() | st.sampled_from(["namespace", "value", "action"]))
def test_a_model_answer_item_with_a_key_given_twice_is_rejected_alone(
    value: Any, twice: str | None
) -> None:
    pairs: Pairs = [("action", "store_fact"), ("namespace", "user"), ("key", "k"), ("value", value)]
    if twice is not None:
        pairs.append((twice, "other"))
    note = Obj([("action", "store_note"), ("content", "kept")])
    answer = parse_extraction(render([Obj(pairs), note]))
    assert [a.arguments for a in answer.actions if a.action == "store_note"] == [
        {"content": "kept"}
    ]
    ambiguous = twice is not None or repeats(value)
    assert [r.index for r in answer.rejected] == ([0] if ambiguous else [])
    skill = Obj([("name", "a-b"), ("description", "d"), ("action_template", "t"), ("name", "c-d")])
    assert parse_skills(render([skill])).proposals == ()
