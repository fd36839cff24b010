"""Every public method of every service (``philont.services``, ``.learning``, ``.embed``),
given a bad value for each of its arguments in turn (the others good), answers in one of three
ways: it takes the value, it answers with another typed error (not found, conflict), or it
refuses it with an ``InvalidInputError`` that names the argument, having changed nothing in
the unit of work. Naming it: the message starts with ``<argument>: `` and the ``argument``
detail is its name; or, for a combination refused (``name`` and ``id`` of one schedule that
disagree), the message starts with the names and the ``arguments`` detail holds them. An
untyped error (TypeError, AttributeError, a driver's error) fails the test."""

from __future__ import annotations

import ast
import math
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.engine import URL

import philont.embed
import philont.learning
import philont.services
from philont.db.schema import metadata
from philont.errors import InvalidInputError, PhilontError
from philont.memory import Memory
from philont.store import Store
from tests.service_calls import ACCESS, METHODS, NOW, arguments, good_call, seed, seeds

BOTH_BACKENDS = True

BAD = "bad \ud800 text"


class _Opaque:
    """An object no argument takes."""


BAD_VALUES: tuple[object, ...] = (
    None,
    "",
    "x",
    BAD,
    b"bytes",
    5,
    -1,
    2**63,
    1.5,
    math.nan,
    True,
    [],
    [5],
    ["x"],
    {"k": 1},
    datetime(2026, 1, 1),  # naive
    timedelta(days=-1),
    _Opaque(),
)


def test_every_service_is_reachable_here() -> None:
    assert {cls for cls, _fn in METHODS.values()} == set(ACCESS)


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    s = Store.open(target, clock=lambda: NOW)
    with s.begin() as mem:
        seed(mem)
    yield s
    s.close()


def _snapshot(mem: Memory) -> list[tuple[str, list[str]]]:
    """Every row of every table this agent sees."""
    return [
        (table.name, sorted(repr(tuple(row)) for row in mem.session.execute(select(table))))
        for table in metadata.sorted_tables
    ]


class _Undo(Exception):
    """Leaves a unit of work whose call was answered, so that every call starts alike."""


def _problem(exc: InvalidInputError, argument: str) -> str | None:
    """What is wrong with a refusal of ``argument``: it must name it (alone, or among the
    arguments whose combination is refused)."""
    together = exc.details.get("arguments")
    if together is not None:
        if argument in together and exc.message.startswith(f"{', '.join(together)}: "):
            return None
        return f"message {exc.message!r}, details {exc.details}"
    if not exc.message.startswith(f"{argument}: "):
        return f"message {exc.message!r}"
    if exc.details.get("argument") != argument:
        return f"details {exc.details}"
    return None


def _try(
    store: Store, case: str, kwargs: dict[str, object], argument: str, before: object
) -> str | None:
    """What is wrong with the answer to one call, or None."""
    cls, fn = METHODS[case]
    shown = f"{case}({argument}={kwargs.get(argument)!r})"
    try:
        with store.begin() as mem:
            problem = None
            try:
                getattr(ACCESS[cls](mem), fn.__name__)(**kwargs)
            except InvalidInputError as exc:
                problem = _problem(exc, argument)
                if problem is None and _snapshot(mem) != before:
                    problem = "refused, but wrote"
            raise _Undo(problem)  # every call starts from the same database
    except _Undo as undone:
        return None if undone.args[0] is None else f"{shown}: {undone.args[0]}"
    except PhilontError:
        return None  # another typed answer
    except Exception as exc:  # an untyped error: what the test is about
        return f"{shown}: {type(exc).__name__}: {exc}"


@pytest.mark.parametrize("case", sorted(METHODS))
def test_every_refusal_names_its_argument_and_changes_nothing(store: Store, case: str) -> None:
    good = good_call(case, seeds(store))
    names = arguments(case)[1]
    with store.begin(write=False) as mem:
        before = _snapshot(mem)
    assert _try(store, case, good, "", before) is None  # the good call itself is answered
    problems = [
        _try(store, case, {**good, argument: value}, argument, before)
        for argument in names
        for value in BAD_VALUES
    ]

    assert [p for p in problems if p is not None] == []


ROW_READERS = {"_rows.text_value", "_schedule_rows.decode", "_calendar_rows.decode"}
"""Functions that refuse a stored row's value (turned into ``UnreadableRowError`` by their
callers), not an argument."""


def _direct_refusals() -> Iterator[str]:
    """``module.function`` of each ``InvalidInputError(...)`` in ``philont.services`` built
    without naming an argument (``InvalidInputError.of`` / ``.of_together`` name it)."""
    for path in sorted(Path(philont.services.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "InvalidInputError"
                    and not any(k.arg == "argument" for k in node.keywords)
                ):
                    yield f"{path.stem}.{function.name}"


def test_a_service_refuses_an_argument_only_by_naming_it() -> None:
    # Messages like "reason must be a non-blank string" named the argument in prose only,
    # with no `argument` detail; every refusal is now built by InvalidInputError.of.
    assert set(_direct_refusals()) == ROW_READERS


TIME_PAIRS = (
    ("start", "end"),
    ("since", "until"),
    ("valid_from", "valid_until"),
    ("starts_at", "ends_at"),
    ("first_day", "last_day"),
    ("window_start", "window_end"),
)
"""Arguments that bound a span together: the first must not come after the second."""


def _reversed_spans() -> Iterator[tuple[str, str, str]]:
    for case in sorted(METHODS):
        names = set(arguments(case)[1])
        for first, second in TIME_PAIRS:
            if {first, second} <= names:
                yield case, first, second


REVERSED = list(_reversed_spans())


def test_every_span_of_every_service_is_found() -> None:
    assert len(REVERSED) >= 10, REVERSED  # the walk above, not an empty parametrization


@pytest.mark.parametrize(("case", "first", "second"), REVERSED)
def test_a_span_that_ends_before_it_starts_is_refused_naming_both_bounds(
    store: Store, case: str, first: str, second: str
) -> None:
    # It said "calendar event: end (...) is earlier than start (...)": no argument named, no
    # `arguments` detail; now like any refused combination: "starts_at, ends_at: ...".
    good = good_call(case, seeds(store))
    later: object = NOW + timedelta(days=3)
    earlier: object = NOW + timedelta(days=2)
    if first == "first_day":
        later, earlier = date(2026, 6, 20), date(2026, 6, 19)
    with store.begin(write=False) as mem:
        before = _snapshot(mem)
    kwargs = {**good, first: later, second: earlier}
    if first == "since":  # the scope is a session or a time range: here the range
        kwargs.pop("session_id", None)
    cls, fn = METHODS[case]
    with store.begin() as mem:
        with pytest.raises(InvalidInputError) as err:
            getattr(ACCESS[cls](mem), fn.__name__)(**kwargs)
        assert _snapshot(mem) == before
    assert err.value.details.get("arguments") == (first, second), err.value
    assert err.value.message.startswith(f"{first}, {second}: "), err.value
