"""FactService on a real SQLite file: versions, supersession, listing, decay, forgetting, time."""

from __future__ import annotations

import itertools
import math
import random
import uuid
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from philont.db.models import AccessLogEntry, Fact
from philont.domain.decay import PIN_SENTINEL
from philont.domain.kinds import FactKind
from philont.errors import (
    InvalidInputError,
    InvalidTimeRangeError,
    NotFoundError,
    ReservedNamespaceError,
)
from philont.services.facts import FactIdNotFoundError, FactService
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock

    from philont.schemas.facts import FactRecord


@pytest.fixture
def facts(session: Session, clock: FakeClock) -> FactService:
    return FactService(joined(session, clock))


def _rows(session: Session) -> tuple[int, int]:
    """(fact rows, access-log rows): what a refused call must leave unchanged."""
    n_facts = session.scalar(select(func.count()).select_from(Fact))
    n_access = session.scalar(select(func.count()).select_from(AccessLogEntry))
    return int(n_facts or 0), int(n_access or 0)


def _at(year: int, month: int = 1, day: int = 1) -> datetime:
    return datetime(year, month, day, tzinfo=UTC)


# --- storing and superseding ------------------------------------------------------------------


def test_storing_a_fact_returns_the_new_current_version(
    facts: FactService, clock: FakeClock
) -> None:
    rec = facts.store("user.home", "city", {"name": "Berlin", "since": [2025, 7]}, confidence=0.8)

    assert uuid.UUID(rec.id).version == 4
    assert rec.id == rec.id.lower()
    assert (rec.namespace, rec.key, rec.value) == (
        "user.home",
        "city",
        {"name": "Berlin", "since": [2025, 7]},
    )
    assert (rec.confidence, rec.fact_kind) == (0.8, FactKind.STATE)
    assert rec.created_at == rec.last_accessed_at == clock.now
    assert (rec.active, rec.pinned, rec.supersedes, rec.superseded_by) == (True, False, None, None)


def test_the_stored_value_is_returned_as_a_later_read_returns_it(facts: FactService) -> None:
    stored = facts.store("project", "stack", ("python", "sqlite"))

    assert stored.value == ["python", "sqlite"]
    assert facts.get("project", "stack") == stored


def test_a_superseded_fact_keeps_its_value_and_history_links_both_ways(
    facts: FactService, clock: FakeClock
) -> None:
    old = facts.store("user.home", "city", "Paris")
    clock.advance(days=1)
    new = facts.store("user.home", "city", "Berlin")

    old_now = facts.get_by_id(old.id)
    assert old_now is not None
    assert (old_now.value, old_now.superseded_by, old_now.active) == ("Paris", new.id, False)
    assert (new.supersedes, new.active) == (old.id, True)
    current = facts.get("user.home", "city")
    assert current is not None and current.id == new.id


def test_history_lists_the_current_version_first_then_newest_first_and_marks_each(
    facts: FactService, clock: FakeClock
) -> None:
    v1 = facts.store("user", "mood", "calm")
    clock.advance(hours=1)
    v2 = facts.store("user", "mood", "busy")
    clock.advance(hours=1)
    v3 = facts.store("user", "mood", "tired")
    facts.forget(v1.id)

    history = facts.history("user", "mood")

    assert [r.id for r in history] == [v3.id, v2.id, v1.id]
    assert [r.active for r in history] == [True, False, False]
    assert [r.forgotten_at is not None for r in history] == [False, False, True]


def test_history_of_versions_stored_in_the_same_millisecond_follows_the_chain(
    facts: FactService,
) -> None:
    stored = [facts.store("user", "pet", pet) for pet in ("cat", "dog", "fish", "owl")]

    assert [r.id for r in facts.history("user", "pet")] == [r.id for r in reversed(stored)]


def test_storing_over_several_legacy_current_rows_supersedes_them_all_q_s1(
    facts: FactService, session: Session, clock: FakeClock
) -> None:
    """The original superseded one arbitrary row; legacy files can hold several current rows."""
    for days_ago, ident, value in ((3, "legacy-a", "Rome"), (2, "legacy-b", "Oslo")):
        session.add(
            Fact(
                id=ident,
                namespace="user.home",
                key="city",
                value=value,
                confidence=1.0,
                fact_kind=FactKind.STATE,
                created_at=clock.now - timedelta(days=days_ago),
            )
        )
    session.flush()
    assert (got := facts.get("user.home", "city")) is not None and got.id == "legacy-b"

    new = facts.store("user.home", "city", "Berlin")

    assert new.supersedes == "legacy-b"
    for ident in ("legacy-a", "legacy-b"):
        row = facts.get_by_id(ident)
        assert row is not None and row.superseded_by == new.id
    assert [r.id for r in facts.list("user.home")] == [new.id]


