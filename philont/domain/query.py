"""User text in any language -> a safe search plan (quoted FTS5 words, CJK two-character terms)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache

from philont.domain.word_forms import compound_parts, other_forms

__all__ = [
    "FOLDED_INTO_ASCII",
    "LIKE_ESCAPE",
    "MAX_SCAN_CHARS",
    "MAX_TERM_CHARS",
    "SearchPlan",
    "build_plan",
    "canonical_spellings",
    "fold_case",
    "like_escape",
    "like_pattern",
    "quote",
]

MAX_SCAN_CHARS = 8_000
"""Only this many leading characters of a query are read (a pasted document is not a query)."""

MAX_TERM_CHARS = 64
"""Longer words are cut to this length (no real word is longer)."""

LIKE_ESCAPE = "\\"
"""The escape character for :func:`like_pattern` (use ``LIKE ? ESCAPE '\\'``)."""

_SIMPLE_LOWER = str.maketrans({"\u0130": "i", "\u03a3": "\u03c3"})
"""The two letters whose ``str.lower()`` is not Unicode's simple, one-for-one lowercase: İ
(``lower()`` adds a combining dot above) and Σ (``lower()`` writes ς at the end of a word)."""


FOLDED_INTO_ASCII = {"i": "\u0130", "k": "\u212a"}
"""The only letters beyond ASCII that :func:`fold_case` makes ASCII: İ -> i, the Kelvin sign
K -> k (every other one stays beyond ASCII)."""


def fold_case(text: str) -> str:
    """``text`` lowercased code point by code point (Unicode's simple lowercase mapping: İ -> i,
    Σ -> σ wherever it stands), as the word indexes lowercase documents: SQLite's unicode61 and
    PostgreSQL's parser (``towlower``). The one case rule of search on both backends."""
    if "\u0130" in text or "\u03a3" in text:  # rare: str.translate is slow on long text
        text = text.translate(_SIMPLE_LOWER)
    return text.lower()


@dataclass(frozen=True)
class SearchPlan:
    """What to search for, already safe to bind as FTS5 MATCH / LIKE parameters.

    * ``terms``: every search term in query order (word terms, then CJK terms), deduplicated.
    * ``words``: the word terms (lowercased; compounds such as ``rust-lang`` stay whole and are
      searched as a phrase, which the index's tokenizer splits and stems as it did the text);
      with ``forms``, followed by the forms of those words a stemmer cannot join (see
      :mod:`philont.domain.word_forms`).
    * ``form_of``: for each term, the index of the term it stands for (itself; for a form, the
      query's word it is a form of; for a spelling, the term it spells); empty: every term
      stands for itself.
    * ``spellings``: the indexes of the terms that spell another term in decomposed Unicode
      (NFD: ``e`` + U+0301 for ``é``, jamo for Hangul, ``カ`` + U+3099 for ``ガ``), as macOS
      writes text. The query is read composed (NFC) and the indexes hold text as it was
      stored, so each term whose decomposed form differs is searched in both; the two are one
      term (:func:`philont.domain.ranking.fold_forms`). They come last among the words and
      last among the CJK terms, and never count against a plan's term limit.
    * ``fts_expression``: the words OR-ed for the word-level index, each double-quoted (so no
      FTS5 operator, column filter, prefix star or NEAR group can come from user text); None
      when there are no words.
    * ``trigram_expression``: the terms of three or more characters OR-ed, quoted the same way,
      for a trigram index (substring matches); None when there are none.
    * ``like_terms``: short CJK terms (two-character words and bigrams of longer CJK runs, single
      characters only when nothing else is left) that trigram FTS cannot find; search them with
      :func:`like_pattern` or an n-gram lookup.
    """

    terms: tuple[str, ...]
    words: tuple[str, ...]
    fts_expression: str | None
    trigram_expression: str | None
    like_terms: tuple[str, ...]
    form_of: tuple[int, ...] = ()
    spellings: tuple[int, ...] = ()

    def word_phrases(self) -> tuple[str, ...]:
        """Each word as its own quoted FTS5 phrase."""
        return tuple(quote(w) for w in self.words)


