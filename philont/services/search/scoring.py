"""What both search scorers share: tunables, terms, filters and the rank arithmetic."""

from __future__ import annotations

import enum
import math
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from philont.db.backend import Raw
    from philont.domain.query import SearchPlan

# --- tunables --------------------------------------------------------------------------------
# Chosen on general grounds and checked on the LoCoMo development conversation with
# scripts/bench_recall.py (no per-question or per-dataset tuning).

CANDIDATES_PER_TERM = 30
"""Each term contributes its best this-many documents (bm25 order) to the candidate pool (at
least as many as the search asks for: :class:`Pools`)."""

BM25_MAX_DF = 200
PRESENCE_WINDOW = 60
"""Terms in at most BM25_MAX_DF documents are ranked by bm25 (whose cost grows with the number
of documents holding the term); more common ones count as present in their newest
PRESENCE_WINDOW documents, weighted by idf squared (bm25 with tf 1 at average length)."""

BM25_K1 = 1.2
"""bm25's term-frequency saturation, as in FTS5 (used for the CJK channel, which has no bm25)."""

SUBSTRING_MIN_CHARS = 6
SUBSTRING_WEIGHT = 0.5
"""When whole words find fewer candidates than asked for, words this long are also looked up
as substrings in the trigram index (compounds: ``Kaution`` in ``Mietkaution``), at this
fraction of a word match's score."""

CONTEXT_WEIGHTS: tuple[tuple[int, float], ...] = ((1, 0.5), (-1, 0.2), (2, 0.2), (-2, 0.1))
"""Conversation context, as (offset, share): the message ``offset`` places after a keyword
match (negative: before it), in the same session, earns ``share`` of the match's score; so the
reply to a matching question earns half of it. Replies rarely repeat the words of the question
they answer; this lets them be found. Every hit is one real message ranked on its own score
plus these shares (a neighbour takes a result slot only by outscoring other messages); nothing
is appended to a hit. ``SearchService(context_weights=())`` turns it off."""

RULES_POOL = 100
"""The period and session rules (:mod:`philont.domain.ranking`) weigh the best this-many
keyword matches (a bounded cost: one look-up of their sessions and times)."""

CONTEXT_SOURCES = 30
"""Only the best this-many keyword matches pass a share of their score to their neighbours."""

CJK_OCCURRENCE_CAP = 1_000
CJK_RECENT_ROWS = 2_000
"""Messages: a short CJK term's occurrences in the trigram index are counted up to
CJK_OCCURRENCE_CAP (inside SQLite, about 0.5 us each). A rarer term's messages are all read
and scored; a more common one counts as present in its newest PRESENCE_WINDOW matches among
the newest CJK_RECENT_ROWS messages that pass the filters, weighted by idf squared like a
common word. So a term's cost is bounded whatever the history size."""

CJK_INSTANCE_CAP = 20_000
"""Notes and skills (small tables): at most this many records matching a CJK term are read by
LIKE; more marks the term common."""


@dataclass(frozen=True)
class Pools:
    """The candidate pools of one search, a function of how many results it asks for (one rule
    for both backends). For a limit up to CANDIDATES_PER_TERM they are the tuned defaults above
    (so the ranking of such a search does not depend on its limit); a larger limit grows every
    pool with ``wanted`` (the limit plus the ids to drop): per term its best ``max(30,
    wanted)`` documents, a common term its newest ``max(60, 2 * wanted)``, the rules weigh the
    best ``max(100, wanted)``, and the windows read to find a common term's matches grow
    with the presence pool. So such a search returns ``limit`` hits whenever that many
    documents match (and all of them when fewer do)."""

    wanted: int
    per_term: int
    presence: int
    rules: int

    @classmethod
    def of(cls, limit: int, *, excluded: int = 0) -> Pools:
        """The pools of a search for ``limit`` results that drops ``excluded`` given ids after
        ranking (they keep their places in the pools: they lend context). Past the tuned range
        the pools make room for them too; within it they are the defaults, whatever is
        excluded."""
        wanted = limit + excluded
        n = wanted if limit > CANDIDATES_PER_TERM else 0
        return cls(
            wanted=wanted,
            per_term=max(CANDIDATES_PER_TERM, n),
            presence=max(PRESENCE_WINDOW, 2 * n),
            rules=max(RULES_POOL, n),
        )

    def at_least(self, window: int) -> int:
        """A window of ``window`` matched documents, never smaller than the presence pool."""
        return max(window, self.presence)

    def scaled(self, window: int) -> int:
        """A window of ``window`` rows scanned for the presence pool's matches, grown with it."""
        return window * self.presence // PRESENCE_WINDOW