def test_a_forgotten_current_version_is_neither_superseded_nor_resurrected_by_a_new_store(
    facts: FactService, clock: FakeClock
) -> None:
    old = facts.store("context", "location", "office")
    facts.forget(old.id)
    clock.advance(minutes=5)

    new = facts.store("context", "location", "home")

    old_now = facts.get_by_id(old.id, include_forgotten=True)
    assert old_now is not None
    assert (old_now.superseded_by, old_now.forgotten_at) == (None, clock.now - timedelta(minutes=5))
    assert new.supersedes is None


def test_unforgetting_an_older_version_keeps_a_single_current_version(
    facts: FactService, clock: FakeClock
) -> None:
    old = facts.store("context", "location", "office")
    facts.forget(old.id)
    clock.advance(minutes=5)
    new = facts.store("context", "location", "home")

    assert facts.unforget(old.id) is True

    assert [r.id for r in facts.list("context")] == [new.id]
    old_now = facts.get_by_id(old.id)
    assert old_now is not None and old_now.superseded_by == new.id


def test_unforgetting_a_newer_version_makes_it_current_over_an_older_one(
    facts: FactService, clock: FakeClock
) -> None:
    older = facts.store("context", "location", "office")
    facts.forget(older.id)
    clock.advance(minutes=5)
    newer = facts.store("context", "location", "home")
    facts.forget(newer.id)
    facts.unforget(older.id)

    facts.unforget(newer.id)

    assert [r.id for r in facts.list("context")] == [newer.id]
    assert (got := facts.get_by_id(newer.id)) is not None and got.supersedes == older.id
    assert (got := facts.get_by_id(older.id)) is not None and got.superseded_by == newer.id


def test_an_event_without_occurred_at_is_taken_to_have_occurred_when_stored(
    facts: FactService, clock: FakeClock
) -> None:
    rec = facts.store("user.meals", "lunch", "ramen", fact_kind="event")

    assert (rec.fact_kind, rec.occurred_at) == (FactKind.EVENT, clock.now)


def test_times_are_stored_in_utc_at_millisecond_precision(facts: FactService) -> None:
    local = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC).astimezone(ZoneInfo("Asia/Tokyo"))

    rec = facts.store("project", "deadline", "ship", valid_until=local)

    assert rec.valid_until == datetime(2026, 1, 1, 12, 0, 0, 123000, tzinfo=UTC)
    assert rec.valid_until is not None and rec.valid_until.tzinfo == UTC


@pytest.mark.parametrize("confidence", [0, 1, 0.0, 1.0, 0.5])
def test_confidence_at_and_inside_the_bounds_is_accepted(
    facts: FactService, confidence: float
) -> None:
    assert facts.store("user", "name", "Ada", confidence=confidence).confidence == confidence


@pytest.mark.parametrize("namespace", ["user", "user.preferences.food", "a-b_c.9", "x" * 100])
def test_well_formed_namespaces_are_accepted(facts: FactService, namespace: str) -> None:
    assert facts.store(namespace, "k", 1).namespace == namespace


@pytest.mark.parametrize("key", ["city", "A", "home_city", "v1.2-beta", "9lives", "k" * 64])
def test_slug_keys_are_accepted(facts: FactService, key: str) -> None:
    assert facts.store("user", key, 1).key == key


# --- refused input writes nothing ------------------------------------------------------------

