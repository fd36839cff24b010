"""An argument a tool does not take, close to one it does that was not given (a model's guess:
``start`` for ``starts_at``, ``days`` for ``window_days``), is refused asking whether that one
was meant; never naming a name the tool does not take, or one the call already gave."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont.domain.names import meant
from philont.tools import REGISTRY, check_arguments

GUESSES = [  # what models send, and what they meant
    ("create_calendar_event", "start", "starts_at"),
    ("create_calendar_event", "tz", None),
    ("list_upcoming", "days", "window_days"),
    ("store_fact", "namespce", "namespace"),
    ("store_fact", "values", "value"),
    ("get_fact", "name_space", "namespace"),
    ("search_notes", "q", None),
]

_SUGGESTED = re.compile(r"(\w+): Extra inputs are not permitted; did you mean '(\w+)'\?")


def _suggested(tool: str, arguments: dict[str, object]) -> dict[str, str]:
    check = check_arguments(tool, arguments)
    assert check.error_code == "invalid_arguments", check
    assert check.error is not None
    return dict(_SUGGESTED.findall(check.error))


@pytest.mark.parametrize(
    ("name", "meant_name"),
    [
        ("store_facts", "store_fact"),
        ("getfact", "get_fact"),
        ("remind", "schedule_reminder"),
        ("search", None),
        ("x" * 200, None),
    ],
)
def test_an_unknown_tool_is_answered_with_the_one_it_meant(
    name: str, meant_name: str | None
) -> None:
    check = check_arguments(name, {})
    assert check.error_code == "unknown_tool"
    assert check.error is not None
    hint = f"; did you mean {meant_name!r}?"
    assert (hint in check.error) if meant_name else ("did you mean" not in check.error)
    assert check.error.endswith(", ".join(sorted(REGISTRY)))


@pytest.mark.parametrize(("tool", "guess", "field"), GUESSES)
def test_a_models_guess_is_answered_with_the_name_it_meant(
    tool: str, guess: str, field: str | None
) -> None:
    assert _suggested(tool, {guess: "x"}) == ({} if field is None else {guess: field})


def test_a_name_already_given_is_not_suggested() -> None:
    args = {"title": "t", "start": "2027-01-01", "starts_at": "2027-01-01", "timezone": "UTC"}
    assert _suggested("create_calendar_event", args) == {}


@st.composite
def _misspelt(draw: st.DrawFn) -> tuple[str, str, str]:
    tool = draw(st.sampled_from(sorted(REGISTRY)))
    fields = sorted(REGISTRY[tool].args_model.model_fields)
    field = draw(st.sampled_from(fields))
    at = draw(st.integers(0, len(field) - 1))
    typo = draw(
        st.sampled_from(
            [
                field[:at] + field[at + 1 :],  # a letter left out
                field[:at] + field[at] * 2 + field[at + 1 :],  # a letter twice
                field + "s",
                field.replace("_", ""),
                field.upper(),
            ]
        )
    )
    if typo in fields or not typo:
        return draw(st.nothing())
    return tool, field, typo


@given(_misspelt())
def test_a_suggestion_is_always_a_name_the_tool_takes_and_was_not_given(
    case: tuple[str, str, str],
) -> None:
    tool, field, typo = case
    fields = set(REGISTRY[tool].args_model.model_fields)
    suggested = _suggested(tool, {typo: 1})
    assert set(suggested) <= {typo}
    assert set(suggested.values()) <= fields
    expected = meant(typo, fields)
    assert suggested == ({} if expected is None else {typo: expected})
    if len(field) >= 5 and typo != field.upper():  # a long name misspelt once is recognised
        assert typo in suggested
        assert suggested[typo] == field or _as_close(typo, suggested[typo], field)
    assert field not in _suggested(tool, {typo: 1, field: None}).values()  # given (as null)


def _as_close(typo: str, suggested: str, field: str) -> bool:
    from difflib import SequenceMatcher

    def ratio(name: str) -> float:
        return SequenceMatcher(None, typo.lower(), name).ratio()

    return ratio(suggested) >= ratio(field)