def quote(term: str) -> str:
    """An FTS5 string literal: double quotes around, inner double quotes doubled."""
    return '"' + term.replace('"', '""') + '"'


def like_escape(text: str) -> str:
    """``text`` with ``\\``, ``%`` and ``_`` escaped (pair with ``ESCAPE '\\'``)."""
    return (
        text.replace(LIKE_ESCAPE, LIKE_ESCAPE * 2)
        .replace("%", LIKE_ESCAPE + "%")
        .replace("_", LIKE_ESCAPE + "_")
    )


def like_pattern(term: str) -> str:
    """``%term%`` with ``\\``, ``%`` and ``_`` escaped (pair with ``ESCAPE '\\'``)."""
    escaped = like_escape(term)
    return f"%{escaped}%"


def canonical_spellings(text: str) -> tuple[str, ...]:
    """``text`` as given, composed (NFC: ``é``) and decomposed (NFD: ``e`` + U+0301, Hangul as
    jamo), each once: the two normal forms text is usually stored in (text is stored as given;
    macOS and some input methods write NFD). Text in neither form (``ê`` + U+0323) is
    matched only by its own spelling. A substring search looks for each. Only
    canonical equivalence: compatibility forms stay apart (NFKC would make ``ﬁ`` ``fi``, ``²``
    ``2``, ``ｆｏｏ`` ``foo``; they are other text). ASCII text has one spelling."""
    if text.isascii():
        return (text,)
    forms = (unicodedata.normalize("NFC", text), unicodedata.normalize("NFD", text))
    return tuple(dict.fromkeys((text, *forms)))


# --- stop words ------------------------------------------------------------------------------


def _split(words: str) -> list[str]:
    return words.split()


_EN_STOP = frozenset(
    _split(
        """
        a about above after again against all am an and any are aren't as at be because been
        before being below between both but by can can't cannot could couldn't did didn't do
        does doesn't doing don't down during each either else ever few for from further had
        hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself
        him himself his how how's however i i'd i'll i'm i've if in into is isn't it it's its
        itself just let's me might more most must mustn't my myself no nor not now of off on
        once only or other ought our ours ourselves out over own same shall shan't she she'd
        she'll she's should shouldn't so some such than that that's the their theirs them
        themselves then there there's these they they'd they'll they're they've this those
        through to too under until up upon us very was wasn't we we'd we'll we're we've were
        weren't what what's whatever when when's where where's whether which while who who's
        whom whose why why's will with won't would wouldn't yet you you'd you'll you're you've
        your yours yourself yourselves also may near s t d ll m re ve
        """
    )
)
"""A compact English list: articles, pronouns, auxiliaries, prepositions, conjunctions and
question words. Content verbs (decide, buy, paint ...) are kept; bm25's idf weighs the rest."""

_ZH_STOP_WORDS = tuple(
    sorted(
        _split(
            """
            我们 你们 他们 她们 它们 咱们 大家 自己 什么 怎么 怎样 怎么样 为什么 为何 哪里
            哪儿 哪个 哪些 那里 这里 这个 那个 这些 那些 这样 那样 一个 一些 一下 有没有
            是不是 没有 可以 可能 应该 还是 就是 但是 而且 因为 所以 如果 然后 已经 还有 知道
            觉得 时候 的话 一起 之前 以前 之后 以后 上次 最近 现在 请问 告诉 记得 谁 吗 呢 吧
            啊 呀 哦 嗯 么
            """
        ),
        key=len,
        reverse=True,
    )
)
"""Chinese function words, removed before bigrams are made (longest first)."""

_ZH_STOP_CHARS = frozenset("的了是在和与及或也都就又很把被给我你他她它这那哪个些着过地得之")
"""Single-character particles and pronouns; a CJK run is split at them."""

# --- character classes -----------------------------------------------------------------------

_WORD, _CJK, _JOIN, _SEP = "w", "c", "j", " "
_JOINERS = frozenset("-.@'’_/:+&")
_APOSTROPHES = str.maketrans({"’": "'"})


