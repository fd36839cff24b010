"""Keyword search over messages, notes and skills: idf-weighted bm25 on word indexes plus CJK.

One service for both backends: the backend's scorer (:mod:`.sqlite`, :mod:`.postgres`) turns
a query plan into candidate scores; everything else here (filters, neighbour context, priors,
tie-breaks, read models) is shared.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, Unpack

from philont.db.queries import messages as message_rows
from philont.db.queries import notes as note_rows
from philont.db.queries import skills as skill_rows
from philont.db.stored_values import careful, careful_read
from philont.db.types import from_epoch_ms, to_epoch_ms
from philont.domain import ranking
from philont.domain.kinds import Role, SkillKind
from philont.domain.maturity import Grade, is_callable, parse_grade
from philont.domain.query import SearchPlan, build_plan
from philont.domain.ranking import RankingOptions
from philont.errors import InvalidInputError
from philont.finds import PASS_ON, finds
from philont.schemas import inputs
from philont.schemas.search import MessageHit, NoteHit, SkillHit
from philont.services.base import Service
from philont.services.search.scoring import (
    CONTEXT_SOURCES,
    CONTEXT_WEIGHTS,
    Filter,
    Kind,
    MessageFilter,
    Pools,
    Scorer,
    and_all,
    best,
    contenders,
)

if TYPE_CHECKING:
    from philont.embed.search import ChannelReport
    from philont.memory import Memory

__all__ = [
    "AROUND_DAYS",
    "CONTEXT_WEIGHTS",
    "MessageQuery",
    "ScoredMessage",
    "SearchService",
    "recall_rows",
]


AROUND_DAYS = 3.0
"""``around=t`` prefers the messages within this many days of ``t`` (as a period the query
names is preferred: never required)."""


class ScoredMessage(NamedTuple):
    """A message hit as stored values, for callers on a hot path (the timeline retriever)."""

    id: int
    session_id: str
    role: str
    content: str
    timestamp: int  # epoch ms
    score: float


class MessageQuery(TypedDict, total=False):
    """The options of :meth:`SearchService.messages`, which hands them to
    :meth:`SearchService.message_rows` (where their defaults are)."""

    limit: int
    since: datetime | None
    until: datetime | None
    session_ids: Sequence[str] | None
    roles: Iterable[Role | str] | None
    exclude_ids: Collection[int]
    now: datetime | None
    as_of: datetime | None
    around: datetime | None


def _no_message_rows(
    service: SearchService,
    *,
    since: datetime | None,
    until: datetime | None,
    as_of: datetime | None,
    roles: Iterable[Role | str] | None,
    now: datetime | None,
    around: datetime | None,
    **_: Any,
) -> list[ScoredMessage]:
    """``message_rows`` in sessions none of which can exist (:mod:`philont.finds`): its options
    checked as it checks them, then no messages."""
    _message_filter(since, until, as_of, None, roles)
    service._times(now, around)
    return []


class SearchService(Service):
    """Relevance-ranked keyword search (one mechanism for messages, notes and skills).

    All user text goes through :func:`philont.domain.query.build_plan` (every FTS5 term is
    quoted, LIKE wildcards escaped) and all SQL binds its values. Ranking: per-term bm25 from
    word indexes (porter stemming on SQLite, ``english`` on PostgreSQL), each term weighted by
    its idf once more, which favours the rare, telling words of a natural question over its
    common ones; long words also match as substrings; CJK words are found through
    two-character terms. Messages additionally earn a share of the score of the messages just
    before and after them in the same session (see ``CONTEXT_WEIGHTS``).
    """

    def __init__(
        self,
        mem: Memory,
        *,
        context_weights: Sequence[tuple[int, float]] = CONTEXT_WEIGHTS,
        ranking: RankingOptions = RankingOptions(),  # noqa: B008 - frozen, shared on purpose
    ) -> None:
        """``context_weights``: (offset, share) pairs for messages (``()`` turns it off);
        ``ranking``: the rules of :mod:`philont.domain.ranking` messages search applies."""
        super().__init__(mem)
        self._context = tuple((int(off), float(w)) for off, w in context_weights if off and w)
        self._rules = ranking
        self.reports: dict[Kind, ChannelReport] = {}
        """What answered the last search of each channel (only with an embedder: issue #18)."""

    # --- messages ----------------------------------------------------------------------------

    @finds("session_ids", absent=PASS_ON)  # message_rows answers
    @careful_read
    def messages(
        self,
        query: str,
        **options: Unpack[MessageQuery],
    ) -> list[MessageHit]:
        """Messages matching ``query``, best first (at most ``limit``, default 10).

        ``since``/``until`` are inclusive bounds on the timestamp; ``session_ids`` and ``roles``
        restrict (an empty or None value means no restriction); ``exclude_ids`` are never
        returned (they still lend context to their neighbours). The role column is never
        searched. Text with nothing searchable in it gives ``[]``. A period the query names
        ("in June", "last week") is preferred, never required; relative ones count from
        ``now`` (default: the clock). ``around`` prefers the messages within
        ``AROUND_DAYS`` of that time the same way. ``as_of`` searches the timeline as it stood
        then (the messages stamped by then).
        """
        rows = self.message_rows(query, **options)
        return [
            MessageHit(
                id=r.id,
                session_id=r.session_id,
                role=_role(r.role),
                content=r.content,
                timestamp=from_epoch_ms(r.timestamp),
                score=r.score,
            )
            for r in rows
        ]

    @finds("session_ids", absent=_no_message_rows)
    @careful_read
    def message_rows(
        self,
        query: str,
        *,
        limit: int = 10,
        since: datetime | None = None,
        until: datetime | None = None,
        session_ids: Sequence[str] | None = None,
        roles: Iterable[Role | str] | None = None,
        exclude_ids: Collection[int] = (),
        now: datetime | None = None,
        as_of: datetime | None = None,
        around: datetime | None = None,
    ) -> list[ScoredMessage]:
        """:meth:`messages` as stored values (:class:`ScoredMessage`), for hot paths."""
        return self._message_rows(
            query,
            limit=limit,
            since=since,
            until=until,
            session_ids=session_ids,
            roles=roles,
            exclude_ids=exclude_ids,
            now=now,
            as_of=as_of,
            around=around,
        )

    def _message_rows(
        self,
        query: str,
        *,
        limit: int,
        since: datetime | None,
        until: datetime | None,
        session_ids: Sequence[str] | None,
        roles: Iterable[Role | str] | None,
        exclude_ids: Collection[int],
        now: datetime | None,
        as_of: datetime | None,
        around: datetime | None,
    ) -> list[ScoredMessage]:
        flt = _message_filter(since, until, as_of, session_ids, roles)
        now, near = self._times(now, around)
        plan = self._plan(query)
        raw = self.mem.raw()
        if plan is None:
            return []
        excluded = set(exclude_ids)
        pools = Pools.of(limit, excluded=len(excluded))
        own = self._ranked_own(query, plan, flt.as_sql(raw.mark), pools, now, near)
        own = self._semantic(Kind.MESSAGES, query, own, flt.as_sql(raw.mark), limit + len(excluded))
        if not own:
            return []
        combined = self._add_context(own, flt)
        for i in excluded:
            combined.pop(i, None)
        ranked = best(combined, limit)
        fetched = message_rows.by_ids(raw, ranked)
        return [
            ScoredMessage(*row, combined[i]) for i in ranked if (row := fetched.get(i)) is not None
        ]

    def _times(
        self, now: datetime | None, around: datetime | None
    ) -> tuple[datetime, datetime | None]:
        """A message search's ``now`` (default: the clock) and ``around``, checked."""
        now = self._now() if now is None else inputs.check(inputs.AwareTime, now, "now")
        return now, None if around is None else inputs.check(inputs.AwareTime, around, "around")

    # --- issue #16: the ranking rules of philont.domain.ranking --------------------------------

    def _ranked_own(
        self,
        query: str,
        plan: SearchPlan,
        flt: Filter,
        pools: Pools,
        now: datetime,
        around: datetime | None,
    ) -> dict[int, float]:
        """Each candidate message's own score: keywords, then the period and session rules
        over the best ``pools.rules`` candidates (one more statement reads their sessions and
        times)."""
        rules = self._rules
        terms = self._terms(Kind.MESSAGES, plan, flt, pools)
        own = ranking.total(terms)
        periods = ranking.query_periods(query, now, rules)
        if around is not None:
            periods.append(ranking.around(around, days=AROUND_DAYS))
        if len(own) < 2 or not (periods or rules.session_weight > 0):
            return own
        # Only which candidates the rules weigh matters here, not their order.
        weighed = list(own) if len(own) <= pools.rules else best(own, pools.rules)
        rows = message_rows.placements(self.mem.raw(), weighed)
        if periods:
            at = {i: r.timestamp for i, r in rows.items()}
            own = ranking.prefer_periods(own, at, periods, rules.period_weight)
        session_of = {i: r.session_id for i, r in rows.items()}
        return ranking.lift_sessions(own, terms, session_of, rules.session_weight)

    def _add_context(self, own: dict[int, float], flt: MessageFilter) -> dict[int, float]:
        """Add each top match's share to its session neighbours (see ``CONTEXT_WEIGHTS`` and
        :func:`philont.domain.ranking.share_with_neighbours`)."""
        if not self._context:
            return dict(own)
        sources = best(own, CONTEXT_SOURCES)
        offsets = (0, *(off for off, _w in self._context))
        wanted = {s + off for s in sources for off in offsets}
        rows = message_rows.headers(self.mem.raw(), sorted(i for i in wanted if i > 0))
        check = not flt.is_empty()
        chosen = set(sources)
        turns = {  # the sources, and the neighbours the filter lets through
            i: (r.session_id, r.role, i in chosen and ranking.asks(r.content))
            for i, r in rows.items()
            if not check or i in own or flt.accepts(r.session_id, r.timestamp, r.role)
        }
        return ranking.share_with_neighbours(
            own, sources, turns, self._context, self._rules.reaction_share
        )

    # --- notes -------------------------------------------------------------------------------

    @careful_read
    def notes(
        self,
        query: str,
        *,
        limit: int = 5,
        include_forgotten: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
    ) -> list[NoteHit]:
        """Notes matching ``query``, best first; forgotten notes only with ``include_forgotten``.

        ``since``/``until`` bound when a note was written (inclusive); ``as_of`` searches the
        notes as they stood then: written by then, and not forgotten by then.
        Relevance is multiplied by ``0.75 + importance / 2`` (importance 0..1), so importance
        breaks near-ties without outranking a clearly better match.
        """
        mark = self.mem.raw().mark
        parts = _written(mark, "b.created_at", since, until, as_of)
        if as_of is not None and not include_forgotten:
            parts.append((f"(b.forgotten_at IS NULL OR b.forgotten_at > {mark})", [_ms(as_of)]))
        elif not include_forgotten:
            parts.append(("b.forgotten_at IS NULL", []))
        flt = and_all(parts)
        plan = self._plan(query)
        if plan is None:
            return []
        own = self._score(Kind.NOTES, plan, flt, limit)
        own = self._semantic(Kind.NOTES, query, own, flt, limit)
        if not own:
            return []
        # Importance scales scores by 0.75..1.25, so only candidates within 0.6 of the
        # limit-th best score can still make the cut.
        own = contenders(own, limit, 0.75 / 1.25)
        rows = note_rows.by_keys(self.mem.raw(), self._scorer.key(Kind.NOTES), list(own))
        scored = []
        for key, score in own.items():
            r = rows.get(key)
            if r is None:  # pragma: no cover - deleted concurrently
                continue
            importance = float(r.importance) if r.importance is not None else 0.5
            prior = 0.75 + 0.5 * min(max(importance, 0.0), 1.0)
            scored.append((score * prior, r))
        scored.sort(key=lambda x: (-x[0], -x[1].created_at))
        return [
            NoteHit(
                id=r.id,
                content=r.content,
                importance=float(r.importance if r.importance is not None else 0.5),
                session_id=r.session_id,
                created_at=from_epoch_ms(r.created_at),
                forgotten_at=None if r.forgotten_at is None else from_epoch_ms(r.forgotten_at),
                score=s,
            )
            for s, r in scored[:limit]
        ]

    # --- skills ------------------------------------------------------------------------------

    @careful_read
    def skills(
        self,
        query: str,
        *,
        limit: int = 5,
        kind: SkillKind | str | None = None,
        callable_only: bool = False,
        include_deprecated: bool = False,
        since: datetime | None = None,
        until: datetime | None = None,
        as_of: datetime | None = None,
    ) -> list[SkillHit]:
        """Skills matching ``query`` in name, trigger keywords, description or when-to-use.

        Deprecated skills are left out unless ``include_deprecated``; ``callable_only`` keeps
        draft, confirmed and stable ones (no playbooks); ``kind`` keeps one kind.
        ``since``/``until`` bound when a skill was made (inclusive); ``as_of`` keeps the skills
        that existed then.
        """
        parts = _written(self.mem.raw().mark, "b.created_at", since, until, as_of)
        if kind is not None:
            try:
                wanted = SkillKind(kind)
            except ValueError as exc:
                raise InvalidInputError.of("kind", f"unknown skill kind {kind!r}") from exc
            # Philont reads every value other than 'negative' as positive.
            op = "=" if wanted is SkillKind.NEGATIVE else "!="
            parts.append((f"b.kind {op} 'negative'", ()))
        if callable_only:  # the grades that may be called, and no incomplete recipe
            callable_grades = [g for g in Grade if is_callable(g)]
            parts.append((skill_rows.grade_is("b.maturity", callable_grades), ()))
            # before the pool is cut: filtered after it, skills whose recipe is incomplete
            # took the places of callable ones further down (none came back at all)
            held = skill_rows.held_back_by_recipe(self.mem.raw(), callable_grades)
            if held:
                cond, params = self.mem.raw().in_ids("b.id", held)
                parts.append((f"NOT ({cond})", params))
        elif not include_deprecated:
            parts.append(("b.maturity != 'deprecated'", ()))
        plan = self._plan(query)
        if plan is None:
            return []
        flt = and_all(parts)
        own = self._score(Kind.SKILLS, plan, flt, limit)
        own = self._semantic(Kind.SKILLS, query, own, flt, limit)
        if not own:
            return []
        own = contenders(own, limit, 1.0)  # ties are broken by use count, then age
        rows = skill_rows.by_keys(self.mem.raw(), self._scorer.key(Kind.SKILLS), list(own))
        if callable_only:
            rows = {k: r for k, r in rows.items() if skill_rows.is_callable(r)}
        ranked = sorted(
            (key for key in own if key in rows),
            key=lambda key: (-own[key], -int(rows[key].use_count or 0), -rows[key].created_at),
        )[:limit]
        return [_skill_hit(rows[key], own[key]) for key in ranked]

    # --- issue #18: semantic recall, fused by score (philont.embed); a no-op without embedder --

    def _semantic(
        self, kind: Kind, query: str, own: dict[Any, float], flt: Filter, wanted: int
    ) -> dict[Any, float]:
        if self.mem.store.embedder is None:
            return own
        from philont.embed.search import fuse_channel

        fused, self.reports[kind] = fuse_channel(self.mem, kind, query, own, flt, wanted)
        return fused

    # --- the mechanism -----------------------------------------------------------------------

    @property
    def _scorer(self) -> Scorer:
        return self.mem.store.scorer

    def _plan(self, query: object) -> SearchPlan | None:
        """The search plan of ``query``; with the forms rule on, with the words' forms."""
        text = inputs.check(inputs.Query, query, "query")
        return build_plan(text, forms=self._rules.form_weight > 0)

    def _terms(
        self, kind: Kind, plan: SearchPlan, flt: Filter, pools: Pools
    ) -> list[ranking.Scores]:
        """Per query word (forms folded into their word) and CJK term, candidate scores."""
        terms = self._scorer.term_scores(self.mem.raw(), kind, plan, flt, pools)
        return ranking.fold_forms(terms, plan.form_of, self._rules.form_weight, plan.spellings)

    def _score(self, kind: Kind, plan: SearchPlan, flt: Filter, limit: int) -> dict[Any, float]:
        """Relevance of every candidate (key -> score > 0) that passes ``flt``."""
        return ranking.total(self._terms(kind, plan, flt, Pools.of(limit)))


def recall_rows(
    search: SearchService,
    query: str,
    *,
    limit: int,
    session_ids: Sequence[str] | None,
    until: datetime | None,
    exclude_ids: Collection[int],
    now: datetime | None,
    around: datetime | None,
) -> list[ScoredMessage]:
    """:meth:`SearchService.message_rows` for the timeline retriever, whose own public method
    has checked these arguments on entry (the query, the session ids, the times; the excluded
    ids are ids it read): the entry checks are not run twice on every turn, but for the limit,
    which the retriever derives from its own arguments. Careful reading as the method's."""
    inputs.check(inputs.Limit, limit, "limit")
    return careful(
        search.session,
        lambda: search._message_rows(
            query,
            limit=limit,
            since=None,
            until=until,
            session_ids=session_ids,
            roles=None,
            exclude_ids=exclude_ids,
            now=now,
            as_of=None,
            around=around,
        ),
    )


def _ms(value: object) -> int:
    return to_epoch_ms(inputs.check(inputs.AwareTime, value, "as_of"))


def _written(
    mark: str,
    column: str,
    since: datetime | None,
    until: datetime | None,
    as_of: datetime | None,
) -> list[tuple[str, Sequence[Any]]]:
    """Conditions: ``column`` (epoch ms) inside [since, until], and not after ``as_of``."""
    start, end = inputs.window(since, until, what="search window")
    parts: list[tuple[str, Sequence[Any]]] = []
    if start is not None:
        parts.append((f"{column} >= {mark}", [to_epoch_ms(start)]))
    if end is not None:
        parts.append((f"{column} <= {mark}", [to_epoch_ms(end)]))
    if as_of is not None:
        parts.append((f"{column} <= {mark}", [_ms(as_of)]))
    return parts


def _message_filter(
    since: datetime | None,
    until: datetime | None,
    as_of: datetime | None,
    session_ids: Sequence[str] | None,
    roles: Iterable[Role | str] | None,
) -> MessageFilter:
    """The filter of a message search; ``as_of`` (the timeline as it stood then) caps the end
    as it does for notes and skills: an ``as_of`` before ``since`` finds nothing."""
    start, end = inputs.window(since, until, what="search window")
    if as_of is not None:
        cap = inputs.check(inputs.AwareTime, as_of, "as_of")
        end = cap if end is None else min(end, cap)
    sessions: tuple[str, ...] = ()
    if session_ids:  # never one string: Service checks that on entry
        sessions = tuple(dict.fromkeys(str(s) for s in session_ids))
    role_values: tuple[str, ...] = ()
    if roles is not None:  # a sequence, never one string: Service checks that on entry
        try:
            role_values = tuple(dict.fromkeys(Role(r).value for r in roles))
        except ValueError as exc:
            raise InvalidInputError.of("roles", f"unknown role in {roles!r}") from exc
    return MessageFilter(
        None if start is None else to_epoch_ms(start),
        None if end is None else to_epoch_ms(end),
        sessions,
        role_values,
    )


def _skill_hit(r: skill_rows.SkillHitRow, score: float) -> SkillHit:
    return SkillHit(
        id=r.id,
        name=r.name,
        description=r.description,
        when_to_use=r.when_to_use or "",
        trigger_keywords=_keywords(r.trigger_keywords),
        kind=SkillKind.NEGATIVE if r.kind == "negative" else SkillKind.POSITIVE,
        maturity=parse_grade(r.maturity, Grade.DRAFT),
        use_count=int(r.use_count or 0),
        created_at=from_epoch_ms(r.created_at),
        score=score,
    )


def _role(value: str) -> Role:
    try:
        return Role(value)
    except ValueError:  # pragma: no cover - the column only ever holds the four roles
        return Role.USER


def _keywords(value: Any) -> list[str]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except (ValueError, RecursionError):
        return [str(value)]
    if isinstance(parsed, list):
        return [str(k) for k in parsed]
    return [] if parsed is None else [str(parsed)]
