"""A refusal shows what was refused: every message of a refused argument names the argument and
the value given (cut short when long), on the services' path and the tools' path alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from philont import tools
from philont.errors import InvalidInputError
from philont.schemas import inputs

OUT_OF_RANGE = [
    (inputs.Limit, st.integers(max_value=0) | st.integers(min_value=inputs.MAX_LIMIT + 1)),
    (inputs.Attempts, st.integers(max_value=0) | st.integers(min_value=inputs.MAX_ATTEMPTS + 1)),
    (inputs.BusyTimeoutMs, st.integers(max_value=-1)),
    (inputs.Confidence, st.floats(min_value=1.001, max_value=1e6)),
]
WRONG_KIND = st.text(max_size=10) | st.booleans() | st.lists(st.integers(), max_size=2)


@pytest.mark.parametrize(("kind", "values"), OUT_OF_RANGE)
@given(data=st.data())
def test_a_refused_value_is_shown_with_its_argument(kind: Any, values: Any, data: Any) -> None:
    value = data.draw(values | WRONG_KIND)
    with pytest.raises(InvalidInputError) as caught:
        inputs.check(kind, value, "arg")
    message = caught.value.message
    assert message.startswith("arg: ")
    shown = repr(value)
    assert shown in message if len(shown) <= 40 else "(got " in message


@pytest.fixture(scope="module")
def db(tmp_path_factory: Any) -> Path:
    return Path(tmp_path_factory.mktemp("db")) / "m.sqlite"


@settings(max_examples=25)
@given(confidence=st.floats(min_value=1.5, max_value=99).map(lambda f: round(f, 2)))
def test_a_tool_call_shows_the_refused_value(db: Path, confidence: float) -> None:
    args = {"namespace": "user", "key": "k", "value": 1, "confidence": confidence}
    result = tools.call("store_fact", args, db=db)
    assert result.error_code == "invalid_arguments"
    assert "confidence: " in result.text and f"(got {confidence!r})" in result.text
