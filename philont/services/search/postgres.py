"""Keyword search on PostgreSQL: the same query plan and ranking as on SQLite, over GIN indexes.

The plan comes from :func:`philont.domain.query.build_plan` as on SQLite; every word is bound as
``phraseto_tsquery('english', %s)`` (so no tsquery operator can come from user text) and every
CJK term as an escaped LIKE pattern. Ranking mirrors :class:`SearchService`: per-word bm25 (term
frequencies read from the document's tsvector, ``english`` snowball stemming as porter on
SQLite) weighted by the word's idf once more, common words counted as present in their newest
documents, long words also as substrings (pg_trgm), short CJK terms by LIKE, and messages earn a
share of their neighbours' scores. The indexes are revision v036's (the word indexes as v039
rebuilt them: over a stored column of the words of the text with ASCII separators read as
spaces, as unicode61 reads it), led by ``agent_id`` (``philont/db/pg_layout.py``); every
statement reads the unit of work's agent only (``Raw.mine``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from philont.db import fork
from philont.db.backend import Raw
from philont.db.fts import (
    PG_MESSAGES_TEXT,
    PG_NOTES_TEXT,
    PG_SKILLS_TEXT,
    PG_SPACES,
    PG_WORDS_COLUMN,
    raw_messages_tail_text,
)
from philont.db.models import Note, RawMessage, Skill
from philont.domain.query import LIKE_ESCAPE, SearchPlan, fold_case, like_escape, like_pattern
from philont.services.search.scoring import (
    BM25_K1,
    BM25_MAX_DF,
    CJK_INSTANCE_CAP,
    SUBSTRING_MIN_CHARS,
    SUBSTRING_WEIGHT,
    Filter,
    Kind,
    Pools,
    Term,
    bm25_idf,
    distinct_at_most,
    estimate_df,
    saturate,
    share_idf,
    words_of_length,
)

__all__ = ["PgScorer"]

BM25_B = 0.75
"""bm25's length normalisation, as in FTS5."""

CJK_NEWEST = 2_000
"""A short CJK term is looked up in at most its newest this-many documents (or the presence
pool's size, if larger: :class:`~philont.services.search.scoring.Pools`)."""

LENGTH_SAMPLE = 2_000
"""The average document length (bm25's avgdl) is measured on at most this many documents
(messages: the newest), and kept per table until the table grows or shrinks by LENGTH_DRIFT."""

LENGTH_DRIFT = 0.05

LENGTH_CACHE = 30_000
"""At most this many (agent, table) averages are kept; past it the cache starts afresh."""

SUBSTRING_SCAN = 2_000
"""A substring look-up reads at most this many matching documents (newest first) to rank (or
the presence pool's size, if larger)."""

_TOKEN = re.compile(r"[^\W_]+")
"""A token as FTS5's unicode61 tokenizer cuts them: a run of letters and digits."""


@dataclass(frozen=True)
class _PgCorpus:
    """One searchable table: its text expression(s), and weighted columns for term frequency."""

    base: str
    text: str  # the expression the word and trigram indexes cover
    columns: tuple[tuple[str, float], ...]  # the word index's (expression, weight), as on SQLite
    trigram_columns: tuple[tuple[str, float], ...]  # the trigram index's, as on SQLite
    count: str  # SQL for the number of documents
    newest: str  # ORDER BY for "newest first"
    tail: bool = False  # messages: the word index's second column (fts.raw_messages_tail)


_MESSAGES = _PgCorpus(
    RawMessage.__tablename__,
    PG_MESSAGES_TEXT,
    (("content", 1.0),),
    (("content", 1.0), ("role", 0.0)),
    "coalesce(max(id), 0)",  # as max(rowid) on SQLite: O(log n), append-only
    "b.id DESC",
    tail=True,
)
_NOTES = _PgCorpus(
    Note.__tablename__,
    PG_NOTES_TEXT,
    (("content", 1.0),),
    (("content", 1.0),),
    "count(*)",
    "b.created_at DESC, b.id DESC",
)
# name > trigger keywords > description (when_to_use reads like a description), as on SQLite.
_SKILLS = _PgCorpus(
    Skill.__tablename__,
    PG_SKILLS_TEXT,
    (
        ("name", 4.0),
        ("description", 1.0),
        ("trigger_keywords", 2.0),
        ("coalesce(when_to_use, '')", 1.0),
    ),
    (("name", 4.0), ("description", 1.0), ("trigger_keywords", 2.0)),
    "count(*)",
    "b.created_at DESC, b.id DESC",
)
_CORPORA = {Kind.MESSAGES: _MESSAGES, Kind.NOTES: _NOTES, Kind.SKILLS: _SKILLS}


