"""Text stored in decomposed Unicode (NFD, as macOS writes file names and some input methods
type) is found by its words, on both backends: messages, notes and skills. The query is read
composed (NFC) and the indexes hold text as it was stored (the timeline is append-only), so a
word whose decomposed form differs is searched in both spellings, as one word
(``SearchPlan.spellings``). Before, PostgreSQL missed decomposed Latin (its index holds
``e`` + U+0301, not ``é``) and both backends missed decomposed Hangul (jamo) and kana with
voicing marks."""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont.domain.query import build_plan
from philont.store import Store

BOTH_BACKENDS = True

HANGUL = "".join(chr(c) for c in range(0xAC00, 0xD7A4, 37))  # a spread of the 11,172 syllables
SCRIPTS = {
    "latin": ("qwrtzlmn", "àáâãäåçèéêëìíîïñòóôõöùúûüýÿőű"),
    "vietnamese": ("qvtnmh", "ạảấầẩẫậắằẳẵặẹẻẽếềểễệỉịọỏốồổỗộớờởỡợụủứừửữựỳỵỷỹ"),
    "hangul": ("", HANGUL),
    "kana": (
        "かきくさしたはひふカキクサシタハヒフ",
        "がぎぐざじだばびぶぱぴぷガギグザジダバビブパピプ",
    ),
    "devanagari": ("कखगचजतदनपमरलवसह", "ऩऱऴ"),
}
"""Per script, letters NFC and NFD spell alike and letters they spell apart, one of which each
word holds (so no word is a stop word)."""
assert all(unicodedata.is_normalized("NFD", p) for p, _m in SCRIPTS.values())
assert not any(unicodedata.is_normalized("NFD", c) for _p, m in SCRIPTS.values() for c in m)

FORMS: tuple[Literal["NFC", "NFD"], ...] = ("NFC", "NFD")
_names = (f"decomposed-{n}" for n in itertools.count())


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    with Store.open(target) as s:
        yield s


@st.composite
def words(draw: st.DrawFn) -> str:
    plain, marked = SCRIPTS[draw(st.sampled_from(sorted(SCRIPTS)))]
    before = draw(st.text(plain, max_size=3)) if plain else ""
    after = draw(st.text(plain + marked, max_size=4))
    return before + draw(st.sampled_from(marked)) + after


def found(store: Store, written: str, query: str) -> dict[str, bool]:
    """Whether a new message, note and skill holding ``written`` are found by ``query``."""
    text = f"zz {written} zz"
    with store.begin() as mem:  # a session of its own: no neighbour lends it a score
        message = mem.timeline.append(text, session_id=mem.timeline.start_session().id)
        note = mem.notes.add(text)
        skill = mem.skills.create(next(_names), text, "zz", "do it")
    with store.begin(write=False) as mem:
        return {
            "messages": message.id in {h.id for h in mem.search.messages(query, limit=1_000)},
            "notes": note.id in {h.id for h in mem.search.notes(query, limit=1_000)},
            "skills": skill.id in {h.id for h in mem.search.skills(query, limit=1_000)},
        }


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(word=words(), stored=st.sampled_from(FORMS), asked=st.sampled_from(FORMS))
def test_a_word_stored_in_either_normal_form_is_found_by_either(
    store: Store, word: str, stored: Literal["NFC", "NFD"], asked: Literal["NFC", "NFD"]
) -> None:
    written = unicodedata.normalize(stored, word)
    query = unicodedata.normalize(asked, word)
    assert found(store, written, query) == dict.fromkeys(("messages", "notes", "skills"), True)


@pytest.mark.parametrize("word", ["école", "Việt", "한국어", "ガギグ", "ऩऱ"])
def test_the_reported_words(store: Store, word: str) -> None:
    for stored, asked in itertools.product(FORMS, FORMS):
        written = unicodedata.normalize(stored, word)
        query = unicodedata.normalize(asked, word) + " alpha"
        assert all(found(store, written, query).values()), (stored, asked)


def test_both_spellings_of_a_word_are_one_word(store: Store) -> None:
    """A message holding a word in both spellings matches that word once (in its score and in
    its session's coverage): it scores at most as a message holding the word twice in one
    spelling (SQLite's index reads both as one token: the same; PostgreSQL's holds two)."""
    decomposed = unicodedata.normalize("NFD", "école")
    texts = (f"école {decomposed} zz", "école école zz", "école zz qq", f"{decomposed} zz qq")
    with store.begin() as mem:
        ids = [  # a session each: no neighbour lends a score
            mem.timeline.append(text, session_id=mem.timeline.start_session().id).id
            for text in texts
        ]
        for n in range(6):  # messages that hold neither, for a telling idf
            mem.timeline.append(f"filler {n} zz")
    with store.begin(write=False) as mem:
        score = {h.id: h.score for h in mem.search.messages("école", limit=10)}
    both, twice = score[ids[0]], score[ids[1]]
    assert both < 1.1 * twice, score


def test_ascii_plans_hold_no_spellings() -> None:
    plan = build_plan("What did Dave buy at the café in Berlin?", forms=True)
    assert plan is not None
    assert [plan.words[i] for i in plan.spellings] == [unicodedata.normalize("NFD", "café")]
    ascii_plan = build_plan("What did Dave buy in Berlin?", forms=True)
    assert ascii_plan is not None and ascii_plan.spellings == ()
