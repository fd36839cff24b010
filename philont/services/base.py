"""The base of every service: bound to one unit of work, never committing it, and checking
what every public method is given on entry."""

from __future__ import annotations

import functools
import inspect
import itertools
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.orm import Session

from philont.clock import Clock
from philont.errors import InvalidInputError
from philont.schemas import inputs

if TYPE_CHECKING:
    from philont.memory import Memory

_CONTAINERS = (list, tuple, set, frozenset)


def _lone_surrogate(value: object) -> str | None:
    """Why ``value`` (text, or text inside lists, tuples, sets and mappings at any depth)
    cannot be stored, or None: the database takes valid Unicode only."""
    stack: list[object] = [value]
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = inputs.unstorable(item)
            if problem is not None:
                return problem
        elif isinstance(item, (Mapping, *_CONTAINERS)) and id(item) not in seen:
            seen.add(id(item))  # a container holding itself is walked once
            if isinstance(item, Mapping):
                stack.extend(itertools.chain(item.keys(), item.values()))
            else:
                stack.extend(item)
    return None


def _check_argument(name: str, value: object, *, limit_may_be_none: bool) -> None:
    """The rules every service applies to an argument by its name: one limit policy, a
    sequence of session ids is never one string, and text must be storable."""
    if name == "limit":
        if value is not None or not limit_may_be_none:
            inputs.check(inputs.Limit, value, "limit")
        return
    if name == "session_ids" and isinstance(value, str):
        raise InvalidInputError("session_ids: a sequence of ids, not one string", argument=name)
    problem = _lone_surrogate(value)
    if problem is not None:
        raise InvalidInputError(f"{name}: {problem}", argument=name)


def _check_searched(name: str, value: object) -> None:
    """A searched argument may hold any text, but it must be text (``None``, bytes or a list
    would otherwise fail deep inside the method with an untyped error)."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{name}: must be text, got {type(value).__name__}", argument=name)


def _checked(fn: Callable[..., Any], searched_only: frozenset[str]) -> Callable[..., Any]:
    """``fn`` with its arguments checked (:func:`_check_argument`) before it runs, so a
    refused call has touched nothing."""
    signature = inspect.signature(fn)
    positional = [
        p.name
        for p in list(signature.parameters.values())[1:]
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    limit = signature.parameters.get("limit")
    limit_may_be_none = limit is not None and limit.default is None

    @functools.wraps(fn)
    def checked(self: Service, *args: Any, **kwargs: Any) -> Any:
        for name, value in itertools.chain(zip(positional, args, strict=False), kwargs.items()):
            if name in searched_only:
                _check_searched(name, value)
            else:
                _check_argument(name, value, limit_may_be_none=limit_may_be_none)
        return fn(self, *args, **kwargs)

    return checked


class Service:
    """A service of one unit of work (``mem.facts``, ``mem.search``, ...). It reaches the
    transaction through the unit of work on every call, so a service kept past the end of
    its ``with`` block refuses to work (:class:`~philont.errors.UnitOfWorkError`) instead of
    beginning a transaction nobody ends. Services may flush; they never commit.

    Every public method of a subclass checks its arguments before it runs: text anywhere in
    them must be valid Unicode (the arguments in ``searched_only`` may hold any text, but must
    be text), ``limit`` follows the one limit policy (``inputs.Limit``; None only where the
    method's default is None), and ``session_ids`` is never a single string. A refusal is an
    :class:`~philont.errors.InvalidInputError` naming the argument."""

    searched_only: ClassVar[frozenset[str]] = frozenset({"query"})
    """Arguments that are searched, never stored: any text is a query (the search plan makes
    it safe), lone surrogates included."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, attr in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(attr):
                setattr(cls, name, _checked(attr, cls.searched_only))

    def __init__(self, mem: Memory) -> None:
        self.mem = mem

    @property
    def session(self) -> Session:
        return self.mem.session

    @property
    def clock(self) -> Clock:
        return self.mem.clock

    def _now(self) -> datetime:
        """The clock's time, aware UTC at storage precision (:meth:`Memory.clock`)."""
        return self.mem.clock()
