"""Ranking rules of message search, as pure functions over score dicts (message id -> score).

Search scores each candidate message by its keywords, term by term
(:mod:`philont.services.search`); the rules here adjust those scores with what keywords alone
miss, from a few facts per row (session, role, whether it asks a question) and the query's own
date phrases. Both backends apply the same functions to the same inputs, so they rank alike.
Each rule has a switch in :class:`RankingOptions`. No database, no I/O.

* a period the query names ("on 3 May 2023", "in June", "last week") is a soft preference:
  matches inside it score more, matches outside it (and undated ones) stay;
* a session that matches the query as a whole lifts the matches inside it;
* the reply to a question (its answer) keeps a larger share of the question's score than the
  reply to a statement (often a mere reaction);
* a form of a query word that stemming cannot join ("bought" for "buy", "bands" for
  "artists/bands") counts as a weaker match of that word; its decomposed Unicode spelling
  (``e`` + U+0301 for ``é``) as that word itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from philont.domain.dates import Period, find_periods
from philont.domain.timepolicy import clamp

__all__ = [
    "QueryPeriod",
    "RankingOptions",
    "Scores",
    "Turn",
    "asks",
    "fold_forms",
    "lift_sessions",
    "prefer_periods",
    "query_periods",
    "session_coverage",
    "share_with_neighbours",
    "total",
]

Scores = Mapping[int, float]


@dataclass(frozen=True)
class RankingOptions:
    """Which ranking rules apply, and how strongly; the defaults are the rules search uses
    (measured with ``scripts/bench_recall.py``), :meth:`none` turns them all off."""

    period_weight: float = 2.0
    """A period named in the query: a match inside it scores ``1 + period_weight`` times as
    much; matches outside it keep their score (``0``: the rule is off)."""
    period_slack_days: float = 7.0
    """The period is stretched this many days forward: people recount what happened a little
    after it happened ("yesterday I ...", "last week we ...")."""
    period_relative: bool = True
    """Relative phrases ("last week", "昨天") count, read from the search's ``now``."""
    session_weight: float = 0.5
    """A match in the session that covers most of the query scores up to ``1 +
    session_weight`` times as much; other sessions' matches less, by the square of their
    coverage relative to the best (``0``: off). See :func:`lift_sessions`."""
    reaction_share: float = 0.25
    """The reply to a matching message that asks nothing (a reaction: "Wow, that's great!")
    earns this share of its score instead of the context weights' +1 share, which the answer
    to a question keeps (negative: no difference)."""
    form_weight: float = 0.5
    """A form of a query word that stemming cannot join (an irregular inflection: "bought"
    for "buy"; a part of a compound: "bands" for "artists/bands") is searched too, and a
    message holding it scores this share of what the word itself would earn there, unless
    the word's own score is higher (``0``: forms are not searched). Messages, notes and skills.
    See :func:`fold_forms`."""

    @classmethod
    def none(cls) -> RankingOptions:
        """Every rule off: keyword scores and plain conversation context only."""
        return cls(period_weight=0.0, session_weight=0.0, reaction_share=-1.0, form_weight=0.0)


def total(terms: Sequence[Scores]) -> dict[int, float]:
    """Each message's keyword score: the sum of its per-term scores (positive ones only)."""
    out: dict[int, float] = {}
    get = out.get  # bound once: this runs over every candidate of every term, every turn
    for scores in terms:
        for msg, score in scores.items():
            out[msg] = get(msg, 0.0) + score
    return {msg: score for msg, score in out.items() if score > 0}


def fold_forms(
    terms: Sequence[Scores], form_of: Sequence[int], weight: float, spellings: Sequence[int] = ()
) -> list[Scores]:
    """The per-term scores with each form's term folded into the term of the word it is a
    form of (``form_of[i]``: that word's index; ``i`` itself for the query's own words): per
    message, the better of the word's score and ``weight`` times the form's. So a form never
    counts as a word of its own (a message holding "buy" and "bought" matches one word), and a
    session's coverage counts the word once. The ``spellings`` (another spelling of the term
    ``form_of`` names: its decomposed Unicode) fold first, at full weight: a message holding
    either spelling matches the term once. Terms past ``form_of`` are kept as they are; with
    no forms the terms come back unchanged."""
    if all(base == i for i, base in enumerate(form_of)):
        return list(terms)
    folded: list[dict[int, float]] = [dict(t) for t in terms]
    full = set(spellings)
    forms = [i for i, base in enumerate(form_of) if base != i and i not in full]
    for i in (*spellings, *forms):
        base = form_of[i]
        if i >= len(terms) or base >= len(terms):
            continue
        into, share = folded[base], 1.0 if i in full else weight
        for msg, score in folded[i].items():
            into[msg] = max(into.get(msg, 0.0), share * score)
    return [t for i, t in enumerate(folded) if i >= len(form_of) or form_of[i] == i]


# --- a period named in the query -------------------------------------------------------------


@dataclass(frozen=True)
class QueryPeriod:
    """A window of the timeline the query asks about, in epoch milliseconds (both inclusive),
    with the phrase that named it."""

    since_ms: int
    until_ms: int
    period: Period