NAIVE = datetime(2026, 1, 1, 12, 0)
BAD_STORES: list[tuple[str, dict[str, Any], type[Exception]]] = [
    ("confidence above 1", {"confidence": 1.5}, InvalidInputError),
    ("confidence below 0", {"confidence": -0.1}, InvalidInputError),
    ("confidence as text", {"confidence": "high"}, InvalidInputError),
    ("confidence NaN", {"confidence": math.nan}, InvalidInputError),
    ("confidence a bool", {"confidence": True}, InvalidInputError),
    ("empty namespace", {"namespace": ""}, InvalidInputError),
    ("uppercase namespace", {"namespace": "User"}, InvalidInputError),
    ("empty segment", {"namespace": "a..b"}, InvalidInputError),
    ("leading space", {"namespace": " user"}, InvalidInputError),
    ("trailing dot", {"namespace": "user."}, InvalidInputError),
    ("too long namespace", {"namespace": "x" * 101}, InvalidInputError),
    ("key with a space", {"key": "a b"}, InvalidInputError),
    ("key with a colon", {"key": "Authorization: x"}, InvalidInputError),
    ("empty key", {"key": ""}, InvalidInputError),
    ("key starting with a dash", {"key": "-x"}, InvalidInputError),
    ("too long key", {"key": "k" * 65}, InvalidInputError),
    ("None value", {"value": None}, InvalidInputError),
    ("a set value", {"value": {1, 2}}, InvalidInputError),
    ("NaN inside the value", {"value": {"x": math.nan}}, InvalidInputError),
    ("unknown kind", {"fact_kind": "rumour"}, InvalidInputError),
    (
        "valid_until before valid_from",
        {"valid_from": _at(2026, 2), "valid_until": _at(2026, 1)},
        InvalidTimeRangeError,
    ),
    ("naive occurred_at", {"occurred_at": NAIVE}, InvalidInputError),
    ("naive valid_from", {"valid_from": NAIVE}, InvalidInputError),
    ("a date string", {"valid_until": "2026-01-01"}, InvalidInputError),
    ("tau zero", {"decay_tau_days": 0}, InvalidInputError),
    ("tau negative but not the pin", {"decay_tau_days": -5}, InvalidInputError),
    ("tau NaN", {"decay_tau_days": math.nan}, InvalidInputError),
    ("reserved namespace", {"namespace": "self"}, ReservedNamespaceError),
    ("reserved child namespace", {"namespace": "self.summary"}, ReservedNamespaceError),
]


@pytest.mark.parametrize(
    ("overrides", "error"), [c[1:] for c in BAD_STORES], ids=[c[0] for c in BAD_STORES]
)
def test_a_refused_store_raises_its_typed_error_and_writes_nothing(
    facts: FactService, session: Session, overrides: dict[str, Any], error: type[Exception]
) -> None:
    existing = facts.store("user", "city", "Paris")
    before = _rows(session)
    args: dict[str, Any] = {"namespace": "user", "key": "city", "value": "Berlin", **overrides}

    with pytest.raises(error):
        facts.store(args.pop("namespace"), args.pop("key"), args.pop("value"), **args)

    assert _rows(session) == before
    still = facts.get_by_id(existing.id)
    assert still is not None and still.active


def test_the_self_root_is_reserved_but_readable(facts: FactService) -> None:
    """Only the self-reflector writes ``self`` and ``self.*`` (the original guarded only the
    exact ``self``); reading them is ordinary."""
    assert facts.get("self", "summary") is None
    assert facts.list("self", prefix=True) == []


def test_a_bad_key_message_says_why_and_gives_an_example(facts: FactService) -> None:
    with pytest.raises(InvalidInputError) as info:
        facts.store("user", "home city", "Berlin")

    assert "without spaces or colons" in str(info.value)
    assert "e.g. 'home_city'" in str(info.value)


@pytest.mark.parametrize(
    "call",
    [
        lambda f: f.forget("no-such-id"),
        lambda f: f.unforget("no-such-id"),
        lambda f: f.pin("no-such-id"),
        lambda f: f.unpin("no-such-id"),
        lambda f: f.set_tau("no-such-id", 30),
    ],
    ids=["forget", "unforget", "pin", "unpin", "set_tau"],
)
def test_an_unknown_id_is_a_not_found_error_and_writes_nothing(
    facts: FactService, session: Session, call: Any
) -> None:
    facts.store("user", "city", "Paris")
    before = _rows(session)

    with pytest.raises(FactIdNotFoundError) as info:
        call(facts)

    assert isinstance(info.value, NotFoundError)
    assert info.value.fact_id == "no-such-id"
    assert _rows(session) == before


# --- reading ---------------------------------------------------------------------------------


