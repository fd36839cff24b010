"""Service argument checks skip a value whose kind passed before: never one they would refuse.

``philont.services.base`` remembers, per method, the (argument, type) pairs that passed with a
*settled* value (None, True/False, a datetime, valid Unicode text without NUL) and lets the
next settled value of that pair through unchecked. Whatever calls came before, a call must be
accepted or refused exactly as by a method that never saw one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from philont.arguments import _settled
from philont.errors import InvalidInputError
from philont.services.base import Service, _checked


def _method(
    self: Service,
    text: str,
    maybe: str | None = None,
    ids: Sequence[str] | None = None,
    count: int = 0,
    flag: bool = False,
    at: datetime | None = None,
    limit: int = 10,
    session_ids: Sequence[str] | None = None,
) -> str:
    return "ran"


class _Probe(Service):
    """A service whose one method declares every kind of argument the checks know."""

    unstored = frozenset({"maybe"})


def _unit(keeps_nul: bool) -> Any:
    """What the checks read of a unit of work: its backend's NUL rule (SQLite keeps NUL)."""
    return SimpleNamespace(backend=SimpleNamespace(keeps_nul=keeps_nul))


NAMES = ["text", "maybe", "ids", "count", "flag", "at", "limit", "session_ids"]
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.datetimes(timezones=st.just(UTC)),
    st.text(max_size=8),
    st.sampled_from(["ok", "a\x00b", "bad \udcff", "\ud800", " ", "日本語", "x" * 3]),
    st.lists(st.sampled_from(["a", "b\x00", "\udcff"]), max_size=3),
    st.just(b"bytes"),
)
calls = st.lists(
    st.tuples(st.booleans(), st.dictionaries(st.sampled_from(NAMES), values, max_size=4)),
    min_size=1,
    max_size=12,
)


def _outcome(method: Callable[..., Any], keeps_nul: bool, kwargs: dict[str, Any]) -> str:
    try:
        return str(method(_Probe(_unit(keeps_nul)), **{"text": "t", **kwargs}))
    except InvalidInputError as exc:
        return f"refused: {exc.message}"


@settings(max_examples=300, deadline=None)
@given(calls)
def test_a_remembered_kind_never_lets_through_what_a_fresh_check_refuses(
    sequence: list[tuple[bool, dict[str, Any]]],
) -> None:
    remembering = _checked(_method, _Probe)  # one method that sees every call in turn
    for keeps_nul, kwargs in sequence:
        fresh = _checked(_method, _Probe)  # a method that never saw a call
        assert _outcome(remembering, keeps_nul, kwargs) == _outcome(fresh, keeps_nul, kwargs)


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ("plain", "bad \udcff"),  # valid text first, then a lone surrogate
        ("plain", "a\x00b"),  # then NUL, on a database that cannot store it
        ("日本語", "\ud800"),
    ],
)
def test_text_that_passed_does_not_let_bad_text_of_the_same_argument_through(
    first: str, then: str
) -> None:
    method = _checked(_method, _Probe)
    assert _outcome(method, False, {"text": first}) == "ran"
    assert _outcome(method, False, {"text": then}).startswith("refused: text:")


def test_only_values_whose_checks_depend_on_their_type_alone_are_settled() -> None:
    assert all(map(_settled, [None, True, datetime.now(UTC), "text", "日本語", ""]))
    assert not any(map(_settled, ["a\x00b", "bad \udcff", 5, ["a"], b"x", 1.5]))


def _with_options(self: Service, **options: Any) -> str:
    return "ran"


def test_only_declared_arguments_are_remembered() -> None:
    # a method taking any keywords must not keep one entry per stray name it was given
    method = _checked(_with_options, _Probe)
    for i in range(50):
        assert _outcome(method, True, {f"stray_{i}": "text"}) == "ran"
    remembered = next(_sets_in_closures(method))
    assert remembered == set()


def _sets_in_closures(fn: Any) -> Any:
    """The sets a function's closure holds, and those of the functions it holds (the check
    of a wrapped method is a function of its own)."""
    for cell in fn.__closure__ or ():
        if isinstance(cell.cell_contents, set):
            yield cell.cell_contents
        elif callable(cell.cell_contents) and hasattr(cell.cell_contents, "__closure__"):
            yield from _sets_in_closures(cell.cell_contents)