def _epoch_ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def query_periods(query: str, now: datetime, options: RankingOptions) -> list[QueryPeriod]:
    """The periods ``query`` names, read relative to ``now`` and stretched forward by the
    options' slack; none when the rule is off."""
    if options.period_weight <= 0:
        return []
    slack = timedelta(days=max(options.period_slack_days, 0.0))
    return [
        QueryPeriod(_epoch_ms(clamp(p.start)), _epoch_ms(clamp(p.end, slack)) - 1, p)
        for p in find_periods(query, now)
        if options.period_relative or not p.relative
    ]


def around(at: datetime, *, days: float) -> QueryPeriod:
    """The period ``days`` either side of ``at`` (a caller's "around <date>"), cut at the ends
    of the supported times (an ``at`` near them is valid input)."""
    span = timedelta(days=days)
    start, end = clamp(at, -span), clamp(at, span)
    period = Period(
        start=start,
        end=end,
        granularity="day",
        relative=False,
        confidence=1.0,
        span=(0, 0),
        text=f"around {at.isoformat()}",
    )
    return QueryPeriod(_epoch_ms(start), _epoch_ms(end), period)


def prefer_periods(
    own: Scores, timestamp_of: Mapping[int, int], periods: Sequence[QueryPeriod], weight: float
) -> dict[int, float]:
    """Scores with each message of ``timestamp_of`` (id -> epoch ms) that falls inside one of
    the periods multiplied by ``1 + weight``; every other match keeps its score."""
    if not periods or weight <= 0:
        return dict(own)
    factor = 1.0 + weight
    preferred = dict(own)
    for msg, at in timestamp_of.items():
        if msg in preferred and any(p.since_ms <= at <= p.until_ms for p in periods):
            preferred[msg] *= factor
    return preferred


# --- a session's overall match ---------------------------------------------------------------


def session_coverage(terms: Sequence[Scores], session_of: Mapping[int, str]) -> dict[str, float]:
    """How well each session matches the query as a whole: per term, the best score any of
    its messages earns for that term, summed over the terms. A session answering the query in
    several turns ("picnic" in one, "church friends" in the next) covers it although no single
    message does. Messages missing from ``session_of`` are not counted."""
    coverage: dict[str, float] = {}
    session, add = session_of.get, coverage.get
    for scores in terms:
        top: dict[str, float] = {}  # this term's best score per session
        best = top.get
        for msg, score in scores.items():
            sid = session(msg)
            if sid is not None and score > best(sid, 0.0):
                top[sid] = score
        for sid, score in top.items():
            coverage[sid] = add(sid, 0.0) + score
    return coverage


def lift_sessions(
    own: Scores, terms: Sequence[Scores], session_of: Mapping[int, str], weight: float
) -> dict[int, float]:
    """Each message of ``session_of`` scores ``1 + weight * (c / c_max) ** 2`` times as much,
    ``c`` its session's :func:`session_coverage` and ``c_max`` the best session's; others keep
    their score. With one session only, every factor is the same and the order unchanged."""
    coverage = session_coverage(terms, session_of)
    top = max(coverage.values(), default=0.0)
    if weight <= 0 or top <= 0 or len(coverage) < 2:
        return dict(own)
    # one factor per session (the same expression, so the same float, as per message)
    factor = {sid: 1.0 + weight * (c / top) ** 2 for sid, c in coverage.items()}
    missing = 1.0 + weight * (0.0 / top) ** 2  # a session that covers nothing
    lifted = dict(own)
    for msg, sid in session_of.items():
        if msg in lifted:
            lifted[msg] *= factor.get(sid, missing)
    return lifted


# --- conversation context: neighbours, and the answer to a question --------------------------


Turn = tuple[str, str, bool]
"""What the context rule reads of a message: ``(session_id, role, asks)`` (whether it asks a
question; only a source's is read). A plain tuple: search builds one per row it reads."""


def asks(content: str) -> bool:
    """Whether a message asks something: it holds a question mark."""
    return "?" in content or "？" in content


def share_with_neighbours(
    own: Scores,
    sources: Sequence[int],
    turns: Mapping[int, Turn],
    weights: Sequence[tuple[int, float]],
    reaction_share: float = -1.0,
) -> dict[int, float]:
    """``own`` plus, for each source, shares of its score passed to the messages ``offset``
    ids away in the same session (``weights``: (offset, share) pairs; ids are consecutive in a
    session's stored order). The +1 neighbour of a source that asks nothing is a reaction, not
    an answer: it earns ``reaction_share`` instead (when that is not negative). ``turns`` holds
    the sources and the neighbours allowed to earn (those that pass the search's filters)."""
    combined = dict(own)
    turn, earned = turns.get, combined.get
    reacting = reaction_share >= 0
    for s in sources:
        src = turn(s)
        if src is None or s not in own:
            continue
        session_id, _role, source_asks = src
        score = own[s]
        for off, weight in weights:
            to = s + off
            n = turn(to)
            if n is None or n[0] != session_id:
                continue
            if off == 1 and reacting and not source_asks:
                weight = reaction_share
            combined[to] = earned(to, 0.0) + weight * score
    return combined
