"""The timeline retriever: recent messages plus keyword-recalled older ones, for an LLM context."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from sqlalchemy.orm import Session

from philont.db.models import RawMessage
from philont.db.types import from_epoch_ms, to_epoch_ms
from philont.domain.kinds import Role
from philont.domain.tokens import TokenEstimator, default_estimator, utf16_len
from philont.errors import InvalidInputError
from philont.schemas.search import ContextMessage, RetrievalResult
from philont.services.search import DbConn, SearchService, driver_connection, fetch_all

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


def _non_negative(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative integer, got {value!r}")
    return value


class TimelineRetriever:
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
      original rule that the newest message is always shown, even over budget.
    * The separator is our own English marker, :data:`SEPARATOR`.
    """

    def __init__(self, session: Session, *, estimator: TokenEstimator = default_estimator) -> None:
        self._session = session
        self._estimate = estimator
        self._search = SearchService(session)

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
    ) -> RetrievalResult:
        """Return the context window for a turn whose user message is ``query``.

        Messages stamped after ``now`` (when given) are ignored. ``session_ids`` restricts both
        sections (None or empty: every session). The result lists the recalled messages
        (chronological), then a separator if both sections are non-empty, then the recent
        messages (chronological), with roles mapped for an LLM (tool -> user).
        """
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
        _non_negative("recent_budget_tokens", recent_budget_tokens)
        _non_negative("recall_budget_tokens", recall_budget_tokens)
        _non_negative("recent_limit", recent_limit)
        _non_negative("recall_candidates", recall_candidates)
        if isinstance(session_ids, str):
            raise InvalidInputError("session_ids must be a sequence of ids, not one string")
        sessions = tuple(dict.fromkeys(session_ids or ()))
        now_ms = None if now is None else to_epoch_ms(now)
        conn = driver_connection(self._session)

        recent, recent_tokens = self._recent(
            conn, recent_limit, recent_budget_tokens, sessions, now_ms
        )
        dropped_system = self._dropped_system(conn, recent, recent_limit, sessions, now_ms)

        recalled: list[tuple[int, str, str, int]] = []
        recall_tokens = 0
        trimmed = query.strip()
        if (
            recall_budget_tokens > 0
            and recall_candidates > 0
            and utf16_len(trimmed) >= MIN_RECALL_QUERY_LENGTH
        ):
            # System messages are rare in the timeline: they are dropped from the hits rather
            # than filtered in SQL, which would join every candidate to its row.
            hits = self._search.message_rows(
                trimmed,
                limit=recall_candidates + RECALL_SLACK,
                session_ids=sessions or None,
                until=now,
                exclude_ids={r[0] for r in recent},
                now=now,
            )
            shown = [h for h in hits if h[2] in _SHOWN_ROLES][:recall_candidates]
            for msg_id, _session, role, content, at_ms, _score in shown:  # best first
                cost = self._estimate(content)
                if recall_tokens + cost > recall_budget_tokens:
                    continue
                recall_tokens += cost
                recalled.append((msg_id, role, content, at_ms))
            recalled.sort(key=lambda r: (r[3], r[0]))

        messages: list[ContextMessage] = [_context(r, "recall") for r in recalled]
        chronological = list(reversed(recent))
        if recalled and chronological:
            messages.append(
                ContextMessage(
                    role="user",
                    content=SEPARATOR,
                    timestamp=from_epoch_ms(chronological[0][3]) - timedelta(milliseconds=1),
                    message_id=None,
                    section="separator",
                )
            )
        messages.extend(_context(r, "recent") for r in chronological)
        return RetrievalResult(
            messages=messages,
            recency_count=len(recent),
            recall_count=len(recalled),
            recent_tokens=recent_tokens,
            recall_tokens=recall_tokens,
            total_tokens=recent_tokens + recall_tokens,
            dropped_system=dropped_system,
        )

    # --- sections --------------------------------------------------------------------------

    def _newest(
        self,
        conn: DbConn,
        role_sql: str,
        sessions: tuple[str, ...],
        now_ms: int | None,
        limit: int,
    ) -> list[tuple[int, str, str, int]]:
        """The newest ``limit`` messages (id, role, content, timestamp ms), newest first.

        One query per session, so each reads the (session_id, timestamp) index backwards
        instead of sorting a whole session; then the lists are merged.
        """
        scopes: tuple[str | None, ...] = sessions or (None,)
        rows: list[tuple[int, str, str, int]] = []
        for sid in scopes:
            parts = [role_sql]
            params: list[Any] = []
            if sid is not None:
                parts.append("session_id = ?")
                params.append(sid)
            if now_ms is not None:
                parts.append("timestamp <= ?")
                params.append(now_ms)
            rows += fetch_all(
                conn,
                f"SELECT id, role, content, timestamp FROM {_TABLE} WHERE {' AND '.join(parts)}"
                " ORDER BY timestamp DESC, id DESC LIMIT ?",
                (*params, limit),
            )
        if len(scopes) > 1:
            rows.sort(key=lambda r: (r[3], r[0]), reverse=True)
        return rows[:limit]

    def _recent(
        self,
        conn: DbConn,
        limit: int,
        budget: int,
        sessions: tuple[str, ...],
        now_ms: int | None,
    ) -> tuple[list[tuple[int, str, str, int]], int]:
        """Newest first: (id, role, content, timestamp ms) and their token total."""
        if limit == 0:
            return [], 0
        taken: list[tuple[int, str, str, int]] = []
        total = 0
        for row in self._newest(conn, "role != 'system'", sessions, now_ms, limit):
            cost = self._estimate(row[2])
            if taken and total + cost > budget:
                break
            taken.append(row)  # (id, role, content, timestamp) as selected
            total += cost
        return taken, total

    def _dropped_system(
        self,
        conn: DbConn,
        recent: list[tuple[int, str, str, int]],
        limit: int,
        sessions: tuple[str, ...],
        now_ms: int | None,
    ) -> int:
        """System messages the recency window passed over (as new as its oldest message)."""
        if not recent:
            if limit == 0:
                return 0
            return sum(
                1 for r in self._newest(conn, "1 = 1", sessions, now_ms, limit) if r[1] == "system"
            )
        count = 0
        for sid in sessions or (None,):
            parts = ["role = 'system'", "timestamp >= ?"]
            params: list[Any] = [recent[-1][3]]
            if sid is not None:
                parts.append("session_id = ?")
                params.append(sid)
            if now_ms is not None:
                parts.append("timestamp <= ?")
                params.append(now_ms)
            rows = fetch_all(
                conn, f"SELECT count(*) FROM {_TABLE} WHERE {' AND '.join(parts)}", params
            )
            count += int(rows[0][0]) if rows else 0
        return count


def _context(
    row: tuple[int, str, str, int], section: Literal["recall", "recent"]
) -> ContextMessage:
    return ContextMessage(
        role=_LLM_ROLE.get(row[1], "user"),
        content=row[2],
        timestamp=from_epoch_ms(row[3]),
        message_id=row[0],
        section=section,
    )
