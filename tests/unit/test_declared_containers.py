"""An argument declared as a container of items (``Sequence[MessageIn]``, ``Iterable[int]``,
``list[int]``, ``str | Sequence[str]``, each maybe ``| None``) is checked on entry, by name:
the container must be right (not None where None is not declared, not one string where a
sequence of items is, not a number, bytes or a mapping). ``timeline.append_many(None)`` was
a TypeError, ``link_skill(5)`` and ``query(session_ids=5)`` too. The keys of a method's typed
``**options`` are checked by their declared types like its parameters."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from philont.arguments import (
    _alternatives,
    _container,
    _declared_class,
    _option_types,
)
from philont.db.backend import SqliteBackend
from philont.embed.index import EmbeddingIndex
from philont.errors import InvalidInputError
from tests.support import public_methods


class _Mem:
    backend = SqliteBackend()


class _Unbound:
    """Enough of a service for the checks on entry, which come before the method runs (a call
    that passed them would fail here with an untyped error)."""

    mem = _Mem()


_public_methods = public_methods


def _containers() -> Iterator[tuple[str, Any, str, str]]:
    """``(Class.method, function, argument, declared)`` of every argument declared as a
    container of items in a public service method."""
    for case, fn in _public_methods():
        for param in inspect.signature(inspect.unwrap(fn)).parameters.values():
            if _container(str(param.annotation)) is not None:
                yield case, fn, param.name, str(param.annotation)


CONTAINERS = sorted(_containers(), key=lambda c: (c[0], c[2]))


def test_the_containers_are_found() -> None:
    found = {f"{case} {argument}" for case, _fn, argument, _declared in CONTAINERS}
    assert {
        "TimelineService.append_many messages",
        "TimelineService.query session_ids",
        "TimelineService.query roles",
        "ActionLog.link_skill action_ids",
        "SearchService.message_rows exclude_ids",
        "SearchService.message_rows roles",
        "TimelineRetriever.retrieve session_ids",
        "CaseBook.judged_runs first_action_ids",
        "SkillRecipes.set_recipe steps",
        "SkillService.create trigger_keywords",
    } <= found


def _bad(declared: str) -> list[object]:
    alternatives = _alternatives(declared)
    bad: list[object] = [5, 1.5, True, b"bytes", {"k": 1}, object()]
    if "None" not in alternatives:
        bad.append(None)
    if "str" not in alternatives:
        bad += ["x", ""]
    return bad


@pytest.mark.parametrize(
    ("case", "fn", "argument", "declared"), CONTAINERS, ids=[f"{c[0]}-{c[2]}" for c in CONTAINERS]
)
def test_a_wrong_container_is_refused_by_name_on_entry(
    case: str, fn: Any, argument: str, declared: str
) -> None:
    for value in _bad(declared):
        with pytest.raises(InvalidInputError, match=rf"^{argument}: ") as caught:
            fn(_Unbound(), **{argument: value})
        assert caught.value.details["argument"] == argument, (case, value)


def test_an_argument_declared_as_a_runtime_checkable_protocol_is_checked_on_entry() -> None:
    # backfill(embedder="x") failed with AttributeError ('str' has no attribute 'model_id').
    for value in ("x", None, 5):
        with pytest.raises(InvalidInputError, match=r"^embedder: must be Embedder") as caught:
            EmbeddingIndex.backfill(_Unbound(), embedder=value)  # type: ignore[arg-type]
        assert caught.value.details["argument"] == "embedder"


def test_what_a_container_argument_takes() -> None:
    rule = _container("Iterable[int]")
    assert rule is not None
    rule.check("ids", iter([1, 2]))  # a generator is an iterable
    rule.check("ids", {1, 2})
    sequence = _container("Sequence[str] | None")
    assert sequence is not None
    sequence.check("ids", ("a",))
    with pytest.raises(InvalidInputError, match=r"^ids: must be a sequence"):
        sequence.check("ids", {"a"})  # a set has no order
    either = _container("str | Sequence[str]")
    assert either is not None
    either.check("words", "one string")
    assert _container("Mapping[str, int] | None") is None  # a mapping is its method's
    assert _container("dict[str, Any]") is None
    assert _container("Sequence[str] | int") is None  # alternatives it cannot tell apart


def _typed_options() -> Iterator[tuple[str, Any, str, str]]:
    """``(Class.method, function, key, declared)`` of each key of a method's typed
    ``**options: Unpack[SomeTypedDict]`` that the checks on entry can tell (not a mapping, not
    an enum, not ``Any``)."""
    simple = {"str", "str | None", "int", "int | None", "bool", "bool | None"}
    for case, fn in _public_methods():
        unwrapped = inspect.unwrap(fn)
        for param in inspect.signature(unwrapped).parameters.values():
            if param.kind is not param.VAR_KEYWORD:
                continue
            for key, declared in _option_types(
                [str(param.annotation)], unwrapped.__globals__
            ).items():
                if declared in simple or _declared_class(declared, unwrapped.__globals__):
                    yield case, fn, key, declared


OPTIONS = sorted(_typed_options(), key=lambda c: (c[0], c[2]))


def test_the_typed_options_are_found() -> None:
    found = {f"{case} {key}" for case, _fn, key, _declared in OPTIONS}
    assert {
        "ScheduleService.create project",
        "ScheduleService.create timezone",
        "ScheduleService.replace interval_ms",
        "SearchService.messages session_ids",
    } <= found


@pytest.mark.parametrize(
    ("case", "fn", "key", "declared"), OPTIONS, ids=[f"{c[0]}-{c[2]}" for c in OPTIONS]
)
def test_a_typed_option_of_the_wrong_type_is_refused_by_name_on_entry(
    case: str, fn: Any, key: str, declared: str
) -> None:
    # schedules.create(project=7) met the kebab-case rule ("got 7") instead of its declared
    # type since the options became **spec: Unpack[ScheduleSpec]; timezone=5 likewise.
    with pytest.raises(InvalidInputError, match=rf"^{key}: ") as caught:
        fn(_Unbound(), "x", **{key: object()})
    assert caught.value.details["argument"] == key, case
