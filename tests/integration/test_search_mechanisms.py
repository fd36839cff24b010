"""Each ranking rule of message search finds what keywords alone rank too low, in a small
conversation built for it; with the rule off the same search misses. Both backends."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.orm import Session

from philont.domain.kinds import Role
from philont.domain.ranking import RankingOptions
from philont.services.retriever import TimelineRetriever
from philont.services.search import SearchService
from philont.testing import factories as f
from tests.support import joined

BOTH_BACKENDS = True

Turns = list[tuple[Role, str]]

FILLER: Turns = [
    (Role.USER, "Can you convert this markdown file to a Word document?"),
    (Role.ASSISTANT, "Done: the document is in your downloads folder."),
    (Role.USER, "Remind me to water the plants tomorrow morning."),
    (Role.ASSISTANT, "I will remind you to water the plants at eight."),
    (Role.USER, "The weather in Lisbon is lovely these days."),
    (Role.ASSISTANT, "Enjoy the sunshine while you can."),
    (Role.USER, "I booked the dentist for Thursday at nine."),
    (Role.ASSISTANT, "Noted, I added it to your calendar."),
    (Role.USER, "Let's try the new ramen place on Friday."),
    (Role.ASSISTANT, "Good idea, I hear the broth is excellent."),
    (Role.USER, "My laptop battery drains far too quickly lately."),
    (Role.ASSISTANT, "Lowering the screen brightness usually helps a lot."),
]


def add_session(session: Session, name: str, start: datetime, turns: Turns) -> list[int]:
    """One session of turns a second apart; returns the message ids in order."""
    with f.bound(session):
        f.RawSessionFactory(id=name, started_at=start)
        ids = [
            f.RawMessageFactory(
                session_id=name, role=role, content=text, timestamp=start + timedelta(seconds=i)
            ).id
            for i, (role, text) in enumerate(turns)
        ]
    session.flush()
    return ids


def ranked(
    session: Session, query: str, ranking: RankingOptions | None, now: datetime
) -> list[int]:
    """Hit ids; ``ranking`` None: the service as it ships."""
    mem = joined(session)
    search = SearchService(mem) if ranking is None else SearchService(mem, ranking=ranking)
    return [h.id for h in search.messages(query, limit=10, now=now)]


ON = None
"""The rules search applies by default (each test turns one of them off to compare)."""


def without(**changes: float) -> RankingOptions:
    return replace(RankingOptions(), **changes)  # type: ignore[arg-type]


# --- a period named in the query -------------------------------------------------------------

DINNER = "Yesterday I had dinner with my mother at the Italian place."


@pytest.fixture
def two_dinners(session: Session) -> tuple[int, int]:
    """The same sentence in May and in August (the August one newer, winning ties)."""
    add_session(session, "filler", datetime(2023, 3, 1, tzinfo=UTC), FILLER)
    [may, _] = add_session(
        session,
        "may",
        datetime(2023, 5, 4, 18, tzinfo=UTC),
        [(Role.USER, DINNER), (Role.ASSISTANT, "That sounds lovely!")],
    )
    [august, _] = add_session(
        session,
        "august",
        datetime(2023, 8, 10, 18, tzinfo=UTC),
        [(Role.USER, DINNER), (Role.ASSISTANT, "That sounds lovely!")],
    )
    return may, august


@pytest.mark.parametrize(
    "query",
    [
        "Who did I have dinner with on May 3, 2023?",
        "Who did I have dinner with in May?",
        "2023年5月3日我和谁一起吃了dinner？",
    ],
)
def test_a_date_in_the_question_prefers_the_matches_of_that_time(
    session: Session, two_dinners: tuple[int, int], query: str
) -> None:
    may, august = two_dinners
    now = datetime(2023, 10, 1, tzinfo=UTC)
    with_rule = ranked(session, query, ON, now)
    assert with_rule.index(may) < with_rule.index(august)
    assert august in with_rule  # a soft preference: the other match stays
    plain = ranked(session, query, without(period_weight=0.0), now)
    assert plain.index(august) < plain.index(may)


def test_a_relative_period_counts_from_the_given_now(session: Session) -> None:
    add_session(session, "filler", datetime(2023, 3, 1, tzinfo=UTC), FILLER)
    [recent] = add_session(
        session, "recent", datetime(2023, 10, 11, tzinfo=UTC), [(Role.USER, DINNER)]
    )
    [older] = add_session(session, "older", datetime(2023, 9, 1, tzinfo=UTC), [(Role.USER, DINNER)])
    query = "Who did I have dinner with last week?"
    now = datetime(2023, 10, 20, 12, tzinfo=UTC)
    assert ranked(session, query, ON, now)[:2] == [recent, older]
    assert ranked(session, query, without(period_weight=0.0), now)[:2] == [older, recent]
    # a month later, "last week" is neither of them: the tie stands
    assert ranked(session, query, ON, now + timedelta(days=30))[:2] == [older, recent]


def test_the_retriever_reads_relative_periods_from_its_now(session: Session) -> None:
    add_session(session, "filler", datetime(2023, 3, 1, tzinfo=UTC), FILLER)
    [recent] = add_session(
        session, "recent", datetime(2023, 10, 11, tzinfo=UTC), [(Role.USER, DINNER)]
    )
    add_session(session, "older", datetime(2023, 9, 1, tzinfo=UTC), [(Role.USER, DINNER)])
    result = TimelineRetriever(joined(session)).retrieve(
        "Who did I have dinner with last week?",
        recent_limit=0,
        recall_candidates=1,
        now=datetime(2023, 10, 20, 12, tzinfo=UTC),
    )
    assert [m.message_id for m in result.messages] == [recent]


def test_a_period_that_holds_no_match_changes_nothing(
    session: Session, two_dinners: tuple[int, int]
) -> None:
    query = "Who did I have dinner with in January 2022?"
    now = datetime(2023, 10, 1, tzinfo=UTC)
    assert ranked(session, query, ON, now) == ranked(session, query, without(period_weight=0), now)


# --- a session's overall match ---------------------------------------------------------------


def test_the_session_that_covers_the_question_lifts_its_turns(session: Session) -> None:
    add_session(session, "filler", datetime(2023, 3, 1, tzinfo=UTC), FILLER)
    picnic = add_session(
        session,
        "picnic",
        datetime(2023, 6, 1, tzinfo=UTC),
        [
            (Role.USER, "Last weekend we had a picnic after the church service."),
            (Role.ASSISTANT, "That sounds lovely."),
            (Role.USER, "The weather was perfect all day."),
            (Role.ASSISTANT, "Glad to hear it."),
            (Role.USER, "We played board games until sunset."),
        ],
    )
    [game_night, _] = add_session(
        session,
        "game-night",
        datetime(2023, 7, 1, tzinfo=UTC),
        [
            (Role.USER, "Game night: we played board games again, so many games."),
            (Role.ASSISTANT, "Fun!"),
        ],
    )
    answer = picnic[4]  # far from the picnic turn: no neighbour share reaches it
    query = "What games did we play at the church picnic?"
    now = datetime(2023, 10, 1, tzinfo=UTC)
    with_rule = ranked(session, query, ON, now)
    assert with_rule.index(answer) < with_rule.index(game_night)
    plain = ranked(session, query, without(session_weight=0.0), now)
    assert plain.index(game_night) < plain.index(answer)


# --- the answer to a question ----------------------------------------------------------------


def test_the_answer_to_a_question_outranks_a_reaction_to_a_statement(session: Session) -> None:
    add_session(session, "filler", datetime(2023, 3, 1, tzinfo=UTC), FILLER)
    [_statement, reaction] = add_session(
        session,
        "news",
        datetime(2023, 6, 1, tzinfo=UTC),
        [
            (Role.USER, "I adopted a puppy, the cutest puppy ever!"),
            (Role.ASSISTANT, "Wow, congratulations, that is wonderful news!"),
        ],
    )
    [_question, answer] = add_session(
        session,
        "later",
        datetime(2023, 7, 1, tzinfo=UTC),
        [
            (Role.ASSISTANT, "Did you adopt the puppy from the shelter on Main Street?"),
            (Role.USER, "Yes, her name is Coco and she loves the park."),
        ],
    )
    query = "Tell me about the puppy I adopted"
    now = datetime(2023, 10, 1, tzinfo=UTC)
    with_rule = ranked(session, query, ON, now)
    assert with_rule.index(answer) < with_rule.index(reaction)
    plain = ranked(session, query, without(reaction_share=-1.0), now)
    assert plain.index(reaction) < plain.index(answer)


# --- word forms a stemmer cannot join ----------------------------------------------------------


def test_the_past_of_an_irregular_verb_answers_a_question_in_the_present(
    session: Session,
) -> None:
    add_session(session, "filler", datetime(2023, 3, 1, tzinfo=UTC), FILLER)
    [plan, _] = add_session(
        session,
        "plans",
        datetime(2023, 5, 1, tzinfo=UTC),
        [(Role.USER, "Next year I will buy a bike."), (Role.ASSISTANT, "Good plan.")],
    )
    [bought, _] = add_session(
        session,
        "shopping",
        datetime(2023, 6, 1, tzinfo=UTC),
        [(Role.USER, "I bought hiking boots yesterday."), (Role.ASSISTANT, "Nice!")],
    )
    now = datetime(2023, 10, 1, tzinfo=UTC)
    with_rule = ranked(session, "What did I buy?", ON, now)
    assert with_rule.index(plan) < with_rule.index(bought)  # the word itself counts more
    assert bought not in ranked(session, "What did I buy?", without(form_weight=0.0), now)
    # and the other way round: the past in the question finds the present
    assert plan in ranked(session, "What bike have I bought?", ON, now)


def test_a_part_of_a_compound_in_the_question_finds_the_message_naming_it(
    session: Session,
) -> None:
    add_session(session, "filler", datetime(2023, 3, 1, tzinfo=UTC), FILLER)
    [tickets] = add_session(
        session, "tickets", datetime(2023, 6, 1, tzinfo=UTC), [(Role.USER, "Festival tickets!")]
    )
    [bands] = add_session(
        session,
        "concert",
        datetime(2023, 7, 1, tzinfo=UTC),
        [(Role.USER, "Three great bands played until midnight.")],
    )
    query = "Which artists/bands were at the festival?"
    now = datetime(2023, 10, 1, tzinfo=UTC)
    assert set(ranked(session, query, ON, now)) == {tickets, bands}
    assert ranked(session, query, without(form_weight=0.0), now) == [tickets]


def test_notes_and_skills_are_searched_with_the_word_forms_too(session: Session) -> None:
    with f.bound(session):
        note = f.NoteFactory(content="Bought a scarf for Anna's birthday.")
        skill = f.SkillFactory(name="gift-ideas", description="What people were taught to like")
    session.flush()
    mem = joined(session)
    assert [n.id for n in mem.search.notes("What did I buy for Anna?")] == [note.id]
    assert [s.id for s in mem.search.skills("teach")] == [skill.id]
    off = SearchService(mem, ranking=without(form_weight=0.0))
    assert off.skills("teach") == []


# --- a one-digit number ----------------------------------------------------------------------


def test_a_one_digit_number_tells_its_message_from_the_others(session: Session) -> None:
    """The digit of "room 7" was dropped as a one-character word when another word was there:
    every room came back in date order, room 7 not first, and "suite 7" (no suite stored)
    found nothing."""
    start = datetime(2026, 5, 1, tzinfo=UTC)
    rooms = [(Role.USER, f"We stayed in room {n}") for n in (7, 17, 70, 3)]
    room_7 = add_session(session, "s1", start, [*FILLER, *rooms])[len(FILLER)]
    now = start + timedelta(days=1)
    assert ranked(session, "room 7", ON, now)[0] == room_7
    assert ranked(session, "suite 7", ON, now)[0] == room_7
