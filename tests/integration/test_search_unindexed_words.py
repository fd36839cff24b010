"""A record is found by any word it holds on both backends, also by a word PostgreSQL's
``english`` configuration holds no lexeme of: one whose every part is a stop word (``AT&T``:
at, t) or a character its parser skips (``½``, ``③``). SQLite's word index holds those; the
PostgreSQL scorer used to drop them, so ``AT&T merger`` ranked by ``merger`` alone there."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from philont.domain.query import build_plan
from philont.services.search import SearchService
from philont.testing import factories as f
from tests.support import joined

BOTH_BACKENDS = True

_PARTS = ["at", "t", "a", "the", "of", "it", "to", "and", "on", "s", "don", "½", "¼", "²", "③"]
"""Stop words of PostgreSQL's ``english`` configuration, and numbers its parser skips."""

words = st.builds(
    lambda parts, joiner: joiner.join(parts),
    st.lists(st.sampled_from(_PARTS), min_size=1, max_size=3),
    st.sampled_from(["&", "+", ":"]),
)

_count = itertools.count()


@pytest.fixture
def search(session: Session) -> SearchService:
    return SearchService(joined(session))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(word=words, upper=st.booleans())
def test_a_record_is_found_by_a_word_of_stop_words_or_skipped_numbers(
    session: Session, search: SearchService, word: str, upper: bool
) -> None:
    plan = build_plan(word)
    assume(plan is not None and plan.words == (word,))
    n = next(_count)
    text = f"zulu{n} {word.upper() if upper else word} yankee"
    with f.bound(session):
        message = f.RawMessageFactory(content=text, session_id=f.RawSessionFactory().id)
        note = f.NoteFactory(content=text)
        skill = f.SkillFactory(name=f"skill-x{n}", description=text)
    assert message.id in [h.id for h in search.messages(word, limit=100)]
    assert note.id in [h.id for h in search.notes(word, limit=100)]
    assert skill.id in [h.id for h in search.skills(word, limit=100)]


@pytest.mark.parametrize("word", ["AT&T", "A&T"])
def test_a_word_of_stop_words_ranks_its_message_first(
    session: Session, search: SearchService, word: str
) -> None:
    with f.bound(session):
        wanted = f.RawMessageFactory(
            content=f"What did {word} say about the merger?", session_id=f.RawSessionFactory().id
        )
        f.RawMessageFactory(
            content="The merger was approved on Monday.", session_id=f.RawSessionFactory().id
        )
    assert [h.id for h in search.messages(f"{word} merger", limit=1)] == [wanted.id]
