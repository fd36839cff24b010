"""A short CJK term (one or two characters) is found wherever it stands in a message, as by a
plain substring test, on every backend: at the start, in the middle, in the last two positions,
before punctuation or ASCII, and in messages of one to a few characters.

SQLite finds such a term through two indexes: the trigrams of Philont's index that start with it
(every position but the last two) and the ``tail`` column of our word index (the last two
positions). A tail held as one token (``只猫``) missed a single character at either of the last
two positions."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from itertools import count
from pathlib import Path

import pytest
from sqlalchemy.orm import Session

from philont import Store, migrate
from philont.db import fts
from philont.domain.query import _is_cjk, build_plan
from philont.services.search import SearchService
from philont.testing import factories as f
from tests.migrations.test_revision_shapes import upgrade
from tests.support import joined

BOTH_BACKENDS = True

TRAILERS = ("", "。", "！", "a", "7", " ok", "?x")
"""What follows the CJK run: nothing, CJK or ASCII punctuation, an ASCII letter or digit, a
word after a space, punctuation and a letter."""

MAX_RUN = 5
"""Longest CJK run of the sweep (the term and the filler characters around it)."""


FILLERS = "山川田木水"
"""The characters around a term (never searched for)."""


def _searched_as(term: str) -> bool:
    """Whether a query of ``term`` looks for ``term`` itself, as one short CJK term."""
    plan = build_plan(term)
    return plan is not None and plan.like_terms == (term,)


def _cases() -> list[tuple[str, str]]:
    """(message, term): every length (1 and 2) of term at every position of a CJK run of 1 to
    MAX_RUN characters, followed by every trailer. Every term character is used once only, and
    the filler characters are never searched for, so each term is in one message only."""
    chars = (chr(c) for c in count(0x4E00))
    # Only characters a query keeps as themselves (not a stop character: 个, 之, 他, ...).
    usable = (c for c in chars if _searched_as(c) and c not in FILLERS)
    out: list[tuple[str, str]] = []
    for trailer in TRAILERS:
        for length in (1, 2):
            for run in range(length, MAX_RUN + 1):
                for at in range(run - length + 1):
                    term = "".join(next(usable) for _ in range(length))
                    while not _searched_as(term):
                        term = "".join(next(usable) for _ in range(length))
                    before = FILLERS[:at]
                    after = FILLERS[at : run - length]
                    out.append((before + term + after + trailer, term))
    return out


CASES = _cases()


def test_a_short_cjk_term_is_found_at_every_position(session: Session) -> None:
    assert len({t for _m, t in CASES}) == len(CASES)
    with f.bound(session):
        # Each in a session of its own: no message lends another context.
        stored = [
            (f.RawMessageFactory(session_id=f.RawSessionFactory().id, content=text), text, term)
            for text, term in CASES
        ]
    search = SearchService(joined(session))
    missed = []
    for msg, text, term in stored:
        expected = [m.id for m, other, _t in stored if term in other]
        assert expected == [msg.id]
        if [h.id for h in search.messages(term, limit=5)] != expected:
            missed.append((text, term, text.index(term), len(text)))
    assert missed == [], f"{len(missed)} of {len(CASES)} missed: {missed}"


def _terms(path: Path) -> set[str]:
    """Every term our message word index holds."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "CREATE VIRTUAL TABLE temp.words USING"
            " fts5vocab(main, philont_raw_messages_words_fts, row)"
        )
        return {str(t) for (t,) in conn.execute("SELECT term FROM temp.words")}


def test_the_upgrade_indexes_the_messages_of_an_older_file_again(
    backend: str, tmp_path: Path
) -> None:
    """Revision v040 indexes again the messages of a v039 file (whose tails were one token),
    and its triggers delete a message with the values it was indexed with."""
    if backend != "sqlite":
        pytest.skip("SQLite's own word index")
    path = tmp_path / "old.sqlite"
    upgrade(path, "v039")
    with closing(sqlite3.connect(path)) as conn, conn:
        for i, (text, _term) in enumerate(CASES, start=1):
            conn.execute("INSERT INTO memory_raw_sessions (id, started_at) VALUES (?, 0)", (i,))
            conn.execute(
                "INSERT INTO memory_raw_messages (id, session_id, role, content, timestamp)"
                " VALUES (?, ?, 'user', ?, ?)",
                (i, str(i), text, i),
            )
    assert "丁" not in _terms(path)  # 丁山 was one token

    assert migrate.upgrade(path, backup=False).applied == ["v040"]
    with Store.open(path) as store, store.begin() as mem:
        for i, (text, term) in enumerate(CASES, start=1):
            assert [h.id for h in mem.search.messages(term, limit=5)] == [i], text
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("DELETE FROM memory_raw_messages WHERE content = '丁山'")
    assert "丁" not in _terms(path) and "丁山" not in _terms(path)  # deleted as indexed