def test_get_misses_an_unknown_key_and_a_forgotten_fact(facts: FactService) -> None:
    rec = facts.store("user", "city", "Paris")
    facts.forget(rec.id)

    assert facts.get("user", "city") is None
    assert facts.get("user", "nothing") is None
    assert facts.get_by_id(rec.id) is None
    assert facts.get_by_id(rec.id, include_forgotten=True) is not None


def test_get_can_treat_an_expired_state_as_a_miss_q_s2(
    facts: FactService, clock: FakeClock
) -> None:
    """The original always returned expired states; the default keeps that, the option fixes
    it."""
    facts.store("context", "meeting", "room 4", valid_until=clock.now + timedelta(hours=1))
    clock.advance(hours=2)

    assert facts.get("context", "meeting", include_expired=False) is None
    assert facts.get("context", "meeting") is not None


def test_listing_one_namespace_is_ordered_by_key_and_shows_only_current_versions(
    facts: FactService,
) -> None:
    facts.store("user", "name", "Ada")
    facts.store("user", "city", "Paris")
    facts.store("user", "city", "Berlin")
    gone = facts.store("user", "age", 36)
    facts.forget(gone.id)
    facts.store("user.home", "street", "Main St")

    listed = facts.list("user")

    assert [(r.key, r.value) for r in listed] == [("city", "Berlin"), ("name", "Ada")]


@pytest.mark.parametrize(
    ("namespace", "prefix"), [("user", True), ("user.*", False)], ids=["prefix flag", "pattern"]
)
def test_prefix_listing_includes_the_root_and_its_children_but_never_lookalikes(
    facts: FactService, namespace: str, prefix: bool
) -> None:
    for ns in ("user", "user.home", "user.home.kitchen", "username", "users.x", "project"):
        facts.store(ns, "k", ns)

    listed = facts.list(namespace, prefix=prefix)

    assert sorted(r.namespace for r in listed) == ["user", "user.home", "user.home.kitchen"]


@pytest.mark.parametrize("everything", [None, "*"])
def test_listing_every_namespace_is_ordered_by_namespace_then_key(
    facts: FactService, everything: str | None
) -> None:
    facts.store("user", "b", 1)
    facts.store("context", "z", 2)
    facts.store("user", "a", 3)

    assert [(r.namespace, r.key) for r in facts.list(everything)] == [
        ("context", "z"),
        ("user", "a"),
        ("user", "b"),
    ]


def test_an_underscore_in_a_prefix_is_a_literal_not_a_wildcard(facts: FactService) -> None:
    facts.store("my_ns.a", "k", 1)
    facts.store("myxns.b", "k", 2)

    assert [r.namespace for r in facts.list("my_ns.*")] == ["my_ns.a"]


def test_listing_with_include_expired_false_drops_closed_states_but_keeps_events(
    facts: FactService, clock: FakeClock
) -> None:
    facts.store("context", "meeting", "room 4", valid_until=clock.now + timedelta(hours=1))
    facts.store("context", "arrived", "9:00", fact_kind="event", valid_until=clock.now)
    facts.store("context", "weather", "rain")
    clock.advance(hours=2)

    listed = facts.list("context", include_expired=False)

    assert [r.key for r in listed] == ["arrived", "weather"]
    assert len(facts.list("context", include_expired=True)) == 3


@pytest.mark.parametrize(
    ("cafe_age", "expected_first"),
    [(timedelta(minutes=1), "context.location"), (timedelta(days=3), "user.home")],
    ids=["fresh café wins", "3-day-old café loses"],
)
def test_ranked_listing_puts_a_lasting_fact_above_a_stale_momentary_one(
    facts: FactService, clock: FakeClock, cafe_age: timedelta, expected_first: str
) -> None:
    start = clock.now
    clock.now = start - timedelta(days=365)
    facts.store("user.home", "city", "the user moved to Berlin last year", confidence=0.9)
    clock.now = start - cafe_age
    facts.store("context.location", "now", "the user is in a café right now")
    clock.now = start

    ranked = facts.list(None, ranked=True)

    assert ranked[0].namespace == expected_first
    by_ns = {r.namespace: r.score for r in ranked}
    assert by_ns["user.home"] == pytest.approx(0.9)
    assert by_ns["context.location"] == pytest.approx(math.exp(-cafe_age / timedelta(days=1)))


