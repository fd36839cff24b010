"""The timeline retriever: recent messages plus keyword-recalled older ones, for an LLM context."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from philont.db.backend import Raw
from philont.db.models import RawMessage
from philont.db.queries import messages as message_rows
from philont.db.queries.messages import MessageRow
from philont.db.stored_values import careful_read
from philont.db.types import from_epoch_ms, to_epoch_ms
from philont.domain.kinds import Role
from philont.domain.tokens import TokenEstimator, default_estimator, utf16_len
from philont.finds import finds
from philont.schemas import inputs
from philont.schemas.search import RetrievalResult
from philont.services.base import Service
from philont.services.search import ScoredMessage, recall_rows
from philont.services.search.scoring import Kind

if TYPE_CHECKING:
    from philont.memory import Memory

__all__ = [
    "DEFAULT_RECALL_BUDGET_TOKENS",
    "DEFAULT_RECALL_CANDIDATES",
    "DEFAULT_RECENT_BUDGET_TOKENS",
    "DEFAULT_RECENT_LIMIT",
    "SEPARATOR",
    "TimelineRetriever",
]

DEFAULT_RECENT_BUDGET_TOKENS = 8_000
DEFAULT_RECALL_BUDGET_TOKENS = 4_000
DEFAULT_RECENT_LIMIT = 30
DEFAULT_RECALL_CANDIDATES = 10
MIN_RECALL_QUERY_LENGTH = 2
"""Recall runs only for a trimmed query of at least this many UTF-16 units (as the original)."""

RECALL_SLACK = 5
"""Recall asks for this many extra matches, to make up for system messages dropped from them."""

SEPARATOR = "[— earlier conversation above, recent conversation below —]"
"""Content of the marker between the recalled and the recent messages (role ``user``)."""

_TABLE = RawMessage.__tablename__
_SHOWN_ROLES = (Role.USER.value, Role.ASSISTANT.value, Role.TOOL.value)
_LLM_ROLE: dict[str, Literal["user", "assistant"]] = {
    Role.USER.value: "user",
    Role.TOOL.value: "user",
    Role.ASSISTANT.value: "assistant",
}


def _checked(query: object, *, now: object, around: object, **counts: object) -> str:
    """``retrieve``'s arguments checked: its query (returned), counts and times."""
    checked: str = inputs.check(inputs.Query, query, "query")
    for name, value in counts.items():
        inputs.check(inputs.Count, value, name)
    for name, value in (("now", now), ("around", around)):
        if value is not None:
            inputs.check(inputs.AwareTime, value, name)
    return checked


def _nothing_retrieved(
    _service: object, *, query: object, session_ids: object, **given: object
) -> RetrievalResult:
    """``retrieve`` in sessions none of which can exist (:mod:`philont.finds`): its arguments
    checked as it checks them, then an empty window."""
    _checked(query, **given)
    return RetrievalResult(
        recall_channels=(),
        unembedded=0,
        messages=[],
        recency_count=0,
        recall_count=0,
        recent_tokens=0,
        recall_tokens=0,
        total_tokens=0,
        dropped_system=0,
    )


