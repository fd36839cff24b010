"""Text stored in decomposed Unicode (NFD, as macOS writes file names and some input methods
type) is found by its words, on both backends: messages, notes and skills. The query is read
composed (NFC) and the indexes hold text as it was stored (the timeline is append-only), so a
word whose decomposed form differs is searched in both spellings, as one word
(``SearchPlan.spellings``). Before, PostgreSQL missed decomposed Latin (its index holds
``e`` + U+0301, not ``é``) and both backends missed decomposed Hangul (jamo) and kana with
voicing marks.

Every entry point where query text becomes a search term answers alike whichever normal form
the stored text and the query use (:data:`ENTRY_POINTS`): the ranked searches, the substring
search ``mem.notes.search`` (it looked for the query's spelling only), the model's tools, the
retriever and the recall trigger (which kept a stored copy of the triggering message in the
other form among its answers: it compared the two as code points)."""

from __future__ import annotations

import itertools
import unicodedata
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont import Memory, tools
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


def examples(n: int) -> settings:
    """Hypothesis settings for ``n`` examples sharing one store (each writes records)."""
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


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


@examples(60)
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


# --- every entry point -------------------------------------------------------------------------

Form = Literal["NFC", "NFD"]
Found = Callable[[Store, str], set[object]]
"""The ids an entry point finds for a query."""


def _read(search: Callable[[Memory, str], list[object]]) -> Found:
    def found(store: Store, query: str) -> set[object]:
        with store.begin(write=False) as mem:
            return {getattr(h, "id") for h in search(mem, query)}  # noqa: B009

    return found


def _tool(name: str) -> Found:
    def found(store: Store, query: str) -> set[object]:
        result = tools.call(name, {"query": query, "limit": 1_000}, db=store)
        assert result.ok, result
        return {d["id"] for d in result.data or ()}

    return found


def _recalled(store: Store, query: str) -> set[object]:
    """The messages the retriever recalls for a turn whose user message is ``query``."""
    with store.begin(write=False) as mem:
        window = mem.retriever.retrieve(
            query, recent_budget_tokens=0, recall_budget_tokens=10**6, recall_candidates=1_000
        )
    return {m.message_id for m in window.messages if m.section == "recall"}


RECALL = "do you remember when we talked about {}?"
"""A message the recall trigger takes as a reference to an earlier conversation."""

ENTRY_POINTS: dict[str, tuple[str, Found]] = {
    "search.messages": ("message", _read(lambda m, q: m.search.messages(q, limit=1_000))),
    "search.notes": ("note", _read(lambda m, q: m.search.notes(q, limit=1_000))),
    "search.skills": ("skill", _read(lambda m, q: m.search.skills(q, limit=1_000))),
    "notes.search": ("note", _read(lambda m, q: m.notes.search(q, limit=1_000))),
    "recall_sessions": ("message", _tool("recall_sessions")),
    "search_notes": ("note", _tool("search_notes")),
    "search_skills": ("skill", _tool("search_skills")),
    "recall_trigger": (
        "message",
        _read(lambda m, q: m.recall_trigger.recall(RECALL.format(q), limit=1_000)),
    ),
    "retriever": ("message", _recalled),
}
"""Each entry point: the kind of record it finds and how it is asked."""


def stored(store: Store, text: str) -> dict[str, object]:
    """The ids of a new message, note and skill holding ``text``."""
    with store.begin() as mem:  # a session of its own: no neighbour lends it a score
        message = mem.timeline.append(text, session_id=mem.timeline.start_session().id)
        note = mem.notes.add(text)
        skill = mem.skills.create(next(_names), text, "zz", "do it")
    return {"message": message.id, "note": note.id, "skill": skill.id}


def found_by(store: Store, written: str, *queries: str) -> list[dict[str, bool]]:
    """For each query, whether each entry point finds a new record holding ``written``."""
    ids = stored(store, written)
    return [
        {name: ids[kind] in find(store, query) for name, (kind, find) in ENTRY_POINTS.items()}
        for query in queries
    ]


def _composed_length(word: str) -> int:
    return len(unicodedata.normalize("NFC", word))


@st.composite
def compounds(draw: st.DrawFn) -> tuple[str, str]:
    """A word of three or more characters (composed) and a longer word holding it."""
    plain, marked = SCRIPTS[draw(st.sampled_from(sorted(SCRIPTS)))]
    letters = st.text(plain + marked, min_size=1, max_size=3)
    word = draw(words().filter(lambda w: _composed_length(w) >= 3))
    return word, draw(letters) + word + draw(letters)


@examples(40)
@given(
    word=words().filter(lambda w: _composed_length(w) >= 2),  # the trigger skips lone letters
    written=st.sampled_from(FORMS),
    asked=st.sampled_from(FORMS),
)
def test_every_entry_point_finds_a_word_in_either_normal_form(
    store: Store, word: str, written: Form, asked: Form
) -> None:
    text = f"zz {unicodedata.normalize(written, word)} zz"
    query = unicodedata.normalize(asked, word)
    assert found_by(store, text, query) == [dict.fromkeys(ENTRY_POINTS, True)]


