"""Reads that count as access: getting a fact or a note refreshes it and writes one log row
(Philont never wrote the access log, Q-D4); listing, searching and audits do not."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db.models import AccessLogEntry
from philont.domain.kinds import AccessTarget
from philont.services.access import AccessLog
from philont.services.facts import FactService
from philont.services.notes import NoteService
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock


@pytest.fixture
def facts(session: Session, clock: FakeClock) -> FactService:
    return FactService(joined(session, clock))


@pytest.fixture
def notes(session: Session, clock: FakeClock) -> NoteService:
    return NoteService(joined(session, clock))


@pytest.fixture
def access(session: Session, clock: FakeClock) -> AccessLog:
    return AccessLog(joined(session, clock))


def _log_rows(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(AccessLogEntry)) or 0)


def test_getting_a_fact_refreshes_last_accessed_at_and_writes_one_access_log_row(
    facts: FactService, access: AccessLog, clock: FakeClock
) -> None:
    stored = facts.store("user.home", "city", "Berlin")
    clock.advance(days=3)

    got = facts.get("user.home", "city")

    assert got is not None and got.last_accessed_at == clock.now
    again = facts.get_by_id(stored.id)
    assert again is not None and again.last_accessed_at == clock.now
    entries = access.recent_for(AccessTarget.FACT, stored.id)
    assert [(e.target_type, e.target_id, e.accessed_at) for e in entries] == [
        (AccessTarget.FACT, stored.id, clock.now)
    ]


def test_reading_facts_without_get_refreshes_nothing_and_logs_nothing(
    facts: FactService, session: Session, clock: FakeClock
) -> None:
    stored = facts.store("user.home", "city", "Berlin", fact_kind="event")
    clock.advance(days=3)

    facts.list("user.home")
    facts.list("user", prefix=True, ranked=True)
    facts.history("user.home", "city")
    facts.get_by_id(stored.id)
    facts.as_of("user.home", "city", clock.now)
    facts.events("user")
    facts.forget_candidates()

    assert _log_rows(session) == 0
    again = facts.get_by_id(stored.id)
    assert again is not None and again.last_accessed_at == stored.created_at


def test_a_missed_get_writes_nothing(facts: FactService, session: Session) -> None:
    gone = facts.store("user", "city", "Paris")
    facts.forget(gone.id)

    assert facts.get("user", "city") is None
    assert facts.get("user", "nothing") is None
    assert _log_rows(session) == 0


def test_getting_a_note_refreshes_it_and_writes_one_access_log_row(
    notes: NoteService, access: AccessLog, clock: FakeClock
) -> None:
    note = notes.add("the user likes tea")
    clock.advance(hours=5)

    got = notes.get(note.id)

    assert got is not None and got.last_accessed_at == clock.now
    assert access.count_for(AccessTarget.NOTE, note.id) == 1


def test_listing_and_searching_notes_log_nothing(notes: NoteService, session: Session) -> None:
    note = notes.add("the user likes tea")

    notes.list()
    notes.search("tea")
    notes.latest_session_summary()

    assert _log_rows(session) == 0
    assert notes.list()[0].last_accessed_at is None
    assert notes.get(note.id) is not None and _log_rows(session) == 1


def test_the_access_log_lists_a_targets_reads_newest_first(
    facts: FactService, access: AccessLog, clock: FakeClock
) -> None:
    stored = facts.store("user", "city", "Paris")
    times = []
    for _ in range(3):
        clock.advance(hours=1)
        times.append(clock.now)
        facts.get("user", "city")

    entries = access.recent_for(AccessTarget.FACT, stored.id, limit=2)

    assert [e.accessed_at for e in entries] == [times[2], times[1]]
    assert access.count_for(AccessTarget.FACT, stored.id) == 3
    assert access.count_for(AccessTarget.FACT, "other") == 0
    assert all(e.accessed_at.tzinfo is not None for e in entries)