def _is_cjk(cp: int) -> bool:
    return (
        0x3040 <= cp <= 0x30FF  # hiragana, katakana
        or 0x3400 <= cp <= 0x4DBF  # CJK extension A
        or 0x4E00 <= cp <= 0x9FFF  # CJK unified ideographs
        or 0xF900 <= cp <= 0xFAFF  # compatibility ideographs
        or 0xAC00 <= cp <= 0xD7AF  # hangul syllables
        or 0x1100 <= cp <= 0x11FF  # hangul jamo
        or 0x3130 <= cp <= 0x318F  # hangul compatibility jamo
        or 0x31F0 <= cp <= 0x31FF  # katakana phonetic extensions
        or 0xFF66 <= cp <= 0xFF9F  # half-width katakana
        or 0x20000 <= cp <= 0x3134F  # CJK extensions B..G
    )


@lru_cache(maxsize=8192)
def _char_class(char: str) -> str:
    cp = ord(char)
    if _is_cjk(cp):
        return _CJK
    if char in _JOINERS:
        return _JOIN
    category = unicodedata.category(char)
    # Letters, numbers, marks and private use are word characters (as in unicode61); controls,
    # formats, surrogates (text decoded with surrogateescape), punctuation, symbols and spaces
    # separate words. Full-width punctuation (？，。) is punctuation, so it separates too.
    if category[0] in "LNM" or category == "Co":
        return _WORD
    return _SEP


def _classify(text: str) -> str:
    table = {ord(c): _char_class(c) for c in set(text)}
    return text.translate(table)


_SPAN = re.compile(r"w+(?:jw+)*|c+")

# --- CJK -------------------------------------------------------------------------------------


def _cjk_segments(run: str) -> list[str]:
    """Split a CJK run at function words and particles."""
    parts = [run]
    for stop in _ZH_STOP_WORDS:
        if any(stop in p for p in parts):
            parts = [piece for p in parts for piece in p.split(stop)]
    segments: list[str] = []
    for part in parts:
        current: list[str] = []
        for ch in part:
            if ch in _ZH_STOP_CHARS:
                if current:
                    segments.append("".join(current))
                current = []
            else:
                current.append(ch)
        if current:
            segments.append("".join(current))
    return segments


def _bigrams(segment: str) -> list[str]:
    return [segment[i : i + 2] for i in range(len(segment) - 1)]


# --- the plan --------------------------------------------------------------------------------


def _clean(text: str) -> str:
    text = text[:MAX_SCAN_CHARS]
    # NFC joins decomposed accents; it is safe on lone surrogates (they stay, as separators).
    try:
        return unicodedata.normalize("NFC", text)
    except (TypeError, ValueError):  # pragma: no cover - normalize accepts any str
        return text


def _possessive(word: str) -> str:
    """``word`` without a possessive ending: caroline's -> caroline."""
    return word[:-2] if word.endswith("'s") and len(word) > 2 else word


def _word(span: str) -> str:
    """The search word of a span of word characters: lowercased, without a possessive."""
    return _possessive(fold_case(span).translate(_APOSTROPHES))


def _nfd(term: str) -> str:
    return unicodedata.normalize("NFD", term)


def _spell(
    terms: list[str], form_of: list[int], start: int, spell: Callable[[str], str]
) -> tuple[int, ...]:
    """Append the decomposed spelling of each term from ``start`` on that has one (standing for
    that term, in ``form_of``); the indexes of the spellings."""
    added: list[int] = []
    for i in range(start, len(terms)):
        spelling = spell(terms[i])
        if spelling != terms[i] and spelling not in terms:
            added.append(len(terms))
            terms.append(spelling)
            form_of.append(i)
    return tuple(added)


