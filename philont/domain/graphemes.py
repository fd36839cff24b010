"""Cutting text for display without splitting a character a reader sees as one.

A code point cut can leave half of what is one character on screen: an accent without its
letter (``e`` + U+0301), a skin tone without its hand, one parent of a ZWJ family emoji, one
letter of a flag's regional-indicator pair, a Hangul syllable spelled in jamo (NFD, as macOS
stores it) without its vowel. :func:`clip` cuts at the last boundary of an extended grapheme
cluster (Unicode UAX #29's main rules, from ``unicodedata``: no extra dependency) at or before
the limit. Every place philont shortens text to show it (tool output, the prefix, prompts,
model errors) cuts through here.
"""

from __future__ import annotations

import unicodedata

__all__ = ["boundary_at_or_before", "clip"]

ELLIPSIS = "…"

_ZWJ = "\u200d"


def _extends(ch: str) -> bool:
    """Grapheme_Extend, SpacingMark or ZWJ (approximated by category): never starts a cluster."""
    o = ord(ch)
    return (
        unicodedata.category(ch) in ("Mn", "Me", "Mc")
        or ch in (_ZWJ, "\u200c")
        or 0x1F3FB <= o <= 0x1F3FF  # emoji skin tones
        or 0xE0020 <= o <= 0xE007F  # emoji tag sequences (subdivision flags)
    )


def _regional(ch: str) -> bool:
    return 0x1F1E6 <= ord(ch) <= 0x1F1FF


def _jamo(ch: str) -> str:
    """Hangul syllable type: L, V, T, LV/LVT as ``S``, or ``""``."""
    o = ord(ch)
    if 0x1100 <= o <= 0x115F or 0xA960 <= o <= 0xA97F:
        return "L"
    if 0x1160 <= o <= 0x11A7 or 0xD7B0 <= o <= 0xD7C6:
        return "V"
    if 0x11A8 <= o <= 0x11FF or 0xD7CB <= o <= 0xD7FB:
        return "T"
    if 0xAC00 <= o <= 0xD7A3:
        return "S"
    return ""


def _joined(text: str, i: int) -> bool:
    """Whether ``text[i - 1]`` and ``text[i]`` belong to one cluster (0 < i < len)."""
    before, after = text[i - 1], text[i]
    if before == "\r" and after == "\n":
        return True
    if _extends(after) or before == _ZWJ:
        return True
    if _regional(before) and _regional(after):
        run = 0
        while i - 1 - run >= 0 and _regional(text[i - 1 - run]):
            run += 1
        return run % 2 == 1  # pairs: the second of a pair joins the first
    b, a = _jamo(before), _jamo(after)
    return (
        (b == "L" and a in ("L", "V", "S"))
        or (b in ("V", "S") and a in ("V", "T"))
        or (b == "T" and a == "T")
    )


def boundary_at_or_before(text: str, i: int) -> int:
    """The last grapheme-cluster boundary of ``text`` at or before index ``i``."""
    i = max(0, min(i, len(text)))
    while 0 < i < len(text) and _joined(text, i):
        i -= 1
    return i


def clip(text: str, limit: int, *, mark: str = ELLIPSIS, mark_within: bool = True) -> str:
    """``text`` if it has at most ``limit`` characters, else its longest head of whole clusters
    of at most ``limit`` characters, then ``mark`` (``mark_within``: the mark counts within
    ``limit``)."""
    if len(text) <= limit:
        return text
    keep = limit - len(mark) if mark_within else limit
    return text[: boundary_at_or_before(text, keep)] + mark
