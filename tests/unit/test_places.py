"""A place in an argument is named one way by every refusal (:func:`philont.domain.shown.place`,
as Python and JSON paths read: ``tags[0]``, ``value.a['x y']``): pydantic's validation
(``inputs.describe``) wrote ``tags.0``, the MCP transport's not-finite check ``tags[0]``, the
JSON checks ``value.tags[0]``, each its own way."""

from __future__ import annotations

from typing import Annotated, Any

from hypothesis import given
from hypothesis import strategies as st
from pydantic import Field, TypeAdapter, ValidationError

from philont.domain import json_values
from philont.domain.shown import place
from philont.mcp.transport import _not_finite
from philont.schemas.inputs import describe

NAMES = st.from_regex(r"[a-z_][a-z0-9_]{0,5}", fullmatch=True)
KEYS = NAMES | st.sampled_from(["a b", "1", "", "x.y", "[0]", "é"])
STEPS = st.lists(st.one_of(KEYS, st.integers(0, 3)), max_size=5)


def _nest(steps: list[str | int], leaf: Any) -> tuple[Any, Any]:
    """(a value holding ``leaf`` at ``steps``, the type of such a value with an int there)."""
    value, kind = leaf, int
    for step in reversed(steps):
        if isinstance(step, int):
            value, kind = [None] * step + [value], list[kind | None]  # type: ignore[valid-type]
        else:
            value, kind = {step: value}, dict[str, kind]  # type: ignore[valid-type]
    return value, kind


@given(NAMES, STEPS)
def test_every_refusal_names_a_place_the_same_way(name: str, steps: list[str | int]) -> None:
    where = place(name, steps)
    assert where == place("", [name, *steps])

    value, kind = _nest(steps, "not a number")
    try:
        TypeAdapter(dict[str, kind]).validate_python({name: value})  # type: ignore[valid-type]
    except ValidationError as exc:
        assert describe(exc).startswith(f"{where}: "), (describe(exc), where)
    else:
        raise AssertionError("not refused")

    arguments, _ = _nest([name, *steps], float("nan"))
    assert (_not_finite(arguments, ()) or "").startswith(f"{where}: ")

    for leaf, check in [
        ({1}, json_values.problem),
        (float("inf"), json_values.problem),
        ("\udc80", json_values.problem),
        ("\udc80", json_values.lone_surrogate),
    ]:
        value, _ = _nest(steps, leaf)
        message = check(value, name) or ""
        assert message.startswith(f"{where}: "), (message, where)
        assert not any(f"{name}{c}" in message.removeprefix(where) for c in ":.["), message


def test_places_read_as_python_and_json_paths() -> None:
    assert place("tags", [0]) == "tags[0]"
    assert place("value", ["a", 2, "x y", "b"]) == "value.a[2]['x y'].b"
    assert place("", ["a", "1"]) == "a['1']"
    assert place("", [0]) == "[0]"


@given(st.data())
def test_a_refusal_shows_the_refused_number_even_where_the_rule_holds_its_digits(
    data: st.DataObject,
) -> None:
    # `--budget 0` was "greater than or equal to 100" without "(got 0)": "0" is in "100"
    bound = data.draw(st.integers(1, 10**6))
    value = data.draw(st.integers(-(10**6), bound - 1))
    try:
        TypeAdapter(Annotated[int, Field(ge=bound)]).validate_python(value)
    except ValidationError as exc:
        assert describe(exc, prefix="budget").endswith(f"(got {value})"), describe(exc)
    else:
        raise AssertionError("not refused")
