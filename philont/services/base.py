"""The base of every service: bound to one unit of work, never committing it, and checking
what every public method is given on entry."""

from __future__ import annotations

import enum
import functools
import inspect
import itertools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

from sqlalchemy.orm import Session

from philont.clock import Clock
from philont.db.backend import refuse_nul
from philont.errors import InvalidInputError
from philont.schemas import inputs

if TYPE_CHECKING:
    from philont.memory import Memory

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
    seen: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            problem = inputs.unstorable(item)
            if problem is not None:
                return problem
        elif isinstance(item, _WALKED) and id(item) not in seen:
            seen.add(id(item))  # a container holding itself is walked once
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


def _refuse(name: str, what: str) -> NoReturn:
    raise InvalidInputError(f"{name}: {what}", argument=name)


def _check_declared(
    name: str, declared: str, kind: type | _Container | None, value: object, *, keeps_nul: bool
) -> None:
    """The argument's declared type, checked before it reaches SQL (a non-text id failed
    inside PostgreSQL with a driver error that aborted the whole unit of work, and compared
    as "not found" on SQLite; a NUL character in text failed at the flush on PostgreSQL,
    rolling back everything the unit of work had done). ``kind``: the class an argument
    declared as one class (or it or None) names, when it can be checked
    (:func:`_declared_class`)."""
    if declared in (_TEXT, _OPTIONAL_TEXT):
        if value is not None or declared == _TEXT:
            _check_text(name, value, "must be text", keeps_nul=keeps_nul)
    elif declared in _TEXTS and isinstance(value, _CONTAINERS):
        for item in value:
            _check_text(name, item, "must be a sequence of text", keeps_nul=keeps_nul)
    elif declared in _BOOLS:
        if not isinstance(value, bool) and not (value is None and declared == _BOOLS[1]):
            _refuse(name, f"must be True or False, got {value!r}")
    elif declared in _INTS:
        if value is not None or declared == _INTS[0]:
            _check_int(name, value)
    elif declared in _INT_COLLECTIONS and isinstance(value, _CONTAINERS):
        for item in value:
            _check_int(name, item)
    elif kind is not None and (value is not None or not declared.endswith(" | None")):
        _check_kind(name, kind, value)


def _check_kind(name: str, kind: type | _Container, value: object) -> None:
    if isinstance(kind, _Container):
        kind.check(name, value)
    elif not isinstance(value, kind):
        _refuse(name, f"must be {kind.__name__}, got {type(value).__name__}")


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
            _refuse(name, f"must be {self.what}, got {type(value).__name__}")


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


def _declared_class(declared: str, namespace: Mapping[str, object]) -> type | _Container | None:
    """The class an annotation ``X`` or ``X | None`` names in the method's module, when an
    instance check says what it means: not an enum (its values are given as text too), not
    a protocol that cannot be checked at run time (a ``runtime_checkable`` one can: its
    methods are there), not a name only imported for type checking; or the rule of a container
    (:class:`_Container`)."""
    container = _container(declared)
    if container is not None:
        return container
    found = namespace.get(declared.removesuffix(" | None"))
    if not isinstance(found, type) or issubclass(found, enum.Enum):
        return None
    if found in (str, bool, int, float, object) or (
        getattr(found, "_is_protocol", False) and not getattr(found, "_is_runtime_protocol", False)
    ):
        return None
    try:
        isinstance(None, found)  # typing.Any is a class that refuses this
    except TypeError:
        return None
    return found


def _check_text(name: str, value: object, rule: str, *, keeps_nul: bool) -> None:
    if not isinstance(value, str):
        _refuse(name, f"{rule}, got {type(value).__name__}")
    refuse_nul(value, name, keeps_nul=keeps_nul)