@dataclass
class _Terms:
    """The terms a plan collects, in order of appearance, capped at ``max_terms``."""

    max_terms: int
    words: dict[str, None] = field(default_factory=dict)
    short_words: dict[str, None] = field(default_factory=dict)
    cjk: dict[str, None] = field(default_factory=dict)
    singles: dict[str, None] = field(default_factory=dict)
    long_cjk: dict[str, None] = field(default_factory=dict)
    forms: dict[str, int] = field(default_factory=dict)
    decomposed: dict[str, str] = field(default_factory=dict)
    """A word -> the same word read from its decomposed text, where they differ (İ: ``i`` once
    lowercased, ``i`` + U+0307 decomposed first)."""

    def room(self) -> bool:
        return len(self.words) + len(self.forms) + len(self.cjk) < self.max_terms

    def add_cjk(self, span: str) -> None:
        for segment in _cjk_segments(span):
            if len(segment) == 1:
                self.singles.setdefault(segment)
                continue
            if len(segment) >= 3:
                self.long_cjk.setdefault(segment)
            for gram in _bigrams(segment):
                if self.room():
                    self.cjk.setdefault(gram)

    def add_word(self, span: str) -> None:
        word = _word(span)
        if not span.isascii() and (decomposed := _word(_nfd(span))) != word:
            self.decomposed.setdefault(word, decomposed)
        if word in _EN_STOP:
            return
        if len(word) == 1 and not word.isdigit():  # a lone letter (s, t, x); "room 7" needs its 7
            self.short_words.setdefault(word)
            return
        self.words.setdefault(word)

    def fall_back_to_single_characters(self) -> None:
        """Only one-character terms were found: search them rather than nothing."""
        for w in self.short_words:
            if w not in _EN_STOP and len(self.words) < self.max_terms:
                self.words.setdefault(w)
        for s in self.singles:
            if self.room():
                self.cjk.setdefault(s)

    def add_forms(self) -> None:
        """The parts of each compound word and the other forms of each irregular one, while
        there is room (after every word and CJK term: a form never displaces one)."""
        for index, word in enumerate(list(self.words)):
            for form in map(_possessive, (*compound_parts(word), *other_forms(word))):
                fresh = form not in self.words and form not in self.forms
                if fresh and len(form) > 1 and form not in _EN_STOP and self.room():
                    self.forms[form] = index

    def plan(self) -> SearchPlan | None:
        words = tuple(self.words) + tuple(self.forms)
        if not words and not self.cjk:
            return None
        form_of = [*range(len(self.words)), *self.forms.values()]
        terms = list(words)
        word_spellings = _spell(terms, form_of, 0, lambda w: self.decomposed.get(w, _nfd(w)))
        like_start = len(terms)
        terms += self.cjk
        form_of += range(like_start, len(terms))
        cjk_spellings = _spell(terms, form_of, like_start, _nfd)
        word_list = tuple(terms[:like_start])
        like_terms = tuple(terms[like_start:])
        trigram_terms = [w for w in word_list if len(w) >= 3] + list(self.long_cjk)
        return SearchPlan(
            terms=word_list + like_terms,
            words=word_list,
            fts_expression=" OR ".join(quote(w) for w in word_list) or None,
            trigram_expression=" OR ".join(quote(t) for t in trigram_terms) or None,
            like_terms=like_terms,
            form_of=tuple(form_of),
            spellings=word_spellings + cjk_spellings,
        )


def build_plan(text: str, *, max_terms: int = 16, forms: bool = False) -> SearchPlan | None:
    """Turn arbitrary user text into a :class:`SearchPlan`, or None when nothing is searchable.

    Never raises for any ``str`` (NUL, controls, lone surrogates, FTS5 syntax, quotes, 100 kB):
    words are lowercased, English stop words dropped, every FTS5 term double-quoted; CJK runs
    lose their function words and become two-character terms. ``forms``: the words' forms a
    stemmer cannot join are searched too (``form_of`` tells whose). At most ``max_terms`` terms,
    besides the decomposed spellings of those that have one (``spellings``).
    """
    if not isinstance(text, str) or max_terms < 1:
        return None
    cleaned = _clean(text)
    classes = _classify(cleaned)
    # A cut text ends mid-word: its last piece is dropped unless it is all there is.
    cut_end = len(cleaned) if len(text) > MAX_SCAN_CHARS else -1
    terms = _Terms(max_terms)
    for m in _SPAN.finditer(classes):
        if not terms.room() or (m.end() == cut_end and (terms.words or terms.cjk)):
            break
        span = cleaned[m.start() : m.end()][:MAX_TERM_CHARS]
        if classes[m.start()] == _CJK:
            terms.add_cjk(span)
        else:
            terms.add_word(span)
    if not terms.words and not terms.cjk:
        terms.fall_back_to_single_characters()
    if forms:
        terms.add_forms()
    return terms.plan()
