"""Which known name an unknown one most likely meant: a tool's argument, a tool, a skill, a fact.
Pure: the caller gives the names there are."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import Final

MAX_ID_CHARS: Final = 200
"""An id or name philont looks up or stores (a session's, a skill's): at most this many
characters (:mod:`philont.schemas.inputs` refuses a longer one)."""

NEAR_CANDIDATES = 10_000
"""How many known names a refusal of an unknown one looks through (a query's limit)."""

CLOSE = 0.75
"""How alike (difflib's ratio) a spelling must be to be taken for the name meant."""


def meant(name: str, choices: Iterable[str]) -> str | None:
    """The one of ``choices`` that ``name``, which is none of them, most likely meant: a close
    spelling, or the one name it is part of or that is part of it (``start``: ``starts_at``;
    ``days``: ``window_days``); None when nothing is close, or more than one name holds it
    (``search``: ``search_notes`` or ``search_skills``)."""
    found = near(name, choices, most=1)
    return found[0] if found else None


def near(name: str, choices: Iterable[str], *, most: int = 3) -> list[str]:
    """Up to ``most`` of ``choices`` that ``name`` may have meant, likeliest first: close
    spellings, else the one name holding it or held in it (at least 3 letters each)."""
    options = [c for c in dict.fromkeys(choices) if c != name]
    close = difflib.get_close_matches(name, options, n=most, cutoff=CLOSE)
    if close:
        return close
    folded = name.lower()
    within = [c for c in options if min(len(folded), len(c)) >= 3 and (folded in c or c in folded)]
    return within if len(within) == 1 else []


def did_you_mean(names: Sequence[str]) -> str:
    """``"; did you mean 'a'?"`` (or ``'a' or 'b'``) to end a refusal with; empty for none."""
    if not names:
        return ""
    shown = [repr(n) for n in names]
    listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
    return f"; did you mean {listed}?"