def _check_int(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        _refuse(name, f"must be a whole number, got {value!r}")
    if not _INT64[0] <= value <= _INT64[1]:
        _refuse(name, f"{value} is outside the integers a database holds (64-bit)")


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


def _option_types(annotation: str, namespace: Mapping[str, object]) -> dict[str, str]:
    """The declared types of the keys of ``**options: Unpack[SomeTypedDict]``, as written (a
    method's typed options are checked like its parameters)."""
    typed = namespace.get(annotation.removeprefix("Unpack[").removesuffix("]"))
    if not annotation.startswith("Unpack[") or typed is None:
        return {}
    return {
        key: getattr(value, "__forward_arg__", str(value))
        for key, value in getattr(typed, "__annotations__", {}).items()
    }


def _settled(value: object) -> bool:
    """Whether the checks of an argument (but ``limit``'s) answer ``value`` as they answer any
    value of its type: true of None, True/False, datetimes, and text that is valid Unicode
    without a NUL character (they look at its type, its Unicode and its NULs only). A call
    whose argument of that name and type passed before skips the checks: every service call
    runs them, and they cost more than the rest of a small call."""
    if isinstance(value, str):
        return "\x00" not in value and inputs.unstorable(value) is None
    return value is None or isinstance(value, bool | datetime)


def _checked(fn: Callable[..., Any], cls: type[Service]) -> Callable[..., Any]:
    """``fn`` with its arguments checked (:func:`_check_argument`, :func:`_check_declared`;
    the keys of typed ``**options`` too) before it runs, so a refused call has touched
    nothing."""
    signature = inspect.signature(fn)
    params = list(signature.parameters.values())[1:]
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    # Annotations are text here (``from __future__ import annotations``), as written.
    declared = {p.name: str(p.annotation) for p in params}
    limit = signature.parameters.get("limit")
    limit_may_be_none = limit is not None and limit.default is None
    searched_only, unstored = cls.searched_only, cls.unstored
    options = [str(p.annotation) for p in params if p.kind is p.VAR_KEYWORD]
    # resolved on the first call, when the module is complete (in the module that wrote
    # ``fn``, also under a decorator such as ``stored_values.careful_read``)
    names = inspect.unwrap(fn).__globals__
    classes: dict[str, type | _Container | None] = {}

    passed: set[tuple[str, type]] = set()  # (declared argument, type) of settled values passed

    def check(name: str, value: object, keeps_nul: bool) -> None:
        if name in searched_only:
            _check_searched(name, value)
            return
        _check_argument(name, value, limit_may_be_none=limit_may_be_none)
        if name in declared:
            _check_declared(
                name, declared[name], classes[name], value, keeps_nul=keeps_nul or name in unstored
            )

    @functools.wraps(fn)
    def checked(self: Service, *args: Any, **kwargs: Any) -> Any:
        if not classes:
            for annotation in options:
                declared.update(_option_types(annotation, names))
            classes.update({n: _declared_class(d, names) for n, d in declared.items()})
        for name, value in itertools.chain(zip(positional, args, strict=False), kwargs.items()):
            key = (name, type(value))
            # ASCII text without NUL is settled at a glance; anything else asks _settled
            if key in passed and (
                (key[1] is str and value.isascii() and "\x00" not in value) or _settled(value)
            ):
                continue  # a value of this kind passed every check before: this one does too
            check(name, value, self.mem.backend.keeps_nul)
            if name in declared and name != "limit" and _settled(value):
                passed.add(key)  # declared names only: a caller's stray keywords are not kept
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
    method's default is None), and ``session_ids`` is never a single string. An argument
    declared ``str`` (``str | None``, ``Sequence[str]``) must be text, and on PostgreSQL hold
    no NUL character (unless it is ``unstored``); one declared ``bool`` must be True or False;
    one declared ``int`` (or a collection of them) a whole number a 64-bit column holds; one
    declared as a class (``datetime``, ``FactRecord``; not an enum) or a ``runtime_checkable``
    protocol (an embedder) an instance of it; one declared as a container of items
    (``Sequence[X]``, ``Collection[X]``, ``Iterable[X]``, ``list[X]``) that container, not one
    string, bytes, a mapping or a number (its items are the method's to check, but for text
    and whole numbers). The keys of typed ``**options`` (``Unpack[SomeTypedDict]``) are
    checked by their declared types too. A refusal is an
    :class:`~philont.errors.InvalidInputError` naming the argument."""

    searched_only: ClassVar[frozenset[str]] = frozenset({"query"})
    """Arguments that are searched, never stored: any text is a query (the search plan makes
    it safe), lone surrogates included."""

    unstored: ClassVar[frozenset[str]] = frozenset()
    """Text arguments that never reach the database (a NUL character is fine in them on
    PostgreSQL too)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, attr in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(attr):
                setattr(cls, name, _checked(attr, cls))

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