class TimelineRetriever(Service):
    """Build the conversation context of a turn: a recency section and a keyword-recall section.

    Differences from the original (spec section 11), on purpose:

    * Q-T1: the user's whole message is still the recall query, but it is searched word by
      word (:class:`~philont.services.search.SearchService`), so natural sentences find their
      matches instead of failing on punctuation or on an AND of every word.
    * Q-T2: recall asks for ``recall_candidates`` matches that are *not* already in the recency
      window (the original took the 10 newest matches and then dropped those it already showed,
      often leaving nothing although older matches existed).
    * Q-T4: system messages neither take recency slots nor consume budget nor count; the result
      reports how many were skipped in ``dropped_system``.
    * Recall ranks by relevance, not recency, fills its budget best match first and skips a
      match that does not fit (its budget is never exceeded); the recency section keeps the
      original rule that the newest message is always shown, even over budget, unless the
      budget is 0: ``recent_budget_tokens=0`` (like ``recent_limit=0``) asks for no recent
      messages at all, and recall may then return the newest ones too.
    * The separator is our own English marker, :data:`SEPARATOR`.
    """

    def __init__(self, mem: Memory, *, estimator: TokenEstimator = default_estimator) -> None:
        super().__init__(mem)
        self._estimate = estimator

    @finds("session_ids", absent=_nothing_retrieved)
    @careful_read
    def retrieve(
        self,
        query: str = "",
        *,
        recent_budget_tokens: int = DEFAULT_RECENT_BUDGET_TOKENS,
        recall_budget_tokens: int = DEFAULT_RECALL_BUDGET_TOKENS,
        recent_limit: int = DEFAULT_RECENT_LIMIT,
        recall_candidates: int = DEFAULT_RECALL_CANDIDATES,
        session_ids: Sequence[str] | None = None,
        now: datetime | None = None,
        around: datetime | None = None,
    ) -> RetrievalResult:
        """Return the context window for a turn whose user message is ``query``.

        Messages stamped after ``now`` (when given) are ignored. ``around``: recall prefers
        the messages near that time (see ``SearchService.messages``), never requires them.
        ``session_ids`` restricts both sections (None or empty: every session). The result
        lists the recalled messages (chronological), then a separator if both sections are
        non-empty, then the recent messages (chronological), with roles mapped for an LLM
        (tool -> user).
        """
        query = _checked(
            query,
            recent_budget_tokens=recent_budget_tokens,
            recall_budget_tokens=recall_budget_tokens,
            recent_limit=recent_limit,
            recall_candidates=recall_candidates,
            now=now,
            around=around,
        )
        sessions = tuple(dict.fromkeys(session_ids or ()))
        now_ms = None if now is None else to_epoch_ms(now)
        raw = self.mem.raw()

        # A budget of 0 is no recency window at all, as a limit of 0 is (nothing passed over).
        recent_limit = recent_limit if recent_budget_tokens else 0
        recent, recent_tokens = self._recent(
            raw, recent_limit, recent_budget_tokens, sessions, now_ms
        )
        dropped_system = self._dropped_system(raw, recent, recent_limit, sessions, now_ms)
        recalled, recall_tokens = self._recall(
            query.strip(), recall_budget_tokens, recall_candidates, sessions, now, recent, around
        )
        report = self.mem.search.reports.get(Kind.MESSAGES)  # issue #18: with an embedder
        # One validation of the whole result: its messages are given as the fields of
        # ContextMessage (validated by that model's schema inside the one call), not as ~40
        # models built one by one on every turn.
        return RetrievalResult.model_validate(
            {
                "recall_channels": report.answered if report else ("keyword",) if recalled else (),
                "unembedded": report.unembedded if report else 0,
                "messages": _window(recalled, recent),
                "recency_count": len(recent),
                "recall_count": len(recalled),
                "recent_tokens": recent_tokens,
                "recall_tokens": recall_tokens,
                "total_tokens": recent_tokens + recall_tokens,
                "dropped_system": dropped_system,
            }
        )

    def _recall(
        self,
        query: str,
        budget: int,
        candidates: int,
        sessions: tuple[str, ...],
        now: datetime | None,
        recent: list[MessageRow],
        around: datetime | None,
    ) -> tuple[list[ScoredMessage], int]:
        """The recall section (chronological) and its token total: the best keyword matches
        not already in the recency window, best first into the budget (a match that does not
        fit is skipped, the budget never exceeded)."""
        if budget <= 0 or candidates <= 0 or utf16_len(query) < MIN_RECALL_QUERY_LENGTH:
            return [], 0
        # System messages are rare in the timeline: they are dropped from the hits rather
        # than filtered in SQL, which would join every candidate to its row.
        hits = recall_rows(  # message_rows, its arguments checked by retrieve already
            self.mem.search,
            query,
            limit=candidates + RECALL_SLACK,
            session_ids=sessions or None,
            until=now,
            exclude_ids={r.id for r in recent},
            now=now,
            around=around,
        )
        recalled: list[ScoredMessage] = []
        tokens = 0
        for hit in [h for h in hits if h.role in _SHOWN_ROLES][:candidates]:  # best first
            cost = self._estimate(hit.content)
            if tokens + cost > budget:
                continue
            tokens += cost
            recalled.append(hit)
        recalled.sort(key=lambda r: (r.timestamp, r.id))
        return recalled, tokens

    # --- sections --------------------------------------------------------------------------

    @staticmethod
    def _newest(
        raw: Raw,
        sessions: tuple[str, ...],
        now_ms: int | None,
        limit: int,
        *,
        without_system: bool,
    ) -> list[MessageRow]:
        """The newest ``limit`` messages, newest first: one query per session (each reads the
        (session_id, timestamp) index backwards instead of sorting a session), then merged."""
        scopes: tuple[str | None, ...] = sessions or (None,)
        rows: list[MessageRow] = []
        for sid in scopes:
            rows += message_rows.newest(
                raw, limit=limit, session_id=sid, until_ms=now_ms, without_system=without_system
            )
        if len(scopes) > 1:
            rows.sort(key=lambda r: (r.timestamp, r.id), reverse=True)
        return rows[:limit]

    def _recent(
        self,
        raw: Raw,
        limit: int,
        budget: int,
        sessions: tuple[str, ...],
        now_ms: int | None,
    ) -> tuple[list[MessageRow], int]:
        """The recency section, newest first, and its token total: the newest message even when
        it alone is over the budget (``retrieve`` passes a limit of 0 for a budget of 0)."""
        if limit == 0:
            return [], 0
        taken: list[MessageRow] = []
        total = 0
        for row in self._newest(raw, sessions, now_ms, limit, without_system=True):
            cost = self._estimate(row.content)
            if taken and total + cost > budget:
                break
            taken.append(row)
            total += cost
        return taken, total

    def _dropped_system(
        self,
        raw: Raw,
        recent: list[MessageRow],
        limit: int,
        sessions: tuple[str, ...],
        now_ms: int | None,
    ) -> int:
        """System messages the recency window passed over (as new as its oldest message)."""
        if not recent:
            if limit == 0:
                return 0
            newest = self._newest(raw, sessions, now_ms, limit, without_system=False)
            return sum(1 for r in newest if r.role == "system")
        return sum(
            message_rows.count_system(
                raw, since_ms=recent[-1].timestamp, session_id=sid, until_ms=now_ms
            )
            for sid in sessions or (None,)
        )


def _window(recalled: list[ScoredMessage], recent: list[MessageRow]) -> list[dict[str, Any]]:
    """Recalled messages, the separator (when both sections have some), recent messages, as
    the fields of :class:`~philont.schemas.search.ContextMessage` (``RetrievalResult``
    validates them)."""
    messages = [_context(r, "recall") for r in recalled]
    chronological = list(reversed(recent))
    if recalled and chronological:
        messages.append(
            {
                "role": "user",
                "content": SEPARATOR,
                "timestamp": from_epoch_ms(chronological[0].timestamp) - timedelta(milliseconds=1),
                "message_id": None,
                "section": "separator",
            }
        )
    messages.extend(_context(r, "recent") for r in chronological)
    return messages


def _context(
    row: MessageRow | ScoredMessage, section: Literal["recall", "recent"]
) -> dict[str, Any]:
    """The fields of the :class:`~philont.schemas.search.ContextMessage` of ``row``."""
    return {
        "role": _LLM_ROLE.get(row.role, "user"),
        "content": row.content,
        "timestamp": from_epoch_ms(row.timestamp),
        "message_id": row.id,
        "section": section,
    }
