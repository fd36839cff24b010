"""Keyword search over messages, notes and skills: idf-weighted bm25 on word indexes plus CJK."""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, cast

from sqlalchemy.orm import Session

from philont.clock import utc_now
from philont.db.models import Note, RawMessage, Skill
from philont.db.types import from_epoch_ms, to_epoch_ms
from philont.domain import ranking
from philont.domain.kinds import Role, SkillKind
from philont.domain.maturity import Grade, parse_grade
from philont.domain.query import LIKE_ESCAPE, SearchPlan, build_plan, like_pattern, quote
from philont.domain.ranking import RankingOptions
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.schemas.search import MessageHit, NoteHit, SkillHit

__all__ = ["DbConn", "SearchService", "driver_connection", "fetch_all"]

# --- tunables --------------------------------------------------------------------------------
# Chosen on general grounds and checked on the LoCoMo development conversation with
# scripts/bench_recall.py (no per-question or per-dataset tuning).

CANDIDATES_PER_TERM = 30
"""Each term contributes its best this-many documents (bm25 order) to the candidate pool."""

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

CONTEXT_SOURCES = 30
"""Only the best this-many keyword matches pass a share of their score to their neighbours."""

RULES_POOL = 100
"""The period and session rules (:mod:`philont.domain.ranking`) weigh the best this-many
keyword matches (a bounded cost: one look-up of their sessions and times)."""

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

MAX_LIMIT = 1_000


# --- the connection --------------------------------------------------------------------------


class Cursor(Protocol):
    def fetchall(self) -> list[tuple[Any, ...]]: ...


class DbConn(Protocol):
    """What the hot paths need of a DB-API connection: ``execute(sql, params)`` with ``?``
    placeholders, returning something with ``fetchall()`` (sqlite3's own connection does)."""

    def execute(self, sql: str, params: tuple[Any, ...], /) -> Cursor: ...


class _PgConn:
    """psycopg's connection behind the :class:`DbConn` interface (``?`` -> ``%s``; our SQL holds
    no other ``?`` or ``%``: every value is bound)."""

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def execute(self, sql: str, params: tuple[Any, ...], /) -> Cursor:
        return cast(Cursor, self._raw.execute(sql.replace("?", "%s"), params))


def driver_connection(session: Session) -> DbConn:
    """The DB-API connection under the session's transaction, pending ORM changes flushed
    first (as an ORM query would, with autoflush on).

    Search runs its read statements on it directly, with bound ``?`` parameters only:
    SQLAlchemy's per-statement and per-row machinery would cost as much as the queries.
    """
    if session.autoflush:
        session.flush()
    raw = session.connection().connection.driver_connection
    if isinstance(raw, sqlite3.Connection):
        return raw
    return _PgConn(raw)


