"""Every entry point checked by :mod:`philont.arguments` refuses, for every argument, a value of
a kind its declared type does not take: an InvalidInputError whose message starts with the
argument's name and whose ``details["argument"]`` names it, before the entry point runs.

The entry points are not listed here: they are every one ``@checked`` (or ``check_of``)
registered, so a new one is covered on its first day. What each declared type takes is
written here independently of the checks (the oracle below); an argument of a type the oracle
does not know fails :func:`test_every_argument_of_every_entry_point_is_known`.
"""

from __future__ import annotations

import asyncio
import functools
import importlib
import inspect
import os
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL

from philont.arguments import ENTRY_POINTS
from philont.embed.base import Embedder
from philont.errors import InvalidInputError
from philont.learning.config import ConsolidatorConfig, LearningConfig
from philont.learning.verify import Judge
from philont.llm.base import ModelClient
from philont.memory import Memory
from philont.store import Store

MODULES = (
    "philont.agents",
    "philont.aio",
    "philont.db.engine",
    "philont.embed.index",
    "philont.learning",
    "philont.memory",
    "philont.migrate",
    "philont.store",
)
"""Every module with entry points, imported so that they are registered."""
for _module in MODULES:
    importlib.import_module(_module)


async def _async_function(*args: object) -> None:
    pass


async def _async_generator(*args: object) -> AsyncIterator[None]:
    yield None


class _AsyncCallable:
    async def __call__(self, *args: object) -> None:
        pass


ASYNC_CALLS = [_async_function, _async_generator, functools.partial(_async_function, 1)]
ASYNC_CALLS.append(_AsyncCallable())
"""Callables that, called without await, do nothing (a coroutine or async generator)."""


def _plain(v: object) -> bool:
    """Something to call that runs when called (not one of :data:`ASYNC_CALLS`)."""
    return callable(v) and not any(v is a for a in ASYNC_CALLS)


ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.integers(min_value=-3, max_value=3),
    st.sampled_from([101, 2**31 - 1, 2**31, 2**63 - 1, 2**63, -(2**63) - 1]),
    st.floats(allow_nan=True),
    st.text(max_size=5),
    st.binary(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.sampled_from([object(), Path("m.sqlite"), len, threading.Event(), URL.create("sqlite")]),
    st.sampled_from(ASYNC_CALLS),
)


def _path(v: object) -> bool:
    return isinstance(v, str | URL) or (
        isinstance(v, os.PathLike) and isinstance(os.fspath(v), str)
    )


def _whole(low: int, high: int) -> Callable[[object], bool]:
    return lambda v: type(v) is int and low <= v <= high


def _or_none(takes: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda v: v is None or takes(v)


def _a(*kinds: type) -> Callable[[object], bool]:
    return lambda v: isinstance(v, kinds)


TAKES: dict[str, Callable[[object], bool]] = {
    "bool": _a(bool),
    "str": _a(str),
    "str | None": _or_none(_a(str)),
    "int": lambda v: type(v) is int and -(2**63) <= v < 2**63,
    "int | None": _or_none(lambda v: type(v) is int and -(2**63) <= v < 2**63),
    "Target | None": _or_none(_path),
    "Target": lambda v: v is None or _path(v) or isinstance(v, Connection),
    "BusyTimeoutMs | None": _or_none(_whole(0, 2**31 - 1)),
    "Attempts": _whole(1, 100),
    "Clock": _plain,
    "Clock | None": _or_none(_plain),
    "Callable[[Memory], T]": _plain,
    "StepCallback | None": _or_none(_plain),
    "Progress | None": _or_none(_plain),
    "UnitsOf": lambda v: _plain(v) and not isinstance(v, Store),
    "Store | Units": lambda v: isinstance(v, Store) or _plain(v),
    "Store": _a(Store),
    "Memory": _a(Memory),
    "Engine": _a(Engine),
    "AsyncEngine": lambda v: False,  # no value drawn here is one
    "AsyncSession | None": lambda v: v is None,
    "Session | scoped_session[Session] | Connection": lambda v: False,
    "Connection | Session": lambda v: False,
    "Embedder": _a(Embedder),
    "Embedder | None": _or_none(_a(Embedder)),
    "Model": _a(ModelClient),
    "Config | None": _or_none(_a(LearningConfig)),
    "JudgeOf | None": _or_none(_a(Judge)),
    "ConsolidatorConfig | None": _or_none(_a(ConsolidatorConfig)),
}
"""What an argument declared so takes (the rest is refused by name)."""

UNCHECKED = {"threading.Event | None", "Any"}
"""Declared types the checks leave to the entry point (a stop event; ``**kwargs`` passed on)."""


def _public(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The entry point as callers reach it (the checked wrapper, or the class's method)."""
    found: Any = importlib.import_module(fn.__module__)
    for part in fn.__qualname__.split("."):
        found = getattr(found, part)
    return found  # type: ignore[no-any-return]


def _cases() -> Iterator[tuple[str, Callable[..., Any], str, str, bool]]:
    """(case, entry point, argument, declared type, whether it takes a ``self`` first)."""
    for fn in ENTRY_POINTS:
        params = list(inspect.signature(fn).parameters.values())
        instance = bool(params) and params[0].name == "self"
        for p in params:
            if p.name in ("self", "cls") or p.kind is p.VAR_KEYWORD:
                continue
            yield (
                f"{fn.__module__}.{fn.__qualname__}:{p.name}",
                fn,
                p.name,
                str(p.annotation),
                instance,
            )


CASES = [c for c in _cases() if c[3] not in UNCHECKED]
SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def test_every_argument_of_every_entry_point_is_known() -> None:
    entry_points = {f"{fn.__module__}.{fn.__qualname__}" for fn in ENTRY_POINTS}
    assert {
        "philont.store.Store.open",
        "philont.store.Store.begin",
        "philont.store.Store.run",
        "philont.store.shared",
        "philont.memory.Memory.open",
        "philont.aio.AsyncStore.run",
        "philont.db.engine.create_engine",
        "philont.migrate.upgrade",
        "philont.embed.index.backfill",
        "philont.learning.consolidate.Consolidator.__init__",
    } <= entry_points
    unknown = {(case, declared) for case, _f, _n, declared, _i in _cases()}
    unknown = {(c, d) for c, d in unknown if d not in TAKES and d not in UNCHECKED}
    assert not unknown, f"an entry point's argument of a type this test does not know: {unknown}"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty working directory, checked to stay empty (a refused call makes no file)."""
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    ("case", "fn", "name", "declared", "instance"), CASES, ids=[c[0] for c in CASES]
)
@SETTINGS
@given(value=ANYTHING)
@example(value=ASYNC_CALLS[0])  # every case meets each of them, not only when drawn
@example(value=ASYNC_CALLS[1])
@example(value=ASYNC_CALLS[2])
@example(value=ASYNC_CALLS[3])
def test_a_value_of_a_kind_the_argument_does_not_take_is_refused_by_name(
    workdir: Path, case: str, fn: Any, name: str, declared: str, instance: bool, value: object
) -> None:
    if TAKES[declared](value):
        return
    entry = _public(fn)
    args: tuple[object, ...] = (object(),) if instance else ()  # a self it never reaches

    def call() -> object:
        result = entry(*args, **{name: value})
        return asyncio.run(result) if inspect.iscoroutine(result) else result

    with pytest.raises(InvalidInputError) as raised:
        call()
    assert str(raised.value).startswith(f"{name}: "), (case, str(raised.value))
    assert raised.value.details["argument"] == name, case