def test_listing_refreshes_nothing(facts: FactService, clock: FakeClock) -> None:
    rec = facts.store("user", "city", "Paris")
    clock.advance(days=1)

    assert facts.list("user")[0].last_accessed_at == rec.created_at
    assert facts.list("user")[0].score is None


# --- decay, pins and forgetting ----------------------------------------------------------------


def test_a_pinned_fact_never_decays(facts: FactService, clock: FakeClock) -> None:
    rec = facts.pin(facts.store("context", "badge", "A-17", confidence=0.7).id)
    clock.advance(days=1000)

    assert (rec.pinned, rec.decay_tau_days) == (True, PIN_SENTINEL)
    assert facts.score(rec) == 0.7
    assert facts.forget_candidates() == []


def test_unpinning_restores_the_namespace_decay(facts: FactService, clock: FakeClock) -> None:
    rec = facts.store("context", "badge", "A-17")
    facts.pin(rec.id)
    unpinned = facts.unpin(rec.id)
    clock.advance(days=2)

    assert (unpinned.pinned, unpinned.decay_tau_days) == (False, None)
    assert facts.score(unpinned) == pytest.approx(math.exp(-2))


@pytest.mark.parametrize("given", [None, PIN_SENTINEL, 7.0])
@pytest.mark.parametrize("held", [None, PIN_SENTINEL, 30.0])
def test_a_new_version_keeps_the_keys_decay_setting_unless_given_one(
    facts: FactService, held: float | None, given: float | None
) -> None:
    """A pin (or τ override) belongs to the key a person set it on: re-storing its value
    (the agent's store_fact passes none) kept it in Philont only by chance, never."""
    first = facts.store("context", "badge", "A-17")
    if held is not None:
        facts.set_tau(first.id, held)

    second = facts.store("context", "badge", "B-2", decay_tau_days=given)

    expected = held if given is None else given
    assert second.decay_tau_days == expected
    assert second.pinned is (expected == PIN_SENTINEL)
    assert facts.get_by_id(second.id) == second  # as stored, not only as returned


@pytest.mark.parametrize(
    ("stored", "expected"),
    [(0.0, None), (math.nan, None), (-5.0, PIN_SENTINEL), (math.inf, PIN_SENTINEL), (2.5, 2.5)],
)
def test_a_setting_no_write_could_make_is_inherited_as_what_it_means(
    facts: FactService, session: Session, stored: float, expected: float | None
) -> None:
    """A 0 or NaN written by the original (or by hand) is not carried on (it scored the new
    version 0, or could not be scored); any negative or infinite τ never decays: the pin."""
    first = facts.store("context", "badge", "A-17")
    session.execute(update(Fact).where(Fact.id == first.id).values(decay_tau_days=stored))

    second = facts.store("context", "badge", "B-2")

    assert second.decay_tau_days == expected
    assert facts.get_by_id(second.id) == second
    assert facts.score(second) == pytest.approx(1.0)  # just stored: scored, not decayed to 0


def test_a_forgotten_versions_pin_is_not_inherited(facts: FactService) -> None:
    first = facts.pin(facts.store("context", "badge", "A-17").id)
    facts.forget(first.id)

    assert facts.store("context", "badge", "B-2").decay_tau_days is None


def test_set_tau_overrides_the_namespace_time_constant(
    facts: FactService, clock: FakeClock
) -> None:
    rec = facts.set_tau(facts.store("context", "trip", "Lisbon").id, 30)
    clock.advance(days=30)

    assert rec.decay_tau_days == 30
    assert facts.score(rec) == pytest.approx(math.exp(-1))


@pytest.mark.parametrize("days", [0, -2, math.inf, math.nan, True])
def test_set_tau_refuses_values_other_than_positive_days_or_the_pin(
    facts: FactService, days: float
) -> None:
    rec = facts.store("context", "trip", "Lisbon")

    with pytest.raises(InvalidInputError):
        facts.set_tau(rec.id, days)

    assert facts.get_by_id(rec.id) == rec


def test_forget_candidates_are_unpinned_current_facts_below_the_threshold_lowest_first(
    facts: FactService, clock: FakeClock
) -> None:
    old = facts.store("context", "a", 1)
    clock.advance(days=1)
    newer = facts.store("context", "b", 2)
    pinned = facts.store("context", "c", 3)
    facts.pin(pinned.id)
    facts.store("user", "name", "Ada")
    facts.store("project", "x", 1)
    clock.advance(days=3)

    candidates = facts.forget_candidates()

    assert [rec.id for rec, _ in candidates] == [old.id, newer.id]
    scores = [s for _, s in candidates]
    assert scores == pytest.approx([math.exp(-4), math.exp(-3)])
    assert [rec.score for rec, _ in candidates] == scores
    assert facts.forget_candidates(limit=1, namespace="context")[0][0].id == old.id
    assert facts.forget_candidates(namespace="project") == []


