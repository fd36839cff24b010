"""How deeply a fact value may nest: what is written is bounded by the depth every read can
give back, and a stored value deeper than that (written by another program, by hand, or before
the bound) is read as its text, never an error.

A value nested 255 levels deep was stored by ``mem.facts.store`` (and, past pydantic's limit,
refused by the tool only as ``internal_error``); from then on ``get_fact`` of its key and every
``list_facts`` of its namespace failed with ``internal_error: Maximum serialization depth
exceeded`` (the original's Q-S8 in another form).
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from philont import Store, tools
from philont.db.stored_values import MAX_JSON_DEPTH, json_depth
from philont.errors import InvalidInputError
from tests.tools.helpers import DbTarget, actions, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

SETTINGS = settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def nested(depth: int, shape: list[bool]) -> Any:
    """A value ``depth`` levels deep, each level a list or an object (``shape``, cycled)."""
    value: Any = "leaf"
    for level in range(depth):
        value = {"k": value, "n": level} if shape[level % len(shape)] else [value, level]
    return value


DEPTHS = st.integers(min_value=1, max_value=400)
SHAPES = st.lists(st.booleans(), min_size=1, max_size=4)


@pytest.fixture
def store(tool_target: DbTarget) -> Any:
    with Store.open(tool_target) as s:
        yield s


@SETTINGS
@given(depth=DEPTHS, shape=SHAPES)
@example(depth=MAX_JSON_DEPTH, shape=[False])
@example(depth=MAX_JSON_DEPTH + 1, shape=[True])
@example(depth=300, shape=[False])
def test_a_value_is_stored_and_read_back_or_refused_by_name(
    store: Store, tool_target: DbTarget, depth: int, shape: list[bool]
) -> None:
    value = nested(depth, shape)
    assert json_depth(value, limit=10_000) == depth
    before = snapshot(tool_target)
    stored = tools.call("store_fact", {"namespace": "deep", "key": "v", "value": value}, db=store)
    if depth > MAX_JSON_DEPTH:
        assert stored.error_code == "invalid_arguments", stored.text
        assert stored.error is not None and stored.error.startswith("value: nests ")
        assert snapshot(tool_target) == before
        with pytest.raises(InvalidInputError, match=r"^value: nests "), store.begin() as mem:
            mem.facts.store("deep", "v", value)
        assert snapshot(tool_target) == before
        return
    assert stored.ok, stored.text
    got = tools.call("get_fact", {"namespace": "deep", "key": "v"}, db=store)
    assert got.ok and got.data["value"] == value, got.text
    listed = tools.call("list_facts", {"namespace": "*"}, db=store)
    assert listed.ok, listed.text


def test_arguments_too_deep_to_read_back_are_logged_as_their_repr(
    store: Store, tool_target: DbTarget
) -> None:
    deep = nested(300, [False])
    refused = tools.call("search_notes", {"query": "x", "limit": deep}, db=store)
    assert refused.error_code == "invalid_arguments"
    params = actions(tool_target)[-1][2]
    assert isinstance(params, str) and '"_raw"' in params
    with store.begin() as mem:
        for action in mem.actions.query(limit=5):
            action.model_dump(mode="json")  # every logged call reads back and prints


@SETTINGS
@given(depth=st.integers(min_value=1, max_value=3000), shape=SHAPES)
@example(depth=300, shape=[False])
def test_a_stored_value_of_any_depth_is_read(tmp_path: Path, depth: int, shape: list[bool]) -> None:
    """Rows written by another program (SQLite: the original kept any JSON)."""
    db_path = tmp_path / "legacy.sqlite"
    with Store.open(db_path) as store:
        with store.begin() as mem:
            mem.facts.store("legacy", "v", 1)
        text = nested_text(depth, shape)
        with closing(sqlite3.connect(db_path)) as conn, conn:
            conn.execute("UPDATE memory_facts SET value_json = ? WHERE key = 'v'", (text,))
        got = tools.call("get_fact", {"namespace": "legacy", "key": "v"}, db=store)
        listed = tools.call("list_facts", {"namespace": "legacy"}, db=store)
        with store.begin() as mem:
            prefix = mem.prefix.build().text
    assert got.ok and listed.ok, (got.text, listed.text)
    read = got.data["value"]
    assert read == text if depth > MAX_JSON_DEPTH else json_depth(read, limit=10_000) == depth
    assert "legacy.v" in prefix


def nested_text(depth: int, shape: list[bool]) -> str:
    """:func:`nested`'s JSON text, built without recursion (any depth)."""
    opens = ['{"k":' if shape[i % len(shape)] else "[" for i in reversed(range(depth))]
    closes = [f',"n":{i}}}' if shape[i % len(shape)] else f",{i}]" for i in range(depth)]
    return "".join(opens) + '"leaf"' + "".join(closes)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000, 100_000])
def test_a_value_too_deep_sent_as_json_text_is_refused_as_too_deep(
    store: Store, tool_target: DbTarget, depth: int
) -> None:
    # past Python's recursion limit the parser gave up: the call was answered invalid_json,
    # "not valid JSON: maximum recursion depth exceeded", for valid JSON
    text = '{"namespace": "deep", "key": "v", "value": ' + nested_text(depth, [False]) + "}"
    before = snapshot(tool_target)
    result = tools.call("store_fact", text, db=store)
    assert result.error_code == "invalid_arguments", result.text
    assert "nest" in (result.error or "") and str(MAX_JSON_DEPTH) in (result.error or "")
    assert snapshot(tool_target) == before