class Kind(enum.Enum):
    """What is searched."""

    MESSAGES = "messages"
    NOTES = "notes"
    SKILLS = "skills"


class Scorer(Protocol):
    """A backend's relevance scoring (SQLite: FTS5 bm25; PostgreSQL: GIN indexes with the
    same arithmetic): per term, candidate key -> score for every document passing ``flt``."""

    def key(self, kind: Kind) -> str:
        """The column that keys the scores of ``kind`` (messages: always ``id``)."""
        ...

    def term_scores(
        self, raw: Raw, kind: Kind, plan: SearchPlan, flt: Filter, pools: Pools
    ) -> list[dict[Any, float]]:
        """Per search term, every candidate's score from the term's pool (the rules of
        :mod:`philont.domain.ranking` combine them)."""
        ...


# --- scoring helpers -------------------------------------------------------------------------


def bm25_idf(df: int, n_docs: int) -> float:
    """FTS5's bm25 idf (floored at 1e-6 exactly as FTS5 does)."""
    value = math.log((n_docs - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def saturate(tf: float) -> float:
    return tf * (BM25_K1 + 1) / (tf + BM25_K1)


@dataclass
class Term:
    """One search term's per-document scores (already multiplied by the term's weight)."""

    label: str
    df: int = 0
    scores: dict[int, float] = field(default_factory=dict)
    word: bool = False


@dataclass(frozen=True)
class Filter:
    """Extra conditions on the base table (alias ``b``), as SQL with positional parameters."""

    sql: str = ""
    params: tuple[Any, ...] = ()

    def where(self) -> str:
        return f" AND {self.sql}" if self.sql else ""


def and_all(parts: Iterable[tuple[str, Sequence[Any]]]) -> Filter:
    sqls: list[str] = []
    params: list[Any] = []
    for sql, values in parts:
        sqls.append(sql)
        params.extend(values)
    return Filter(" AND ".join(sqls), tuple(params))


def marks(n: int, mark: str = "?") -> str:
    """``n`` placeholders, comma-separated."""
    return ", ".join([mark] * n)


@dataclass(frozen=True)
class MessageFilter:
    """Restrictions on messages: an inclusive time window (epoch ms), sessions, roles."""

    since_ms: int | None
    until_ms: int | None
    sessions: tuple[str, ...]
    roles: tuple[str, ...]

    def as_sql(self, mark: str = "?") -> Filter:
        parts: list[tuple[str, Sequence[Any]]] = []
        if self.since_ms is not None:
            parts.append((f"b.timestamp >= {mark}", (self.since_ms,)))
        if self.until_ms is not None:
            parts.append((f"b.timestamp <= {mark}", (self.until_ms,)))
        if self.sessions:
            parts.append((f"b.session_id IN ({marks(len(self.sessions), mark)})", self.sessions))
        if self.roles:
            parts.append((f"b.role IN ({marks(len(self.roles), mark)})", self.roles))
        return and_all(parts)

    def is_empty(self) -> bool:
        return (
            self.since_ms is None and self.until_ms is None and not self.sessions and not self.roles
        )

    def accepts(self, session_id: str, timestamp: int, role: str) -> bool:
        if self.since_ms is not None and timestamp < self.since_ms:
            return False
        if self.until_ms is not None and timestamp > self.until_ms:
            return False
        if self.sessions and session_id not in self.sessions:
            return False
        return not (self.roles and role not in self.roles)


def best(scores: dict[Any, float], n: int) -> list[Any]:
    """The ``n`` best ids, best first; equal scores: the larger (newer) id first."""
    if len(scores) > n:
        # Sorting bare floats is several times faster than sorting pairs: find the cut first.
        cut = sorted(scores.values(), reverse=True)[n - 1]
        pairs = [(s, i) for i, s in scores.items() if s >= cut]
    else:
        pairs = [(s, i) for i, s in scores.items()]
    pairs.sort(reverse=True)
    return [i for _s, i in pairs[:n]]


MAX_CONTENDERS = 2_000


def contenders(scores: dict[Any, float], limit: int, ratio: float) -> dict[Any, float]:
    """The candidates scoring at least ``ratio`` times the ``limit``-th best score (at most
    MAX_CONTENDERS of them, or twice the limit if more), the only ones a later tie-break or
    prior can still promote."""
    if len(scores) <= limit:
        return scores
    kth = sorted(scores.values(), reverse=True)[limit - 1]
    kept = {i: s for i, s in scores.items() if s >= kth * ratio}
    cap = max(MAX_CONTENDERS, 2 * limit)
    if len(kept) > cap:
        kept = {i: kept[i] for i in best(kept, cap)}
    return kept


def share_idf(terms: list[Term], plan: SearchPlan, n_docs: int) -> None:
    """A term and its decomposed spelling (``plan.spellings``) are one word: both are weighted
    by the idf of the more common of the two (every channel weighs a term by its idf squared),
    so a rare spelling does not outweigh its word. SQLite's word index reads both spellings of
    a Latin word as one token: nothing changes there. ``terms``: one per term of the plan."""
    for i in plan.spellings:
        pair = (terms[plan.form_of[i]], terms[i])
        df = max(t.df for t in pair)
        for t in pair:
            if t.df < df:
                ratio = (bm25_idf(df, n_docs) / bm25_idf(max(t.df, 1), n_docs)) ** 2
                t.df, t.scores = df, {d: s * ratio for d, s in t.scores.items()}


def words_of_length(terms: list[Term], chars: int) -> list[Term]:
    """The word terms of at least ``chars`` characters, counted composed (NFC): a decomposed
    spelling (``SearchPlan.spellings``) is looked up as its word is."""
    return [t for t in terms if t.word and len(unicodedata.normalize("NFC", t.label)) >= chars]


def distinct_at_most(terms: list[Term], enough: int) -> int:
    """How many distinct documents the terms found, counted up to ``enough``."""
    if any(len(t.scores) >= enough for t in terms):
        return enough
    return min(enough, len({d for t in terms for d in t.scores}))


def estimate_df(newest: dict[int, float], n_docs: int, window: int) -> int:
    """Document frequency of a common term from its newest occurrences (at most ``window``):
    the window's share of the rowid range it spans, scaled to the collection (rowids grow with
    time)."""
    floor = BM25_MAX_DF + 1
    if len(newest) < window:
        return max(floor, len(newest))
    span = max(n_docs - min(newest) + 1, len(newest))
    return min(n_docs, max(floor, round(len(newest) * n_docs / span)))


def estimate_cjk_df(newest: list[int], n_docs: int, window: int, recent: int) -> int:
    """Document frequency of a common CJK term from its newest matches (at most ``window``
    among the newest ``recent`` rows): their share of the rowids they span (of all ``recent``
    read, when fewer than ``window`` matched), scaled to the collection."""
    span = n_docs - min(newest) + 1 if len(newest) >= window else min(recent, n_docs)
    return min(n_docs, max(len(newest), 1, round(len(newest) * n_docs / max(span, 1))))