def test_sweep_soft_forgets_the_candidates_and_returns_how_many(
    facts: FactService, clock: FakeClock
) -> None:
    a = facts.store("context", "a", 1)
    b = facts.store("context", "b", 2)
    keep = facts.store("user", "name", "Ada")
    clock.advance(days=5)

    assert facts.sweep() == 2

    for rec in (a, b):
        gone = facts.get_by_id(rec.id, include_forgotten=True)
        assert gone is not None and gone.forgotten_at == clock.now
    assert facts.get_by_id(keep.id) is not None
    assert facts.sweep() == 0


def test_forgetting_twice_keeps_the_first_forgotten_at(
    facts: FactService, clock: FakeClock
) -> None:
    rec = facts.store("user", "city", "Paris")
    first = clock.now

    assert facts.forget(rec.id) is True
    clock.advance(days=1)
    assert facts.forget(rec.id) is False

    again = facts.get_by_id(rec.id, include_forgotten=True)
    assert again is not None and again.forgotten_at == first
    assert facts.unforget(rec.id) is True
    assert facts.unforget(rec.id) is False


# --- time: as_of and events ------------------------------------------------------------------


@pytest.fixture
def moves(facts: FactService, clock: FakeClock) -> FactService:
    """Recorded 2021: Paris since 2020. Recorded 2023 (a correction): Berlin since mid-2022.
    Recorded 2024-05: Lisbon for January 2024 only."""
    clock.now = _at(2021)
    facts.store("user.home", "city", "Paris", valid_from=_at(2020))
    clock.now = _at(2023, 3)
    facts.store("user.home", "city", "Berlin", valid_from=_at(2022, 6))
    clock.now = _at(2024, 5)
    facts.store(
        "user.home", "city", "Lisbon", valid_from=_at(2024, 1), valid_until=_at(2024, 1, 31)
    )
    clock.now = _at(2026)
    return facts


@pytest.mark.parametrize(
    ("at", "believed_at", "expected"),
    [
        (_at(2021, 6), None, "Paris"),
        (_at(2022, 9), None, "Berlin"),
        (_at(2022, 9), _at(2022, 12), "Paris"),
        (_at(2022, 6), None, "Berlin"),
        (_at(2024, 1, 15), None, "Lisbon"),
        (_at(2024, 1, 31), None, "Lisbon"),
        (_at(2024, 3), None, "Berlin"),
        (_at(2024, 1, 15), _at(2024, 4), "Berlin"),
        (_at(2019, 6), None, None),
        (_at(2021, 6), _at(2020, 6), None),
    ],
    ids=[
        "before the move",
        "after the move",
        "believed before the correction",
        "valid_from is inclusive",
        "inside a closed window",
        "valid_until is inclusive",
        "after a closed window",
        "closed window not yet recorded",
        "before anything held",
        "before anything was recorded",
    ],
)
def test_as_of_answers_the_valid_version_as_believed_at_a_transaction_time(
    moves: FactService, at: datetime, believed_at: datetime | None, expected: str | None
) -> None:
    rec = moves.as_of("user.home", "city", at, believed_at=believed_at)

    assert (rec.value if rec else None) == expected


def test_as_of_answers_with_a_forgotten_version_only_as_believed_before_it_was_forgotten(
    moves: FactService, clock: FakeClock
) -> None:
    paris = moves.history("user.home", "city")[-1]
    moves.forget(paris.id)  # at 2026
    at = _at(2021, 6)

    assert moves.as_of("user.home", "city", at) is None  # believed now: forgotten
    believed = moves.as_of("user.home", "city", at, believed_at=_at(2022))
    assert believed is not None and believed.value == "Paris"  # as we believed in 2022
    assert [f.value for f in moves.list("user.home", as_of=at)] == ["Paris"]  # list agrees


