"""One size policy: every argument counts alike, whatever its JSON type, and what a model reads
back is capped and says what it left out."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from philont import tools
from philont.store import Store
from philont.tools.dispatch import MAX_ARGUMENT_BYTES
from philont.tools.registry import MAX_RESULT_CHARS

BIG = MAX_ARGUMENT_BYTES + 10


def _oversized(kind: str) -> Any:
    chunk = "x" * 1000
    return {
        "string": "x" * BIG,
        "object": {f"k{i}": chunk for i in range(BIG // 1000 + 1)},
        "list": [chunk] * (BIG // 1000 + 1),
        "nested": {"a": {"b": [{"c": chunk}] * (BIG // 1000 + 1)}},
        "unicode": "柏" * (BIG // 3 + 1),  # 3 bytes each in UTF-8
    }[kind]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    with Store.open(tmp_path_factory.mktemp("size") / "m.sqlite") as s:
        yield s


CASES = [(tool, "object") for tool in sorted(tools.TOOL_NAMES)] + [
    ("store_fact", kind) for kind in ("string", "list", "nested", "unicode")
]


@pytest.mark.parametrize("as_json_text", [False, True], ids=["dict", "json-text"])
@pytest.mark.parametrize(("tool", "kind"), CASES, ids=[f"{t}-{k}" for t, k in CASES])
def test_oversized_arguments_of_any_type_are_refused_by_every_tool(
    store: Store, tool: str, kind: str, as_json_text: bool
) -> None:
    import json

    args: Any = {"value": _oversized(kind)}
    if as_json_text:
        args = json.dumps(args, ensure_ascii=False)
    result = tools.call(tool, args, db=store)
    assert not result.ok and result.error_code == "invalid_arguments"
    assert "bytes of JSON" in (result.error or "")
    with store.begin(write=False) as mem:
        assert mem.facts.get("user", "value", include_expired=True) is None


def test_a_value_just_under_the_cap_is_stored(store: Store) -> None:
    value = "y" * (MAX_ARGUMENT_BYTES - 200)
    result = tools.call(
        "store_fact", {"namespace": "size", "key": "under", "value": value}, db=store
    )
    assert result.ok


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sizes=st.lists(
        st.integers(min_value=1, max_value=2 * MAX_RESULT_CHARS), min_size=1, max_size=3
    ),
    tool=st.sampled_from(["list_facts", "get_fact"]),
)
@example(sizes=[MAX_RESULT_CHARS - 199], tool="get_fact")  # whole, though within 200 of the cap
@example(sizes=[MAX_RESULT_CHARS - 211], tool="list_facts")  # whole: list_facts' parts cut it
@example(sizes=[1, MAX_RESULT_CHARS - 326], tool="list_facts")
@example(sizes=[2 * MAX_RESULT_CHARS, 5], tool="list_facts")  # a first fact past the cap
def test_what_a_model_reads_back_is_capped_and_says_what_it_left_out(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], tool: str
) -> None:
    path: Path = tmp_path_factory.mktemp("read") / "m.sqlite"
    with Store.open(path) as store:
        with store.begin() as mem:  # a host may store more than a tool call may send
            for i, size in enumerate(sizes):
                mem.facts.store("big", f"k{i}", "z" * size)
        args = {"namespace": "big"} if tool == "list_facts" else {"namespace": "big", "key": "k0"}
        result = tools.call(tool, args, db=store)
    assert result.ok
    shown = sizes if tool == "list_facts" else sizes[:1]
    if "not shown" not in result.text:  # whole: every value in full, within the cap
        assert len(result.text) <= MAX_RESULT_CHARS
        assert all(f'"{"z" * size}"' in result.text for size in shown)
        return
    assert sum(shown) + 200 * len(shown) > MAX_RESULT_CHARS  # cut only when it had to be
    kept, note = result.text.rsplit("\n", 1)
    assert len(kept) <= MAX_RESULT_CHARS
    if tool == "list_facts" and " more facts not shown: " in note:  # read in parts: the next
        assert re.fullmatch(
            r"… [\d,]+ more facts not shown: list_facts with offset=\d+ lists on", note
        )
        assert "more characters not shown" in kept or kept.count("\n") < len(sizes) - 1
        return
    assert note.startswith("… ") and note.endswith("more characters not shown (ask for less)")