def fetch_all(conn: DbConn, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """All rows of one read statement."""
    return conn.execute(sql, tuple(params)).fetchall()


# --- scoring helpers -------------------------------------------------------------------------


def _idf(df: int, n_docs: int) -> float:
    """FTS5's bm25 idf (floored at 1e-6 exactly as FTS5 does)."""
    value = math.log((n_docs - df + 0.5) / (df + 0.5))
    return value if value > 0 else 1e-6


def _saturate(tf: float) -> float:
    return tf * (BM25_K1 + 1) / (tf + BM25_K1)


@dataclass
class _Term:
    """One search term's per-document scores (already multiplied by the term's weight)."""

    label: str
    df: int = 0
    scores: dict[int, float] = field(default_factory=dict)
    word: bool = False


@dataclass(frozen=True)
class _Corpus:
    """Where one kind of record is indexed."""

    base: str
    count_sql: str
    words: str
    words_column: str | None
    words_weights: str
    trigram: str
    trigram_column: str | None
    trigram_weights: str
    like_columns: tuple[tuple[str, float], ...]


_MESSAGES = _Corpus(
    base=RawMessage.__tablename__,
    # max(rowid) is O(log n) and equals the count for an append-only table.
    count_sql=f"SELECT coalesce(max(rowid), 0) FROM {RawMessage.__tablename__}",
    words="philont_raw_messages_words_fts",
    words_column="content",
    words_weights=", 1.0, 0.0",
    trigram="memory_raw_messages_fts",
    trigram_column="content",  # never the role column (spec Q-F5)
    trigram_weights=", 1.0, 0.0",
    like_columns=(("content", 1.0),),
)
_NOTES = _Corpus(
    base=Note.__tablename__,
    count_sql=f"SELECT count(*) FROM {Note.__tablename__}",
    words="philont_notes_words_fts",
    words_column=None,
    words_weights="",
    trigram="memory_notes_fts",
    trigram_column=None,
    trigram_weights="",
    like_columns=(("content", 1.0),),
)
# name > trigger keywords > description (when_to_use reads like a description).
_SKILLS = _Corpus(
    base=Skill.__tablename__,
    count_sql=f"SELECT count(*) FROM {Skill.__tablename__}",
    words="philont_skills_words_fts",
    words_column=None,
    words_weights=", 4.0, 1.0, 2.0, 1.0",
    trigram="memory_skills_fts",
    trigram_column=None,
    trigram_weights=", 4.0, 1.0, 2.0",
    like_columns=(
        ("name", 4.0),
        ("description", 1.0),
        ("trigger_keywords", 2.0),
        ("coalesce(when_to_use, '')", 1.0),
    ),
)


@dataclass(frozen=True)
class _Filter:
    """Extra conditions on the base table (alias ``b``), as SQL with positional parameters."""

    sql: str = ""
    params: tuple[Any, ...] = ()

    def where(self) -> str:
        return f" AND {self.sql}" if self.sql else ""


def _and(parts: Iterable[tuple[str, Sequence[Any]]]) -> _Filter:
    sqls: list[str] = []
    params: list[Any] = []
    for sql, values in parts:
        sqls.append(sql)
        params.extend(values)
    return _Filter(" AND ".join(sqls), tuple(params))


def _marks(n: int) -> str:
    return ", ".join("?" * n)  # "?, ?, ?": joins the characters of "???"


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InvalidInputError(f"limit must be a positive integer, got {limit!r}")
    return min(limit, MAX_LIMIT)


def _check_query(query: str) -> SearchPlan | None:
    if not isinstance(query, str):
        raise InvalidInputError(f"query must be a string, got {type(query).__name__}")
    return build_plan(query)


# --- the service -----------------------------------------------------------------------------


class SearchService:
    """Relevance-ranked keyword search (one mechanism for messages, notes and skills).

    All user text goes through :func:`philont.domain.query.build_plan` (every FTS5 term is
    quoted, LIKE wildcards escaped) and all SQL binds its values. Ranking: per-term bm25 from
    our word-level FTS5 indexes (porter stemming), each term weighted by its idf once more,
    which favours the rare, telling words of a natural question over its common ones; long
    words also match as substrings (trigram index); CJK words are found through two-character
    terms. Messages additionally earn a share of the score of the messages just before and after
    them in the same session (see ``CONTEXT_WEIGHTS``). The caller owns the transaction.
    """

    _KEY = "rowid"
    """The column notes and skills are scored by (the FTS5 indexes key on the rowid)."""

    def __new__(
        cls,
        session: Session,
        *,
        context_weights: Sequence[tuple[int, float]] = CONTEXT_WEIGHTS,
        ranking: RankingOptions = RankingOptions(),  # noqa: B008 - frozen, shared on purpose
    ) -> SearchService:
        """On PostgreSQL, the same service over its own indexes (``search_pg``)."""
        if cls is SearchService and session.get_bind().dialect.name == "postgresql":
            from philont.services.search_pg import PgSearchService

            return super().__new__(PgSearchService)
        return super().__new__(cls)

    def __init__(
        self,
        session: Session,
        *,
        context_weights: Sequence[tuple[int, float]] = CONTEXT_WEIGHTS,
        ranking: RankingOptions = RankingOptions(),  # noqa: B008 - frozen, shared on purpose
    ) -> None:
        """``context_weights``: (offset, share) pairs for messages (``()`` turns it off);
        ``ranking``: the rules of :mod:`philont.domain.ranking` messages search applies."""
        self._session = session
        self._conn: DbConn | None = None
        self._context = tuple((int(off), float(w)) for off, w in context_weights if off and w)
        self._rules = ranking

    # --- public API ------------------------------------------------------------------------

    def messages(
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
    ) -> list[MessageHit]:
        """Messages matching ``query``, best first.

        ``since``/``until`` are inclusive bounds on the timestamp; ``session_ids`` and ``roles``
        restrict (an empty or None value means no restriction); ``exclude_ids`` are never
        returned (they still lend context to their neighbours). The role column is never
        searched. Text with nothing searchable in it gives ``[]``. A period the query names
        ("in June", "last week") is preferred, never required; relative ones count from
        ``now`` (default: the clock).
        """
        rows = self.message_rows(
            query,
            limit=limit,
            since=since,
            until=until,
            session_ids=session_ids,
            roles=roles,
            exclude_ids=exclude_ids,
            now=now,
        )
        return [
            MessageHit(
                id=r[0],
                session_id=r[1],
                role=_role(r[2]),
                content=r[3],
                timestamp=from_epoch_ms(r[4]),
                score=r[5],
            )
            for r in rows
        ]

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
    ) -> list[tuple[int, str, str, str, int, float]]:
        """:meth:`messages` as plain tuples ``(id, session_id, role, content, timestamp_ms,
        score)``, for callers on a hot path (the timeline retriever)."""
        limit = _check_limit(limit)
        flt = self._message_filter(since, until, session_ids, roles)
        plan = _check_query(query)
        self._conn = driver_connection(self._session)
        if plan is None:
            return []
        excluded = set(exclude_ids)
        own = self._ranked_own(query, plan, flt, limit + len(excluded), now)
        if not own:
            return []
        combined = self._add_context(own, flt)
        for i in excluded:
            combined.pop(i, None)
        ranked = _best(combined, limit)
        if not ranked:
            return []
        fetched = self._rows(
            f"SELECT id, session_id, role, content, timestamp FROM {_MESSAGES.base}"
            f" WHERE id IN ({_marks(len(ranked))})",
            ranked,
        )
        return [
            (i, str(r[1]), str(r[2]), str(r[3]), int(r[4]), combined[i])
            for i in ranked
            if (r := fetched.get(i)) is not None
        ]

    # --- issue #16: the ranking rules of philont.domain.ranking (periods, sessions) ----------

    def _ranked_own(
        self,
        query: str,
        plan: SearchPlan,
        flt: _MessageFilter,
        wanted: int,
        now: datetime | None,
    ) -> dict[int, float]:
        """Each candidate message's own score: keywords, then the period and session rules
        over the best RULES_POOL candidates (one more statement reads their sessions and times)."""
        rules = self._rules
        terms = self._term_scores(_MESSAGES, plan, flt, wanted)
        own = ranking.total(terms)
        periods = ranking.query_periods(query, now or utc_now(), rules)
        if len(own) < 2 or not (periods or rules.session_weight > 0):
            return own
        pool = _best(own, RULES_POOL)
        rows = self._rows(
            f"SELECT id, session_id, timestamp FROM {_MESSAGES.base}"
            f" WHERE id IN ({_marks(len(pool))})",
            pool,
        )
        if periods:
            at = {int(i): int(r[2]) for i, r in rows.items()}
            own = ranking.prefer_periods(own, at, periods, rules.period_weight)
        session_of = {int(i): str(r[1]) for i, r in rows.items()}
        return ranking.lift_sessions(own, terms, session_of, rules.session_weight)

    # --- notes and skills ------------------------------------------------------------------

    def notes(
        self, query: str, *, limit: int = 5, include_forgotten: bool = False
    ) -> list[NoteHit]:
        """Notes matching ``query``, best first; forgotten notes only with ``include_forgotten``.

        Relevance is multiplied by ``0.75 + importance / 2`` (importance 0..1), so importance
        breaks near-ties without outranking a clearly better match.
        """
        limit = _check_limit(limit)
        flt = _Filter("" if include_forgotten else "b.forgotten_at IS NULL")
        plan = _check_query(query)
        if plan is None:
            return []
        self._conn = driver_connection(self._session)
        own = self._score(_NOTES, plan, flt, limit)
        if not own:
            return []
        # Importance scales scores by 0.75..1.25, so only candidates within 0.6 of the
        # limit-th best score can still make the cut.
        own = _contenders(own, limit, 0.75 / 1.25)
        rows = self._rows(
            f"SELECT {self._KEY}, id, content, importance, session_id, created_at, forgotten_at"
            f" FROM {_NOTES.base} WHERE {self._KEY} IN ({_marks(len(own))})",
            list(own),
        )
        scored = []
        for key, score in own.items():
            r = rows.get(key)
            if r is None:  # pragma: no cover - deleted concurrently
                continue
            importance = float(r[3]) if r[3] is not None else 0.5
            prior = 0.75 + 0.5 * min(max(importance, 0.0), 1.0)
            scored.append((score * prior, r))
        scored.sort(key=lambda x: (-x[0], -x[1][5]))
        return [
            NoteHit(
                id=r[1],
                content=r[2],
                importance=float(r[3]),
                session_id=r[4],
                created_at=from_epoch_ms(r[5]),
                forgotten_at=None if r[6] is None else from_epoch_ms(r[6]),
                score=s,
            )
            for s, r in scored[:limit]
        ]

    def skills(
        self,
        query: str,
        *,
        limit: int = 5,
        kind: SkillKind | str | None = None,
        callable_only: bool = False,
        include_deprecated: bool = False,
    ) -> list[SkillHit]:
        """Skills matching ``query`` in name, trigger keywords, description or when-to-use.

        Deprecated skills are left out unless ``include_deprecated``; ``callable_only`` keeps
        draft, confirmed and stable ones (no playbooks); ``kind`` keeps one kind.
        """
        limit = _check_limit(limit)
        parts: list[tuple[str, Sequence[Any]]] = []
        if kind is not None:
            try:
                wanted = SkillKind(kind)
            except ValueError as exc:
                raise InvalidInputError(f"unknown skill kind {kind!r}") from exc
            # Philont reads every value other than 'negative' as positive.
            if wanted is SkillKind.NEGATIVE:
                parts.append(("b.kind = 'negative'", ()))
            else:
                parts.append(("b.kind != 'negative'", ()))
        if callable_only:
            parts.append(("b.maturity NOT IN ('playbook', 'deprecated')", ()))
        elif not include_deprecated:
            parts.append(("b.maturity != 'deprecated'", ()))
        flt = _and(parts)
        plan = _check_query(query)
        if plan is None:
            return []
        self._conn = driver_connection(self._session)
        own = self._score(_SKILLS, plan, flt, limit)
        if not own:
            return []
        own = _contenders(own, limit, 1.0)  # ties are broken by use count, then age
        rows = self._rows(
            f"SELECT {self._KEY}, id, name, description, when_to_use, trigger_keywords, kind,"
            f" maturity, use_count, created_at FROM {_SKILLS.base}"
            f" WHERE {self._KEY} IN ({_marks(len(own))})",
            list(own),
        )
        ranked = sorted(
            (key for key in own if key in rows),
            key=lambda key: (-own[key], -int(rows[key][8] or 0), -rows[key][9]),
        )[:limit]
        out = []
        for key in ranked:
            r = rows[key]
            out.append(
                SkillHit(
                    id=r[1],
                    name=r[2],
                    description=r[3],
                    when_to_use=r[4] or "",
                    trigger_keywords=_keywords(r[5]),
                    kind=SkillKind.NEGATIVE if r[6] == "negative" else SkillKind.POSITIVE,
                    maturity=parse_grade(r[7], Grade.DRAFT),
                    use_count=int(r[8] or 0),
                    created_at=from_epoch_ms(r[9]),
                    score=own[key],
                )
            )
        return out

    # --- filters ---------------------------------------------------------------------------

    @staticmethod
    def _message_filter(
        since: datetime | None,
        until: datetime | None,
        session_ids: Sequence[str] | None,
        roles: Iterable[Role | str] | None,
    ) -> _MessageFilter:
        since_ms = None if since is None else to_epoch_ms(since)
        until_ms = None if until is None else to_epoch_ms(until)
        if since_ms is not None and until_ms is not None and since_ms > until_ms:
            raise InvalidTimeRangeError(since, until, what="search window")
        sessions: tuple[str, ...] = ()
        if session_ids:
            if isinstance(session_ids, str):
                raise InvalidInputError("session_ids must be a sequence of ids, not one string")
            sessions = tuple(dict.fromkeys(str(s) for s in session_ids))
        role_values: tuple[str, ...] = ()
        if roles is not None:
            if isinstance(roles, str):
                roles = [roles]
            try:
                role_values = tuple(dict.fromkeys(Role(r).value for r in roles))
            except ValueError as exc:
                raise InvalidInputError(f"unknown role in {roles!r}") from exc
        return _MessageFilter(since_ms, until_ms, sessions, role_values)

    # --- the mechanism ---------------------------------------------------------------------

    def _rows(self, sql: str, params: Sequence[Any]) -> dict[Any, tuple[Any, ...]]:
        """Rows by their first column (the key the scores use)."""
        return {r[0]: r for r in self._fetch(sql, params)}

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        assert self._conn is not None, "set by each public method"
        return self._conn.execute(sql, tuple(params)).fetchall()

    def _score(
        self, corpus: _Corpus, plan: SearchPlan, flt: _Filter | _MessageFilter, wanted: int
    ) -> dict[Any, float]:
        """Relevance of every candidate (key -> score > 0) that passes ``flt``."""
        return ranking.total(self._term_scores(corpus, plan, flt, wanted))

    def _term_scores(
        self, corpus: _Corpus, plan: SearchPlan, flt: _Filter | _MessageFilter, wanted: int
    ) -> list[dict[Any, float]]:
        """Per search term, the score of every candidate (key -> score) that passes ``flt``."""
        sql_filter = flt if isinstance(flt, _Filter) else flt.as_sql()
        n_docs, counts = self._statistics(corpus, plan)
        if n_docs == 0:
            return []
        terms = self._word_terms(corpus, plan, sql_filter, n_docs, counts)
        if plan.like_terms:
            if corpus is _MESSAGES:
                terms += self._cjk_terms_indexed(plan, sql_filter, n_docs)
            else:
                terms += self._cjk_terms_like(corpus, plan, sql_filter, n_docs)
        if _distinct_at_most(terms, wanted) < wanted:
            # Few whole-word matches: long words may sit inside compounds (Kaution in
            # Mietkaution), so look them up as substrings too, at a discount.
            long_words = [t for t in terms if t.word and len(t.label) >= SUBSTRING_MIN_CHARS]
            self._add_substrings(corpus, long_words, sql_filter, n_docs, SUBSTRING_WEIGHT)
        if not any(t.scores for t in terms):
            # Still nothing: every word of three or more characters as a substring.
            words = [t for t in terms if t.word and len(t.label) >= 3]
            self._add_substrings(corpus, words, sql_filter, n_docs, 1.0)
        return [t.scores for t in terms]

    @staticmethod
    def _from(fts: str, corpus: _Corpus, flt: _Filter) -> str:
        """``FROM`` the FTS table, joined to the base table (alias ``b``) only when filtered."""
        if not flt.sql:
            return f" FROM {fts}"
        # CROSS JOIN fixes the loop order: the FTS matches drive, each looks up its row. Left to
        # itself the planner may walk a large session through an index and probe FTS per row.
        return f" FROM {fts} CROSS JOIN {corpus.base} AS b ON b.rowid = {fts}.rowid"

    @staticmethod
    def _matches(corpus: _Corpus, plan: SearchPlan) -> list[str]:
        column = f"{corpus.words_column} : " if corpus.words_column else ""
        return [column + quote(w) for w in plan.words]

    def _statistics(self, corpus: _Corpus, plan: SearchPlan) -> tuple[int, dict[int, int]]:
        """The number of documents, and each word's document frequency counted up to a cap
        (FTS5 stores none; counting a term's postings is cheap next to scoring them)."""
        arms = [f"SELECT -1, ({corpus.count_sql})"]
        arms += [
            f"SELECT {i}, count(*) FROM (SELECT 1 FROM {corpus.words}"
            f" WHERE {corpus.words} MATCH ? LIMIT {BM25_MAX_DF + 1})"
            for i in range(len(plan.words))
        ]
        counts = dict(self._fetch(" UNION ALL ".join(arms), self._matches(corpus, plan)))
        return int(counts.pop(-1) or 0), counts

    def _word_terms(
        self,
        corpus: _Corpus,
        plan: SearchPlan,
        flt: _Filter,
        n_docs: int,
        counts: dict[int, int],
    ) -> list[_Term]:
        if not plan.words:
            return []
        matches = self._matches(corpus, plan)
        # Words found nowhere still get a (empty) term: substring look-ups may fill it.
        terms = [_Term(w, 0, {}, word=True) for w in plan.words]
        words = [(i, counts.get(i, 0)) for i in range(len(matches)) if counts.get(i, 0) > 0]
        if not words:
            return terms
        arms: list[str] = []
        params: list[Any] = []
        source = self._from(corpus.words, corpus, flt)
        for i, df in words:
            if df <= BM25_MAX_DF:
                # bm25 reads every posting of the term (about 2 us each): fine for rare terms.
                arms.append(
                    f"SELECT * FROM (SELECT {i} AS t, {corpus.words}.rowid AS id,"
                    f" -bm25({corpus.words}{corpus.words_weights}) AS s{source}"
                    f" WHERE {corpus.words} MATCH ?{flt.where()} ORDER BY s DESC LIMIT ?)"
                )
                params += [matches[i], *flt.params, CANDIDATES_PER_TERM]
            else:
                # A common term: present in its newest documents, read newest first without
                # bm25, so its cost does not grow with the collection.
                arms.append(
                    f"SELECT * FROM (SELECT {i} AS t, {corpus.words}.rowid AS id, 1.0 AS s"
                    f"{source} WHERE {corpus.words} MATCH ?{flt.where()}"
                    f" ORDER BY {corpus.words}.rowid DESC LIMIT ?)"
                )
                params += [matches[i], *flt.params, PRESENCE_WINDOW]
        per_arm: dict[int, dict[int, float]] = defaultdict(dict)
        for t, doc, score in self._fetch(" UNION ALL ".join(arms), params):
            per_arm[t][doc] = score
        for i, df in words:
            scores = per_arm.get(i, {})
            if df <= BM25_MAX_DF:
                weight = _idf(df, n_docs)  # bm25 carries one idf factor, this is the second
            else:
                df = _estimate_df(scores, n_docs)
                weight = _idf(df, n_docs) ** 2  # presence carries none
            terms[i] = _Term(
                plan.words[i], df, {d: s * weight for d, s in scores.items()}, word=True
            )
        return terms

    def _add_substrings(
        self, corpus: _Corpus, terms: list[_Term], flt: _Filter, n_docs: int, discount: float
    ) -> None:
        """Merge trigram (substring) matches into word terms: per document, the better of the
        word score and the discounted substring score."""
        if not terms:
            return
        arms: list[str] = []
        params: list[Any] = []
        column = f"{corpus.trigram_column} : " if corpus.trigram_column else ""
        source = self._from(corpus.trigram, corpus, flt)
        for i, term in enumerate(terms):
            arms.append(
                f"SELECT * FROM (SELECT {i} AS t, {corpus.trigram}.rowid AS id,"
                f" -bm25({corpus.trigram}{corpus.trigram_weights}) AS s{source}"
                f" WHERE {corpus.trigram} MATCH ?{flt.where()} ORDER BY s DESC LIMIT ?)"
            )
            params += [column + quote(term.label), *flt.params, CANDIDATES_PER_TERM]
        per_arm: dict[int, dict[int, float]] = defaultdict(dict)
        for t, doc, score in self._fetch(" UNION ALL ".join(arms), params):
            per_arm[int(t)][int(doc)] = float(score)
        for i, term in enumerate(terms):
            found = per_arm.get(i, {})
            weight = discount * _idf(max(term.df, len(found), 1), n_docs)
            for d, score in found.items():
                term.scores[d] = max(term.scores.get(d, 0.0), score * weight)

    def _cjk_terms_indexed(self, plan: SearchPlan, flt: _Filter, n_docs: int) -> list[_Term]:
        """Short CJK terms through indexes. A term occurs wherever a trigram starts with it
        (Philont's trigram index, read through fts5vocab) or a message ends with it (the
        ``tail`` column of our word index). Occurrences are counted up to CJK_OCCURRENCE_CAP: a
        rarer term's messages are all read, a more common one's newest (see the constant)."""
        vocab = "philont_raw_messages_fts_trigrams"
        words = _MESSAGES.words

        def occurrences(term: str, flt: _Filter) -> tuple[str, list[Any]]:
            """SQL for the term's occurrences, one row (``id``: the message) each."""
            join = f" CROSS JOIN {_MESSAGES.base} AS b ON b.rowid = v.doc" if flt.sql else ""
            sql = (
                f"SELECT v.doc AS id FROM {vocab} AS v{join} WHERE v.term >= ? AND v.term < ?"
                f" AND v.col = 'content'{flt.where()} UNION ALL SELECT {words}.rowid AS id"
                f"{self._from(words, _MESSAGES, flt)} WHERE {words} MATCH ?{flt.where()}"
            )
            # The filter stands in both arms: its values are bound twice.
            return sql, [
                term,
                term + "\U0010ffff",
                *flt.params,
                "tail : " + quote(term),
                *flt.params,
            ]

        # 1. How common each term is in the whole history (counted inside SQLite).
        arms: list[str] = []
        params: list[Any] = []
        for i, term in enumerate(plan.like_terms):
            sql, values = occurrences(term, _Filter())
            arms.append(f"SELECT {i}, count(*) FROM ({sql} LIMIT ?)")
            params += [*values, CJK_OCCURRENCE_CAP]
        counts = {int(t): int(n) for t, n in self._fetch(" UNION ALL ".join(arms), params)}

        # 2. A rare term: every message, with its number of occurrences there. A common one:
        #    present (tf 1) in its newest matches among the newest messages.
        arms, params = [], []
        where = f" WHERE {flt.sql}" if flt.sql else ""
        for i, term in enumerate(plan.like_terms):
            if counts.get(i, 0) >= CJK_OCCURRENCE_CAP:
                arms.append(
                    f"SELECT * FROM (SELECT {i} AS t, id, 1 AS tf FROM (SELECT b.rowid AS id,"
                    f" b.content AS c FROM {_MESSAGES.base} AS b{where} ORDER BY b.rowid DESC"
                    " LIMIT ?) WHERE instr(c, ?) > 0 LIMIT ?)"
                )
                params += [*flt.params, CJK_RECENT_ROWS, term, PRESENCE_WINDOW]
            elif counts.get(i, 0) > 0:
                sql, values = occurrences(term, flt)
                arms.append(f"SELECT {i}, id, count(*) FROM ({sql} LIMIT ?) GROUP BY id")
                params += [*values, CJK_OCCURRENCE_CAP]
        found: dict[int, dict[int, int]] = defaultdict(dict)
        if arms:
            for t, doc, tf in self._fetch(" UNION ALL ".join(arms), params):
                found[int(t)][int(doc)] = int(tf)

        terms: list[_Term] = []
        for i, term in enumerate(plan.like_terms):
            docs = found.get(i, {})
            common = counts.get(i, 0) >= CJK_OCCURRENCE_CAP
            df = _estimate_cjk_df(list(docs), n_docs) if common else len(docs)
            idf = _idf(max(df, 1), n_docs)
            terms.append(
                _Term(term, df, {d: idf * idf * _saturate(float(tf)) for d, tf in docs.items()})
            )
        return terms

    def _cjk_terms_like(
        self, corpus: _Corpus, plan: SearchPlan, flt: _Filter, n_docs: int
    ) -> list[_Term]:
        """Short CJK terms by escaped LIKE (notes and skills: small tables)."""
        columns = ", ".join(c for c, _w in corpus.like_columns)
        arms: list[str] = []
        params: list[Any] = []
        for i, term in enumerate(plan.like_terms):
            pattern = like_pattern(term)
            cond = " OR ".join(
                f"{c} LIKE ? ESCAPE '{LIKE_ESCAPE}'" for c, _w in corpus.like_columns
            )
            arms.append(
                f"SELECT * FROM (SELECT {i} AS t, b.rowid AS id, {columns} FROM {corpus.base} AS b"
                f" WHERE ({cond}){flt.where()} LIMIT ?)"
            )
            params += [pattern] * len(corpus.like_columns) + [*flt.params, CJK_INSTANCE_CAP]
        counts: dict[int, dict[int, float]] = defaultdict(dict)
        instances: dict[int, int] = defaultdict(int)
        for row in self._fetch(" UNION ALL ".join(arms), params):
            t, doc, texts = int(row[0]), int(row[1]), row[2:]
            term = plan.like_terms[t]
            tf = sum(
                weight * str(text or "").count(term)
                for text, (_c, weight) in zip(texts, corpus.like_columns, strict=True)
            )
            counts[t][doc] = tf
            instances[t] += 1
        return self._cjk_terms(plan, counts, instances, n_docs)

    def _cjk_terms(
        self,
        plan: SearchPlan,
        counts: dict[int, dict[int, Any]],
        instances: dict[int, int],
        n_docs: int,
    ) -> list[_Term]:
        terms: list[_Term] = []
        for i, term in enumerate(plan.like_terms):
            docs = counts.get(i, {})
            df = len(docs)
            if instances.get(i, 0) >= CJK_INSTANCE_CAP:
                df = max(df, n_docs)  # too common to be telling
            idf = _idf(max(df, 1), n_docs)
            terms.append(
                _Term(term, df, {d: idf * idf * _saturate(float(tf)) for d, tf in docs.items()})
            )
        return terms

    def _add_context(self, own: dict[int, float], flt: _MessageFilter) -> dict[int, float]:
        """Add each top match's share to its session neighbours (see ``CONTEXT_WEIGHTS`` and
        :func:`philont.domain.ranking.share_with_neighbours`)."""
        if not self._context:
            return dict(own)
        sources = _best(own, CONTEXT_SOURCES)
        wanted = set(sources)
        for s in sources:
            wanted.update(s + off for off, _w in self._context)
        wanted.discard(0)
        ids = sorted(i for i in wanted if i > 0)
        rows = self._rows(
            f"SELECT id, session_id, timestamp, role, content FROM {_MESSAGES.base}"
            f" WHERE id IN ({_marks(len(ids))})",
            ids,
        )
        check = not flt.is_empty()
        chosen = set(sources)
        turns = {  # the sources, and the neighbours the filter lets through
            i: (r[1], r[3], i in chosen and ranking.asks(r[4]))
            for i, r in rows.items()
            if i in own or not check or flt.accepts(r)
        }
        return ranking.share_with_neighbours(
            own, sources, turns, self._context, self._rules.reaction_share
        )