def test_every_character_a_query_reads_as_cjk_gets_a_token_of_its_own_in_a_tail() -> None:
    cjk = [cp for cp in range(0x32000) if _is_cjk(cp)]
    assert cjk and all(any(lo <= cp <= hi for lo, hi in fts.TAIL_CJK_RANGES) for cp in cjk)


def test_a_tail_without_cjk_is_the_last_two_characters_alone() -> None:
    """So bm25 reads as many tokens in such a message as before revision v040 (its ranking of
    word matches is unchanged); PostgreSQL's scorer counts the tokens of the same text."""
    texts = ["balcony", "x", "", "a.", "naïve", "emoji 😀!", "’s", "只猫", "猫a", "b猫", "가나"]
    texts += ["猫", "一只猫", "猫。", "。猫", "\U00020001", "ｦa", "ᄀ"]
    with closing(sqlite3.connect(":memory:")) as conn:
        parts = "substr(?1, -2), substr(?1, -2, 1), substr(?1, -1)"
        sql = f"SELECT {fts.raw_messages_tail('?1')}, {parts}"
        for text in texts:
            tail, last_two, second, last = conn.execute(sql, (text,)).fetchone()
            has_cjk = any(_is_cjk(ord(c)) for c in last_two)
            assert tail == (f"{last_two} {second} {last}" if has_cjk else last_two), text
            assert fts.raw_messages_tail_text(text) == tail, text


ENDS = ["", " ", "\n", "猫", "只猫", "猫a", "a猫", "😀", "猫😀", "𠀀", "𠀀𠀁", "\u0301", "猫\u0301"]
ENDS += [
    "e\u0301",
    "\u3099",
    "ｦ",
    "ᄀ",
    "\U0003134f",
    "]",
    "-",
    "^",
    "*",
    "\x00",
    "猫\x00",
    "\x00猫",
]
"""Last characters of a message: CJK or not, astral, combining marks, whitespace, GLOB's
special characters, NUL, and the empty text."""


def test_the_triggers_delete_exactly_what_they_indexed(backend: str, tmp_path: Path) -> None:
    """Every message inserted, updated to another ending and deleted: the contentless index is
    left empty and consistent (a 'delete' given other tokens than the insert would leave them)."""
    if backend != "sqlite":
        pytest.skip("SQLite's own word index")
    path = tmp_path / "ends.sqlite"
    upgrade(path, migrate.head_revision())
    texts = [f"x{a}{b}" for a in ENDS for b in ENDS] + ENDS
    with closing(sqlite3.connect(path)) as conn, conn:
        for i, text in enumerate(texts, start=1):
            conn.execute("INSERT INTO memory_raw_sessions (id, started_at) VALUES (?, 0)", (i,))
            conn.execute(
                "INSERT INTO memory_raw_messages (id, session_id, role, content, timestamp)"
                " VALUES (?, ?, 'user', ?, ?)",
                (i, str(i), text, i),
            )
    assert _terms(path)
    with closing(sqlite3.connect(path)) as conn, conn:
        for i, text in enumerate(reversed(texts), start=1):
            conn.execute("UPDATE memory_raw_messages SET content = ? WHERE id = ?", (text, i))
        conn.execute(
            "INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rank)"
            " VALUES('integrity-check', 1)"
        )
        conn.execute("DELETE FROM memory_raw_messages")
    assert _terms(path) == set()
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            "INSERT INTO philont_raw_messages_words_fts(philont_raw_messages_words_fts, rank)"
            " VALUES('integrity-check', 1)"
        )
        docs = conn.execute("SELECT count(*) FROM philont_raw_messages_words_fts_docsize")
        assert docs.fetchone() == (0,)
