"""What holds now: every "valid now" read of a state agrees with ``as_of(key, now)``.

Every store supersedes the key's current version, and supersession hides nothing in valid time:
a later version overrides an earlier one only where their windows overlap. So storing a past
state (Paris 2020-2022) after an open one (Berlin) leaves Berlin holding now, and ``list()``,
``count()``, ``get()``, the memory prefix and the ``list_facts`` / ``get_fact`` tools answer it,
as ``as_of(now)`` does (they answered nothing, or the expired Paris).

A key whose current version was forgotten is gone from them all (forgetting, and the decay sweep,
forget a fact; an older version it superseded does not come back), although ``as_of``, an audit
query, still answers an older version that nothing not forgotten overrides.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session

from philont import Memory, tools
from philont.services.prefix import PrefixLimits
from tests.support import joined

if TYPE_CHECKING:
    from conftest import FakeClock

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

NOW = datetime(2026, 6, 14, 4, 0, tzinfo=UTC)
KEYS = ("city", "job", "car")
# window bounds around the time of the reads: long past, just past, just ahead, far ahead
_BOUNDS = [timedelta(days=-1500), timedelta(days=-3), timedelta(hours=-1), timedelta(hours=1)]
_BOUNDS += [timedelta(days=30), None]


@dataclass(frozen=True)
class Store:
    key: str
    start: timedelta | None
    end: timedelta | None
    gap: timedelta


@dataclass(frozen=True)
class Forget:
    key: str
    newest: int  # which version of the key, 0 the newest (its history's order)


_STORE = st.builds(
    Store,
    key=st.sampled_from(KEYS),
    start=st.sampled_from(_BOUNDS),
    end=st.sampled_from(_BOUNDS),
    # apart: as_of ranks versions stored in one millisecond by id, not by the order written
    gap=st.sampled_from([timedelta(minutes=1), timedelta(days=2)]),
)
_FORGET = st.builds(Forget, key=st.sampled_from(KEYS), newest=st.integers(0, 3))
STEPS = st.lists(st.one_of(_STORE, _STORE, _FORGET), min_size=1, max_size=9)


@pytest.fixture
def mem(session: Session, clock: FakeClock) -> Memory:
    return joined(session, clock)


def _play(mem: Memory, clock: FakeClock, ns: str, steps: list[Store | Forget]) -> None:
    """Store and forget along ``steps``; the reads happen at ``NOW``, after the last step."""
    clock.now = NOW - timedelta(days=20)
    for n, step in enumerate(steps):
        if isinstance(step, Forget):
            versions = mem.facts.history(ns, step.key)
            if versions:
                mem.facts.forget(versions[min(step.newest, len(versions) - 1)].id)
            continue
        clock.now += step.gap
        start = None if step.start is None else NOW + step.start
        end = None if step.end is None else NOW + step.end
        if start is not None and end is not None and end < start:
            start, end = end, start
        mem.facts.store(ns, step.key, f"v{n}", valid_from=start, valid_until=end)
    clock.now = NOW


def _prefix_values(mem: Memory, ns: str) -> dict[str, Any]:
    text = mem.prefix.build(now=NOW, limits=PrefixLimits(budget_tokens=10**6, facts=10**4)).text
    line = re.compile(rf'^- {re.escape(ns)}\.(\w+) = "(v\d+)" \[', re.MULTILINE)
    return dict(line.findall(text))


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_every_valid_now_read_answers_what_as_of_now_answers(
    steps: list[Store | Forget], mem: Memory, clock: FakeClock, session: Session
) -> None:
    nested = session.begin_nested()  # each example starts from the same memory
    try:
        ns = f"user.t{uuid.uuid4().hex[:8]}"
        before = mem.facts.count()
        _play(mem, clock, ns, steps)

        expected: dict[str, Any] = {}
        current: dict[str, Any] = {}
        for key in KEYS:
            versions = mem.facts.history(ns, key) if any(s.key == key for s in steps) else []
            head = next((v for v in versions if v.active), None)
            held = mem.facts.as_of(ns, key, NOW)
            if head is not None:
                current[key] = head.value
                if held is not None:  # a forgotten current version forgets the key
                    expected[key] = held.value

        listed = {r.key: r.value for r in mem.facts.list(ns)}
        assert listed == expected, steps
        assert mem.facts.count() - before == len(expected), steps
        assert _prefix_values(mem, ns) == expected, steps
        tool = tools.call("list_facts", {"namespace": ns}, db=mem)
        assert tool.ok, tool.error
        assert {r["key"]: r["value"] for r in tool.data or []} == expected, steps
        for key in KEYS:
            strict = mem.facts.get(ns, key, include_expired=False)
            assert (strict and strict.value) == expected.get(key), (key, steps)
            default = mem.facts.get(ns, key)  # when nothing holds, the current version
            assert (default and default.value) == expected.get(key, current.get(key)), (key, steps)
            if key in expected:
                got = tools.call("get_fact", {"namespace": ns, "key": key}, db=mem)
                assert got.text.startswith(f'"{expected[key]}" ['), (got.text, steps)
                assert "(expired)" not in got.text and "not yet" not in got.text
    finally:
        nested.rollback()


def test_storing_a_past_state_keeps_the_open_one_holding_now(mem: Memory, clock: FakeClock) -> None:
    """The reviewer's case: a past residence stored after the current one."""
    mem.facts.store("user.home", "city", "Berlin")
    paris = mem.facts.store(
        "user.home",
        "city",
        "Paris",
        valid_from=datetime(2020, 1, 1, tzinfo=UTC),
        valid_until=datetime(2022, 1, 1, tzinfo=UTC),
    )

    assert [r.value for r in mem.facts.list("user.home")] == ["Berlin"]
    assert [r.value for r in mem.facts.list("user.home", include_expired=True)] == ["Paris"]
    assert mem.facts.get("user.home", "city", include_expired=False).value == "Berlin"  # type: ignore[union-attr]
    got = tools.call("get_fact", {"namespace": "user.home", "key": "city"}, db=mem)
    assert got.text.startswith('"Berlin" [state ? → ∞ | recorded '), got.text
    assert "(expired)" not in got.text
    assert '- user.home.city = "Berlin" [state ? → ∞' in mem.prefix.build().text
    # the chain is the original's: Paris superseded Berlin and is the current version
    assert [v.value for v in mem.facts.history("user.home", "city")] == ["Paris", "Berlin"]
    assert paris.supersedes is not None and paris.active


def test_as_of_lists_what_held_then_as_believed_then(mem: Memory, clock: FakeClock) -> None:
    """``list(as_of=T)`` applies the same rule to the versions current at ``T``."""
    mem.facts.store("user.home", "city", "Berlin")
    clock.advance(days=1)
    believed = clock.now
    clock.advance(days=1)
    mem.facts.store(
        "user.home", "city", "Paris", valid_until=believed - timedelta(days=400)
    )  # a past residence, told later
    clock.advance(days=1)
    mem.facts.store("user.home", "city", "Lyon", valid_from=clock.now - timedelta(hours=1))

    assert [r.value for r in mem.facts.list("user.home", as_of=believed)] == ["Berlin"]
    after_paris = believed + timedelta(days=1, hours=1)
    assert [r.value for r in mem.facts.list("user.home", as_of=after_paris)] == ["Berlin"]
    assert [r.value for r in mem.facts.list("user.home")] == ["Lyon"]