@dataclass(frozen=True)
class _MessageFilter:
    since_ms: int | None
    until_ms: int | None
    sessions: tuple[str, ...]
    roles: tuple[str, ...]

    def as_sql(self) -> _Filter:
        parts: list[tuple[str, Sequence[Any]]] = []
        if self.since_ms is not None:
            parts.append(("b.timestamp >= ?", (self.since_ms,)))
        if self.until_ms is not None:
            parts.append(("b.timestamp <= ?", (self.until_ms,)))
        if self.sessions:
            parts.append((f"b.session_id IN ({_marks(len(self.sessions))})", self.sessions))
        if self.roles:
            parts.append((f"b.role IN ({_marks(len(self.roles))})", self.roles))
        return _and(parts)

    def is_empty(self) -> bool:
        return (
            self.since_ms is None and self.until_ms is None and not self.sessions and not self.roles
        )

    def accepts(self, row: tuple[Any, ...]) -> bool:
        """``row`` is (rowid, session_id, timestamp, role)."""
        if self.since_ms is not None and row[2] < self.since_ms:
            return False
        if self.until_ms is not None and row[2] > self.until_ms:
            return False
        if self.sessions and row[1] not in self.sessions:
            return False
        return not (self.roles and row[3] not in self.roles)


def _best(scores: dict[Any, float], n: int) -> list[Any]:
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


