"""Arguments checked on entry by their declared types: one engine for every public method of a
service (:class:`philont.services.base.Service`) and every entry point that opens a database or
begins a unit of work (:func:`checked`: ``Store.open`` / ``from_engine`` / ``run`` / ``join``,
``shared()``, ``Memory.open``, ``AsyncStore``'s, ``create_engine``, ``create_async_engine``,
``resolve_url``, ``philont.migrate``, ``philont.agents``, ``Learner``, ``Consolidator``,
``philont.embed.backfill``; ``Store.begin`` calls the same checks itself, :func:`check_of`).
Every one is listed in :data:`ENTRY_POINTS` (a property test goes through them all).

What an argument is declared as is what it must be. ``str`` (``str | None``, ``Sequence[str]``):
text; ``bool``: True or False, never a truthy stand-in (``write="no"`` began a writing unit);
``int`` (or a collection of them): a whole number a 64-bit column holds; a class (``datetime``,
``Engine``, ``Session | Connection``; not an enum) or a ``runtime_checkable`` protocol (an
embedder): an instance of it; a container of items (``Sequence[X]``, ``Iterable[X]``, ...): that
container, not one string, bytes or a mapping; ``Callable[...]``, an alias of one (``Clock``) or
a protocol of ``__call__``: something to call; an ``Annotated`` type (``Limit``,
``BusyTimeoutMs``, ``Attempts`` of :mod:`philont.schemas.inputs`, a database ``Target``): its
rule. A refusal is an :class:`~philont.errors.InvalidInputError` whose message starts with the
argument's name and whose ``details["argument"]`` is that name, before anything ran. Names
that only a type checker sees (imported under ``TYPE_CHECKING``) are not checked.

A service method that finds rows by text (a lookup, or a change or removal of the rows it
finds) names its keys (:mod:`philont.finds`): where text cannot hold a NUL character
(PostgreSQL), a key holding one is no refusal but "not found", as on SQLite.

Without these checks ``Store.open(5)`` made a file named ``5``, ``busy_timeout_ms=-1`` switched
SQLite's busy handler off and ``store.run(5)`` failed with ``TypeError: 'int' object is not
callable``."""

from __future__ import annotations

import collections.abc
import enum
import functools
import inspect
import itertools
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from philont.db.backend import refuse_nul
from philont.domain import json_values
from philont.errors import InvalidInputError
from philont.finds import ABSENT, Check, Finds, finding
from philont.schemas import inputs

__all__ = [
    "ASYNC_REFUSED",
    "ENTRY_POINTS",
    "PENDING_REFUSED",
    "Rules",
    "check_of",
    "checked",
    "is_async",
    "sync_result",
    "wrap",
]

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

_CONTAINERS = (list, tuple, set, frozenset)
_WALKED = (*_CONTAINERS, Mapping)


def _lone_surrogate(value: object) -> str | None:
    """Why ``value`` (text, or text inside lists, tuples, sets and mappings at any depth)
    cannot be stored, or None: the database takes valid Unicode only."""
    # Every argument of every public service call passes here: text and scalars (None,
    # numbers, times) are answered without setting up the walk.
    if isinstance(value, str):
        return inputs.unstorable(value)
    if not isinstance(value, _WALKED):
        return None
    stack: list[object] = [value]
    # a container holding itself is walked once; kept by id with the container itself: a
    # mapping that makes its values anew frees one, and the next one made at its address was
    # taken for walked (a lone surrogate in it got through)
    seen: dict[int, object] = {}
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = inputs.unstorable(item)
            if problem is not None:
                return problem
        elif isinstance(item, _WALKED) and id(item) not in seen:
            seen[id(item)] = item
            if isinstance(item, Mapping):
                stack.extend(itertools.chain(item.keys(), item.values()))
            else:
                stack.extend(item)
    return None


_INT64 = (-(2**63), 2**63 - 1)
"""Every integer a database column or parameter can hold (SQLite's and PostgreSQL's bigint)."""

_TEXT, _OPTIONAL_TEXT = "str", "str | None"
_TEXTS = ("Sequence[str]", "Sequence[str] | None")
_BOOLS = ("bool", "bool | None")
_INTS = ("int", "int | None")
_INT_COLLECTIONS = ("Collection[int]", "Iterable[int]", "list[int]")