def test_as_of_for_events_uses_occurred_at_and_ignores_the_valid_window(
    facts: FactService, clock: FakeClock
) -> None:
    for day, dish in ((3, "ramen"), (4, "pasta")):
        facts.store(
            "user.meals",
            "lunch",
            dish,
            fact_kind=FactKind.EVENT,
            occurred_at=_at(2026, 6, day),
            valid_until=_at(2026, 6, day),
        )

    assert facts.as_of("user.meals", "lunch", _at(2026, 6, 2)) is None
    assert (r := facts.as_of("user.meals", "lunch", _at(2026, 6, 3))) and r.value == "ramen"
    assert (r := facts.as_of("user.meals", "lunch", _at(2026, 6, 10))) and r.value == "pasta"


def test_events_are_listed_by_occurred_at_and_not_lost_by_restoring_the_same_key_q_s3(
    facts: FactService, clock: FakeClock
) -> None:
    """Re-storing "lunch" is a new occurrence; the original kept only the latest one visible."""
    for day, dish in ((5, "soup"), (3, "ramen"), (4, "pasta")):
        clock.advance(minutes=1)
        facts.store("user.meals", "lunch", dish, fact_kind="event", occurred_at=_at(2026, 6, day))
    facts.store("user.meals", "diet", "vegetarian")

    events = facts.events("user")

    assert [e.value for e in events] == ["ramen", "pasta", "soup"]
    assert [r.value for r in facts.list("user.meals")] == ["vegetarian", "pasta"]


def test_a_corrected_event_occurrence_is_listed_once(facts: FactService) -> None:
    when = datetime(2026, 6, 3, 12, tzinfo=UTC)
    facts.store("user.meals", "lunch", "rameen", fact_kind="event", occurred_at=when)
    facts.store("user.meals", "lunch", "ramen", fact_kind="event", occurred_at=when)

    assert [e.value for e in facts.events()] == ["ramen"]


@pytest.mark.parametrize(
    ("since", "until", "expected"),
    [
        (_at(2026, 6, 3), _at(2026, 6, 4), ["ramen", "pasta"]),
        (_at(2026, 6, 4), None, ["pasta", "soup"]),
        (None, _at(2026, 6, 3), ["ramen"]),
        (_at(2026, 6, 6), None, []),
    ],
)
def test_event_window_bounds_are_inclusive(
    facts: FactService, since: datetime | None, until: datetime | None, expected: list[str]
) -> None:
    for day, dish in ((3, "ramen"), (4, "pasta"), (5, "soup")):
        facts.store("user.meals", "lunch", dish, fact_kind="event", occurred_at=_at(2026, 6, day))

    assert [e.value for e in facts.events(since=since, until=until)] == expected


def test_events_match_a_namespace_as_a_prefix_unless_told_otherwise(
    facts: FactService, clock: FakeClock
) -> None:
    for ns, key, value in (("user", "woke", "7:00"), ("user.meals", "lunch", "ramen")):
        facts.store(ns, key, value, fact_kind="event")
        clock.advance(hours=5)
    facts.store("username", "x", "y", fact_kind="event")

    assert [e.value for e in facts.events("user")] == ["7:00", "ramen"]
    assert [e.value for e in facts.events("user", prefix=False)] == ["7:00"]


def test_a_reversed_event_window_is_refused(facts: FactService) -> None:
    with pytest.raises(InvalidTimeRangeError):
        facts.events(since=_at(2026, 2), until=_at(2026, 1))


def test_as_of_refuses_a_naive_time(facts: FactService) -> None:
    with pytest.raises(InvalidInputError):
        facts.as_of("user", "city", NAIVE)


def _event_histories() -> list[tuple[int, list[tuple[str, int, int]]]]:
    """Seeded histories of one event key: ("store", day, value) and ("forget", version, 0)
    steps, stores and forgets of corrections (same day) mixed."""
    out = []
    for seed in range(24):
        rng = random.Random(seed)
        steps: list[tuple[str, int, int]] = []
        stored = 0
        for n in range(rng.randint(2, 7)):
            if stored and rng.random() < 0.35:
                steps.append(("forget", rng.randrange(stored), 0))
            else:
                steps.append(("store", rng.choice((3, 4, 5)), n))
                stored += 1
        out.append((seed, steps))
    # the reported case and its kin: an occurrence corrected, then the correction forgotten
    s3, s4 = ("store", 3), ("store", 4)
    for n, steps in enumerate(
        (
            [(*s3, 0), (*s3, 1), ("forget", 1, 0)],
            [(*s3, 0), (*s3, 1), (*s3, 2), ("forget", 2, 0)],
            [(*s3, 0), (*s4, 1), (*s3, 2), ("forget", 2, 0)],
            [(*s3, 0), (*s3, 1), ("forget", 1, 0), ("forget", 0, 0)],
        )
    ):
        out.append((100 + n, steps))
    return out


