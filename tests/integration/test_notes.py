"""NoteService on a real SQLite file: adding, upserting, listing, forgetting and safe search."""

from __future__ import annotations

import math
import uuid
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db.models import AccessLogEntry, Note
from philont.errors import ConflictError, InvalidInputError, NoteNotFoundError
from philont.services.notes import NoteService
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock


@pytest.fixture
def notes(session: Session, clock: FakeClock) -> NoteService:
    return NoteService(joined(session, clock))


def _rows(session: Session) -> tuple[int, int]:
    n_notes = session.scalar(select(func.count()).select_from(Note))
    n_access = session.scalar(select(func.count()).select_from(AccessLogEntry))
    return int(n_notes or 0), int(n_access or 0)


def test_adding_a_note_returns_it_with_defaults(notes: NoteService, clock: FakeClock) -> None:
    rec = notes.add("The user prefers tea over coffee")

    assert uuid.UUID(rec.id).version == 4
    assert (rec.content, rec.importance, rec.session_id) == (
        "The user prefers tea over coffee",
        0.5,
        None,
    )
    assert (rec.created_at, rec.last_accessed_at, rec.forgotten_at) == (clock.now, None, None)


def test_a_note_can_be_added_under_a_chosen_id_and_session(notes: NoteService) -> None:
    rec = notes.add("summary", importance=1, session_id="s1", id="session-summary-s1")

    assert (rec.id, rec.importance, rec.session_id) == ("session-summary-s1", 1.0, "s1")


def test_adding_an_existing_id_is_a_conflict_and_writes_nothing(
    notes: NoteService, session: Session
) -> None:
    notes.add("first", id="n1")
    before = _rows(session)

    with pytest.raises(ConflictError):
        notes.add("second", id="n1")

    assert _rows(session) == before
    assert (got := notes.get("n1")) is not None and got.content == "first"


BAD_NOTES: list[tuple[str, dict[str, Any]]] = [
    ("empty content", {"content": ""}),
    ("whitespace content", {"content": " \n\t "}),
    ("no content", {"content": None}),
    ("importance above 1", {"importance": 1.5}),
    ("importance below 0", {"importance": -0.1}),
    ("importance as text", {"importance": "high"}),
    ("importance NaN", {"importance": math.nan}),
    ("importance a bool", {"importance": True}),
    ("blank id", {"id": " "}),
    ("id with surrounding space", {"id": " n1"}),
    ("blank session", {"session_id": ""}),
]


@pytest.mark.parametrize("overrides", [c[1] for c in BAD_NOTES], ids=[c[0] for c in BAD_NOTES])
def test_refused_notes_raise_invalid_input_and_write_nothing(
    notes: NoteService, session: Session, overrides: dict[str, Any]
) -> None:
    before = _rows(session)
    args: dict[str, Any] = {"content": "a note", **overrides}

    with pytest.raises(InvalidInputError):
        notes.add(args.pop("content"), **args)

    assert _rows(session) == before


def test_upsert_overwrites_content_but_keeps_created_at(
    notes: NoteService, clock: FakeClock
) -> None:
    created = notes.upsert("session-summary-s1", "draft", importance=0.8, session_id="s1")
    clock.advance(hours=2)

    updated = notes.upsert("session-summary-s1", "final", importance=1.0, session_id="s1")

    assert (updated.content, updated.importance) == ("final", 1.0)
    assert updated.created_at == created.created_at
    assert notes.count() == 1


def test_upsert_leaves_a_forgotten_note_forgotten(notes: NoteService) -> None:
    notes.upsert("n1", "old")
    notes.forget("n1")

    rec = notes.upsert("n1", "new")

    assert rec.forgotten_at is not None
    assert notes.get("n1") is None


def test_an_upsert_with_bad_input_writes_nothing(notes: NoteService, session: Session) -> None:
    notes.upsert("n1", "kept", importance=0.3)
    before = _rows(session)

    with pytest.raises(InvalidInputError):
        notes.upsert("n1", "   ", importance=0.9)

    assert _rows(session) == before
    assert (got := notes.get("n1")) is not None and (got.content, got.importance) == ("kept", 0.3)


def test_get_misses_an_unknown_or_forgotten_note(notes: NoteService) -> None:
    rec = notes.add("secret")
    notes.forget(rec.id)

    assert notes.get(rec.id) is None
    assert notes.get("no-such-note") is None


def test_listing_orders_by_importance_then_newest_first(
    notes: NoteService, clock: FakeClock
) -> None:
    notes.add("low", importance=0.1)
    clock.advance(minutes=1)
    notes.add("high old", importance=0.9)
    clock.advance(minutes=1)
    notes.add("high new", importance=0.9)

    assert [n.content for n in notes.list()] == ["high new", "high old", "low"]
    assert [n.content for n in notes.list(limit=1)] == ["high new"]


def test_forgotten_notes_are_left_out_of_the_list_unlike_the_original_q_f6(
    notes: NoteService,
) -> None:
    """Better behaviour than Philont's listTopImportant, which listed forgotten notes."""
    keep = notes.add("keep", importance=0.2)
    gone = notes.add("gone", importance=0.9)
    notes.forget(gone.id)

    assert [n.id for n in notes.list()] == [keep.id]
    assert [n.id for n in notes.list(include_forgotten=True)] == [gone.id, keep.id]