def _kind(value: object) -> str:
    return type(value).__name__


ASYNC_REFUSED = (
    "must be a plain function (it is called synchronously, without await); got an async "
    "function, whose body would never run"
)
"""What refuses an async function where a plain one is called (:func:`is_async`)."""


def _refuse_async(name: str, value: object) -> None:
    if is_async(value):
        raise InvalidInputError.of(name, ASYNC_REFUSED)


def is_async(value: object) -> bool:
    """Whether calling ``value`` gives a coroutine or an async generator instead of running
    it: an ``async def`` function (or a partial of one), or an object whose ``__call__`` is
    one. Every ``Callable`` an entry point takes (``work``, ``clock``, ``units``) is called
    synchronously: ``await astore.run(async_fn)`` committed an empty unit of work and
    returned the coroutine, its body never run."""
    if not inspect.isroutine(value) and not isinstance(value, functools.partial):
        value = inspect.getattr_static(type(value), "__call__", value)  # an instance: its class's
    return inspect.iscoroutinefunction(value) or inspect.isasyncgenfunction(value)


def sync_result(name: str, result: T) -> T:
    """``result`` of the function ``name`` called synchronously, refused when it is awaitable.
    A coroutine (a lambda or a plain function that returned one): what it was to do never ran;
    it is closed, so no "never awaited" warning follows. A Task or Future (scheduled work) is
    refused too: the result of a unit of work is what it did, committed; scheduled work is
    no part of its transaction (:data:`PENDING_REFUSED`). It is left as it is (it may be the
    host's, awaited elsewhere)."""
    if inspect.isawaitable(result):
        if inspect.iscoroutine(result):
            result.close()
            why = (
                "an awaitable: what it was to do never ran); it is called synchronously inside "
                "the unit of work: do the work there, await before or after it"
            )
        else:
            why = PENDING_REFUSED
        raise InvalidInputError.of(name, f"returned {type(result).__name__} ({why}")
    return result


PENDING_REFUSED = (
    "scheduled work, not its result: it is no part of the unit of work's transaction; it runs "
    "after the commit, or between the unit's statements, is not undone when the unit is "
    "rolled back, is scheduled again when the unit is run again after a conflict, and cannot "
    "use the unit's services once the unit has ended); return what it needs, and schedule it "
    "after run() returns"
)
"""Why a unit of work's ``work`` may not return a Task or Future (:func:`sync_result`)."""


def _check_declared(
    name: str, declared: str, kind: _Rule | None, value: object, *, keeps_nul: bool
) -> None:
    """The argument's declared type, checked before it reaches SQL (a non-text id failed
    inside PostgreSQL with a driver error that aborted the whole unit of work, and compared
    as "not found" on SQLite; a NUL character in text failed at the flush on PostgreSQL,
    rolling back everything the unit of work had done). ``kind``: the rule of an argument
    declared as anything else (or it or None), when it can be checked (:func:`_declared_class`)."""
    if declared in (_TEXT, _OPTIONAL_TEXT):
        if value is not None or declared == _TEXT:
            rule = "must be text" if declared == _TEXT else "must be text or None"
            _check_text(name, value, rule, keeps_nul=keeps_nul)
    elif declared in _TEXTS and isinstance(value, _CONTAINERS):
        for item in value:
            _check_text(name, item, "must be a sequence of text", keeps_nul=keeps_nul)
    elif declared in _BOOLS:
        if not isinstance(value, bool) and not (value is None and declared == _BOOLS[1]):
            raise InvalidInputError.of(name, f"must be True or False, got {value!r}")
    elif declared in _INTS:
        if value is not None or declared == _INTS[0]:
            _check_int(name, value)
    elif declared in _INT_COLLECTIONS and isinstance(value, _CONTAINERS):
        for item in value:
            _check_int(name, item)
    elif kind is not None and (value is not None or not declared.endswith(" | None")):
        kind.check(name, value)


