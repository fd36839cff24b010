"""Any user text becomes a safe search plan: quoted FTS5 terms, CJK two-character terms, or None."""

from __future__ import annotations

import sqlite3
import unicodedata
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont.domain.query import (
    MAX_SCAN_CHARS,
    SearchPlan,
    build_plan,
    canonical_spellings,
    fold_case,
    like_pattern,
    quote,
)

WORD_TOKENIZER = "porter unicode61 remove_diacritics 2"


@pytest.fixture(scope="module")
def fts() -> Iterator[sqlite3.Connection]:
    """In-memory FTS5 tables with the tokenizers our indexes use, a few rows each."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        f"CREATE VIRTUAL TABLE words USING fts5(content, tail, tokenize='{WORD_TOKENIZER}')"
    )
    conn.execute("CREATE VIRTUAL TABLE tri USING fts5(content, role, tokenize='trigram')")
    conn.execute("CREATE TABLE plain (content TEXT)")
    rows = ["Berlin apartment, co-op and rust-lang v1.2.3", "我想去柏林吃寿司", "100% done_ok"]
    for text in rows:
        conn.execute("INSERT INTO words(content, tail) VALUES (?, substr(?, -2))", (text, text))
        conn.execute("INSERT INTO tri(content, role) VALUES (?, 'user')", (text,))
        conn.execute("INSERT INTO plain(content) VALUES (?)", (text,))
    yield conn
    conn.close()


def run_plan(conn: sqlite3.Connection, plan: SearchPlan) -> None:
    """Execute every expression of ``plan`` the way the search service does."""
    for phrase in plan.word_phrases():
        conn.execute("SELECT rowid FROM words WHERE words MATCH ?", ("content : " + phrase,))
    if plan.fts_expression:
        conn.execute("SELECT rowid FROM words WHERE words MATCH ?", (plan.fts_expression,))
    if plan.trigram_expression:
        conn.execute(
            "SELECT rowid FROM tri WHERE tri MATCH ?",
            ("content : (" + plan.trigram_expression + ")",),
        )
    for term in plan.like_terms:
        conn.execute(
            "SELECT rowid FROM plain WHERE content LIKE ? ESCAPE '\\'", (like_pattern(term),)
        )
        conn.execute("SELECT rowid FROM words WHERE words MATCH ?", ("tail : " + quote(term),))


# --- tables of cases -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words", "like_terms"),
    [
        ("What did we decide about the Berlin apartment?", ("decide", "berlin", "apartment"), ()),
        ("rust-lang", ("rust-lang",), ()),
        ("v1.2.3", ("v1.2.3",), ()),
        ("me@x.com", ("me@x.com",), ()),
        ("co-op NEAR Berlin", ("co-op", "berlin"), ()),
        ("role:user", ("role:user",), ()),
        ("Kaution?", ("kaution",), ()),
        ("ＫＡＵＴＩＯＮ？", ("ｋａｕｔｉｏｎ",), ()),  # full-width letters stay one word
        ("hello, world.", ("hello", "world"), ()),
        ("C++", ("c",), ()),  # only one-letter words left: searched rather than nothing
        ("room 7", ("room", "7"), ()),  # a digit is a word: "7" tells room 7 from the others
        ("plan B, step 2", ("plan", "step", "2"), ()),  # a lone letter is not (s, t, ...)
        ("柏林", (), ("柏林",)),
        ("寿司", (), ("寿司",)),
        ("检索 功能", (), ("检索", "功能")),
        ("我们上次说的寿司店叫什么？", (), ("寿司", "司店", "店叫")),
        ("猫", (), ("猫",)),
        ("SCHUFA 要多久", ("schufa",), ("要多", "多久")),
        ("a\x00b berlin", ("berlin",), ()),
        ("don't stop", ("stop",), ()),
    ],
)
def test_text_becomes_words_and_cjk_terms(
    text: str, words: tuple[str, ...], like_terms: tuple[str, ...]
) -> None:
    plan = build_plan(text)
    assert plan is not None
    assert plan.words == words
    assert plan.like_terms == like_terms


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "\t\n",
        "?!.,",
        "？！。，、",
        "AND OR NOT NEAR",
        "AND",
        '"',
        '""""',
        "*",
        "(",
        ")",
        "^",
        "-",
        ":",
        "{}",
        "%",
        "_",
        "\x00",
        "\udcff\udcfe",
        "the of and",
        "我们的",
    ],
)
def test_text_with_nothing_searchable_gives_no_plan(text: str) -> None:
    assert build_plan(text) is None


