"""The timeline retriever builds recency plus keyword recall under budgets, ready for an LLM."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from philont.db.models import RawMessage
from philont.domain.kinds import Role
from philont.errors import InvalidInputError
from philont.services.recall import RecallTrigger
from philont.services.retriever import SEPARATOR, TimelineRetriever
from philont.testing import factories as f
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=UTC)


class Timeline:
    """Appends messages one minute apart (in session ``global`` unless told otherwise)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.n = 0

    def add(self, content: str, role: Role = Role.USER, session_id: str = "global") -> RawMessage:
        self.n += 1
        with f.bound(self.session):
            if self.session.get(f.m.RawSession, session_id) is None:
                f.RawSessionFactory(id=session_id)
            msg: RawMessage = f.RawMessageFactory(
                content=content,
                role=role,
                session_id=session_id,
                timestamp=T0 + timedelta(minutes=self.n),
            )
        return msg


@pytest.fixture
def timeline(session: Session) -> Timeline:
    return Timeline(session)


@pytest.fixture
def retriever(session: Session) -> TimelineRetriever:
    return TimelineRetriever(joined(session))


def recent_ids(result: object) -> list[int | None]:
    return [m.message_id for m in result.messages if m.section == "recent"]  # type: ignore[attr-defined]


def recall_ids(result: object) -> list[int | None]:
    return [m.message_id for m in result.messages if m.section == "recall"]  # type: ignore[attr-defined]


# --- recency ---------------------------------------------------------------------------------


