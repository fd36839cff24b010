"""A JSON argument (a fact's value, a schedule's payload, a logged call's params) that cannot
be stored is refused naming the argument and where in it the fault is (``value.a[0]``), as a
top-level text argument is; the database is unchanged.

A lone surrogate inside a nested value came back as the encoder's message ("value is not
JSON-serialisable: 'utf-8' codec can't encode character '\\udc80' in position 7: ...", a
position in the encoded text), or from a service call without the path ("value: not valid
Unicode text (a lone surrogate at position 0)").
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import Store, tools
from philont.errors import InvalidInputError
from philont.memory import Memory
from tests.tools.helpers import DbTarget, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

GOOD = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,4}", fullmatch=True) | st.sampled_from(["a b", "1", ""])
STEPS = st.lists(st.one_of(KEYS, st.integers(0, 3)), min_size=1, max_size=5)
"""The path to the fault from the argument: a key of an object, or an index in a list."""
SURROGATE = st.builds(
    lambda head, low, tail: head + chr(low) + tail,
    st.text(max_size=3),
    st.integers(0xD800, 0xDFFF),
    st.text(max_size=3),
)


def _faults(draw: st.DrawFn) -> tuple[Any, str, bool]:
    """(the faulty part, what the message says of it, whether it is a key)."""
    kind = draw(st.sampled_from(["text", "key", "nan", "set"]))
    if kind == "text":
        text = draw(SURROGATE)
        position = next(i for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF)
        return text, f"(a lone surrogate at position {position})", False
    if kind == "key":
        text = draw(SURROGATE)
        position = next(i for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF)
        return text, f"(a lone surrogate at position {position})", True
    if kind == "nan":
        return draw(st.sampled_from([float("nan"), float("inf")])), "NaN and infinities", False
    return {1, 2}, "a set ({1, 2}), not a JSON value", False


@st.composite
def unstorable(draw: st.DrawFn, name: str) -> tuple[Any, str, str]:
    """(a value with one fault at a random depth, the path the message names, the reason)."""
    part, reason, is_key = _faults(draw)
    steps: list[str | int] = draw(STEPS)
    value: Any = {part: draw(GOOD)} if is_key else part
    for step in reversed(steps):
        if isinstance(step, int):
            value = [draw(GOOD) for _ in range(step)] + [value]
        else:
            siblings = draw(
                st.dictionaries(KEYS.filter(lambda k, s=step: k != s), GOOD, max_size=2)
            )
            value = {**siblings, step: value}
    path = name
    for step in steps:  # as Python and JSON paths read
        path += (
            f"[{step}]"
            if isinstance(step, int)
            else (f".{step}" if step.isidentifier() else f"[{step!r}]")
        )
    return value, path, f"a key {reason}" if is_key else reason


@pytest.fixture
def store(tool_target: DbTarget) -> Any:
    with Store.open(tool_target) as s:
        yield s


def _says(message: str | None, name: str, where: str, reason: str) -> None:
    """Named once, by the place in the argument (the argument's name first), then why."""
    assert message is not None and message.startswith(f"{where}: "), (message, where)
    why = message.removeprefix(f"{where}: ")
    assert not any(f"{name}{c}" in why for c in ":.["), message
    assert reason.removeprefix("a key ") in why and ("a key" in why) is reason.startswith("a key")
    assert "codec" not in message and "JSON-serialisable" not in message, message


@SETTINGS
@given(case=unstorable("value"))
def test_a_fact_value_is_refused_naming_where_it_cannot_be_stored(
    store: Store, tool_target: DbTarget, case: tuple[Any, str, str]
) -> None:
    value, where, reason = case
    before = snapshot(tool_target)
    result = tools.call("store_fact", {"namespace": "n", "key": "k", "value": value}, db=store)
    assert result.error_code == "invalid_arguments", result.text
    _says(result.error, "value", where, reason)
    with pytest.raises(InvalidInputError) as refused, store.begin() as mem:
        mem.facts.store("n", "k", value)
    _says(refused.value.message, "value", where, reason)
    assert snapshot(tool_target) == before


def _schedule(mem: Memory, payload: dict[str, Any]) -> None:
    at = datetime.now(UTC) + timedelta(days=1)
    mem.schedules.create("s", message="m", payload=payload, at=at)


def _logged(mem: Memory, params: dict[str, Any]) -> None:
    mem.actions.record("t", params=params, success=True)


@SETTINGS
@pytest.mark.parametrize(("name", "write"), [("payload", _schedule), ("params", _logged)])
@given(data=st.data())
def test_an_object_argument_is_refused_naming_where(
    store: Store,
    tool_target: DbTarget,
    name: str,
    write: Callable[[Memory, dict[str, Any]], None],
    data: st.DataObject,
) -> None:
    value, where, reason = data.draw(unstorable(name))
    if not isinstance(value, dict):  # these take an object: the fault one level down
        value, where = {"x": value}, where.replace(name, f"{name}.x", 1)
    before = snapshot(tool_target)
    with pytest.raises(InvalidInputError) as refused, store.begin() as mem:
        write(mem, value)
    _says(refused.value.message, name, where, reason)
    assert snapshot(tool_target) == before