def test_every_fts_term_is_double_quoted_so_no_operator_survives() -> None:
    plan = build_plan('NEAR(berlin) "x" a* -b c:d {e} f^g AND h OR i')
    assert plan is not None
    assert plan.fts_expression is not None
    for part in plan.fts_expression.split(" OR "):
        assert part.startswith('"') and part.endswith('"')


def test_quote_doubles_inner_double_quotes() -> None:
    assert quote('say "hi"') == '"say ""hi"""'


def test_like_pattern_escapes_wildcards_and_the_escape_character() -> None:
    assert like_pattern("50%_a\\b") == "%50\\%\\_a\\\\b%"


def test_like_wildcards_match_only_themselves(fts: sqlite3.Connection) -> None:
    hits = fts.execute(
        "SELECT content FROM plain WHERE content LIKE ? ESCAPE '\\'", (like_pattern("0%"),)
    ).fetchall()
    assert hits == [("100% done_ok",)]
    none = fts.execute(
        "SELECT content FROM plain WHERE content LIKE ? ESCAPE '\\'", (like_pattern("d_n"),)
    ).fetchall()
    assert none == []


def test_the_number_of_terms_is_limited() -> None:
    plan = build_plan(" ".join(f"word{i}" for i in range(100)), max_terms=16)
    assert plan is not None
    assert len(plan.terms) == 16


def test_a_100_kb_input_gives_a_small_plan_quickly() -> None:
    text = "berlin apartment " * 6_000 + "x" * 100_000
    plan = build_plan(text)
    assert plan is not None
    assert plan.words == ("berlin", "apartment")


def test_only_the_first_characters_of_a_long_text_are_read() -> None:
    assert build_plan("." * MAX_SCAN_CHARS + " berlin") is None


def test_a_word_of_100_kb_is_cut_to_a_bounded_term() -> None:
    plan = build_plan("y" * 100_000)
    assert plan is not None
    assert len(plan.words[0]) <= 64


def test_a_zero_or_negative_term_limit_gives_no_plan() -> None:
    assert build_plan("berlin", max_terms=0) is None


# --- properties ------------------------------------------------------------------------------

FTS_SYNTAX = st.sampled_from(
    ["AND", "OR", "NOT", "NEAR", "NEAR(", "(", ")", '"', "*", "^", "-", ":", "{", "}", "+", ",",
     "content:", "role:user", "\x00", "\udcff", "'", "%", "_", "\\", "柏林", "寿司"]
)  # fmt: skip
ANY_CHAR = st.one_of(st.characters(), st.characters(categories=["Cs"]))
ANY_TEXT = st.lists(st.one_of(st.text(ANY_CHAR, max_size=12), FTS_SYNTAX), max_size=25).map(
    " ".join
)


@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ANY_TEXT, st.booleans())
def test_any_text_gives_none_or_a_plan_that_runs_without_error(
    fts: sqlite3.Connection, text: str, forms: bool
) -> None:
    plan = build_plan(text, forms=forms)
    if plan is None:
        return
    assert plan.terms
    for value in (*plan.terms, plan.fts_expression or "", plan.trigram_expression or ""):
        value.encode("utf-8")  # no lone surrogate can reach SQLite
    run_plan(fts, plan)


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.text(ANY_CHAR, min_size=0, max_size=200),
    st.integers(min_value=1, max_value=40),
    st.booleans(),
)
def test_plans_never_exceed_the_term_limit(
    fts: sqlite3.Connection, text: str, n: int, forms: bool
) -> None:
    plan = build_plan(text * 3, max_terms=n, forms=forms)
    if plan is not None:
        # a term's decomposed spelling is that term again (at most one each), not another term
        assert len(plan.terms) - len(plan.spellings) <= n
        assert all(plan.form_of[i] not in plan.spellings for i in plan.spellings)
        run_plan(fts, plan)


def test_a_100_kb_adversarial_input_runs_without_error(fts: sqlite3.Connection) -> None:
    text = ('NEAR( "a* -b c:d ^ ' + "柏林\x00\udcff" + " AND OR NOT ") * 5_000
    plan = build_plan(text)
    assert plan is not None
    run_plan(fts, plan)