def _readings(word: str) -> list[str]:
    """The spellings of ``word`` whose ``phraseto_tsquery`` together match every document
    holding its unicode61 tokens in order (which FTS5's word index matches), and more.

    The word indexes read ASCII separators as spaces (:data:`~philont.db.fts.PG_SEPARATORS`:
    ``covid-19`` as ``covid 19``, ``node.js`` as ``node js``), and the word is read so too;
    PostgreSQL's parser still reads other shapes its own way (``x²`` as ``x``, ``ma’am`` as
    ``ma``), so its tokens apart are read as well. A document matched by one of them counts
    only where it holds the tokens (:func:`_phrase_count`), as ``q&a`` (``q``: ``a`` is a stop
    word) or ``x²`` match more."""
    return list(dict.fromkeys([word.translate(PG_SPACES), " ".join(_TOKEN.findall(word))]))


def _word_match(readings: list[str]) -> str:
    """SQL: the document ``b`` may hold a word read as ``readings`` (:func:`_readings`, bound
    after it), through the GIN word index of its table's stored words (revision v039: no read
    computes ``to_tsvector``); the scorer keeps those that hold its tokens."""
    phrases = " || ".join("phraseto_tsquery('english'::regconfig, %s)" for _ in readings)
    return f"b.{PG_WORDS_COLUMN} @@ ({phrases})"


def _composed(text: Any) -> str:
    """``text`` composed (NFC), as :func:`~philont.db.fts.pg_composed` reads it."""
    return unicodedata.normalize("NFC", str(text or ""))


def _tokens(text: Any) -> int:
    """Tokens FTS5's unicode61 tokenizer makes of ``text`` (bm25's document length)."""
    return sum(1 for _ in _TOKEN.finditer(str(text or "")))


def _trigrams(text: Any) -> int:
    """Tokens FTS5's trigram tokenizer makes of ``text``."""
    return max(len(str(text or "")) - 2, 0)


def _occurrences(text: Any, needle: str) -> int:
    """Overlapping, case-insensitive occurrences (a trigram phrase match's frequency)."""
    hay = fold_case(str(text or ""))
    n, at = 0, hay.find(needle)
    while at >= 0:
        n += 1
        at = hay.find(needle, at + 1)
    return n


def _word_length(corpus: _PgCorpus, texts: Sequence[Any]) -> int:
    """bm25's length of one document of the word index (all its columns, as FTS5 counts)."""
    length = sum(_tokens(_composed(t)) for t in texts)  # as the stored words read it
    if corpus.tail:
        length += _tokens(raw_messages_tail_text(str(texts[0] or "")))
    return length


def _phrase_count(tokens: list[str], phrase: list[str], stems: dict[str, str]) -> int:
    """How often the stemmed ``phrase`` occurs in ``tokens`` (FTS5's phrase frequency)."""
    if not phrase:
        return 0
    n = len(phrase)
    if n == 1:
        return sum(1 for t in tokens if stems.get(t, t) == phrase[0])
    return sum(
        1
        for k in range(len(tokens) - n + 1)
        if all(stems.get(tokens[k + j], tokens[k + j]) == phrase[j] for j in range(n))
    )


def _bm25(tf: float, length: float, avg_length: float) -> float:
    norm = 1 - BM25_B + BM25_B * (length / avg_length if avg_length > 0 else 1.0)
    return tf * (BM25_K1 + 1) / (tf + BM25_K1 * norm) if tf > 0 else 0.0


def _cut(scored: dict[Any, float], n: int) -> list[Any]:
    """A term's best ``n`` documents (its pool). Equal scores (same frequency, same length)
    keep the older document, as SQLite's ``ORDER BY score LIMIT`` over FTS5's rowid order does."""
    return sorted(scored, key=lambda d: (-scored[d], d))[:n]


_LOCK = fork.Lock()

