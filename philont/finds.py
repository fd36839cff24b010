"""Methods that find rows by text (a lookup, or a change or removal of the rows they find),
and what they answer when that text names nothing the database can hold.

PostgreSQL's text cannot hold U+0000 (NUL), SQLite's can. A write of such text is refused on
PostgreSQL (:mod:`philont.arguments`), but a lookup by it is no refusal: nothing can be stored
under it there, so the method answers as it does on SQLite when nothing matches ("not found").
A service method says which of its arguments are keys with :func:`finds`; its checks on entry
(:func:`philont.arguments.wrap`) then hand a key holding a NUL to :func:`finding`'s answer."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from philont.schemas import inputs

__all__ = ["ABSENT", "PASS_ON", "Finds", "finding", "finds", "finds_of"]

F = TypeVar("F", bound=Callable[..., Any])

Check = Callable[[Any, tuple[Any, ...], dict[str, Any]], dict[str, Any] | None]
"""The check of a call's arguments (:func:`philont.arguments.wrap`): None, or what its keys
that this database cannot hold become (:data:`ABSENT`, a sequence without such items)."""


@dataclass(frozen=True, slots=True)
class Finds:
    """What a method that finds rows by text (a lookup, or a change or removal of rows it
    finds) is given as keys, and what it answers when a key names nothing.

    ``keys``: the text arguments that only name rows, never stored as given; ``typed``: those of
    them with an input type of their own (:func:`philont.schemas.inputs.check`), checked on entry
    on every backend. ``absent(service, **arguments)``: the answer when a key holds text this
    database cannot hold (a NUL character on PostgreSQL): nothing can be stored under it, so the
    method answers as it does when nothing matches (it may raise the method's not-found error);
    None: what the return type says (``X | None``: None, a list: ``[]``, ``bool``: False,
    ``int``: 0); :data:`PASS_ON`: the method itself. A sequence of keys loses its unheld items
    (none left: ``absent``)."""

    keys: frozenset[str]
    typed: Mapping[str, Any]
    absent: Callable[..., Any] | None


_FINDS = "__philont_finds__"

PASS_ON: Any = object()
"""``finds(..., absent=PASS_ON)``: the method runs as given; it hands its key to lookups that
answer for it (methods marked ``finds`` themselves)."""


def finds(*keys: str, absent: Callable[..., Any] | None = None, **typed: Any) -> Callable[[F], F]:
    """Mark a public service method as one that finds rows by the text arguments ``keys`` (and
    the keywords of ``typed``, each with its input type): :class:`Finds`. On PostgreSQL a key
    holding a NUL character is then "not found", as on SQLite, instead of a refusal."""

    def mark(fn: F) -> F:
        setattr(fn, _FINDS, Finds(frozenset(keys) | frozenset(typed), typed, absent))
        return fn

    return mark


def finds_of(fn: Callable[..., Any]) -> Finds | None:
    """``fn``'s :func:`finds` mark, or None."""
    found = getattr(fn, _FINDS, None)
    return found if isinstance(found, Finds) else None


def _nothing(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The answer of ``fn`` when nothing matches, by its declared return type (:class:`Finds`)."""
    returned = str(inspect.signature(fn).return_annotation)
    if returned.endswith(" | None"):
        return lambda *_, **__: None
    if returned.startswith(("list[", "builtins.list[")):
        return lambda *_, **__: []
    if returned in ("bool", "int"):
        value = False if returned == "bool" else 0
        return lambda *_, **__: value
    raise TypeError(f"{fn.__qualname__} returns {returned}: give finds(..., absent=) its answer")


ABSENT: Any = object()
"""What a key holding text this database cannot hold becomes (:func:`finding`)."""


def finding(fn: F, check: Check, found: Finds) -> F:
    """The method ``fn`` (a service's, synchronous) that finds rows by ``found.keys``: run as
    given, with the unheld items of a sequence of keys left out, or answered by ``absent``
    when a key (or every item of one) names nothing this database can hold."""
    if inspect.iscoroutinefunction(fn):
        raise TypeError(f"{fn.__qualname__}: finds() marks synchronous service methods only")
    signature = inspect.signature(fn)
    absent = found.absent or _nothing(fn)

    @functools.wraps(fn)
    def finding_method(self: Any, *args: Any, **kwargs: Any) -> Any:
        unheld = check(self, args, kwargs) if args or kwargs else None
        if not unheld or absent is PASS_ON:
            return fn(self, *args, **kwargs)
        bound = signature.bind(self, *args, **kwargs)
        if any(value is ABSENT or not value for value in unheld.values()):
            bound.apply_defaults()
            given = {k: v for k, v in bound.arguments.items() if k != "self"}
            for name, kind in found.typed.items():  # as the method checks them on SQLite
                if given.get(name) is not None:
                    inputs.check(kind, given[name], name)
            return absent(self, **given)
        bound.arguments.update(unheld)
        return fn(*bound.args, **bound.kwargs)

    return finding_method  # type: ignore[return-value]