@dataclass(frozen=True, slots=True)
class _Instance:
    """An instance of one of ``kinds`` (a class, a ``runtime_checkable`` protocol), or
    something to call where ``call`` (``Store | Units``)."""

    kinds: tuple[type, ...]
    call: bool = False
    none: bool = False  # None is taken too (named in the refusal)

    def check(self, name: str, value: object) -> None:
        if not isinstance(value, self.kinds) and self.call:
            _refuse_async(name, value)
        if not isinstance(value, self.kinds) and not (self.call and callable(value)):
            wanted = [k.__name__ for k in self.kinds] + ["callable"] * self.call
            wanted += ["None"] * self.none
            raise InvalidInputError.of(name, f"must be {' or '.join(wanted)}, got {_kind(value)}")


@dataclass(frozen=True, slots=True)
class _Callable:
    """Something to call (``Callable[...]``, ``Clock``, a protocol of ``__call__``)."""

    none: bool = False

    def check(self, name: str, value: object) -> None:
        _refuse_async(name, value)
        if not callable(value):
            wanted = "callable or None" if self.none else "callable"
            raise InvalidInputError.of(name, f"must be {wanted}, got {_kind(value)}")


@dataclass(frozen=True, slots=True)
class _Typed:
    """An ``Annotated`` type's own rule (:func:`philont.schemas.inputs.check`)."""

    kind: Any

    def check(self, name: str, value: object) -> None:
        inputs.check(self.kind, value, name)


@dataclass(frozen=True, slots=True)
class _Container:
    """What an argument declared as a sequence (``Sequence[X]``, ``Collection[X]``,
    ``Iterable[X]``, ``list[X]``; or it or text, or None) must be: the container, not one
    string, bytes or a mapping. Its items are the method's to check (a model type's, say),
    except text and whole numbers, which :func:`_check_declared` checks itself."""

    abc: type
    what: str
    text: bool  # one string is allowed too (``str | Sequence[str]``)

    def check(self, name: str, value: object) -> None:
        if isinstance(value, str) and self.text:
            return
        if isinstance(value, str | bytes | bytearray | Mapping) or not isinstance(value, self.abc):
            raise InvalidInputError.of(name, f"must be {self.what}, got {_kind(value)}")


_Rule = _Instance | _Callable | _Typed | _Container

_CONTAINER_KINDS = {
    "Sequence": (Sequence, "a sequence (a list or tuple)"),
    "list": (Sequence, "a sequence (a list or tuple)"),
    "Collection": (Collection, "a collection (a list, tuple or set)"),
    "Iterable": (Iterable, "an iterable (a list, tuple, set or generator)"),
}


