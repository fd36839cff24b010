"""Relevance on SQLite: per-term bm25 on our word-level FTS5 indexes (porter stemming), long
words also as substrings (Philont's trigram indexes), short CJK terms through the trigram index's
vocabulary, every term weighted by its idf once more."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from philont.db.backend import Raw
from philont.db.models import Note, RawMessage, Skill
from philont.domain.query import LIKE_ESCAPE, SearchPlan, like_pattern, quote
from philont.services.search.scoring import (
    BM25_MAX_DF,
    CJK_INSTANCE_CAP,
    CJK_OCCURRENCE_CAP,
    CJK_RECENT_ROWS,
    SUBSTRING_MIN_CHARS,
    SUBSTRING_WEIGHT,
    Filter,
    Kind,
    Pools,
    Term,
    bm25_idf,
    distinct_at_most,
    estimate_cjk_df,
    estimate_df,
    saturate,
    share_idf,
    words_of_length,
)

__all__ = ["SqliteScorer"]


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


_CORPORA = {Kind.MESSAGES: _MESSAGES, Kind.NOTES: _NOTES, Kind.SKILLS: _SKILLS}


class SqliteScorer:
    """The :class:`~philont.services.search.scoring.Scorer` of SQLite databases."""

    def key(self, kind: Kind) -> str:
        # notes and skills have text ids; their FTS5 indexes key on the implicit rowid
        return "id" if kind is Kind.MESSAGES else "rowid"

    def term_scores(
        self, raw: Raw, kind: Kind, plan: SearchPlan, flt: Filter, pools: Pools
    ) -> list[dict[Any, float]]:
        """Per search term, the score of every candidate (key -> score) that passes ``flt``."""
        return _Run(raw, pools).term_scores(_CORPORA[kind], plan, flt)


class _Run:
    """One scoring pass on one connection, with the pools of the results it asks for."""

    def __init__(self, raw: Raw, pools: Pools) -> None:
        self._raw = raw
        self._pools = pools

    def _fetch(self, sql: str, params: list[Any]) -> list[tuple[Any, ...]]:
        return self._raw.rows(sql, params)

    def term_scores(
        self, corpus: _Corpus, plan: SearchPlan, sql_filter: Filter
    ) -> list[dict[Any, float]]:
        wanted = self._pools.wanted
        n_docs, counts = self._statistics(corpus, plan)
        if n_docs == 0:
            return []
        terms = self._word_terms(corpus, plan, sql_filter, n_docs, counts)
        if plan.like_terms:
            if corpus is _MESSAGES:
                terms += self._cjk_terms_indexed(plan, sql_filter, n_docs)
            else:
                terms += self._cjk_terms_like(corpus, plan, sql_filter, n_docs)
        if distinct_at_most(terms, wanted) < wanted:
            # Few whole-word matches: long words may sit inside compounds (Kaution in
            # Mietkaution), so look them up as substrings too, at a discount.
            long_words = words_of_length(terms, SUBSTRING_MIN_CHARS)
            self._add_substrings(corpus, long_words, sql_filter, n_docs, SUBSTRING_WEIGHT)
        if not any(t.scores for t in terms):
            # Still nothing: every word of three or more characters as a substring.
            words = words_of_length(terms, 3)
            self._add_substrings(corpus, words, sql_filter, n_docs, 1.0)
        share_idf(terms, plan, n_docs)
        return [t.scores for t in terms]

    @staticmethod
    def _from(fts: str, corpus: _Corpus, flt: Filter) -> str:
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
        flt: Filter,
        n_docs: int,
        counts: dict[int, int],
    ) -> list[Term]:
        if not plan.words:
            return []
        matches = self._matches(corpus, plan)
        # Words found nowhere still get a (empty) term: substring look-ups may fill it.
        terms = [Term(w, 0, {}, word=True) for w in plan.words]
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
                params += [matches[i], *flt.params, self._pools.per_term]
            else:
                # A common term: present in its newest documents, read newest first without
                # bm25, so its cost does not grow with the collection.
                arms.append(
                    f"SELECT * FROM (SELECT {i} AS t, {corpus.words}.rowid AS id, 1.0 AS s"
                    f"{source} WHERE {corpus.words} MATCH ?{flt.where()}"
                    f" ORDER BY {corpus.words}.rowid DESC LIMIT ?)"
                )
                params += [matches[i], *flt.params, self._pools.presence]
        per_arm: dict[int, dict[int, float]] = defaultdict(dict)
        for t, doc, score in self._fetch(" UNION ALL ".join(arms), params):
            per_arm[t][doc] = score
        for i, df in words:
            scores = per_arm.get(i, {})
            if df <= BM25_MAX_DF:
                weight = bm25_idf(df, n_docs)  # bm25 carries one idf factor, this is the second
            else:
                df = estimate_df(scores, n_docs, self._pools.presence)
                weight = bm25_idf(df, n_docs) ** 2  # presence carries none
            terms[i] = Term(
                plan.words[i], df, {d: s * weight for d, s in scores.items()}, word=True
            )
        return terms

    def _add_substrings(
        self, corpus: _Corpus, terms: list[Term], flt: Filter, n_docs: int, discount: float
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
            params += [column + quote(term.label), *flt.params, self._pools.per_term]
        per_arm: dict[int, dict[int, float]] = defaultdict(dict)
        for t, doc, score in self._fetch(" UNION ALL ".join(arms), params):
            per_arm[int(t)][int(doc)] = float(score)
        for i, term in enumerate(terms):
            found = per_arm.get(i, {})
            weight = discount * bm25_idf(max(term.df, len(found), 1), n_docs)
            for d, score in found.items():
                term.scores[d] = max(term.scores.get(d, 0.0), score * weight)

    def _cjk_occurrences(self, term: str, flt: Filter) -> tuple[str, list[Any]]:
        """SQL for a short CJK term's occurrences, one row (``id``: the message, ``tf``: 1)
        each: where a trigram starts with it, or a message ends with it. A term of three or more
        characters (the decomposed spelling of kana or Hangul: ``plan.spellings``) is a phrase of
        the trigram index instead, one row per message with its number of occurrences."""
        if len(term) >= 3:
            fts, base = _MESSAGES.trigram, _MESSAGES.base
            return (
                f"SELECT b.rowid AS id, max(1, (length(b.content)"
                f" - length(replace(b.content, ?, ''))) / length(?)) AS tf FROM {fts}"
                f" CROSS JOIN {base} AS b ON b.rowid = {fts}.rowid WHERE {fts} MATCH ?"
                f"{flt.where()}"
            ), [term, term, "content : " + quote(term), *flt.params]
        vocab = "philont_raw_messages_fts_trigrams"
        words = _MESSAGES.words
        join = f" CROSS JOIN {_MESSAGES.base} AS b ON b.rowid = v.doc" if flt.sql else ""
        sql = (
            f"SELECT v.doc AS id, 1 AS tf FROM {vocab} AS v{join} WHERE v.term >= ?"
            f" AND v.term < ? AND v.col = 'content'{flt.where()} UNION ALL SELECT"
            f" {words}.rowid AS id, 1 AS tf{self._from(words, _MESSAGES, flt)}"
            f" WHERE {words} MATCH ?{flt.where()}"
        )
        # The filter stands in both arms: its values are bound twice.
        return sql, [term, term + "\U0010ffff", *flt.params, "tail : " + quote(term), *flt.params]

    def _cjk_terms_indexed(self, plan: SearchPlan, flt: Filter, n_docs: int) -> list[Term]:
        """Short CJK terms through indexes. A term occurs wherever a trigram starts with it
        (Philont's trigram index, read through fts5vocab) or a message ends with it (the
        ``tail`` column of our word index). Occurrences are counted up to CJK_OCCURRENCE_CAP: a
        rarer term's messages are all read, a more common one's newest (see the constant)."""
        # 1. How common each term is in the whole history (counted inside SQLite).
        arms: list[str] = []
        params: list[Any] = []
        for i, term in enumerate(plan.like_terms):
            sql, values = self._cjk_occurrences(term, Filter())
            arms.append(f"SELECT {i}, count(*) FROM ({sql} LIMIT ?)")
            params += [*values, CJK_OCCURRENCE_CAP]
        counts = {int(t): int(n) for t, n in self._fetch(" UNION ALL ".join(arms), params)}

        # 2. A rare term: every message, with its number of occurrences there. A common one:
        #    present (tf 1) in its newest matches among the newest messages.
        arms, params = [], []
        where = f" WHERE {flt.sql}" if flt.sql else ""
        window, recent = self._pools.presence, self._pools.scaled(CJK_RECENT_ROWS)
        for i, term in enumerate(plan.like_terms):
            if counts.get(i, 0) >= CJK_OCCURRENCE_CAP:
                arms.append(
                    f"SELECT * FROM (SELECT {i} AS t, id, 1 AS tf FROM (SELECT b.rowid AS id,"
                    f" b.content AS c FROM {_MESSAGES.base} AS b{where} ORDER BY b.rowid DESC"
                    " LIMIT ?) WHERE instr(c, ?) > 0 LIMIT ?)"
                )
                params += [*flt.params, recent, term, window]
            elif counts.get(i, 0) > 0:
                sql, values = self._cjk_occurrences(term, flt)
                arms.append(f"SELECT {i}, id, sum(tf) FROM ({sql} LIMIT ?) GROUP BY id")
                params += [*values, CJK_OCCURRENCE_CAP]
        found: dict[int, dict[int, int]] = defaultdict(dict)
        if arms:
            # Integers all, as SQLite returns them (a literal, a rowid, a count or sum of
            # counts): up to CJK_OCCURRENCE_CAP rows a term, taken as they are.
            for t, doc, tf in self._fetch(" UNION ALL ".join(arms), params):
                found[t][doc] = tf

        terms: list[Term] = []
        for i, term in enumerate(plan.like_terms):
            docs = found.get(i, {})
            common = counts.get(i, 0) >= CJK_OCCURRENCE_CAP
            df = estimate_cjk_df(list(docs), n_docs, window, recent) if common else len(docs)
            weight = bm25_idf(max(df, 1), n_docs)
            weight *= weight
            # A document's score is a function of its tf alone, and most share a few values.
            earned = {tf: weight * saturate(float(tf)) for tf in set(docs.values())}
            terms.append(Term(term, df, {d: earned[tf] for d, tf in docs.items()}))
        return terms

    def _cjk_terms_like(
        self, corpus: _Corpus, plan: SearchPlan, flt: Filter, n_docs: int
    ) -> list[Term]:
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
    ) -> list[Term]:
        terms: list[Term] = []
        for i, term in enumerate(plan.like_terms):
            docs = counts.get(i, {})
            df = len(docs)
            if instances.get(i, 0) >= CJK_INSTANCE_CAP:
                df = max(df, n_docs)  # too common to be telling
            weight = bm25_idf(max(df, 1), n_docs)
            weight *= weight
            terms.append(
                Term(term, df, {d: weight * saturate(float(tf)) for d, tf in docs.items()})
            )
        return terms
