"""Where a value cannot be stored, and why: the first part (in document order) that is not valid
Unicode text (a lone surrogate, in a value or a key), and for JSON also not a JSON number (NaN,
an infinity), not a JSON value at all (a set, bytes, an object), or the value itself again. The
encoder's own message names none of that (``'utf-8' codec can't encode character '\\udc80' in
position 7``: position 7 of the encoded text); these name the argument and the path in it
(``value.a[0]``). Asked only once a cheap check failed, so they cost nothing on the normal path.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any, Final

from philont.domain.shown import place, short

__all__ = ["bad_text", "lone_surrogate", "problem"]

_SCALARS: Final = (int, str, float, bool, type(None))
_KEYS: Final = _SCALARS
"""What the JSON encoder takes as a key (non-text keys are written as text)."""
_CONTAINERS: Final = (Mapping, list, tuple, set, frozenset)
_CYCLE: Final = object()
"""Yielded by :func:`_walk` for a container met again inside itself."""


def bad_text(text: str) -> str | None:
    """Why ``text`` is not valid Unicode (``a lone surrogate at position 3``), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"a lone surrogate at position {exc.start}"
    return None


def _parts(value: Any, path: str) -> Iterator[tuple[Any, str, str]]:
    """``(part, path, role)`` for the direct parts of a container, in document order: a key
    and an item of a set are named by their container's path and their role."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield key, path, "a key"
            yield item, place(path, (key,)), ""
    elif isinstance(value, set | frozenset):
        for item in value:
            yield item, path, "an item"
    else:
        for i, item in enumerate(value):
            yield item, place(path, (i,)), ""


def _walk(value: Any, name: str) -> Iterator[tuple[Any, str, str]]:
    """Every part of ``value`` (containers: mappings, lists, tuples, sets) with its path, in
    document order, iteratively (any depth); a container inside itself comes as ``_CYCLE``."""
    stack: list[tuple[Any, str, str]] = [(value, name, "")]
    around: set[int] = set()  # the containers around the part looked at
    # (stack height, container): left once the stack is back there; the container is kept, or
    # a mapping that makes its values anew freed it and a part made at its address was taken
    # for the container around itself
    leaving: list[tuple[int, Any]] = []
    while stack:
        while leaving and len(stack) <= leaving[-1][0]:
            around.discard(id(leaving.pop()[1]))
        part, where, role = stack.pop()
        if isinstance(part, _CONTAINERS) and not isinstance(part, str):
            if id(part) in around:
                yield _CYCLE, where, role
                continue
            around.add(id(part))
            leaving.append((len(stack), part))
            stack.extend(reversed(list(_parts(part, where))))
        yield part, where, role


def _text_problem(part: Any, where: str, role: str) -> str | None:
    bad = bad_text(part) if isinstance(part, str) else None
    if bad is None:
        return None
    return f"{where}: not valid Unicode text{f' in {role}' if role else ''} ({bad})"


def lone_surrogate(value: Any, name: str) -> str | None:
    """Where text in ``value`` (the argument ``name``; text, or text in mappings, lists,
    tuples and sets at any depth) is not valid Unicode, or None: ``"<where>: <why>"``, where
    names the argument and the place in it (:func:`philont.domain.shown.place`)."""
    for part, where, role in _walk(value, name):
        if (found := _text_problem(part, where, role)) is not None:
            return found
    return None


def problem(value: Any, name: str = "value") -> str | None:
    """Why ``value`` (the argument ``name``) cannot be stored as JSON, ``"<where>: <why>"``
    (``value.a[0]: not JSON: a set ({1}), not a JSON value``); None when nothing in it is at
    fault (a nesting too deep for the encoder)."""
    for part, where, role in _walk(value, name):
        if part is _CYCLE:
            return f"{where}: not JSON: it contains itself"
        if (found := _text_problem(part, where, role)) is not None:
            return found
        if role == "a key" and not isinstance(part, _KEYS):
            kind = type(part).__name__
            return f"{where}: not JSON: a key is a {kind} ({short(part)}), keys are text"
        if isinstance(part, float) and not math.isfinite(part):
            return f"{where}: not JSON: {part!r} (NaN and infinities are not JSON numbers)"
        if not isinstance(part, (*_SCALARS, dict, list, tuple)):
            kind = type(part).__name__
            what = f"{role} is a {kind}" if role else f"a {kind}"
            return f"{where}: not JSON: {what} ({short(part)}), not a JSON value"
    return None