@pytest.mark.parametrize(("seed", "steps"), _event_histories())
def test_events_list_each_occurrence_as_as_of_answers_it_whatever_was_forgotten(
    facts: FactService, clock: FakeClock, seed: int, steps: list[tuple[str, int, int]]
) -> None:
    """Forgetting an occurrence's correction brings back what it corrected, in ``events`` as in
    ``as_of`` (``events`` hid both)."""
    versions = []
    for op, arg, value in steps:
        clock.advance(minutes=1)
        if op == "store":
            versions.append(
                facts.store(
                    "user.meals", "lunch", value, fact_kind="event", occurred_at=_at(2026, 6, arg)
                )
            )
        else:
            facts.forget(versions[arg].id)
    clock.advance(minutes=1)
    days = sorted({v.occurred_at for v in versions if v.occurred_at is not None})
    held = [(day, facts.as_of("user.meals", "lunch", day)) for day in days]
    # as_of at an occurrence none of whose versions is left answers an earlier one
    expected = [r.id for day, r in held if r is not None and r.occurred_at == day]

    assert [e.id for e in facts.events()] == expected, steps


def _clock_histories() -> list[tuple[int, list[tuple[int, str, int]]]]:
    """Seeded histories of one key: (clock move in minutes, 0 mostly: the same millisecond, op,
    day) with op "event" (a store at that day), "state" or "forget" (day: the version)."""
    out = []
    for seed in range(16):
        rng = random.Random(seed)
        steps: list[tuple[int, str, int]] = []
        stored = 0
        move = 0
        for _ in range(rng.randint(2, 6)):
            if stored and rng.random() < 0.2:
                steps.append((rng.choice((0, 1)), "forget", rng.randrange(stored)))
                # the next store a minute later: one in the same millisecond as the forget of
                # the current version supersedes nothing (nothing is current): no link to read
                move = 1
                continue
            move = max(move, rng.choice((0, 0, 0, 1)))
            steps.append((move, rng.choice(("event", "event", "state")), rng.choice((3, 4))))
            stored += 1
            move = 0
        out.append((seed, steps))
    return out


@pytest.mark.parametrize(("seed", "steps"), _clock_histories())
def test_of_versions_stored_in_one_millisecond_the_later_is_the_newest(
    facts: FactService,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    seed: int,
    steps: list[tuple[int, str, int]],
) -> None:
    """Versions of one key stored in one millisecond (equal ``created_at``): get, as_of and events
    agree on the one stored later (as_of and events picked one of them by its random id; here
    each id is smaller than the last, so that pick is always the older)."""
    falling = itertools.count()
    monkeypatch.setattr(uuid, "uuid4", lambda: uuid.UUID(int=2**127 - next(falling)))
    versions: list[FactRecord] = []
    forgotten: set[str] = set()
    for move, op, arg in steps:
        clock.advance(minutes=move)
        if op == "forget":
            facts.forget(versions[arg].id)
            forgotten.add(versions[arg].id)
            continue
        kind = {"fact_kind": "event", "occurred_at": _at(2026, 6, arg)} if op == "event" else {}
        versions.append(facts.store("user.meals", "lunch", len(versions), **kind))
    held = [v for v in versions if v.id not in forgotten]
    got = facts.get("user.meals", "lunch")
    assert (got and got.id) == (versions[-1].id if versions[-1] in held else None), steps
    # each occurrence: its version stored last and not forgotten, in events as in as_of
    last: dict[datetime, str] = {}
    for v in held:
        if v.fact_kind is FactKind.EVENT and v.occurred_at is not None:
            last[v.occurred_at] = v.id
    assert {e.id for e in facts.events()} == set(last.values()), steps
    for day, vid in last.items():
        answer = facts.as_of("user.meals", "lunch", day)
        if answer is not None and answer.fact_kind is FactKind.EVENT:
            assert answer.id == vid, steps