@examples(30)
@given(pair=compounds(), written=st.sampled_from(FORMS), asked=st.sampled_from(FORMS))
def test_a_piece_of_a_word_is_found_whatever_either_normal_form(
    store: Store, pair: tuple[str, str], written: Form, asked: Form
) -> None:
    """The substring paths (SQLite's trigram index, PostgreSQL's pg_trgm, LIKE): the form the
    piece is asked in never changes what is found (as asked in the stored form)."""
    word, compound = pair
    text = f"zz {unicodedata.normalize(written, compound)} zz"
    same, other = found_by(
        store, text, unicodedata.normalize(written, word), unicodedata.normalize(asked, word)
    )
    assert other == same
    assert same["notes.search"], same  # a substring search finds every piece


@pytest.mark.parametrize("written", FORMS)
def test_the_recall_trigger_leaves_out_its_message_stored_in_the_other_form(
    store: Store, written: Form
) -> None:
    message = RECALL.format("the école in Huế")
    asked = unicodedata.normalize("NFD" if written == "NFC" else "NFC", message)
    ids = stored(store, unicodedata.normalize(written, message))
    with store.begin(write=False) as mem:
        hits = mem.recall_trigger.recall(asked, limit=10)
    assert ids["message"] not in {h.id for h in hits}


def test_compatibility_forms_are_not_conflated(store: Store) -> None:
    """Only canonical equivalence: ``ﬃ`` (U+FB03), ``²`` and ``ｆｏｏ`` are other text than
    ``ffi``, ``2`` and ``foo`` (NFKC would join them), on every path; each finds itself."""
    written = "zz oﬃce x² ｆｏｏ zz"
    for query, expected in (("office", False), ("x2", False), ("foo", False), ("oﬃce", True)):
        assert found_by(store, written, query) == [dict.fromkeys(ENTRY_POINTS, expected)]


@pytest.mark.parametrize("wildcard", ["%", "_", "\\"])
@pytest.mark.parametrize("asked", FORMS)
def test_every_spelling_of_a_substring_is_escaped(store: Store, wildcard: str, asked: Form) -> None:
    """``mem.notes.search`` escapes each spelling it looks for: a LIKE wildcard typed next to
    an accent is a literal character in the composed and the decomposed pattern alike."""
    held = stored(store, unicodedata.normalize(asked, f"zz é{wildcard}x zz"))["note"]
    other = stored(store, unicodedata.normalize(asked, "zz éyx zz"))["note"]
    query = unicodedata.normalize("NFD" if asked == "NFC" else "NFC", f"é{wildcard}")
    with store.begin(write=False) as mem:
        assert [n.id for n in mem.notes.search(query)] == [held], other


ABOVE_BELOW = (
    ("\u0302", "\u0323"),
    ("\u0301", "\u0323"),
    ("\u0308", "\u0327"),
    ("\u0306", "\u0330"),
)
"""Pairs of marks, one above (class 230) and one below (220 or 202): written above-first, a
letter and its marks spell their text in neither normal form (``e`` + U+0302 + U+0323 for
``ệ``), as some input methods type it."""


@st.composite
def unordered_words(draw: st.DrawFn) -> tuple[str, str]:
    """(a word in neither normal form, the same word composed)."""
    letters = draw(st.lists(st.sampled_from("aeiouy"), min_size=1, max_size=3))
    n = len(letters)
    marks = draw(st.lists(st.sampled_from(ABOVE_BELOW), min_size=n, max_size=n))
    pairs = zip(letters, marks, strict=True)
    written = "zq" + "".join(c + above + below for c, (above, below) in pairs)
    assert not unicodedata.is_normalized("NFC", written)
    assert not unicodedata.is_normalized("NFD", written)
    return written, unicodedata.normalize("NFC", written)


@examples(30)
@given(word=unordered_words(), asked=st.sampled_from(FORMS))
def test_a_word_stored_in_neither_normal_form_is_found_by_its_words(
    store: Store, word: tuple[str, str], asked: Literal["NFC", "NFD"]
) -> None:
    """The ranked searches find a word stored in neither normal form (marks out of their
    classes' order) by its composed or decomposed spelling: PostgreSQL's word index holds the
    words of the text composed (revision v039), SQLite's drops Latin accents. Before,
    PostgreSQL missed it (its index held the marks as written)."""
    written, composed = word
    query = unicodedata.normalize(asked, composed)
    assert found(store, written, query) == dict.fromkeys(("messages", "notes", "skills"), True)


@pytest.mark.parametrize("text", ["planning the café trip to Việt Nam", "한국어 planning notes"])
def test_a_text_scores_alike_in_either_normal_form(store: Store, text: str) -> None:
    """bm25's length of a document is that of its composed text on both backends, as SQLite's
    tokenizer reads a letter and its marks as one token: a note written decomposed (as macOS
    types) ranked below the same note composed on PostgreSQL, which split its words at the
    marks."""
    with store.begin() as mem:
        composed = mem.notes.add(unicodedata.normalize("NFC", text)).id
        decomposed = mem.notes.add(unicodedata.normalize("NFD", text)).id
        for n in range(4):  # notes without the word, for a telling idf
            mem.notes.add(f"filler {n} zz")
    with store.begin(write=False) as mem:
        score = {h.id: h.score for h in mem.search.notes("planning", limit=10)}
    assert score[composed] == pytest.approx(score[decomposed], rel=1e-9), score
