"""Keyword search finds messages, notes and skills from natural text, safely and with filters."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert
from sqlalchemy.orm import Session, sessionmaker

from philont import migrate
from philont.db import fts
from philont.db.engine import create_engine
from philont.db.models import Note, RawMessage
from philont.domain.kinds import Role, SkillKind
from philont.domain.maturity import Grade
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.services.search import SearchService
from philont.testing import factories as f
from tests.support import joined

T0 = datetime(2026, 2, 1, 12, 0, tzinfo=UTC)


def message(
    session: Session,
    content: str,
    *,
    session_id: str | None = None,
    role: Role = Role.USER,
    at: datetime | None = None,
) -> RawMessage:
    """One message in its own session unless one is named (so no conversation context)."""
    with f.bound(session):
        sid = session_id or f.RawSessionFactory().id
        if session_id is not None and session.get(f.m.RawSession, session_id) is None:
            f.RawSessionFactory(id=session_id)
        kwargs: dict[str, Any] = {"session_id": sid, "role": role, "content": content}
        if at is not None:
            kwargs["timestamp"] = at
        msg: RawMessage = f.RawMessageFactory(**kwargs)
    return msg


def ids(hits: list[Any]) -> list[Any]:
    return [h.id for h in hits]


@pytest.fixture
def search(session: Session) -> SearchService:
    return SearchService(joined(session))


@pytest.fixture
def seeded(session: Session) -> None:
    with f.bound(session):
        for text in ("下个月我要出差去柏林", "the deposit is 50% of the rent", "AND NEAR co-op"):
            f.RawMessageFactory(content=text)
            f.NoteFactory(content=text)
            f.SkillFactory(description=text)


@pytest.fixture
def noise(session: Session) -> list[RawMessage]:
    return [
        message(session, text)
        for text in (
            "Remind me to water the plants tomorrow morning.",
            "The weather in Lisbon is lovely this week.",
            "Can you convert this markdown file to a Word document?",
            "I booked the dentist for Thursday at nine.",
            "Let's try the new ramen place on Friday.",
        )
    ]


# --- natural text ----------------------------------------------------------------------------


def test_a_natural_question_with_punctuation_finds_its_message(
    session: Session, search: SearchService, noise: list[RawMessage]
) -> None:
    target = message(
        session, "We decided the Berlin apartment is too expensive, so we keep looking."
    )
    hits = search.messages("What did we decide about the Berlin apartment?")
    assert ids(hits)[0] == target.id


@pytest.mark.parametrize(
    ("query", "content"),
    [
        ("rust-lang", "I'm learning rust-lang this winter."),
        ("v1.2.3", "Release v1.2.3 shipped on Monday."),
        ("me@x.com", "Write to me@x.com for the invoice."),
        ("Kaution?", "Die Kaution beträgt drei Monatsmieten."),
        ("co-op", "The co-op on the corner sells good bread."),
    ],
)
def test_text_that_is_fts5_syntax_is_searched_as_words(
    session: Session, search: SearchService, noise: list[RawMessage], query: str, content: str
) -> None:
    target = message(session, content)
    assert ids(search.messages(query))[0] == target.id


@pytest.mark.parametrize(
    "query", ["C++", "AND", "NEAR(", "role:user", '"', "*", "^x", "-x", "a:b", "{content}"]
)
def test_operator_like_queries_raise_no_error(
    search: SearchService, noise: list[RawMessage], query: str
) -> None:
    for run in (search.messages, search.notes, search.skills):
        assert isinstance(run(query), list)


@pytest.mark.parametrize(
    ("word", "content"),
    [
        ("柏林", "下个月我要出差去柏林"),  # at the very end of the message
        ("寿司", "周末一起去吃寿司吧！"),  # inside the message
        ("检索", "检索"),  # the whole message
    ],
)
def test_two_character_chinese_words_are_found(
    session: Session, search: SearchService, noise: list[RawMessage], word: str, content: str
) -> None:
    message(session, "今天天气不错，我们去公园散步。")
    target = message(session, content)
    assert ids(search.messages(word))[0] == target.id
    assert ids(search.messages(f"上次说的{word}是什么？"))[0] == target.id


def test_a_message_found_only_by_the_words_before_it_in_its_session(
    session: Session, search: SearchService, noise: list[RawMessage]
) -> None:
    question = message(session, "Which bakery did you like best in Porto?", session_id="trip")
    answer = message(
        session, "Definitely the one by the river, the pastries were amazing.", session_id="trip"
    )
    found = ids(search.messages("Porto bakery"))
    assert found[:2] == [question.id, answer.id]


def test_conversation_context_can_be_turned_off(session: Session, noise: list[RawMessage]) -> None:
    question = message(session, "Which bakery did you like best in Porto?", session_id="trip")
    message(
        session, "Definitely the one by the river, the pastries were amazing.", session_id="trip"
    )
    plain = SearchService(joined(session), context_weights=())
    assert ids(plain.messages("Porto bakery")) == [question.id]


# --- what is never matched -------------------------------------------------------------------


def test_the_role_column_is_never_searched(session: Session, search: SearchService) -> None:
    for i in range(6):
        message(session, f"plain message number {i}", role=Role.USER)
    target = message(session, "the user prefers green tea", role=Role.ASSISTANT)
    assert ids(search.messages("user")) == [target.id]
    assert search.messages("assistant") == []


@pytest.mark.parametrize("query", ["%", "_", "%%", "_%_"])
def test_like_wildcards_never_match_everything(
    session: Session, search: SearchService, noise: list[RawMessage], query: str
) -> None:
    with f.bound(session):
        f.NoteFactory.create_batch(3)
        f.SkillFactory.create_batch(3)
    assert search.messages(query) == []
    assert search.notes(query) == []
    assert search.skills(query) == []


def test_chinese_note_search_treats_wildcard_characters_literally(
    session: Session, search: SearchService
) -> None:
    with f.bound(session):
        target = f.NoteFactory(content="完成率已经到了百分之百")
        f.NoteFactory(content="完成的任务很多")
    assert ids(search.notes("完成率"))[0] == target.id


# --- bad input -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    ["", "   ", "?!.,", "？！。", "AND OR NOT NEAR", "x" * 100_000, "\udcff\udcfe", "\x00"],
    ids=["empty", "blank", "punct", "fullwidth", "operators", "100kB", "surrogates", "nul"],
)
def test_bad_input_gives_an_empty_result(
    session: Session, search: SearchService, noise: list[RawMessage], query: str
) -> None:
    with f.bound(session):
        f.NoteFactory()
        f.SkillFactory()
    assert search.messages(query) == []
    assert search.notes(query) == []
    assert search.skills(query) == []


def test_a_100_kb_question_is_searched_by_its_first_words(
    session: Session, search: SearchService, noise: list[RawMessage]
) -> None:
    target = message(session, "The Berlin apartment has a balcony.")
    assert ids(search.messages("Berlin apartment? " + "blah " * 20_000))[0] == target.id


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(
            st.text(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=10),
            st.sampled_from(["AND", "NEAR(", '"', "*", "-", ":", "%", "_", "柏林", "\x00"]),
        ),
        max_size=12,
    ).map(" ".join)
)
def test_any_text_searches_every_kind_of_record_without_error(
    session: Session, search: SearchService, seeded: None, text: str
) -> None:
    for hits in (search.messages(text), search.notes(text), search.skills(text)):
        assert all(h.score > 0 for h in hits)


@pytest.mark.parametrize(
    "call",
    [
        lambda s: s.messages("x", limit=0),
        lambda s: s.messages("x", roles=["boss"]),
        lambda s: s.messages("x", session_ids="global"),
        lambda s: s.messages(None),
        lambda s: s.notes("x", limit=-1),
        lambda s: s.skills("x", kind="neutral"),
    ],
)
def test_invalid_arguments_raise_a_typed_error(
    search: SearchService, call: Callable[[SearchService], Any]
) -> None:
    with pytest.raises(InvalidInputError):
        call(search)


# --- filters ---------------------------------------------------------------------------------


def test_the_time_window_is_inclusive(session: Session, search: SearchService) -> None:
    msgs = [message(session, "deposit paid", at=T0 + timedelta(hours=h)) for h in range(3)]
    window = search.messages(
        "deposit", since=T0 + timedelta(hours=1), until=T0 + timedelta(hours=1)
    )
    assert ids(window) == [msgs[1].id]
    both = search.messages("deposit", since=T0, until=T0 + timedelta(hours=1))
    assert set(ids(both)) == {msgs[0].id, msgs[1].id}
    assert set(ids(search.messages("deposit", since=T0 + timedelta(hours=2)))) == {msgs[2].id}


def test_a_reversed_time_window_is_refused(search: SearchService) -> None:
    with pytest.raises(InvalidTimeRangeError):
        search.messages("deposit", since=T0, until=T0 - timedelta(seconds=1))


def test_session_ids_restrict_the_search(session: Session, search: SearchService) -> None:
    a = message(session, "deposit paid", session_id="a")
    message(session, "deposit paid", session_id="b")
    assert ids(search.messages("deposit", session_ids=["a"])) == [a.id]
    assert len(search.messages("deposit", session_ids=[])) == 2


def test_roles_restrict_the_search(session: Session, search: SearchService) -> None:
    message(session, "deposit paid", role=Role.USER)
    bot = message(session, "deposit paid", role=Role.ASSISTANT)
    assert ids(search.messages("deposit", roles=[Role.ASSISTANT])) == [bot.id]
    assert ids(search.messages("deposit", roles=["assistant"])) == [bot.id]


def test_excluded_ids_are_not_returned(session: Session, search: SearchService) -> None:
    a = message(session, "deposit paid")
    b = message(session, "deposit paid again")
    assert ids(search.messages("deposit", exclude_ids={a.id})) == [b.id]


def test_forgotten_notes_are_left_out_unless_asked_for(
    session: Session, search: SearchService
) -> None:
    with f.bound(session):
        kept = f.NoteFactory(content="the Kaution goes to a separate account")
        gone = f.NoteFactory(content="the Kaution was three months of rent", forgotten=True)
    assert ids(search.notes("Kaution")) == [kept.id]
    assert set(ids(search.notes("Kaution", include_forgotten=True))) == {kept.id, gone.id}


def test_importance_breaks_ties_between_equally_relevant_notes(
    session: Session, search: SearchService
) -> None:
    with f.bound(session):
        low = f.NoteFactory(content="likes oolong tea", importance=0.1)
        high = f.NoteFactory(content="likes oolong tea", importance=0.9)
    assert ids(search.notes("oolong")) == [high.id, low.id]


def test_notes_are_found_by_chinese_words(session: Session, search: SearchService) -> None:
    with f.bound(session):
        target = f.NoteFactory(content="公寓押金存入 Kautionskonto")
        f.NoteFactory(content="下周去柏林")
    assert ids(search.notes("押金是多少？")) == [target.id]


def test_a_term_in_thousands_of_notes_still_gives_the_best_few(
    session: Session, search: SearchService
) -> None:
    session.execute(
        insert(Note),
        [
            {"id": f"n{i}", "content": f"柏林公寓 {i}", "importance": 0.5, "created_at": T0}
            for i in range(2_500)
        ],
    )
    with f.bound(session):
        top = f.NoteFactory(content="柏林公寓", importance=1.0)
    hits = search.notes("柏林", limit=3)
    assert len(hits) == 3
    assert hits[0].id == top.id


def test_deprecated_skills_are_left_out_unless_asked_for(
    session: Session, search: SearchService
) -> None:
    with f.bound(session):
        ok = f.SkillFactory(name="pdf-merge", description="merge pdf files")
        old = f.SkillFactory(name="pdf-split", description="split pdf files", deprecated=True)
    assert ids(search.skills("pdf")) == [ok.id]
    assert set(ids(search.skills("pdf", include_deprecated=True))) == {ok.id, old.id}


def test_the_kind_filter_keeps_one_kind(session: Session, search: SearchService) -> None:
    with f.bound(session):
        good = f.SkillFactory(name="backup-db", description="back up the database")
        bad = f.SkillFactory(name="no-rm-rf", description="never delete the backup", negative=True)
    assert ids(search.skills("backup", kind=SkillKind.NEGATIVE)) == [bad.id]
    assert ids(search.skills("backup", kind="positive")) == [good.id]


def test_callable_only_leaves_out_playbooks(session: Session, search: SearchService) -> None:
    with f.bound(session):
        usable = f.SkillFactory(name="weather-lookup", description="look up the weather")
        f.SkillFactory(name="weather-lesson", description="weather lessons", playbook=True)
    hits = search.skills("weather", callable_only=True)
    assert ids(hits) == [usable.id]
    assert hits[0].maturity is Grade.DRAFT


def test_a_skill_name_match_outranks_a_description_match(
    session: Session, search: SearchService
) -> None:
    with f.bound(session):
        by_description = f.SkillFactory(
            name="doc-tool", description="merge invoices", trigger_keywords=["files"]
        )
        by_name = f.SkillFactory(
            name="invoices", description="collect documents", trigger_keywords=["files"]
        )
    assert ids(search.skills("invoices")) == [by_name.id, by_description.id]


def test_hits_carry_the_record_and_a_positive_score(
    session: Session, search: SearchService
) -> None:
    target = message(session, "deposit paid", role=Role.ASSISTANT, at=T0)
    [hit] = search.messages("deposit")
    assert (hit.id, hit.content, hit.role, hit.timestamp) == (
        target.id,
        "deposit paid",
        Role.ASSISTANT,
        T0,
    )
    assert hit.session_id == target.session_id
    assert hit.score > 0


# --- schema ----------------------------------------------------------------------------------


def test_the_revision_holds_the_same_search_sql_as_the_models() -> None:
    script = migrate.script_directory()
    v033 = script.get_revision("v033").module
    v040 = script.get_revision("v040").module  # the message index's triggers since
    assert fts.RAW_MESSAGES_WORDS_FTS.create == v033.RAW_MESSAGES_WORDS_FTS_CREATE
    assert fts.RAW_MESSAGES_WORDS_FTS.triggers == v040.RAW_MESSAGES_WORDS_FTS_TRIGGERS
    assert fts.NOTES_WORDS_FTS.create == v033.NOTES_WORDS_FTS_CREATE
    assert fts.NOTES_WORDS_FTS.triggers == v033.NOTES_WORDS_FTS_TRIGGERS
    assert fts.SKILLS_WORDS_FTS.create == v033.SKILLS_WORDS_FTS_CREATE
    assert fts.SKILLS_WORDS_FTS.triggers == v033.SKILLS_WORDS_FTS_TRIGGERS
    assert tuple(v.create for v in fts.VOCAB_TABLES) == v033.VOCAB_CREATES


def _word_index_rows(session: Session, match: str) -> list[int]:
    sql = (
        "SELECT rowid FROM philont_raw_messages_words_fts"
        " WHERE philont_raw_messages_words_fts MATCH ?"
    )
    return [r[0] for r in session.connection().exec_driver_sql(sql, (match,))]


def test_updating_and_deleting_keeps_the_word_index_in_step(
    session: Session, search: SearchService
) -> None:
    msg = message(session, "the old flat")
    msg.content = "the new balcony"
    session.flush()
    assert _word_index_rows(session, 'content : "flat"') == []
    assert _word_index_rows(session, 'tail : "ny"') == [msg.id]
    assert ids(search.messages("balcony")) == [msg.id]
    with f.bound(session):
        note = f.NoteFactory(content="the old flat")
    note.content = "the new balcony"
    session.flush()
    assert search.notes("flat") == []
    assert ids(search.notes("balcony")) == [note.id]
    # (Deleting an edited message would trip Philont's own trigram index, which has no update
    # trigger because its messages are append-only; so a fresh message is deleted here.)
    fresh = message(session, "a sunny balcony")
    session.delete(fresh)
    session.delete(note)
    session.flush()
    assert _word_index_rows(session, 'content : "sunny"') == []
    assert search.notes("balcony") == []


# --- a real Philont database -----------------------------------------------------------------

NOT_SENSIBLE = {"WAL"}  # the original's trigram matched "walk"/"walking": substrings, not words


@pytest.fixture
def upgraded_v31(copy_fixture: Callable[[str], Path], philont_fixtures: Path) -> Any:
    path = copy_fixture("v31")
    migrate.upgrade(path)
    manifest = json.loads((philont_fixtures / "v31.manifest.json").read_text(encoding="utf-8"))
    engine = create_engine(path)
    with sessionmaker(bind=engine, expire_on_commit=False)() as s, s.begin():
        yield s, manifest["expected_api_results"]["results"]
    engine.dispose()


def test_an_adopted_database_finds_what_the_original_found_by_fts_and_more(
    upgraded_v31: Any,
) -> None:
    session, results = upgraded_v31
    search = SearchService(joined(session))
    checked = 0
    for r in results:
        if r["api"] != "RawStore.searchMessages" or len(r["args"]) != 1:
            continue
        query = r["args"][0]
        if r.get("path", {}).get("path") != "fts" or query in NOT_SENSIBLE:
            continue
        found = set(ids(search.messages(query, limit=20)))
        assert set(r["result"]) <= found, query
        checked += 1
    assert checked >= 10


def test_an_adopted_database_answers_the_queries_the_original_failed(upgraded_v31: Any) -> None:
    session, results = upgraded_v31
    search = SearchService(joined(session))
    kaution = ids(search.messages("Kaution?", limit=20))
    assert {21, 22, 4} <= set(kaution)  # Kaution and Mietkaution
    assert set(ids(search.messages("co-op", limit=2))) == {101, 102}
    original_like = next(
        r["result"]
        for r in results
        if r["api"] == "RawStore.searchMessages" and r["args"] == ["柏林"]
    )
    assert set(original_like) <= set(ids(search.messages("柏林", limit=20)))
    decided = ids(search.messages("What did we decide about the Berlin apartment?", limit=10))
    assert {200, 163} <= set(decided)


def test_an_adopted_database_finds_its_notes_and_skills(upgraded_v31: Any) -> None:
    session, results = upgraded_v31
    search = SearchService(joined(session))
    for r in results:
        if r["api"] == "NotesStore.search" and isinstance(r["result"], list):
            found = ids(search.notes(r["args"][0], limit=10, include_forgotten=True))
            assert set(r["result"]) <= set(found), r["args"]
        if r["api"] == "SkillStore.search" and isinstance(r["result"], list):
            names = [h.name for h in search.skills(r["args"][0], limit=10)]
            assert set(r["result"]) <= set(names), r["args"]
    assert ids(search.notes("Kaution?"))  # the original raised an FTS5 syntax error here
