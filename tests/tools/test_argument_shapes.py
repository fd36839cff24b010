"""Arguments that are not a JSON object: the refusal says what was given instead, and arguments
a host encoded twice (the model's JSON object serialized once more, a common host bug) are named
as such; they were all "arguments must be a JSON object", with nothing to act on."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from philont import tools

scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
objects = st.dictionaries(st.text(max_size=8), scalars, max_size=4)
NAMES = {str: "a JSON string", list: "a JSON array", bool: "true or false", int: "a number",
         type(None): "null"}  # fmt: skip


@given(arguments=objects, tool=st.sampled_from(sorted(tools.REGISTRY)))
def test_arguments_encoded_twice_are_named_as_such(arguments: dict[str, Any], tool: str) -> None:
    got = tools.check_arguments(tool, json.dumps(json.dumps(arguments)))
    assert got.error_code == "invalid_arguments"
    assert got.error == (
        "arguments must be a JSON object, got a JSON string holding one: the arguments were "
        "JSON-encoded twice; send the object"
    )


@given(value=scalars | st.lists(scalars, max_size=3))
def test_any_other_json_value_is_named_by_its_type(value: Any) -> None:
    text = json.dumps(value)
    if text.strip() == "":
        return
    got = tools.check_arguments("store_fact", text)
    if isinstance(value, str):
        try:
            if isinstance(json.loads(value), dict):
                return  # the case above
        except ValueError:
            pass
    assert got.error == f"arguments must be a JSON object, got {NAMES[type(value)]}", got


TOO_LONG_TO_PRINT = 10**5000  # Python writes at most 4300 digits (sys.get_int_max_str_digits)


@given(
    tool=st.sampled_from(sorted(tools.REGISTRY)),
    data=st.data(),
    wrap=st.sampled_from([lambda n: n, lambda n: -n, lambda n: [n], lambda n: {"k": [n]}]),
)
def test_an_integer_too_long_to_print_is_refused_by_its_size_never_raised(
    tool: str, data: st.DataObject, wrap: Any
) -> None:
    # A host's Python caller can pass one (JSON text cannot: the parser refuses it first).
    # Describing the refusal printed it, which raised ValueError out of tools.call.
    field = data.draw(st.sampled_from(sorted(tools.REGISTRY[tool].args_model.model_fields)))
    got = tools.check_arguments(tool, {field: wrap(TOO_LONG_TO_PRINT)})
    assert got.error_code == "invalid_arguments", got
    assert len(got.error or "") < 1000, got.error