STEM_CACHE = 50_000
_STEMS: dict[str, str] = {}
"""Token -> PostgreSQL's ``english_stem`` of it (the dictionary is fixed; at most STEM_CACHE)."""


class PgScorer:
    """The :class:`~philont.services.search.scoring.Scorer` of PostgreSQL databases: the same
    plan and arithmetic as on SQLite, over the GIN indexes of revisions v036 and v039."""

    def __init__(self) -> None:
        self._lengths: dict[tuple[int, int], tuple[int, float, float]] = {}
        """(agent, table oid) -> (documents when measured, average word and trigram lengths):
        one scorer serves one database (its Store's), each agent's documents apart."""

    def key(self, kind: Kind) -> str:
        return "id"  # notes and skills have no rowid here: their text ids key the scores

    def term_scores(
        self, raw: Raw, kind: Kind, plan: SearchPlan, flt: Filter, pools: Pools
    ) -> list[dict[Any, float]]:
        """Per search term, the score of every candidate (key -> score) that passes ``flt``."""
        run = _Run(raw, self._lengths, pools)
        return run.term_scores(_CORPORA[kind], plan, flt)


class _Run:
    """One scoring pass on one connection, with the pools of the results it asks for."""

    def __init__(
        self, raw: Raw, lengths: dict[tuple[int, int], tuple[int, float, float]], pools: Pools
    ) -> None:
        self._raw = raw
        self._lengths = lengths
        self._pools = pools
        self._agent = int(raw.agent or 0)
        self._mine = raw.mine("b")  # every statement reads the unit of work's agent only

    def _fetch(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        return self._raw.rows(sql, params)

    def term_scores(
        self, corpus: _PgCorpus, plan: SearchPlan, flt: Filter
    ) -> list[dict[Any, float]]:
        """Per search term, the score of every candidate (key -> score) that passes ``flt``."""
        wanted = self._pools.wanted
        n_docs, oid, stats = self._pg_statistics(corpus, plan)
        if n_docs == 0:
            return []
        lengths = self._avg_lengths(corpus, n_docs, oid)
        terms = self._pg_word_terms(corpus, plan, flt, n_docs, stats, lengths[0])
        self._pg_unindexed(corpus, terms, stats, flt, n_docs, lengths[0])
        terms += [self._cjk_term(corpus, term, flt, n_docs) for term in plan.like_terms]
        if distinct_at_most(terms, wanted) < wanted:
            # Few whole-word matches: long words may sit inside compounds, as on SQLite.
            long_words = words_of_length(terms, SUBSTRING_MIN_CHARS)
            self._pg_substrings(corpus, long_words, flt, n_docs, lengths[1], SUBSTRING_WEIGHT)
        if not any(t.scores for t in terms):
            words = words_of_length(terms, 3)
            self._pg_substrings(corpus, words, flt, n_docs, lengths[1], 1.0)
        share_idf(terms, plan, n_docs)
        return [t.scores for t in terms]

    def _pg_statistics(
        self, corpus: _PgCorpus, plan: SearchPlan
    ) -> tuple[int, int, list[tuple[int, list[str]]]]:
        """In one statement: the number of documents, the table's oid, and per word its
        document frequency (counted up to a cap, as on SQLite) and its tokens' lexemes."""
        arms = [
            f"SELECT -2, ('{corpus.base}'::regclass)::oid::bigint, NULL::text[]",
            f"SELECT -1, (SELECT {corpus.count} FROM {corpus.base} AS b WHERE {self._mine}),"
            " NULL::text[]",
        ]
        params: list[Any] = []
        for i, word in enumerate(plan.words):
            readings = _readings(word)
            match = _word_match(readings)
            arms.append(
                f"SELECT {i}, (SELECT count(*) FROM (SELECT 1 FROM {corpus.base} AS b"
                f" WHERE {self._mine} AND {match} LIMIT {BM25_MAX_DF + 1}) AS m),"
                " tsvector_to_array(to_tsvector('english'::regconfig, %s))"
            )
            params += [*readings, " ".join(_TOKEN.findall(word))]  # its tokens' lexemes
        rows = {int(r[0]): r for r in self._fetch(" UNION ALL ".join(arms), params)}
        stats = [
            (int(rows[i][1]), list(rows[i][2] or [])) if i in rows else (0, [])
            for i in range(len(plan.words))
        ]
        return int(rows[-1][1] or 0), int(rows[-2][1]), stats

    def _avg_lengths(self, corpus: _PgCorpus, n_docs: int, oid: int) -> tuple[float, float]:
        """bm25's average document length for the word and the trigram index (FTS5 keeps both
        totals; here they are measured on a sample and kept while the table stays near that
        size)."""
        with _LOCK:
            cached = self._lengths.get((self._agent, oid))
        if cached is not None and abs(n_docs - cached[0]) <= LENGTH_DRIFT * cached[0]:
            return cached[1], cached[2]
        words = [c for c, _w in corpus.columns]
        trigrams = [c for c, _w in corpus.trigram_columns]
        order = f" ORDER BY {corpus.newest}" if corpus.tail else ""
        rows = self._fetch(
            f"SELECT {', '.join(words + trigrams)} FROM {corpus.base} AS b"
            f" WHERE {self._mine}{order}"
            f" LIMIT {LENGTH_SAMPLE}",
            [],
        )
        n = max(len(rows), 1)
        avg_words = sum(_word_length(corpus, r[: len(words)]) for r in rows) / n
        avg_trigrams = sum(sum(_trigrams(t) for t in r[len(words) :]) for r in rows) / n
        with _LOCK:
            if len(self._lengths) > LENGTH_CACHE:
                self._lengths.clear()
            self._lengths[(self._agent, oid)] = (n_docs, avg_words, avg_trigrams)
        return avg_words, avg_trigrams

    def _word_arms(
        self, corpus: _PgCorpus, plan: SearchPlan, flt: Filter, words: list[tuple[int, int]]
    ) -> tuple[str, list[Any]]:
        """One statement for every (query word index, df): a rare word's matches with their
        text, a common word's newest matches without it."""
        texts = ", ".join(f"b.{c}" if c.isidentifier() else c for c, _w in corpus.columns)
        nulls = ", ".join("NULL" for _ in corpus.columns)
        arms: list[str] = []
        params: list[Any] = []
        for i, df in words:
            readings = _readings(plan.words[i])
            where = f"WHERE {self._mine} AND {_word_match(readings)}{flt.where()}"
            if df <= BM25_MAX_DF:
                arms.append(f"SELECT {i}, b.id, {texts} FROM {corpus.base} AS b {where}")
            else:
                arms.append(
                    f"SELECT * FROM (SELECT {i}, b.id, {nulls} FROM {corpus.base} AS b {where}"
                    f" ORDER BY {corpus.newest} LIMIT {self._pools.presence}) AS p{i}"
                )
            params += [*readings, *flt.params]
        return " UNION ALL ".join(arms), params

    def _pg_word_terms(
        self,
        corpus: _PgCorpus,
        plan: SearchPlan,
        flt: Filter,
        n_docs: int,
        stats: list[tuple[int, list[str]]],
        avg_length: float,
    ) -> list[Term]:
        """Every word's scores, in one statement: a rare word's matches with their text (for
        bm25's term frequency and length), a common word's newest matches (presence), as on
        SQLite."""
        terms = [Term(w, 0, {}, word=True) for w in plan.words]
        words = [(i, df, lex) for i, (df, lex) in enumerate(stats) if df > 0 and lex]
        if not words:
            return terms
        found: dict[int, list[tuple[Any, ...]]] = {}
        for row in self._fetch(
            *self._word_arms(corpus, plan, flt, [(i, df) for i, df, _ in words])
        ):
            found.setdefault(int(row[0]), []).append(row)
        rare = [(i, df, lex) for i, df, lex in words if df <= BM25_MAX_DF]
        tokens = {  # of the text composed, as the stored words read it (pg_composed)
            r[1]: [_TOKEN.findall(fold_case(_composed(t))) for t in r[2:]]
            for i, _df, _l in rare
            for r in found.get(i, [])
        }
        stems = self._stems(
            [
                (stats[i][1], plan.words[i], [tokens[r[1]] for r in found.get(i, [])])
                for i, _df, _l in rare
            ]
        )
        for i, df, _lexemes in words:
            rows = found.get(i, [])
            if df <= BM25_MAX_DF:
                phrase = [stems.get(t, t) for t in _TOKEN.findall(plan.words[i])]
                held: dict[Any, tuple[float, int]] = {}
                for r in rows:
                    tf = sum(
                        w * _phrase_count(toks, phrase, stems)
                        for toks, (_c, w) in zip(tokens[r[1]], corpus.columns, strict=True)
                    )
                    if tf > 0:  # the index's readings of the word match more (_readings)
                        held[r[1]] = (tf, _word_length(corpus, r[2:]))
                # FTS5's document frequency counts the documents holding the phrase only.
                df = max(df - (len(rows) - len(held)), len(held))
                idf = bm25_idf(max(df, 1), n_docs)
                scored = {d: idf * _bm25(tf, n, avg_length) for d, (tf, n) in held.items()}
                # bm25 carries one idf factor; weighted by idf once more, as on SQLite.
                terms[i].df = df
                terms[i].scores = {d: scored[d] * idf for d in _cut(scored, self._pools.per_term)}
            else:
                presence = {r[1]: 1.0 for r in rows}
                if corpus is _MESSAGES:
                    df = estimate_df(presence, n_docs, self._pools.presence)
                weight = bm25_idf(df, n_docs) ** 2  # presence carries none
                terms[i].df = df
                terms[i].scores = {d: weight for d in presence}
        return terms

    def _stems(self, words: list[tuple[list[str], str, list[list[list[str]]]]]) -> dict[str, str]:
        """PostgreSQL's ``english`` stem of every token that may count towards a query word's
        frequency (a stem keeps all but the last letters of its word; a stop word stands for
        itself). ``words``: (lexemes, word, the tokens of each document it matched, by column).
        A document the index matched with one such token only holds the word's stem there, if
        the parser reads that token whole (ASCII: ``x²`` is read as ``x``); the rest are asked
        for in one statement, and kept."""
        stems: dict[str, str] = {}
        unknown: set[str] = set()
        for lexs, word, docs in words:
            phrase = _TOKEN.findall(word)
            prefixes = tuple({lex[: max(1, len(lex) - 2)] for lex in lexs})
            whole = len(phrase) == 1 and phrase[0].isascii()
            single = lexs[0] if len(lexs) == 1 and whole else None
            if single is not None:
                stems[phrase[0]] = single
            else:
                unknown.update(phrase)
            for columns in docs:
                seen = {t for toks in columns for t in toks if t.startswith(prefixes)}
                if single is not None and len(seen) == 1 and min(seen).isascii():
                    stems.setdefault(seen.pop(), single)
                else:
                    unknown.update(seen)
        with _LOCK:
            for t in list(unknown):
                if t in _STEMS:
                    stems[t] = _STEMS[t]
                    unknown.discard(t)
        unknown -= stems.keys()
        if unknown:
            rows = self._fetch(
                "SELECT t, ts_lexize('english_stem'::regdictionary, t)"
                " FROM unnest(%s::text[]) AS t",
                [sorted(unknown)],
            )
            asked = {str(t): str(lex[0]) if lex else str(t) for t, lex in rows}
            stems.update(asked)
            with _LOCK:
                if len(_STEMS) > STEM_CACHE:
                    _STEMS.clear()
                _STEMS.update(asked)
        return stems

    def _pg_substrings(
        self,
        corpus: _PgCorpus,
        terms: list[Term],
        flt: Filter,
        n_docs: int,
        avg_length: float,
        discount: float,
    ) -> None:
        """Merge substring matches (pg_trgm) into word terms, ranked as SQLite's trigram index
        ranks them (bm25 over trigrams), per document the better of the two scores."""
        for term in terms:
            label = fold_case(term.label)
            rows, hits = self._ilike(corpus, corpus.trigram_columns, like_pattern(term.label), flt)
            idf = bm25_idf(hits, n_docs)
            scored: dict[Any, float] = {}
            for r in rows:
                texts = r[1:]
                tf = sum(
                    w * _occurrences(t, label)
                    for t, (_c, w) in zip(texts, corpus.trigram_columns, strict=True)
                )
                length = sum(_trigrams(t) for t in texts)
                if tf > 0:
                    scored[r[0]] = idf * _bm25(tf, length, avg_length)
            weight = discount * bm25_idf(max(term.df, len(scored), 1), n_docs)
            for d in _cut(scored, self._pools.per_term):
                term.scores[d] = max(term.scores.get(d, 0.0), scored[d] * weight)

    def _ilike(
        self,
        corpus: _PgCorpus,
        columns: tuple[tuple[str, float], ...],
        pattern: str,
        flt: Filter,
    ) -> tuple[list[tuple[Any, ...]], int]:
        """The newest documents whose text matches the escaped ILIKE ``pattern`` and ``flt``
        (id, then ``columns``), and how many match in the whole table (bm25's idf counts the
        whole table, as FTS5 does); both read up to a scan's size."""
        scan = self._pools.at_least(SUBSTRING_SCAN)
        like = f"{corpus.text} ILIKE %s ESCAPE '{LIKE_ESCAPE}'"
        rows = self._fetch(
            f"SELECT b.id, {', '.join(c for c, _w in columns)} FROM {corpus.base} AS b"
            f" WHERE {self._mine} AND {like}{flt.where()} ORDER BY {corpus.newest} LIMIT {scan}",
            [pattern, *flt.params],
        )
        if not flt.sql:
            return rows, len(rows)
        hits = self._fetch(
            f"SELECT count(*) FROM (SELECT 1 FROM {corpus.base} AS b"
            f" WHERE {self._mine} AND {like} LIMIT {scan}) AS m",
            [pattern],
        )
        return rows, int(hits[0][0])

    def _pg_unindexed(
        self,
        corpus: _PgCorpus,
        terms: list[Term],
        stats: list[tuple[int, list[str]]],
        flt: Filter,
        n_docs: int,
        avg_length: float,
    ) -> None:
        """Words the ``english`` configuration holds no lexeme of, which FTS5's word index
        holds: every part a stop word (``AT&T``: at, t) or characters PostgreSQL's parser
        skips (``½``, ``③``). Their documents are read by an escaped ILIKE of their tokens in
        order and scored as FTS5 scores a rare word (a phrase of those tokens: frequency,
        document length, idf twice), instead of matching nothing."""
        for term, (_df, lexemes) in zip(terms, stats, strict=True):
            phrase = _TOKEN.findall(term.label)
            if lexemes or not phrase:
                continue
            pattern = "%" + "%".join(like_escape(t) for t in phrase) + "%"
            rows, hits = self._ilike(corpus, corpus.columns, pattern, flt)
            found: dict[Any, tuple[float, int]] = {}
            for r in rows:
                tf = sum(
                    w * _phrase_count(_TOKEN.findall(fold_case(str(t or ""))), phrase, {})
                    for t, (_c, w) in zip(r[1:], corpus.columns, strict=True)
                )
                if tf > 0:
                    found[r[0]] = (tf, _word_length(corpus, r[1:]))
            # A filtered search's rows are not the whole table's: its count of ILIKE matches
            # stands in for the phrase's document frequency then.
            term.df = len(found) if not flt.sql else max(len(found), hits)
            idf = bm25_idf(max(term.df, 1), n_docs)
            scored = {d: idf * idf * _bm25(tf, n, avg_length) for d, (tf, n) in found.items()}
            term.scores = {d: scored[d] for d in _cut(scored, self._pools.per_term)}

    def _cjk_term(self, corpus: _PgCorpus, term: str, flt: Filter, n_docs: int) -> Term:
        """A short CJK term by escaped LIKE over its newest documents; tf counted in Python."""
        columns = ", ".join(c for c, _w in corpus.columns)
        newest = self._pools.at_least(min(CJK_NEWEST, CJK_INSTANCE_CAP))
        rows = self._fetch(
            f"SELECT b.id, {columns} FROM {corpus.base} AS b WHERE {self._mine}"
            f" AND {corpus.text} LIKE %s ESCAPE '{LIKE_ESCAPE}'{flt.where()}"
            f" ORDER BY {corpus.newest} LIMIT {newest}",
            [like_pattern(term), *flt.params],
        )
        tfs = {
            r[0]: sum(
                w * str(text or "").count(term)
                for text, (_c, w) in zip(r[1:], corpus.columns, strict=True)
            )
            for r in rows
        }
        df = len(tfs) if len(tfs) < newest else max(len(tfs), n_docs)
        idf = bm25_idf(max(df, 1), n_docs)
        return Term(term, df, {d: idf * idf * saturate(float(tf)) for d, tf in tfs.items()})
