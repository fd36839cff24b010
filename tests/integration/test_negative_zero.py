"""-0.0 given for every float argument of every public service method (``philont.services``,
``.learning``, ``.embed``) and every number argument of every model-facing tool: what the call
returns holds no -0.0, as what it stored reads back (a REAL column keeps -0.0 as 0.0,
:data:`philont.db.types.Real`; a JSON value keeps it on both backends, and reads it back so)."""

from __future__ import annotations

import inspect
import math
from collections.abc import Iterator
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from sqlalchemy.engine import URL

from philont import tools
from philont.errors import PhilontError
from philont.store import Store
from philont.tools.registry import REGISTRY
from tests.service_calls import ACCESS, METHODS, NOW, good_call, seed, seeds

BOTH_BACKENDS = True


def _negative_zeros(value: Any, path: str = "") -> list[str]:
    """Where ``value`` holds a -0.0."""
    if isinstance(value, float):
        return [path or "."] if value == 0.0 and math.copysign(1.0, value) < 0 else []
    if isinstance(value, BaseModel):
        return [p for k, v in value for p in _negative_zeros(v, f"{path}.{k}")]
    if is_dataclass(value) and not isinstance(value, type):
        return [
            p
            for f in fields(value)
            for p in _negative_zeros(getattr(value, f.name), f"{path}.{f.name}")
        ]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _negative_zeros(v, f"{path}[{k!r}]")]
    if isinstance(value, list | tuple | set | frozenset):
        return [p for i, v in enumerate(value) for p in _negative_zeros(v, f"{path}[{i}]")]
    return []


def _float_arguments() -> list[tuple[str, str]]:
    """(``Class.method``, argument) of every argument a float is given to."""
    found = []
    for case, (_cls, fn) in METHODS.items():
        for param in list(inspect.signature(fn).parameters.values())[1:]:
            if "float" in str(param.annotation) or isinstance(param.default, float):
                found.append((case, param.name))
    return found


FLOAT_ARGUMENTS = _float_arguments()


def test_the_float_arguments_are_found() -> None:
    assert ("FactService.store", "confidence") in FLOAT_ARGUMENTS
    assert ("NoteService.add", "importance") in FLOAT_ARGUMENTS


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    s = Store.open(target, clock=lambda: NOW)
    with s.begin() as mem:
        seed(mem)
    yield s
    s.close()


class _Undo(Exception):
    """Leaves a unit of work whose call was answered."""


@pytest.mark.parametrize(("case", "argument"), FLOAT_ARGUMENTS)
def test_a_negative_zero_argument_comes_back_as_it_is_stored(
    store: Store, case: str, argument: str
) -> None:
    cls, fn = METHODS[case]
    kwargs = {**good_call(case, seeds(store)), argument: -0.0}
    answer: Any = None
    try:
        with store.begin() as mem:
            try:
                answer = getattr(ACCESS[cls](mem), fn.__name__)(**kwargs)
            except PhilontError:
                answer = None  # refused: nothing returned
            raise _Undo
    except _Undo:
        pass
    assert _negative_zeros(answer) == []


def _number_fields() -> list[tuple[str, str]]:
    found = []
    for name, tool in sorted(REGISTRY.items()):
        props = tool.args_model.model_json_schema().get("properties", {})
        for field, prop in props.items():
            if "number" in str(prop):
                found.append((name, field))
    return found


TOOL_ARGS: dict[str, dict[str, object]] = {
    "store_fact": {"namespace": "user", "key": "zero", "value": 1},
}


@pytest.mark.parametrize(("name", "field"), _number_fields())
def test_a_tool_given_negative_zero_answers_as_it_stored(
    store: Store, name: str, field: str
) -> None:
    with store.begin() as mem:
        result = tools.call(name, {**TOOL_ARGS.get(name, {}), field: -0.0}, db=mem)
        assert "-0.0" not in result.text or field == "value", result.text