def _contenders(scores: dict[Any, float], limit: int, ratio: float) -> dict[Any, float]:
    """The candidates scoring at least ``ratio`` times the ``limit``-th best score (at most
    MAX_CONTENDERS of them), the only ones a later tie-break or prior can still promote."""
    if len(scores) <= limit:
        return scores
    kth = sorted(scores.values(), reverse=True)[limit - 1]
    kept = {i: s for i, s in scores.items() if s >= kth * ratio}
    if len(kept) > MAX_CONTENDERS:
        kept = {i: kept[i] for i in _best(kept, MAX_CONTENDERS)}
    return kept


def _distinct_at_most(terms: list[_Term], enough: int) -> int:
    """How many distinct documents the terms found, counted up to ``enough``."""
    if any(len(t.scores) >= enough for t in terms):
        return enough
    return min(enough, len({d for t in terms for d in t.scores}))


def _estimate_df(newest: dict[int, float], n_docs: int) -> int:
    """Document frequency of a common term from its newest occurrences: the window's share of
    the rowid range it spans, scaled to the collection (rowids grow with time)."""
    floor = BM25_MAX_DF + 1
    if len(newest) < PRESENCE_WINDOW:
        return max(floor, len(newest))
    span = max(n_docs - min(newest) + 1, len(newest))
    return min(n_docs, max(floor, round(len(newest) * n_docs / span)))


def _estimate_cjk_df(newest: list[int], n_docs: int) -> int:
    """Document frequency of a common CJK term from its newest matches: their share of the
    rowids they span (of all CJK_RECENT_ROWS read, when fewer than PRESENCE_WINDOW matched),
    scaled to the collection."""
    if len(newest) >= PRESENCE_WINDOW:
        span = n_docs - min(newest) + 1
    else:
        span = min(CJK_RECENT_ROWS, n_docs)
    return min(n_docs, max(len(newest), 1, round(len(newest) * n_docs / max(span, 1))))


def _role(value: str) -> Role:
    try:
        return Role(value)
    except ValueError:  # pragma: no cover - the column only ever holds the four roles
        return Role.USER


def _keywords(value: Any) -> list[str]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return [str(value)]
    if isinstance(parsed, list):
        return [str(k) for k in parsed]
    return [] if parsed is None else [str(parsed)]