# --- word forms a stemmer cannot join --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words", "form_of"),
    [
        ("What did Dave buy?", ("dave", "buy", "bought"), (0, 1, 1)),
        ("Where has Maria made friends?", ("maria", "made", "friends", "make"), (0, 1, 2, 1)),
        ("Who went there?", ("went", "go", "gone"), (0, 0, 0)),
        ("artists/bands she saw", ("artists/bands", "saw", "artists", "bands", "see", "seen"),
         (0, 1, 0, 0, 1, 1)),
        ("a self-care routine", ("self-care", "routine", "self", "care"), (0, 1, 0, 0)),
        ("rust-lang v1.2", ("rust-lang", "v1.2", "rust", "lang"), (0, 1, 0, 0)),
        ("What has John done?", ("john", "done"), (0, 1)),  # do, did: stop words
        ("the off-the-shelf kit", ("off-the-shelf", "kit", "shelf"), (0, 1, 0)),
        ("buy and bought", ("buy", "bought"), (0, 1)),  # both asked: each a word of its own
        ("Anna's-gift", ("anna's-gift", "anna", "gift"), (0, 0, 0)),
    ],
)  # fmt: skip
def test_the_forms_of_irregular_and_compound_words_follow_the_words(
    text: str, words: tuple[str, ...], form_of: tuple[int, ...]
) -> None:
    plan = build_plan(text, forms=True)
    assert plan is not None
    assert (plan.words, plan.form_of) == (words, form_of)
    assert plan.terms[: len(words)] == words


def test_without_forms_a_plan_holds_the_query_words_only() -> None:
    plan = build_plan("What did Dave buy?")
    assert plan is not None
    assert plan.words == ("dave", "buy")
    assert plan.form_of == (0, 1)  # each word stands for itself


def test_forms_never_displace_a_word_of_the_query() -> None:
    text = " ".join(["buy"] + [f"word{i}" for i in range(20)])
    plan = build_plan(text, forms=True, max_terms=16)
    assert plan is not None
    assert "bought" not in plan.words
    assert plan.words == build_plan(text, max_terms=16).words  # type: ignore[union-attr]


@settings(max_examples=200, deadline=None)
@given(ANY_TEXT, st.integers(min_value=1, max_value=20))
def test_forms_come_after_the_words_and_name_one_of_them(text: str, n: int) -> None:
    plain = build_plan(text, max_terms=n)
    plan = build_plan(text, max_terms=n, forms=True)
    assert (plain is None) == (plan is None)
    if plan is None or plain is None:
        return
    own = len(plain.words) - len([i for i in plain.spellings if i < len(plain.words)])
    assert plan.words[:own] == plain.words[:own]
    assert plan.like_terms == plain.like_terms
    assert len(plan.form_of) == len(plan.terms)
    assert plan.form_of[:own] == tuple(range(own))
    forms = [i for i in range(own, len(plan.words)) if i not in plan.spellings]
    assert all(plan.form_of[i] < own for i in forms)
    assert len(set(plan.words)) == len(plan.words)


# --- one case rule: lowercase code point by code point, as the word indexes do -----------------


@pytest.mark.parametrize(
    ("query", "words"),
    [
        # str.lower(): "i̇stanbul", a combining dot no index holds of a composed İ (the word's
        # decomposed spelling, which a decomposed İ's index holds, follows)
        ("İstanbul", ("istanbul", "i\u0307stanbul")),
        ("ΟΔΟΣ", ("οδοσ",)),  # str.lower(): "οδος", the final ς PostgreSQL keeps apart from σ
        ("Äpfel", ("äpfel", "a\u0308pfel")),
        ("ＦＯＯ", ("ｆｏｏ",)),  # full-width letters stay full-width (no index maps them to ASCII)
        ("οδος", ("οδος",)),  # a ς the user typed is kept
    ],
)
def test_query_words_are_lowercased_as_the_indexes_lowercase_documents(
    query: str, words: tuple[str, ...]
) -> None:
    plan = build_plan(query)
    assert plan is not None
    assert plan.words == words


@given(st.text(max_size=40))
def test_the_case_fold_maps_each_code_point_to_one_code_point(text: str) -> None:
    folded = fold_case(text)
    assert len(folded) == len(text)
    assert folded == "".join(fold_case(c) for c in text)  # no context (no final sigma rule)
    assert fold_case(folded) == folded
    assert all(c == d or c.lower() == d or c in "İΣ" for c, d in zip(text, folded, strict=True))


@given(st.text(max_size=12))
def test_a_text_s_spellings_are_canonically_equivalent_and_ascii_has_one(text: str) -> None:
    spellings = canonical_spellings(text)
    assert spellings[0] == text and len(set(spellings)) == len(spellings)
    assert {unicodedata.normalize("NFC", s) for s in spellings} == {
        unicodedata.normalize("NFC", text)
    }
    assert unicodedata.normalize("NFD", text) in spellings
    assert len(spellings) == 1 or not text.isascii()
