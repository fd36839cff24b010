"""The recall trigger as a service: notice "remember when we…" and fetch what was meant."""

from __future__ import annotations

import unicodedata

from philont.domain.recall_trigger import RecallHit, detect
from philont.schemas.search import MessageHit
from philont.services.base import Service

__all__ = ["RecallTrigger"]

RECALL_LIMIT = 5
"""Past messages fetched for a triggered message (the original asks the model for 5)."""


class RecallTrigger(Service):
    """``detect`` says whether a user message refers to an earlier conversation (Chinese and
    English patterns, misses preferred to false alarms; :mod:`philont.domain.recall_trigger`);
    ``recall`` also searches the timeline for it when it does."""

    searched_only = frozenset({"message"})  # read and searched, never stored

    def detect(self, message: str) -> RecallHit | None:
        return detect(message)

    def recall(self, message: str, *, limit: int = RECALL_LIMIT) -> list[MessageHit]:
        """The past messages a triggered ``message`` most likely refers to, best first; ``[]``
        when it does not refer to the past.

        The message itself is never among them: a host has usually stored the turn already,
        and its own text is always the best match for itself (it came back first, pushing out
        what was meant). Copies of it are left out as well, whenever they were sent, in
        either normal form (a copy stored decomposed, NFD, is the same text as ``message``
        composed, and the search finds it by either)."""
        if detect(message) is None:
            return []
        text = _composed(message)
        echoes: set[int] = set()
        while True:
            hits = self.mem.search.messages(message, limit=limit, exclude_ids=echoes)
            found = {h.id for h in hits if _composed(h.content) == text}
            if not found:
                return hits
            echoes |= found


def _composed(text: str) -> str:
    """``text`` trimmed and composed (NFC): the form two copies of a message are compared in."""
    return unicodedata.normalize("NFC", text.strip())