def _alternatives(declared: str) -> list[str]:
    """``declared``'s alternatives (``A | B[C | D]`` -> ``A``, ``B[C | D]``)."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(declared):
        depth += (char == "[") - (char == "]")
        if char == "|" and depth == 0:
            parts.append(declared[start:i].strip())
            start = i + 1
    parts.append(declared[start:].strip())
    return parts


def _container(declared: str) -> _Container | None:
    """The rule of an argument declared as one kind of container of items (or it, text or
    None), or None."""
    alternatives = _alternatives(declared)
    containers = [a for a in alternatives if a.partition("[")[0] in _CONTAINER_KINDS]
    if len(containers) != 1 or not set(alternatives) - {containers[0]} <= {"str", "None"}:
        return None
    abc, what = _CONTAINER_KINDS[containers[0].partition("[")[0]]
    if "str" in alternatives:
        what = f"text or {what}"
    return _Container(abc, what, "str" in alternatives)


def _is_call(found: object) -> bool:
    """Whether ``found`` declares something to call: ``Callable[...]`` (an alias of one, such as
    ``Clock``) or a protocol whose member is ``__call__``."""
    if typing.get_origin(found) is collections.abc.Callable:
        return True
    return getattr(found, "_is_protocol", False) and "__call__" in vars(found)


def _class_of(found: object) -> type | None:
    """``found`` when an instance check says what it means: not an enum (its values are given
    as text too), not a builtin scalar, not an abstract collection, not a protocol that cannot
    be checked at run time (a ``runtime_checkable`` one can: its methods are there)."""
    if not isinstance(found, type) or issubclass(found, enum.Enum):
        return None
    if found.__module__ in ("builtins", "collections.abc", "typing") or (
        getattr(found, "_is_protocol", False) and not getattr(found, "_is_runtime_protocol", False)
    ):
        return None
    try:
        isinstance(None, found)  # typing.Any is a class that refuses this
    except TypeError:
        return None
    return found


def _declared_class(declared: str, namespace: Mapping[str, object]) -> _Rule | None:
    """The rule of an argument declared ``X`` or ``X | None`` (``X`` a name in the function's
    module), or as a union of classes, or a container (:class:`_Container`); None when it
    cannot be checked (an enum, ``Any``, a name only imported for type checking)."""
    container = _container(declared)
    if container is not None:
        return container
    alternatives = [a for a in _alternatives(declared) if a != "None"]
    none = declared.endswith(" | None")
    if len(alternatives) == 1 and alternatives[0].startswith("Callable["):
        return _Callable(none)
    found = [namespace.get(a.partition("[")[0]) for a in alternatives]
    if len(found) == 1 and typing.get_origin(found[0]) is typing.Annotated:
        return _Typed(found[0])
    calls = [f for f in found if _is_call(f)]
    if calls and len(calls) == len(found):
        return _Callable(none)
    classes = [_class_of(f) for f in found if f not in calls]
    if not classes or None in classes:
        return None
    return _Instance(tuple(c for c in classes if c is not None), call=bool(calls), none=none)


def _check_text(name: str, value: object, rule: str, *, keeps_nul: bool) -> None:
    if not isinstance(value, str):
        raise InvalidInputError.of(name, f"{rule}, got {_kind(value)}")
    refuse_nul(value, name, keeps_nul=keeps_nul)


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError.of(name, f"must be a whole number, got {value!r}")
    if not _INT64[0] <= value <= _INT64[1]:
        raise InvalidInputError.of(
            name, f"{value} is outside the integers a database holds (64-bit)"
        )


def _check_stored(name: str, value: object, *, limit_may_be_none: bool) -> None:
    """The rules of a value a service stores or reads by, by the argument's name: one limit
    policy, a sequence of session ids is never one string, and text must be storable."""
    if name == "limit":
        if value is not None or not limit_may_be_none:
            inputs.check(inputs.Limit, value, "limit")
        return
    if name == "session_ids" and isinstance(value, str):
        raise InvalidInputError.of(name, "a sequence of ids, not one string")
    problem = _lone_surrogate(value)
    if problem is not None:  # inside a container: say where (only now: the walk costs more)
        where = None if isinstance(value, str) else json_values.lone_surrogate(value, name)
        if where is not None:  # "<name and place>: <why>"
            raise InvalidInputError(where, argument=name)
        raise InvalidInputError.of(name, problem)


def _unheld_key(
    name: str, declared: str, kind: _Rule | None, value: object, found: Finds
) -> object:
    """What the key ``name`` (checked as declared, a NUL allowed) becomes where text cannot
    hold a NUL character: None (it is held), :data:`~philont.finds.ABSENT` (text with a NUL),
    or a sequence without its items with a NUL."""
    _check_declared(name, declared, kind, value, keeps_nul=True)
    if isinstance(value, str):
        return ABSENT if "\x00" in value else None
    if isinstance(value, _CONTAINERS) and any(isinstance(v, str) and "\x00" in v for v in value):
        return [v for v in value if not (isinstance(v, str) and "\x00" in v)]
    return None


def _check_searched(name: str, value: object) -> None:
    """A searched argument may hold any text, but it must be text (``None``, bytes or a list
    would otherwise fail deep inside the method with an untyped error)."""
    if not isinstance(value, str):
        raise InvalidInputError.of(name, f"must be text, got {_kind(value)}")


def _option_types(options: list[str], namespace: Mapping[str, object]) -> dict[str, str]:
    """The declared types of the keys of ``**options: Unpack[SomeTypedDict]``, as written (a
    method's typed options are checked like its parameters; a keyword that is neither one of
    them nor a parameter is refused, as Python refuses it for a method without options)."""
    types: dict[str, str] = {}
    for annotation in options:
        typed = namespace.get(annotation.removeprefix("Unpack[").removesuffix("]"))
        if annotation.startswith("Unpack[") and typed is not None:
            types.update(
                (key, getattr(value, "__forward_arg__", str(value)))
                for key, value in getattr(typed, "__annotations__", {}).items()
            )
    return types


def _settled(value: object) -> bool:
    """Whether the checks of an argument (but ``limit``'s) answer ``value`` as they answer any
    value of its type: true of None, True/False, datetimes, and text that is valid Unicode
    without a NUL character (they look at its type, its Unicode and its NULs only). A call
    whose argument of that name and type passed before skips the checks: every service call
    runs them, and they cost more than the rest of a small call."""
    if isinstance(value, str):
        return "\x00" not in value and inputs.unstorable(value) is None
    return value is None or isinstance(value, bool | datetime)


@dataclass(frozen=True, slots=True)
class Rules:
    """What a family of functions adds to the declared types of its arguments."""

    stored: bool = False
    """Its values are stored or read by: text anywhere in them must be valid Unicode, ``limit``
    follows the one limit policy (``inputs.Limit``; None only where the default is None) and
    ``session_ids`` is never one string."""
    searched_only: frozenset[str] = frozenset()
    """Arguments that are searched, never stored: any text, but text."""
    unstored: frozenset[str] = frozenset()
    """Text arguments that never reach the database (a NUL character is fine in them)."""
    finds: Finds | None = None
    """The method finds rows by some of its text arguments (:func:`philont.finds.finds`)."""


ENTRY = Rules()
"""An entry point's: its arguments are checked by their declared types alone."""


def wrap(fn: F, rules: Rules, keeps_nul: Callable[[Any], bool] | None = None) -> F:
    """``fn`` with its arguments checked (:func:`_checker`) before it runs, so a refused call
    has touched nothing. ``keeps_nul(self)``: whether text may hold NUL (the unit of work's
    backend); without it, it may (an entry point stores no text as given). A key of
    ``rules.finds`` that this database cannot hold answers as nothing found
    (:func:`philont.finds.finding`)."""
    check, method = _checker(fn, rules, keeps_nul)
    if rules.finds is not None:
        return finding(fn, check, rules.finds)

    if inspect.iscoroutinefunction(fn):  # checked when awaited, as the call's other errors
        return _awaited(fn, check, method)
    if method:

        @functools.wraps(fn)
        def checked_method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if args or kwargs:
                check(self, args, kwargs)
            return fn(self, *args, **kwargs)

        return checked_method  # type: ignore[return-value]

    @functools.wraps(fn)
    def checked_function(*args: Any, **kwargs: Any) -> Any:
        check(None, args, kwargs)
        return fn(*args, **kwargs)

    return checked_function  # type: ignore[return-value]


def _awaited(fn: F, check: _Check, method: bool) -> F:
    @functools.wraps(fn)
    async def checked_coroutine(*args: Any, **kwargs: Any) -> Any:
        check(args[0] if method else None, args[method:], kwargs)
        return await fn(*args, **kwargs)

    return checked_coroutine  # type: ignore[return-value]


_Check = Check  # None, or what the unheld keys become (philont.finds)


def _parameters(fn: Callable[..., Any]) -> tuple[bool, list[str], dict[str, str], list[str]]:
    """Whether ``fn`` is a method (its ``self`` or ``cls`` is not checked), the names of its
    positional parameters, the declared type of each parameter (text, as written: annotations
    are text under ``from __future__ import annotations``) and those of its ``**options``."""
    params = list(inspect.signature(fn).parameters.values())
    method = bool(params) and params[0].name in ("self", "cls")
    params = params[method:]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    declared = {p.name: str(p.annotation) for p in params}
    options = [str(p.annotation) for p in params if p.kind is p.VAR_KEYWORD]
    return method, positional, declared, options


def _checker(
    fn: Callable[..., Any], rules: Rules, keeps_nul: Callable[[Any], bool] | None
) -> tuple[_Check, bool]:
    """The check of ``fn``'s arguments (:func:`_check_stored` under ``rules.stored``,
    :func:`_check_declared`; the keys of typed ``**options`` too), and whether ``fn`` is a
    method (its ``self`` or ``cls`` is not checked).

    Every service call passes here, and the checks cost more than a small call: an argument
    of a (name, type) that passed before with a value settled by its type (None, True/False,
    a datetime; text at a glance, :func:`_settled`) is not checked again."""
    method, positional, declared, options = _parameters(fn)
    limit = inspect.signature(fn).parameters.get("limit")
    limit_may_be_none = limit is not None and limit.default is None
    # resolved on the first call, when the module is complete (in the module that wrote
    # ``fn``, also under a decorator such as ``stored_values.careful_read``)
    names = inspect.unwrap(fn).__globals__
    classes: dict[str, _Rule | None] = {}
    found = rules.finds

    passed: set[tuple[str, type]] = set()  # (declared argument, type) of settled values passed
    closed: list[bool] = []  # typed **options: a key they do not declare is no argument

    def check_one(name: str, value: object, nul_kept: bool) -> object:
        if name in rules.searched_only:
            _check_searched(name, value)
            return None
        if rules.stored:
            _check_stored(name, value, limit_may_be_none=limit_may_be_none)
        if name not in declared:
            return None
        if found is not None and name in found.keys and not nul_kept:
            return _unheld_key(name, declared[name], classes[name], value, found)
        nul_kept = nul_kept or name in rules.unstored
        _check_declared(name, declared[name], classes[name], value, keeps_nul=nul_kept)
        return None

    def check(
        first: object, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> dict[str, Any] | None:
        if not classes:
            keys = _option_types(options, names)
            declared.update(keys)
            closed.append(bool(keys))
            classes.update({n: _declared_class(d, names) for n, d in declared.items()})
        unheld: dict[str, Any] | None = None
        for name, value in itertools.chain(zip(positional, args, strict=False), kwargs.items()):
            if closed[0] and name not in declared:  # as Python refuses it for a parameter
                raise TypeError(f"{fn.__qualname__}() got an unexpected keyword argument {name!r}")
            key = (name, type(value))
            # ASCII text without NUL is settled at a glance; anything else asks _settled
            if key in passed and (
                (key[1] is str and value.isascii() and "\x00" not in value) or _settled(value)
            ):
                continue  # a value of this kind passed every check before: this one does too
            becomes = check_one(name, value, True if keeps_nul is None else keeps_nul(first))
            if becomes is not None:
                unheld = {**(unheld or {}), name: becomes}
            elif name in declared and name != "limit" and _settled(value):
                passed.add(key)  # declared names only: a caller's stray keywords are not kept
        return unheld

    return check, method


ENTRY_POINTS: list[Callable[..., Any]] = []
"""Every entry point checked here (:func:`checked`, :func:`check_of`), as written."""


def checked(fn: F) -> F:
    """An entry point with its arguments checked by their declared types (the module
    docstring) before it runs. Under ``@classmethod``, like this:
    ``@classmethod`` then ``@checked`` then ``def open(cls, ...)``."""
    ENTRY_POINTS.append(fn)
    return _typed(wrap(fn, ENTRY))


def _typed(fn: F) -> F:
    """``fn`` whose database errors leave it as philont's: a driver's error (a statement the
    database refused, a conflict) is :func:`philont.db.retry.edge_failure`'s typed error,
    raised from it (:func:`philont.db.retry.typed_errors`), never SQLAlchemy's or the
    driver's, whose text holds the statement's values (``philont.agents``' own statements, a
    host's trigger on the registry)."""
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def typed_coroutine(*args: Any, **kwargs: Any) -> Any:
            from philont.db.retry import typed_errors  # (imported once the database is used)

            with typed_errors("entry.storage_error"):
                return await fn(*args, **kwargs)

        return typed_coroutine  # type: ignore[return-value]

    @functools.wraps(fn)
    def typed_call(*args: Any, **kwargs: Any) -> Any:
        from philont.db.retry import typed_errors

        with typed_errors("entry.storage_error"):
            return fn(*args, **kwargs)

    return typed_call  # type: ignore[return-value]


def check_of(fn: Callable[..., Any]) -> Callable[..., None]:
    """The checks :func:`checked` runs before ``fn``, as a function to call by hand with
    ``fn``'s arguments: for a hot path whose usual call needs none, tested first
    (``Store.begin()`` is one call of every unit of work; a wrapper costs more than it)."""
    ENTRY_POINTS.append(fn)
    check, method = _checker(fn, ENTRY, None)

    def check_call(*args: Any, **kwargs: Any) -> None:
        check(args[0] if method else None, args[method:], kwargs)

    return check_call