def test_forget_returns_whether_it_changed_and_unknown_ids_are_not_found(
    notes: NoteService, clock: FakeClock
) -> None:
    rec = notes.add("x")
    first = clock.now

    assert notes.forget(rec.id) is True
    clock.advance(days=1)
    assert notes.forget(rec.id) is False
    assert notes.list(include_forgotten=True)[0].forgotten_at == first
    with pytest.raises(NoteNotFoundError):
        notes.forget("no-such-note")
    assert notes.unforget(rec.id) is True
    assert notes.get(rec.id) is not None


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_listing_refuses_a_limit_that_is_not_a_positive_integer(
    notes: NoteService, limit: Any
) -> None:
    with pytest.raises(InvalidInputError):
        notes.list(limit=limit)


# --- session summaries -----------------------------------------------------------------------


def test_the_latest_session_summary_is_the_newest_active_summary_of_another_session(
    notes: NoteService, clock: FakeClock
) -> None:
    notes.upsert("session-summary-a", "summary a", importance=1.0, session_id="a")
    clock.advance(hours=1)
    notes.upsert("session-summary-b", "summary b", importance=1.0, session_id="b")
    clock.advance(hours=1)
    notes.add("not a summary", importance=1.0, session_id="c")
    clock.advance(hours=1)
    notes.upsert("session-summary-c", "summary c", importance=1.0, session_id="c")
    notes.forget("session-summary-c")

    latest = notes.latest_session_summary()
    assert latest is not None and latest.id == "session-summary-b"
    other = notes.latest_session_summary(exclude_session_id="b")
    assert other is not None and other.id == "session-summary-a"


def test_a_summary_without_a_session_is_never_excluded(notes: NoteService) -> None:
    notes.upsert("session-summary-x", "orphan", importance=1.0)

    got = notes.latest_session_summary(exclude_session_id="x")
    assert got is not None and got.id == "session-summary-x"


def test_there_is_no_latest_session_summary_in_an_empty_store(notes: NoteService) -> None:
    assert notes.latest_session_summary() is None


@pytest.mark.parametrize(
    "other_id",
    [
        "SESSION-SUMMARY-todo",
        "Session-Summary-todo",
        "SESSION-summary-x",
        "session-Summary-x",
        "sessioN-summary-x",
        "session_summary-x",
        "session-summary_x",
        "session%summary-x",
        "session-summary",
        "session-summar",
    ],
)
def test_only_a_note_named_exactly_session_summary_dash_is_a_summary_on_both_backends(
    notes: NoteService, clock: FakeClock, other_id: str
) -> None:
    """SQLite's LIKE ignores ASCII case: a newer note 'SESSION-SUMMARY-todo' was the latest
    session summary there, and not on PostgreSQL."""
    notes.upsert("session-summary-a", "summary a", session_id="a")
    clock.advance(minutes=1)
    notes.add("not a summary", id=other_id)

    got = notes.latest_session_summary()

    assert got is not None and got.id == "session-summary-a"


# --- search ----------------------------------------------------------------------------------


@pytest.fixture
def corpus(notes: NoteService, clock: FakeClock) -> NoteService:
    for content, importance in [
        ("I am 100% sure the user likes Rust", 0.4),
        ("Rust is the user's favourite language", 0.9),
        ("variable names use snake_case", 0.5),
        ("the abc module is deprecated", 0.5),
        ("path C:\\temp holds logs", 0.5),
    ]:
        notes.add(content, importance=importance)
        clock.advance(minutes=1)
    return notes


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("rust", ["Rust is the user's favourite language", "I am 100% sure the user likes Rust"]),
        ("RUST user favourite", ["Rust is the user's favourite language"]),
        ("rust cobol", []),
        ("", []),
        ("   ", []),
    ],
    ids=["case-insensitive", "every token must appear", "missing token", "empty", "blank"],
)
def test_search_finds_active_notes_containing_every_token_by_importance(
    corpus: NoteService, query: str, expected: list[str]
) -> None:
    assert [n.content for n in corpus.search(query)] == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("%", ["I am 100% sure the user likes Rust"]),
        ("100%", ["I am 100% sure the user likes Rust"]),
        ("_", ["variable names use snake_case"]),
        ("a_c", []),
        ("e_c", ["variable names use snake_case"]),
        ("\\", ["path C:\\temp holds logs"]),
    ],
)
def test_like_wildcards_in_a_note_search_are_literal_characters_q_f4(
    corpus: NoteService, query: str, expected: list[str]
) -> None:
    """Philont's LIKE fallback let '%' and '_' match anything; here they match themselves."""
    assert [n.content for n in corpus.search(query)] == expected


def test_search_leaves_out_forgotten_notes_and_honours_the_limit(
    corpus: NoteService, session: Session
) -> None:
    top = corpus.search("rust")[0]
    corpus.forget(top.id)
    before = _rows(session)

    assert [n.content for n in corpus.search("rust", limit=1)] == [
        "I am 100% sure the user likes Rust"
    ]
    assert _rows(session) == before


def test_upsert_of_a_new_id_creates_the_note_now(notes: NoteService, clock: FakeClock) -> None:
    clock.advance(days=2)
    rec = notes.upsert("n9", "fresh")

    assert (rec.created_at, rec.last_accessed_at, rec.forgotten_at) == (clock.now, None, None)
    assert notes.count() == 1