def test_the_newest_message_is_kept_even_over_budget(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    timeline.add("short")
    newest = timeline.add("x" * 1_000)  # 600 tokens
    result = retriever.retrieve(recent_budget_tokens=10)
    assert recent_ids(result) == [newest.id]
    assert result.recent_tokens == 600


BUDGETS = st.one_of(
    st.just(0), st.just(1), st.integers(2, 40), st.integers(41, 10**6), st.just(2**31 - 1)
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(budget=BUDGETS)
def test_a_recency_budget_of_zero_shows_no_recent_message_and_recall_still_works(
    session: Session, retriever: TimelineRetriever, budget: int
) -> None:
    # Built once (the examples only read): an old match, filler, the newest message a match too,
    # and a system message the recency window would pass over.
    if session.query(RawMessage).count() == 0:
        timeline = Timeline(session)
        timeline.add("we paid the deposit for the flat")
        for i in range(5):
            timeline.add(f"lorem ipsum {i}")
        timeline.add("a system note", Role.SYSTEM)
        timeline.add("the deposit is back")
    newest = max(session.query(RawMessage).all(), key=lambda m: m.timestamp)
    result = retriever.retrieve(
        "deposit", recent_limit=3, recent_budget_tokens=budget, recall_budget_tokens=1000
    )
    matches = {m.id for m in session.query(RawMessage).all() if "deposit" in m.content}
    if budget == 0:  # asked for no recent messages: none, none passed over
        assert (result.recency_count, result.recent_tokens, result.dropped_system) == (0, 0, 0)
        assert recent_ids(result) == []
        # recall still works, and may now return the newest message (nothing hides it)
        assert matches <= set(recall_ids(result))  # the newest among them
        assert SEPARATOR not in [m.content for m in result.messages]
    else:  # the newest is always shown; more only within the budget
        assert recent_ids(result)[-1] == newest.id
        assert result.recency_count == 1 or result.recent_tokens <= budget
        # recall: the matches the recency window does not show (the old one at least)
        assert matches - set(recent_ids(result)) <= set(recall_ids(result))
        assert not set(recall_ids(result)) & set(recent_ids(result))
    assert result.total_tokens == result.recent_tokens + result.recall_tokens


def test_the_recency_budget_is_respected_newest_first_then_shown_in_order(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    msgs = [timeline.add(f"message {i:02d}") for i in range(10)]  # 10 chars = 6 tokens each
    result = retriever.retrieve(recent_budget_tokens=20)
    assert recent_ids(result) == [m.id for m in msgs[-3:]]
    assert result.recent_tokens == 18 <= 20
    assert result.recency_count == 3


def test_the_recency_window_holds_at_most_recent_limit_messages(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    msgs = [timeline.add(f"message {i}") for i in range(8)]
    assert recent_ids(retriever.retrieve(recent_limit=3)) == [m.id for m in msgs[-3:]]
    assert retriever.retrieve(recent_limit=0).messages == []


def test_a_custom_estimator_is_used(session: Session, timeline: Timeline) -> None:
    for i in range(5):
        timeline.add(f"message {i}")
    result = TimelineRetriever(joined(session), estimator=lambda _text: 100).retrieve(
        recent_budget_tokens=250
    )
    assert result.recency_count == 2
    assert result.recent_tokens == 200


def test_messages_after_now_are_ignored(timeline: Timeline, retriever: TimelineRetriever) -> None:
    early = timeline.add("deposit paid early")
    timeline.add("deposit paid later")
    result = retriever.retrieve("deposit", now=T0 + timedelta(minutes=1))
    assert recent_ids(result) == [early.id]
    assert recall_ids(result) == []


# --- roles -----------------------------------------------------------------------------------


def test_roles_are_mapped_and_system_messages_neither_shown_nor_counted(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    user = timeline.add("hello", Role.USER)
    tool = timeline.add("tool output", Role.TOOL)
    timeline.add("y" * 10_000, Role.SYSTEM)  # would take the whole budget if it counted
    bot = timeline.add("hi there", Role.ASSISTANT)
    result = retriever.retrieve(recent_budget_tokens=20)
    assert [(m.message_id, m.role) for m in result.messages] == [
        (user.id, "user"),
        (tool.id, "user"),
        (bot.id, "assistant"),
    ]
    assert result.recency_count == 3
    assert result.dropped_system == 1
    assert result.recent_tokens == 3 + 7 + 5


def test_system_messages_do_not_take_recency_slots(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    kept = [timeline.add(f"message {i}") for i in range(3)]
    for _ in range(5):
        timeline.add("system note", Role.SYSTEM)
    result = retriever.retrieve(recent_limit=3)
    assert recent_ids(result) == [m.id for m in kept]
    assert result.dropped_system == 5


# --- recall ----------------------------------------------------------------------------------


def test_recall_looks_past_the_recency_window_for_older_matches(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    old = [timeline.add(f"the deposit question number {i}") for i in range(15)]
    recent = [timeline.add(f"about the deposit again {i}") for i in range(10)]
    result = retriever.retrieve("deposit?", recent_limit=10, recall_candidates=5)
    assert recent_ids(result) == [m.id for m in recent]
    recalled = recall_ids(result)
    assert len(recalled) == 5
    assert set(recalled) <= {m.id for m in old}  # never one already shown
    assert result.recall_count == 5


def test_recalled_messages_are_chronological_and_the_separator_sits_between(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    apartment = timeline.add("The Berlin apartment costs 1450 warm.")
    balcony = timeline.add("It has a balcony facing the apartment yard.")
    for i in range(5):
        timeline.add(f"unrelated chatter {i}")
    result = retriever.retrieve("What about the Berlin apartment?", recent_limit=5)
    sections = [m.section for m in result.messages]
    assert sections == ["recall", "recall", "separator"] + ["recent"] * 5
    assert recall_ids(result) == [apartment.id, balcony.id]
    separator = result.messages[2]
    assert (separator.role, separator.content, separator.message_id) == ("user", SEPARATOR, None)
    assert separator.timestamp == result.messages[3].timestamp - timedelta(milliseconds=1)
    assert result.total_tokens == result.recent_tokens + result.recall_tokens


def test_there_is_no_separator_when_a_section_is_empty(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    apartment = timeline.add("The Berlin apartment costs 1450 warm.")
    for i in range(3):
        timeline.add(f"unrelated chatter {i}")
    no_recall = retriever.retrieve("", recent_limit=2)
    assert [m.section for m in no_recall.messages] == ["recent", "recent"]
    no_recent = retriever.retrieve("Berlin apartment", recent_limit=0)
    assert {m.section for m in no_recent.messages} == {"recall"}
    assert no_recent.messages[0].message_id == apartment.id
    assert all(m.content != SEPARATOR for m in no_recent.messages)


def test_recall_needs_a_query_of_two_characters(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    timeline.add("x marks the spot")
    for i in range(3):
        timeline.add(f"unrelated chatter {i}")
    assert retriever.retrieve(" x ", recent_limit=1).recall_count == 0


def test_the_recall_budget_is_never_exceeded(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    timeline.add("deposit " + "long " * 200)  # about 600 tokens
    small = timeline.add("deposit short")
    for i in range(3):
        timeline.add(f"unrelated chatter {i}")
    result = retriever.retrieve("deposit", recent_limit=3, recall_budget_tokens=50)
    assert recall_ids(result) == [small.id]
    assert result.recall_tokens <= 50
    assert retriever.retrieve("deposit", recent_limit=3, recall_budget_tokens=0).recall_count == 0


def test_recall_finds_chinese_two_character_words(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    target = timeline.add("下个月我要出差去柏林")
    for i in range(4):
        timeline.add(f"别的话题 {i}")
    result = retriever.retrieve("我什么时候去柏林？", recent_limit=2)
    assert recall_ids(result)[0] == target.id


def test_a_session_restriction_applies_to_both_sections(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    mine = timeline.add("deposit for my flat", session_id="a")
    timeline.add("deposit for their flat", session_id="b")
    latest_a = timeline.add("latest in a", session_id="a")
    timeline.add("latest in b", session_id="b")
    result = retriever.retrieve("deposit", recent_limit=1, session_ids=["a"])
    assert recent_ids(result) == [latest_a.id]
    assert recall_ids(result) == [mine.id]


def test_several_sessions_are_merged_in_time_order(
    timeline: Timeline, retriever: TimelineRetriever
) -> None:
    a1 = timeline.add("first in a", session_id="a")
    b1 = timeline.add("first in b", session_id="b")
    timeline.add("only in c", session_id="c")
    timeline.add("a system note", Role.SYSTEM, session_id="a")
    a2 = timeline.add("second in a", session_id="a")
    result = retriever.retrieve(recent_limit=10, session_ids=["a", "b"])
    assert recent_ids(result) == [a1.id, b1.id, a2.id]
    assert result.dropped_system == 1


@pytest.mark.parametrize(
    "kwargs",
    [
        {"recent_budget_tokens": -1},
        {"recall_budget_tokens": -5},
        {"recent_limit": -1},
        {"recall_candidates": -1},
        {"session_ids": "global"},
    ],
)
def test_invalid_options_raise_a_typed_error(
    retriever: TimelineRetriever, kwargs: dict[str, object]
) -> None:
    with pytest.raises(InvalidInputError):
        retriever.retrieve("x", **kwargs)  # type: ignore[arg-type]


def test_an_empty_timeline_gives_an_empty_window(retriever: TimelineRetriever) -> None:
    result = retriever.retrieve("anything at all?")
    assert result.messages == []
    assert (result.recency_count, result.recall_count, result.total_tokens) == (0, 0, 0)


# --- the recall trigger's own search ---------------------------------------------------------


@pytest.mark.parametrize("copies", [1, 2, 7])
@pytest.mark.parametrize("limit", [1, 3, 5])
def test_triggered_recall_never_returns_the_message_itself(
    session: Session, timeline: Timeline, copies: int, limit: int
) -> None:
    # The host stores the turn first; its own text then came back as the best "past" match.
    ask = "Do you remember what we discussed about pandoc?"
    meant = timeline.add("Let's convert the report with pandoc to docx")
    timeline.add("Sounds good.", role=Role.ASSISTANT)
    for _ in range(copies):
        timeline.add(f"  {ask}\n")  # the same message, stored (and sent again) around it
    hits = RecallTrigger(joined(session)).recall(ask, limit=limit)
    assert [h.content for h in hits if h.content.strip() == ask] == []
    assert len(hits) == min(limit, 2)  # the two earlier messages; no slot taken by a copy
    assert limit < 2 or meant.id in [h.id for h in hits]


def test_recall_asks_search_within_the_one_limit_policy(
    retriever: TimelineRetriever, timeline: Timeline
) -> None:
    # Recall asks search for recall_candidates + RECALL_SLACK hits without the search's entry
    # checks (retrieve has checked its arguments), but that limit is still checked: refused as
    # search refused it, with nothing else changed.
    from philont.schemas.inputs import MAX_LIMIT
    from philont.services.retriever import RECALL_SLACK

    timeline.add("the deposit for the flat")
    for _ in range(3):
        timeline.add("small talk")
    most = MAX_LIMIT - RECALL_SLACK
    assert recall_ids(retriever.retrieve("deposit", recall_candidates=most, recent_limit=2))
    with pytest.raises(InvalidInputError) as refused:
        retriever.retrieve("deposit", recall_candidates=most + 1, recent_limit=2)
    assert refused.value.details["argument"] == "limit"
