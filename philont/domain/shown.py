"""How a message shows a value it refuses or reports: a few levels and characters of it, built
without writing the whole value first (``repr(value)[:80]`` of 50 MB of bytes first builds a
200 MB string). One rule for every message (:func:`short`), and one for naming a place in an
argument (:func:`place`)."""

from __future__ import annotations

import re
import reprlib
from collections.abc import Iterable
from typing import Final

__all__ = ["place", "short"]


class _ShortRepr(reprlib.Repr):
    """:class:`reprlib.Repr` that also cuts bytes before writing them (reprlib writes the
    whole repr of a type it has no rule for, then cuts it) and shows an integer too long for
    Python to write by its size instead of raising."""

    def repr_int(self, x: int, level: int) -> str:
        try:
            return super().repr_int(x, level)
        except ValueError:  # more digits than Python will write (sys.get_int_max_str_digits)
            digits = int(abs(x).bit_length() * 0.30102999566398120) + 1
            return f"<an integer of about {digits} digits>"

    def repr_bytes(self, x: bytes, level: int) -> str:
        return self._cut(repr(x[: self.maxstring]))

    def repr_bytearray(self, x: bytearray, level: int) -> str:
        return self._cut(repr(x[: self.maxstring]))

    def repr_memoryview(self, x: memoryview, level: int) -> str:
        return f"<memory of {x.nbytes} bytes>"

    def _cut(self, text: str) -> str:
        """As :meth:`reprlib.Repr.repr_str` cuts the repr of text: its middle out."""
        if len(text) <= self.maxstring:
            return text
        head = max(0, (self.maxstring - 3) // 2)
        tail = max(0, self.maxstring - 3 - head)
        return text[:head] + "..." + text[len(text) - tail :]


_SHORT: Final = _ShortRepr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother = 2, 40, 40, 40


def short(value: object) -> str:
    """``value`` as a message shows it: its repr cut to a few levels and about 40 characters
    per part (``'aaaa...aaaa'``, ``[1, 2, 3, ...]``), never raising (an object whose repr
    fails is shown by its type)."""
    return _SHORT.repr(value)


_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NAME_SHOWN: Final = 40
"""Characters of a key :func:`place` writes as a name; a longer key is shown cut short, as any
value a message quotes (a key is the client's text: 900,000 characters of it made a refusal
of 900,000)."""


def place(root: str, path: Iterable[object] = ()) -> str:
    """A place in an argument as every message names it, as Python and JSON paths read:
    ``root`` (the argument's name; "" for none) then ``.key`` for a key that is a name,
    ``[i]`` for an index, ``[<short repr>]`` for any other key, a name longer than
    :data:`NAME_SHOWN` too (``tags[0]``, ``value.a['x y'][2]``, ``['kkkk...kkkk']``)."""
    where = root
    for step in path:
        if isinstance(step, int) and not isinstance(step, bool):
            where += f"[{step}]"
        elif isinstance(step, str) and len(step) <= NAME_SHOWN and _NAME.fullmatch(step):
            where += f".{step}" if where else step
        else:
            where += f"[{short(step)}]"
    return where
