"""Search folds case by one rule on both backends (``philont.domain.query.fold_case``: Unicode's
simple lowercase, code point by code point, as both word indexes lowercase documents): a note
written in one case is found by a query in another, non-ASCII letters too (Ä, İ, Σ, full-width
letters), by the ranked ``mem.search.notes`` and by ``mem.notes.search`` (substrings); Chinese
has no case. What the word indexes still fold differently (accents, a final ς) is in
docs/search.md ("Case and accents")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont.domain.query import build_plan, fold_case
from philont.store import Store

BOTH_BACKENDS = True

SCRIPTS = {
    "latin": "abcdefghijklmnopqrstuvwxyzäöüéñ",
    "turkish": "abcçdefgğhİijklmnoöprsştuüvyz",  # not ı: its upper case is I
    "greek": "αβγδεζηθικλμνξοπρστυφχψω",  # not ς: see the module
    "full-width": "ａｂｃｄｅｆｇｈｉｊｋｌｍｎｏｐｑｒｓｔｕｖｗｘｙｚ",
}
"""Letters whose upper and lower case both backends fold alike, one script per word."""


def _upper(word: str) -> str:
    return "".join(c.upper() for c in word)


CASES: dict[str, Callable[[str], str]] = {
    "as written": lambda w: w,
    "upper": _upper,
    "lower": fold_case,
    "title": lambda w: _upper(w[:1]) + fold_case(w[1:]),
}
"""How a person may write a word (code point by code point: Python's ``str.title()`` would
write a final ς, and İ in the middle of a word as i and a combining dot)."""


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    with Store.open(target) as s:
        yield s


def found(store: Store, written: str, query: str) -> bool:
    """Whether both searches find a new note holding ``written`` by ``query`` (and agree)."""
    with store.begin() as mem:
        note = mem.notes.add(f"zz {written} zz")
    with store.begin(write=False) as mem:
        ranked = note.id in {h.id for h in mem.search.notes(query, limit=1_000)}
        listed = note.id in {n.id for n in mem.notes.search(query, limit=1_000)}
    assert ranked == listed, (ranked, listed)
    return ranked


@pytest.mark.parametrize(
    ("written", "query"),
    [
        ("Äpfel", "ÄPFEL"),
        ("äpfel", "Äpfel"),
        ("İstanbul", "İstanbul"),  # the query was "i̇stanbul": PostgreSQL found nothing
        ("İSTANBUL", "istanbul"),
        ("ΟΔΟΣ", "ΟΔΟΣ"),  # the query was "οδος": PostgreSQL's index holds "οδοσ"
        ("ΟΔΟΣ", "οδοσ"),
        ("ＦＯＯＢＡＲ", "ｆｏｏｂａｒ"),
        ("我们去柏林", "柏林"),
    ],
)
def test_a_note_is_found_by_a_query_in_another_case(store: Store, written: str, query: str) -> None:
    assert found(store, written, query)


@pytest.mark.parametrize(
    ("written", "query"),
    [
        ("Ärger", "ärger"),  # SQLite's LIKE folded ASCII only: notes.search found it on PostgreSQL
        ("İstanbul", "istanbul"),
        ("ΔΡΟΜΟΣ", "δρομοσ"),
        ("ＡＢＣ", "ａｂｃ"),
        ("我们去柏林", "柏林"),
    ],
)
def test_notes_search_folds_case_as_ranked_search_does(
    store: Store, written: str, query: str
) -> None:
    with store.begin() as mem:
        note = mem.notes.add(f"zz {written} zz")
    with store.begin(write=False) as mem:
        assert [n.id for n in mem.notes.search(query)] == [note.id]


@pytest.mark.parametrize(("written", "query"), [("Ärger", "arger"), ("δρομος", "ΔΡΟΜΟΣ")])
def test_notes_search_keeps_accents_and_a_final_sigma_apart_on_both_backends(
    store: Store, written: str, query: str
) -> None:
    with store.begin() as mem:
        mem.notes.add(f"zz {written} zz")
    with store.begin(write=False) as mem:
        assert mem.notes.search(query) == []


def searchable(word: str) -> bool:
    plan = build_plan(word)
    return plan is not None and plan.words == (fold_case(word),)


@st.composite
def words(draw: st.DrawFn) -> str:
    script = draw(st.sampled_from(sorted(SCRIPTS)))
    word = draw(st.text(SCRIPTS[script], min_size=3, max_size=10))
    # No English stop word (ours or PostgreSQL's) starts with q.
    return "q" + word if script in ("latin", "turkish") else word


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    word=words().filter(searchable),
    written=st.sampled_from(sorted(CASES)),
    asked=st.sampled_from(sorted(CASES)),
)
def test_any_case_of_a_word_finds_any_other(
    store: Store, word: str, written: str, asked: str
) -> None:
    assert found(store, CASES[written](word), CASES[asked](word))


TRICKY = "aiIkKzÄäöİıKσςΣｆＦ柏林%_\\ "
"""Letters that fold into ASCII (İ, the Kelvin sign), ASCII ones they fold into, letters that
fold beyond ASCII, a final sigma, LIKE's wildcards and escape, spaces."""


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    contents=st.lists(
        st.text(TRICKY, min_size=1, max_size=12).filter(str.strip), min_size=1, max_size=4
    ),
    query=st.text(TRICKY, min_size=1, max_size=6).filter(lambda q: q.split() != []),
)
def test_notes_search_finds_the_notes_holding_every_folded_token(
    store: Store, contents: list[str], query: str
) -> None:
    with store.begin() as mem:
        for text in contents:
            mem.notes.add(text)
    tokens = [fold_case(t) for t in query.split()]
    with store.begin(write=False) as mem:
        every = mem.notes.list(limit=10_000)
        expected = {n.id for n in every if all(t in fold_case(n.content) for t in tokens)}
        assert {n.id for n in mem.notes.search(query, limit=10_000)} == expected
