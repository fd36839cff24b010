"""A search returns as many hits as it asks for whenever that many records match (all of them
when fewer do): its candidate pools grow with the limit (``scoring.Pools``). They once held
a word's best 30 matches, or a common word's newest 60, whatever the limit. Up to a limit of
30 the pools, and so the ranking, are the tuned ones. Messages, notes and skills, with their
filters, through the services and the tools; both backends."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert
from sqlalchemy.engine import URL

from philont import tools
from philont.db.models import Note, RawMessage, RawSession, Skill
from philont.domain.kinds import Role
from philont.memory import Memory
from philont.services.search import scoring
from philont.store import Store

BOTH_BACKENDS = True

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
RECORDS = 320
"""Records of each kind: ``alpha`` is in every one (common: more than BM25_MAX_DF = 200)."""

EVERY = {"alpha": 1, "beta": 2, "gamma": 5, "delta": 40, "柏林": 4}
"""Term -> it is in every n-th record."""

LANTERN_EVERY = 3
"""``lantern`` (long enough to be looked up as a substring) is in every third record: as a
word in every sixth, inside ``lanternfish`` in the others."""

FORGOTTEN_EVERY, FORGOTTEN_AFTER = 7, 50
"""Every seventh note is forgotten 50 minutes after it was written."""

TERMS = [*EVERY, "lantern"]


def at(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def content(i: int) -> str:
    words = [t for t, n in EVERY.items() if i % n == 0]
    if i % LANTERN_EVERY == 0:
        words.append("lantern" if i % (2 * LANTERN_EVERY) == 0 else "lanternfish")
    return " ".join([*words, "record", str(i)])


def holds(i: int, term: str) -> bool:
    """Whether record ``i`` holds ``term`` as a word (the CJK term: anywhere)."""
    if term == "lantern":
        return i % (2 * LANTERN_EVERY) == 0
    return i % EVERY[term] == 0


def forgotten_at(i: int) -> datetime | None:
    return at(i + FORGOTTEN_AFTER) if i % FORGOTTEN_EVERY == 0 else None


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    with Store.open(target) as s:
        fill(s)
        yield s


def fill(store: Store) -> None:
    """RECORDS messages (each in its own session: no neighbours lend context), notes and skills,
    record ``i`` written at ``at(i)``."""
    with store.begin() as mem:
        s = mem.session
        s.execute(
            insert(RawSession), [{"id": f"s{i}", "started_at": at(i)} for i in range(RECORDS)]
        )
        s.execute(
            insert(RawMessage),
            [
                {
                    "session_id": f"s{i}",
                    "role": Role.USER,
                    "content": content(i),
                    "timestamp": at(i),
                }
                for i in range(RECORDS)
            ],
        )
        s.execute(
            insert(Note),
            [
                {
                    "id": f"n{i}",
                    "content": content(i),
                    "importance": (i % 5) / 4,
                    "created_at": at(i),
                    "forgotten_at": forgotten_at(i),
                }
                for i in range(RECORDS)
            ],
        )
        s.execute(
            insert(Skill),
            [
                {
                    "id": f"k{i}",
                    "name": f"skill-{i}",
                    "description": content(i),
                    "trigger_keywords": ["record"],
                    "action_template": "1. do it",
                    "created_at": at(i),
                }
                for i in range(RECORDS)
            ],
        )


@dataclass(frozen=True)
class Ask:
    """One search: its terms, limit and filters (record indexes for times)."""

    kind: str
    terms: tuple[str, ...]
    limit: int
    since: int | None = None
    until: int | None = None
    as_of: int | None = None
    include_forgotten: bool = False
    excluded: frozenset[int] = frozenset()  # record indexes (messages only)

    def passes(self, i: int) -> bool:
        """Whether record ``i`` passes the filters (excluded ids do: they are dropped after
        ranking)."""
        end = min(x for x in (self.until, self.as_of, RECORDS) if x is not None)
        if not (self.since or 0) <= i <= end:
            return False
        if self.kind != "notes" or self.include_forgotten:
            return True
        gone = forgotten_at(i)
        return gone is None or (self.as_of is not None and gone > at(self.as_of))

    def expected(self) -> int:
        """min(matches, limit), the excluded left out. The matches: the records holding a
        term; when they are fewer than wanted (the limit and the excluded), also those holding
        ``lantern`` inside a word, as search then looks long words up as substrings."""
        passing = [i for i in range(RECORDS) if self.passes(i)]
        matches = {i for i in passing if any(holds(i, t) for t in self.terms)}
        if len(matches) < self.limit + len(self.excluded) and "lantern" in self.terms:
            matches |= {i for i in passing if i % LANTERN_EVERY == 0}
        return min(self.limit, len(matches - self.excluded))

    def run(self, mem: Memory) -> list[tuple[Any, float]]:
        query = " ".join(self.terms)
        window: dict[str, Any] = {
            "since": None if self.since is None else at(self.since),
            "until": None if self.until is None else at(self.until),
            "as_of": None if self.as_of is None else at(self.as_of),
            "limit": self.limit,
        }
        if self.kind == "messages":
            ids = _message_ids(mem, self.excluded)
            hits: list[Any] = mem.search.messages(query, exclude_ids=ids, **window)
        elif self.kind == "notes":
            hits = mem.search.notes(query, include_forgotten=self.include_forgotten, **window)
        else:
            hits = mem.search.skills(query, **window)
        return [(h.id, h.score) for h in hits]


def _message_ids(mem: Memory, records: frozenset[int]) -> set[int]:
    """The ids of the messages of these record indexes."""
    if not records:
        return set()
    rows = mem.session.query(RawMessage.id, RawMessage.session_id)
    return {mid for mid, sid in rows if int(sid[1:]) in records}


# --- reproductions ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["messages", "notes", "skills"])
@pytest.mark.parametrize(
    ("terms", "limit", "matching"),
    [
        (("alpha",), 250, RECORDS),  # a common word: once its newest 60 only
        (("beta",), 150, RECORDS // 2),  # a rare one (160 records): once its best 30 only
        (("柏林",), 100, RECORDS // 4),  # a CJK term
        (("alpha",), 10_000, RECORDS),  # the largest limit: every match
    ],
)
def test_a_large_limit_returns_that_many_hits_or_every_match(
    store: Store, kind: str, terms: tuple[str, ...], limit: int, matching: int
) -> None:
    ask = Ask(kind, terms, limit, include_forgotten=True)
    with store.begin(write=False) as mem:
        hits = ask.run(mem)
    assert len(hits) == min(limit, matching)
    assert len({i for i, _s in hits}) == len(hits)


def test_more_notes_than_the_contenders_cap(target: Path | URL) -> None:
    # Notes ranked by importance keep at most MAX_CONTENDERS candidates, or twice the limit.
    n = scoring.MAX_CONTENDERS + 500
    with Store.open(target) as store:
        with store.begin() as mem:
            rows = [
                {
                    "id": f"c{i}",
                    "content": f"omega {i}",
                    "importance": (i % 9) / 8,
                    "created_at": at(i),
                }
                for i in range(n)
            ]
            mem.session.execute(insert(Note), rows)
        with store.begin(write=False) as mem:
            hits = mem.search.notes("omega", limit=n - 100)
    assert len(hits) == n - 100
    assert len({h.id for h in hits}) == n - 100


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("recall_sessions", {"query": "alpha", "limit": 200}, 200),
        ("search_notes", {"query": "beta", "limit": 500}, RECORDS // 2),
        ("search_skills", {"query": "alpha", "limit": 120}, 120),
    ],
)
def test_the_tools_return_as_many_hits_as_asked_for(
    store: Store, tool: str, arguments: dict[str, Any], expected: int
) -> None:
    result = tools.call(tool, arguments, db=store)
    assert result.ok, result.text
    if tool == "search_notes":  # forgotten notes are left out
        expected -= len([i for i in range(0, RECORDS, 2) if forgotten_at(i) is not None])
    assert len(result.data) == expected


# --- properties ------------------------------------------------------------------------------


@st.composite
def asks(draw: st.DrawFn) -> Ask:
    kind = draw(st.sampled_from(["messages", "notes", "skills"]))
    terms = tuple(draw(st.lists(st.sampled_from(TERMS), min_size=1, max_size=2, unique=True)))
    limit = draw(st.one_of(st.integers(1, 40), st.integers(1, RECORDS + 20)))
    since, until, as_of = (draw(st.none() | st.integers(0, RECORDS - 1)) for _ in range(3))
    if since is not None and until is not None and until < since:
        since, until = until, since
    excluded: frozenset[int] = frozenset()
    if kind == "messages" and limit > scoring.CANDIDATES_PER_TERM:
        excluded = frozenset(draw(st.lists(st.integers(0, RECORDS - 1), max_size=40)))
    return Ask(
        kind,
        terms,
        limit,
        since,
        until,
        as_of,
        include_forgotten=draw(st.booleans()),
        excluded=excluded,
    )


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ask=asks())
def test_a_search_returns_min_of_matches_and_limit(store: Store, ask: Ask) -> None:
    with store.begin(write=False) as mem:
        hits = ask.run(mem)
    assert len(hits) == ask.expected()


def _tuned(cls: type[scoring.Pools], limit: int, *, excluded: int = 0) -> scoring.Pools:
    """The pools every search had before they grew with the limit."""
    return cls(
        wanted=limit + excluded,
        per_term=scoring.CANDIDATES_PER_TERM,
        presence=scoring.PRESENCE_WINDOW,
        rules=scoring.RULES_POOL,
    )


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ask=asks().filter(lambda a: a.limit <= scoring.CANDIDATES_PER_TERM))
def test_up_to_30_hits_are_ranked_as_with_the_tuned_pools(store: Store, ask: Ask) -> None:
    with store.begin(write=False) as mem:
        now = ask.run(mem)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scoring.Pools, "of", classmethod(_tuned))
        with store.begin(write=False) as mem:
            tuned = ask.run(mem)
    assert now == tuned


def test_the_pools_are_the_tuned_ones_up_to_a_limit_of_30_and_grow_past_it() -> None:
    assert scoring.Pools.of(30, excluded=100) == _tuned(scoring.Pools, 30, excluded=100)
    assert scoring.Pools.of(1) == _tuned(scoring.Pools, 1)
    grown = scoring.Pools.of(500, excluded=20)
    assert (grown.per_term, grown.presence, grown.rules) == (520, 1040, 520)
