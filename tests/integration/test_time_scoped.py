"""Time-scoped recall everywhere: windows and as_of on messages, notes, skills and facts; fact
listings and the prefix default to what holds now; "around <date>" as a soft preference."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont import tools
from philont.store import Store
from tests.conftest import FakeClock

BOTH_BACKENDS = True
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


@pytest.fixture
def store(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, clock: FakeClock
) -> Iterator[Store]:
    target: Path | URL = (
        request.getfixturevalue("pg_agent")() if backend == "postgres" else tmp_path / "m.sqlite"
    )
    with Store.open(target, clock=clock) as s:
        yield s


def test_notes_search_takes_a_window_and_an_as_of(store: Store, clock: FakeClock) -> None:
    with store.begin() as mem:
        early = mem.notes.add("The deposit for the flat is three months of rent").id
    clock.advance(days=10)
    with store.begin() as mem:
        late = mem.notes.add("The deposit was paid back in full").id
    clock.advance(days=10)
    with store.begin() as mem:
        mem.notes.forget(early)
    with store.begin(write=False) as mem:
        assert [h.id for h in mem.search.notes("deposit")] == [late]  # today: forgotten gone
        then = T0 + timedelta(days=15)
        assert {h.id for h in mem.search.notes("deposit", as_of=then)} == {early, late}
        assert [h.id for h in mem.search.notes("deposit", as_of=T0 + timedelta(days=1))] == [early]
        window = mem.search.notes("deposit", since=T0 + timedelta(days=5), include_forgotten=True)
        assert [h.id for h in window] == [late]


def test_skills_search_takes_a_window_and_an_as_of(store: Store, clock: FakeClock) -> None:
    with store.begin() as mem:
        mem.skills.create("unzip-archive", "Unpack a zip archive", "zip", "1. unzip")
    clock.advance(days=30)
    with store.begin() as mem:
        mem.skills.create("zip-folder", "Pack a folder as zip", "zip", "1. zip -r")
    with store.begin(write=False) as mem:
        assert {h.name for h in mem.search.skills("zip")} == {"unzip-archive", "zip-folder"}
        assert [h.name for h in mem.search.skills("zip", as_of=T0 + timedelta(days=1))] == [
            "unzip-archive"
        ]
        assert [h.name for h in mem.search.skills("zip", since=T0 + timedelta(days=1))] == [
            "zip-folder"
        ]


def test_messages_as_of_reads_the_timeline_as_it_stood(store: Store, clock: FakeClock) -> None:
    with store.begin() as mem:
        mem.timeline.append("We looked at the flat on Kastanienallee")
        clock.advance(days=3)
        mem.timeline.append("The Kastanienallee flat is ours")
    with store.begin(write=False) as mem:
        assert len(mem.search.messages("Kastanienallee")) == 2
        got = mem.search.messages("Kastanienallee", as_of=T0 + timedelta(days=1))
        assert [h.content for h in got] == ["We looked at the flat on Kastanienallee"]


@pytest.mark.parametrize("kind", ["messages", "notes", "skills"])
def test_an_as_of_before_the_window_finds_nothing_in_every_search(
    store: Store, clock: FakeClock, kind: str
) -> None:
    # as_of caps the window the same way everywhere (messages used to fold it into `until`
    # and refuse since > as_of as a reversed window, where notes and skills found nothing)
    with store.begin() as mem:
        mem.timeline.append("The zip code of the flat is 10405")
        mem.notes.add("The zip code of the flat is 10405")
        mem.skills.create("zip-folder", "Pack a folder as zip", "zip", "1. zip -r")
    later = T0 + timedelta(days=2)
    with store.begin(write=False) as mem:
        search = getattr(mem.search, kind)
        assert search("zip", since=T0 - timedelta(days=1), as_of=later)  # the window holds it
        assert search("zip", since=T0 + timedelta(days=1), as_of=T0) == []
        assert search("zip", until=later, as_of=T0 - timedelta(days=1)) == []


def test_around_prefers_messages_near_a_time_but_drops_none(store: Store, clock: FakeClock) -> None:
    with store.begin() as mem:
        for month in range(6):
            clock.now = T0 + timedelta(days=30 * month)
            mem.timeline.append(f"Dinner with Anna at the ramen place, visit {month}")
    with store.begin(write=False) as mem:
        plain = mem.search.messages("dinner Anna ramen", limit=10)
        near = mem.search.messages(
            "dinner Anna ramen", limit=10, around=T0 + timedelta(days=90, hours=3)
        )
        assert len(near) == len(plain) == 6
        assert near[0].content.endswith("visit 3")
        window = mem.retriever.retrieve(
            "dinner with Anna?",
            recent_limit=0,
            recall_candidates=1,
            around=T0 + timedelta(days=60),
        )
        assert [m.content[-7:] for m in window.messages] == ["visit 2"]
    result = tools.call(
        "recall_sessions",
        {
            "query": "dinner Anna ramen",
            "around": (T0 + timedelta(days=120)).isoformat(),
            "limit": 1,
        },
        db=store,
    )
    assert result.ok and "visit 4" in result.text


def test_fact_listings_and_the_prefix_default_to_what_holds_now(
    store: Store, clock: FakeClock
) -> None:
    with store.begin() as mem:
        mem.facts.store("user.home", "city", "Leipzig", valid_until=T0 - timedelta(days=1))
        mem.facts.store("user.trip", "city", "Lisbon", valid_from=T0 + timedelta(days=7))
        mem.facts.store("user.work", "city", "Berlin")
    with store.begin(write=False) as mem:
        now = [f"{f.namespace}" for f in mem.facts.list("user.*")]
        assert now == ["user.work"]
        everything = mem.facts.list("user.*", include_expired=True)
        assert len(everything) == 3
        later = [f.namespace for f in mem.facts.list("user.*", now=T0 + timedelta(days=8))]
        assert later == ["user.trip", "user.work"]
        assert mem.facts.count() == 1
        prefix = mem.prefix.build().text
        assert "user.work.city" in prefix and "user.trip" not in prefix
        assert "user.home" not in prefix
    listed = tools.call("list_facts", {"namespace": "user.*"}, db=store).text
    assert "user.work.city" in listed and "user.trip" not in listed


def test_fact_listings_as_of_show_what_we_believed_then(store: Store, clock: FakeClock) -> None:
    with store.begin() as mem:
        mem.facts.store("user.home", "city", "Leipzig")
    clock.advance(days=10)
    with store.begin() as mem:
        mem.facts.store("user.home", "city", "Berlin")
        mem.facts.store("user.home", "street", "Kastanienallee")
    clock.advance(days=10)
    with store.begin() as mem:
        street = mem.facts.get("user.home", "street")
        assert street is not None
        mem.facts.forget(street.id)
    with store.begin(write=False) as mem:
        assert [(f.key, f.value) for f in mem.facts.list("user.home")] == [("city", "Berlin")]
        then = [(f.key, f.value) for f in mem.facts.list("user.home", as_of=T0 + timedelta(days=1))]
        assert then == [("city", "Leipzig")]
        mid = mem.facts.list("user.home", as_of=T0 + timedelta(days=15))
        assert [(f.key, f.value) for f in mid] == [
            ("city", "Berlin"),
            ("street", "Kastanienallee"),
        ]
        assert mem.facts.count(as_of=T0 + timedelta(days=15)) == 2
