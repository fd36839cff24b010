"""Extraction does not bring back what was forgotten, unless it was said again afterwards.

A fact or note the user (or the agent, or the decay sweep) forgot used to come back as soon as
the extractor ran over the messages that stated it (a session learned again, a window
re-read) or over later ones that repeated it. The rule (``philont.domain.forgetting``, table
of cases in tests/unit/test_extract_forgotten_rules.py): the same fact (namespace, key, value;
an event also at the same time) or the same note (its normalized text) is written again only
when the message that says it is newer than the forgetting.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from philont.db.models import Fact, Note
from philont.domain.timeparse import iso
from philont.learning import Learner
from philont.llm import ScriptedModel
from philont.memory import Memory
from tests.conftest import FakeClock
from tests.integration.learning_helpers import Conversation, unit_factory

BOTH_BACKENDS = True

TEA = {"action": "store_fact", "namespace": "user.preferences", "key": "drink", "value": "tea"}
NOTE = {"action": "store_note", "content": "The user drinks tea every afternoon"}
LUNCH = {
    "action": "store_fact", "namespace": "user.meals", "key": "lunch", "value": "ramen",
    "fact_kind": "event", "occurred_at": "2026-06-14T04:01:00.000Z",
}  # fmt: skip


@pytest.fixture
def mem(engine: Engine, clock: FakeClock) -> Iterator[Memory]:
    with unit_factory(engine, clock)() as unit:
        yield unit


def extract(mem: Memory, *actions: dict[str, Any], since: datetime | None = None) -> Any:
    """Extract ``actions`` from session s1 (or the time range from ``since`` to now)."""
    learner = Learner(mem, ScriptedModel([json.dumps(list(actions))]))
    if since is None:
        return learner.extract(session_id="s1")
    return learner.extract(since=since, until=mem.clock())


def rows(mem: Memory, table: Any) -> int:
    return mem.session.scalar(select(func.count()).select_from(table)) or 0


def forget_all(mem: Memory, clock: FakeClock) -> None:
    clock.advance(minutes=1)
    for fact in mem.session.scalars(select(Fact).where(Fact.forgotten_at.is_(None))):
        mem.facts.forget(fact.id)
    for note in mem.session.scalars(select(Note).where(Note.forgotten_at.is_(None))):
        mem.notes.forget(note.id)


@pytest.mark.parametrize("action", [TEA, NOTE, LUNCH], ids=["state", "note", "event"])
def test_the_same_messages_learned_again_do_not_bring_back_what_was_forgotten(
    mem: Memory, clock: FakeClock, action: dict[str, Any]
) -> None:
    chat = Conversation(mem, clock, "s1")
    chat.user("I drink tea every afternoon; I had ramen for lunch")
    chat.assistant("Noted.")
    assert [w.outcome for w in extract(mem, action).writes] == ["stored"]
    forget_all(mem, clock)
    counts = (rows(mem, Fact), rows(mem, Note))
    again = extract(mem, action)
    assert [w.outcome for w in again.writes] == ["forgotten"]
    assert "forgotten at" in again.writes[0].detail
    assert (rows(mem, Fact), rows(mem, Note)) == counts
    assert mem.facts.get("user.preferences", "drink") is None


@pytest.mark.parametrize("action", [TEA, NOTE, LUNCH], ids=["state", "note", "event"])
def test_what_is_said_again_after_the_forgetting_is_learned_again(
    mem: Memory, clock: FakeClock, action: dict[str, Any]
) -> None:
    chat = Conversation(mem, clock, "s1")
    chat.user("I drink tea every afternoon; I had ramen for lunch")
    chat.assistant("Noted.")
    extract(mem, action)
    forget_all(mem, clock)
    clock.advance(minutes=1)
    since = clock.now
    chat.user("To be clear: I do drink tea every afternoon, and that ramen lunch happened")
    chat.assistant("Noted again.")
    again = extract(mem, action, since=since)  # a window of messages newer than the forgetting
    assert [w.outcome for w in again.writes] == ["stored"]


@pytest.mark.parametrize("cite", ["new", "old", "none", "unknown"])
def test_a_window_across_the_forgetting_needs_the_model_to_cite_the_newer_message(
    mem: Memory, clock: FakeClock, cite: str
) -> None:
    chat = Conversation(mem, clock, "s1")
    chat.user("I drink tea every afternoon")
    old = clock.now
    chat.assistant("Noted.")
    extract(mem, TEA, NOTE)
    forget_all(mem, clock)
    chat.user("Forget what I drink. ... Actually no: I drink tea every afternoon")
    new = clock.now
    chat.assistant("Noted again.")
    cited = {"new": iso(new), "old": iso(old), "none": None, "unknown": "2026-06-14T04:30:00Z"}
    actions = [dict(a, said_at=cited[cite]) if cited[cite] else a for a in (TEA, NOTE)]
    report = extract(mem, *actions)  # the whole session: before and after the forgetting
    expected = "stored" if cite == "new" else "forgotten"
    assert [w.outcome for w in report.writes] == [expected, expected]


def test_a_note_is_the_same_note_whatever_its_case_and_spacing(
    mem: Memory, clock: FakeClock
) -> None:
    chat = Conversation(mem, clock, "s1")
    chat.user("I drink tea every afternoon")
    chat.assistant("Noted.")
    extract(mem, NOTE)
    forget_all(mem, clock)
    variant = {"action": "store_note", "content": "  the user DRINKS tea\n every  afternoon "}
    other = {"action": "store_note", "content": "The user drinks tea every morning"}
    report = extract(mem, variant, other)
    assert [w.outcome for w in report.writes] == ["forgotten", "stored"]


def test_a_forgotten_event_does_not_hide_the_same_value_at_another_time(
    mem: Memory, clock: FakeClock
) -> None:
    chat = Conversation(mem, clock, "s1")
    chat.user("I had ramen for lunch, and ramen again the day before")
    chat.assistant("Noted.")
    extract(mem, LUNCH)
    forget_all(mem, clock)
    before = dict(LUNCH, occurred_at="2026-06-13T04:01:00.000Z")
    report = extract(mem, LUNCH, before)
    assert [w.outcome for w in report.writes] == ["forgotten", "stored"]


def test_a_fact_forgotten_by_the_decay_sweep_stays_forgotten_too(
    mem: Memory, clock: FakeClock
) -> None:
    mood = {"action": "store_fact", "namespace": "context", "key": "mood", "value": "tired"}
    chat = Conversation(mem, clock, "s1")
    chat.user("I am tired today")
    chat.assistant("Noted.")
    extract(mem, mood)
    clock.advance(days=30)  # context facts decay within days
    assert mem.facts.sweep() == 1
    assert [w.outcome for w in extract(mem, mood).writes] == ["forgotten"]
