"""Whether extraction may write again what was forgotten.

Forgetting a fact or a note (a user or the agent did, or the decay sweep did) is a decision.
The extractor used to undo it: run over the messages that stated the memory (a session learned
again, a window re-read), it proposed the same fact or note, found no *active* one and wrote it
again. The rule: the same fact (namespace, key and value; an event also at the same time) or
the same note (:func:`note_key`: the same text up to case and spacing) that was forgotten is
written again only when the message that says it is newer than the forgetting (its most recent
one, when it was forgotten more than once) — a user may well say it again later.

Which message says it: the one the model cites (``said_at``, the time of a message of the
window), or, when it cites none of them, any message of the window's dialogue. A window that
began after the forgetting says it anew; a window reaching back before it may only be
repeating the old statement, so without a citation the memory stays forgotten.

Pure functions on epoch milliseconds; the extractor (:mod:`philont.learning.extract`) reads
the rows.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Collection, Sequence
from dataclasses import dataclass

__all__ = ["Said", "may_write_again", "note_key", "said_when"]


def note_key(text: str) -> str:
    """The form two notes are compared in: NFKC, case-folded, whitespace runs as one space,
    trimmed (``"  The user DRINKS\\n tea"`` and ``"the user drinks tea"`` are the same note)."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


@dataclass(frozen=True)
class Said:
    """When the message that says a memory was written, as far as is known: at some time
    from ``earliest`` to ``latest`` (epoch ms, inclusive)."""

    earliest: int
    latest: int


def said_when(dialogue: Sequence[int], cited: int | None) -> Said | None:
    """When a proposal of a window was said. ``dialogue``: the times of the window's messages
    (oldest first); ``cited``: the time the model gave for it. A cited time that is one of the
    messages' is the answer; any other (none, or a time no message has) is ignored, and the
    proposal may come from any message of the window. None: the window has no messages."""
    if cited is not None and cited in set(dialogue):
        return Said(cited, cited)
    if not dialogue:
        return None
    return Said(min(dialogue), max(dialogue))


def may_write_again(forgotten_at: Collection[int], said: Said | None) -> bool:
    """Whether a proposal may write again what was forgotten at ``forgotten_at`` (the times
    its matching rows were forgotten; empty: nothing matching was forgotten): only when it
    was certainly said after the latest of them."""
    if not forgotten_at:
        return True
    return said is not None and said.earliest > max(forgotten_at)
