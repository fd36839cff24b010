"""Token-count estimates for budgeting text, counted the way the original JS code counts."""

from __future__ import annotations

import codecs
import math
from collections.abc import Callable

__all__ = ["TOKENS_PER_UTF16_UNIT", "TokenEstimator", "default_estimator", "utf16_len"]

TokenEstimator = Callable[[str], int]
"""Any function mapping a text to an estimated number of model tokens."""

_utf_16_le = codecs.utf_16_le_encode

TOKENS_PER_UTF16_UNIT = 0.6
"""The original's rough ratio of tokens to JS string-length units."""


def utf16_len(text: str) -> int:
    """Return the length of ``text`` in UTF-16 code units (JS ``String.prototype.length``).

    Characters outside the Basic Multilingual Plane (most emoji) count as 2, everything else as 1.
    Lone surrogates, which Python strings can hold, count as 1, as they do in JS.
    """
    if text.isascii():
        return len(text)
    # The codec counts in C what a loop over the characters would count in Python; called
    # as the function ``str.encode("utf-16-le", ...)`` finds by name (the look-up cost four
    # times the encoding of a fact line or a message).
    return len(_utf_16_le(text, "surrogatepass")[0]) // 2


def default_estimator(text: str) -> int:
    """Estimate tokens as ``ceil(utf16_len(text) * 0.6)``, matching the original exactly."""
    # The same IEEE-754 product as JS `Math.ceil(s.length * 0.6)`, so even the values where
    # n * 0.6 lands a hair above an integer round up identically on both sides.
    return math.ceil(utf16_len(text) * TOKENS_PER_UTF16_UNIT)
