"""Text that is not JSON is refused with one phrase saying why and where, however it is broken:
the parser's own phrases, some of which end in "at", are never followed by a second "at"."""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.errors import PhilontError
from philont.schemas.stored import json_value
from philont.transfer import reader

_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)


@st.composite
def _broken(draw: st.DrawFn) -> tuple[str, json.JSONDecodeError]:
    text = json.dumps({"v": draw(_values)})
    cut = draw(st.integers(1, len(text) - 1))
    text = text[:cut] + draw(st.sampled_from(["", "\t", "\\", '"', "}", ",", "x"]))
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return text, exc
    return draw(st.nothing())


def _said_once(reason: str, exc: json.JSONDecodeError) -> None:
    assert " at at " not in reason, reason
    assert re.search(rf"[a-z'] at column {exc.colno}\)$", reason), reason


@given(_broken())
def test_stored_json_says_why_and_where_once(case: tuple[str, json.JSONDecodeError]) -> None:
    text, exc = case
    with pytest.raises(ValueError) as caught:
        json_value(text)
    _said_once(str(caught.value), exc)


@given(_broken())
def test_an_import_line_says_why_and_where_once(case: tuple[str, json.JSONDecodeError]) -> None:
    text, exc = case
    with pytest.raises(PhilontError) as caught:
        reader._parse(3, text)
    assert caught.value.code == "import_format"
    _said_once(str(caught.value), exc)


def test_an_unterminated_string_is_named_with_one_at() -> None:
    with pytest.raises(ValueError, match=r"\(Unterminated string starting at column 7\)"):
        json_value('{"v": "abc')
