"""TimelineService on a real SQLite file: sessions, appending, batch appends and queries."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db.models import RawMessage, RawSession
from philont.domain.kinds import Role
from philont.errors import (
    ConflictError,
    InvalidInputError,
    InvalidTimeRangeError,
    SessionNotFoundError,
)
from philont.schemas.timeline import MessageIn
from philont.services.timeline import GLOBAL_SESSION, TimelineService
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def timeline(session: Session, clock: FakeClock) -> TimelineService:
    return TimelineService(joined(session, clock))


def _rows(session: Session) -> tuple[int, int]:
    n_sessions = session.scalar(select(func.count()).select_from(RawSession))
    n_messages = session.scalar(select(func.count()).select_from(RawMessage))
    return int(n_sessions or 0), int(n_messages or 0)


def _hours(n: float) -> datetime:
    return T0 + timedelta(hours=n)


# --- sessions --------------------------------------------------------------------------------


def test_every_database_has_the_global_session(timeline: TimelineService) -> None:
    assert TimelineService.GLOBAL_SESSION == GLOBAL_SESSION == "global"
    assert timeline.get_session(GLOBAL_SESSION) is not None


def test_starting_a_session_records_when_it_started(
    timeline: TimelineService, clock: FakeClock
) -> None:
    named = timeline.start_session("s1")
    anonymous = timeline.start_session()

    assert (named.id, named.started_at, named.ended_at) == ("s1", clock.now, None)
    assert anonymous.id != named.id and len(anonymous.id) == 36
    assert timeline.get_session("s1") == named


def test_starting_an_existing_session_is_a_conflict_and_writes_nothing(
    timeline: TimelineService, session: Session
) -> None:
    timeline.start_session("s1")
    before = _rows(session)

    with pytest.raises(ConflictError):
        timeline.start_session("s1")

    assert _rows(session) == before


def test_ending_a_session_keeps_the_first_end_time(
    timeline: TimelineService, clock: FakeClock
) -> None:
    timeline.start_session("s1")
    clock.advance(hours=1)
    ended = timeline.end_session("s1")
    clock.advance(hours=1)

    again = timeline.end_session("s1")

    assert ended.ended_at == again.ended_at == clock.now - timedelta(hours=1)


def test_ending_an_unknown_session_is_not_found(timeline: TimelineService) -> None:
    with pytest.raises(SessionNotFoundError):
        timeline.end_session("nope")


@pytest.mark.parametrize(
    ("since", "until", "expected"),
    [
        (None, None, ["c", "b", "a"]),
        (_hours(1), _hours(2), ["c", "b"]),
        (None, _hours(1), ["b", "a"]),
        (_hours(2), None, ["c"]),
    ],
)
def test_sessions_are_listed_newest_first_within_inclusive_bounds(
    timeline: TimelineService,
    clock: FakeClock,
    since: datetime | None,
    until: datetime | None,
    expected: list[str],
) -> None:
    for n, sid in enumerate("abc"):
        clock.now = _hours(n)
        timeline.start_session(sid)

    listed = timeline.list_sessions(since=since, until=until)

    assert [s.id for s in listed if s.id != GLOBAL_SESSION] == expected


def test_session_listing_pages_with_limit_and_offset(
    timeline: TimelineService, clock: FakeClock
) -> None:
    for n, sid in enumerate("abc"):
        clock.now = _hours(n)
        timeline.start_session(sid)

    page = timeline.list_sessions(since=T0, until=_hours(2), limit=2, offset=1)

    assert [s.id for s in page] == ["b", "a"]


# --- appending -------------------------------------------------------------------------------


def test_appending_defaults_to_a_user_message_in_the_global_session_now(
    timeline: TimelineService, clock: FakeClock
) -> None:
    msg = timeline.append("hello")

    assert (msg.session_id, msg.role, msg.content, msg.timestamp) == (
        GLOBAL_SESSION,
        Role.USER,
        "hello",
        clock.now,
    )
    assert msg.id > 0
    assert timeline.count() == 1


def test_content_with_nul_bytes_is_stored_as_is(timeline: TimelineService, backend: str) -> None:
    text = "before\x00after"
    if backend == "postgres":  # PostgreSQL text cannot hold U+0000: a typed refusal
        with pytest.raises(InvalidInputError, match="NUL"):
            timeline.append(text, role="assistant")
        assert timeline.messages(GLOBAL_SESSION) == []
        return
    timeline.append(text, role="assistant")

    assert [m.content for m in timeline.messages(GLOBAL_SESSION)] == [text]


BAD_APPENDS: list[tuple[str, dict[str, Any], type[Exception]]] = [
    ("unknown role", {"role": "robot"}, InvalidInputError),
    ("empty role", {"role": ""}, InvalidInputError),
    ("empty content", {"content": ""}, InvalidInputError),
    ("whitespace-only content", {"content": " \n\t"}, InvalidInputError),
    ("non-text content", {"content": 42}, InvalidInputError),
    ("unknown session", {"session_id": "nope"}, SessionNotFoundError),
    ("blank session id", {"session_id": ""}, InvalidInputError),
    ("naive time", {"at": datetime(2026, 6, 1, 12, 0)}, InvalidInputError),
]


@pytest.mark.parametrize(
    ("overrides", "error"), [c[1:] for c in BAD_APPENDS], ids=[c[0] for c in BAD_APPENDS]
)
def test_a_refused_append_raises_its_typed_error_and_writes_nothing(
    timeline: TimelineService, session: Session, overrides: dict[str, Any], error: type[Exception]
) -> None:
    before = _rows(session)
    args: dict[str, Any] = {"content": "hello", **overrides}

    with pytest.raises(error):
        timeline.append(args.pop("content"), **args)

    assert _rows(session) == before


def test_append_many_inserts_the_batch_in_order_and_returns_ids(
    timeline: TimelineService, clock: FakeClock
) -> None:
    timeline.start_session("s1")
    batch = [
        MessageIn(content="question", session_id="s1"),
        MessageIn(content="answer", role="assistant", session_id="s1"),
        MessageIn(content="note", role=Role.SYSTEM, at=T0),
    ]

    records = timeline.append_many(batch)

    assert [r.content for r in records] == ["question", "answer", "note"]
    assert [r.role for r in records] == [Role.USER, Role.ASSISTANT, Role.SYSTEM]
    assert [r.timestamp for r in records] == [clock.now, clock.now, T0]
    assert records[0].id < records[1].id < records[2].id
    assert timeline.messages("s1") == records[:2]


@pytest.mark.parametrize(
    "bad",
    [
        MessageIn(content="   "),
        MessageIn(content="x", role="wizard"),
        MessageIn(content="x", session_id="no-such-session"),
    ],
    ids=["blank content", "unknown role", "unknown session"],
)
def test_append_many_checks_every_message_before_writing_any(
    timeline: TimelineService, session: Session, bad: MessageIn
) -> None:
    before = _rows(session)
    batch = [MessageIn(content="fine"), MessageIn(content="also fine"), bad]

    with pytest.raises((InvalidInputError, SessionNotFoundError)) as info:
        timeline.append_many(batch)

    assert _rows(session) == before
    if isinstance(info.value, InvalidInputError):
        assert info.value.details["index"] == 2


def test_a_large_batch_returns_each_message_with_its_own_id(
    timeline: TimelineService, session: Session
) -> None:
    records = timeline.append_many([MessageIn(content=f"m{n}") for n in range(2500)])

    stored = {i: c for i, c in session.execute(select(RawMessage.id, RawMessage.content))}
    assert [stored[r.id] for r in records] == [f"m{n}" for n in range(2500)]


def test_append_many_of_nothing_writes_nothing(timeline: TimelineService, session: Session) -> None:
    before = _rows(session)

    assert timeline.append_many([]) == []
    assert _rows(session) == before


# --- reading ---------------------------------------------------------------------------------


def test_messages_of_a_session_are_ordered_by_timestamp_then_id(
    timeline: TimelineService,
) -> None:
    timeline.start_session("s1")
    late = timeline.append("late", session_id="s1", at=_hours(2))
    tie_a = timeline.append("tie a", session_id="s1", at=_hours(1))
    tie_b = timeline.append("tie b", session_id="s1", at=_hours(1))

    assert [m.id for m in timeline.messages("s1")] == [tie_a.id, tie_b.id, late.id]
    assert [m.id for m in timeline.messages("s1", limit=1)] == [tie_a.id]


def test_messages_of_an_unknown_session_are_not_found(timeline: TimelineService) -> None:
    with pytest.raises(SessionNotFoundError):
        timeline.messages("nope")


@pytest.fixture
def day(timeline: TimelineService) -> TimelineService:
    """Messages at hours 0..4 of T0: user/assistant alternating; hour 4 in session s1."""
    timeline.start_session("s1")
    for n in range(4):
        timeline.append(f"m{n}", role="user" if n % 2 == 0 else "assistant", at=_hours(n))
    timeline.append("m4", session_id="s1", at=_hours(4))
    return timeline


@pytest.mark.parametrize(
    ("since", "until", "expected"),
    [
        (_hours(1), _hours(3), ["m3", "m2", "m1"]),
        (_hours(1), _hours(1), ["m1"]),
        (None, _hours(1), ["m1", "m0"]),
        (_hours(3), None, ["m4", "m3"]),
        (_hours(5), None, []),
    ],
    ids=["both bounds", "a single instant", "until only", "since only", "after everything"],
)
def test_query_bounds_are_inclusive(
    day: TimelineService, since: datetime | None, until: datetime | None, expected: list[str]
) -> None:
    assert [m.content for m in day.query(since=since, until=until)] == expected


def test_query_orders_ascending_or_descending_and_limits(day: TimelineService) -> None:
    assert [m.content for m in day.query(order="asc", limit=2)] == ["m0", "m1"]
    assert [m.content for m in day.query(order="desc", limit=2)] == ["m4", "m3"]


def test_query_filters_by_session_and_role(day: TimelineService) -> None:
    assert [m.content for m in day.query(session_ids=["s1"])] == ["m4"]
    assert [m.content for m in day.query(roles=["assistant"], order="asc")] == ["m1", "m3"]
    assert len(day.query(session_ids=[])) == 5


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"since": _hours(2), "until": _hours(1)}, InvalidTimeRangeError),
        ({"limit": 0}, InvalidInputError),
        ({"limit": 10_001}, InvalidInputError),
        ({"limit": True}, InvalidInputError),
        ({"order": "sideways"}, InvalidInputError),
        ({"roles": ["wizard"]}, InvalidInputError),
        ({"since": datetime(2026, 1, 1)}, InvalidInputError),
    ],
    ids=[
        "reversed window",
        "limit 0",
        "limit too big",
        "limit bool",
        "bad order",
        "bad role",
        "naive",
    ],
)
def test_query_refuses_bad_arguments(
    day: TimelineService, kwargs: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        day.query(**kwargs)


def test_the_last_message_of_a_role_is_the_newest(day: TimelineService) -> None:
    last_user = day.last_message("user")
    last_assistant = day.last_message(Role.ASSISTANT)

    assert last_user is not None and last_user.content == "m4"
    assert last_assistant is not None and last_assistant.content == "m3"
    assert day.last_message("tool") is None


def test_count_counts_all_messages_or_one_session(day: TimelineService) -> None:
    assert (day.count(), day.count("s1"), day.count(GLOBAL_SESSION)) == (5, 1, 4)


def test_text_that_is_not_valid_unicode_is_refused_with_a_typed_error(session: Session) -> None:
    from philont.services.facts import FactService
    from philont.services.notes import NoteService

    bad = "broken \udcff bytes"
    with pytest.raises(InvalidInputError, match="lone surrogate"):
        TimelineService(joined(session)).append(bad)
    with pytest.raises(InvalidInputError, match="lone surrogate"):
        NoteService(joined(session)).add(bad)
    with pytest.raises(InvalidInputError):
        FactService(joined(session)).store("user", "k", bad)
