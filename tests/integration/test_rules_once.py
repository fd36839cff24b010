"""Rules that used to exist in several copies now exist once: every former caller (services, the
prefix, the tools, search) passes through the same table of cases and agrees with the domain
function."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.engine import URL
from typer.testing import CliRunner

from philont import tools
from philont.cli import app
from philont.db.types import to_epoch_ms
from philont.domain import facts as fact_rules
from philont.domain.kinds import FactKind
from philont.domain.maturity import Grade, callable_skill
from philont.domain.timeparse import iso
from philont.services.prefix import PrefixLimits
from philont.store import Store

BOTH_BACKENDS = True

NOW = datetime(2026, 6, 14, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Store:
    target: Path | URL = (
        request.getfixturevalue("pg_agent")() if backend == "postgres" else tmp_path / "m.sqlite"
    )
    s = Store.open(target, clock=lambda: NOW)
    request.addfinalizer(s.close)
    return s


# --- fact expiry -----------------------------------------------------------------------------

EXPIRY: list[tuple[str, FactKind, timedelta | None, bool]] = [
    # (case, kind, valid_until relative to now, expired?)
    ("state without an end", FactKind.STATE, None, False),
    ("state ending later", FactKind.STATE, timedelta(days=1), False),
    ("state ending this millisecond", FactKind.STATE, timedelta(0), False),
    ("state that ended a millisecond ago", FactKind.STATE, timedelta(milliseconds=-1), True),
    ("state that ended a year ago", FactKind.STATE, timedelta(days=-365), True),
    ("event with a past window", FactKind.EVENT, timedelta(days=-365), False),
]


@pytest.mark.parametrize(("case", "kind", "until", "expired"), EXPIRY, ids=[c[0] for c in EXPIRY])
def test_fact_expiry_is_one_rule_for_every_path(
    store: Store, case: str, kind: FactKind, until: timedelta | None, expired: bool
) -> None:
    end = None if until is None else NOW + until
    start = None if end is None or kind is FactKind.EVENT else end - timedelta(days=400)
    assert (
        fact_rules.is_expired(
            fact_kind=kind.value,
            valid_until_ms=None if end is None else to_epoch_ms(end),
            now_ms=to_epoch_ms(NOW),
        )
        is expired
    )
    with store.begin() as mem:
        record = mem.facts.store(
            "rules", "k", "v", fact_kind=kind, valid_from=start, valid_until=end
        )
        assert record.is_expired_at(NOW) is expired
        listed = mem.facts.list("rules", include_expired=False)
        ranked = mem.facts.list("rules", include_expired=False, ranked=True)
        assert (listed == []) is expired and (ranked == []) is expired
        assert mem.facts.count(include_expired=False) == (0 if expired else 1)
        assert ("rules.k" in mem.prefix.build().text) is not expired
        assert (mem.facts.get("rules", "k", include_expired=False) is None) is expired
    got = tools.call("get_fact", {"namespace": "rules", "key": "k"}, db=store)
    assert got.ok and got.text.endswith(" (expired)") is expired


# --- the fact time tag -----------------------------------------------------------------------

T = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
REC = " | recorded 2026-06-14T12:00:00.000Z]"
# (case, kind, occurred_at, valid_from, valid_until, tag)
TAGS: list[tuple[str, FactKind, datetime | None, datetime | None, datetime | None, str]] = [
    ("open state", FactKind.STATE, None, None, None, "[state ? → ∞" + REC),
    (
        "bounded state",
        FactKind.STATE,
        None,
        T,
        T + timedelta(days=90),
        "[state 2026-05-01T09:30:00.000Z → 2026-07-30T09:30:00.000Z" + REC,
    ),
    ("event", FactKind.EVENT, T, None, None, "[event@2026-05-01T09:30:00.000Z" + REC),
    # The times that were stored but never shown: a state's occurred_at, an event's validity.
    (
        "state as of a time",
        FactKind.STATE,
        T,
        None,
        None,
        "[state ? → ∞, as of 2026-05-01T09:30:00.000Z" + REC,
    ),
    (
        "event valid until",
        FactKind.EVENT,
        T,
        None,
        T + timedelta(days=90),
        "[event@2026-05-01T09:30:00.000Z, valid ? → 2026-07-30T09:30:00.000Z" + REC,
    ),
    (
        "event valid from, occurred when stored",
        FactKind.EVENT,
        None,
        T,
        None,
        "[event@2026-06-14T12:00:00.000Z, valid 2026-05-01T09:30:00.000Z → ∞" + REC,
    ),
]


KEYS = itertools.count()


def _tag_on_every_path(
    store: Store,
    kind: FactKind,
    occurred: datetime | None,
    start: datetime | None,
    end: datetime | None,
) -> str:
    """The tag of one stored fact, checked equal on every path that shows a fact: the record,
    store_fact's answer, the prefix, get_fact, list_facts (and the command line on SQLite).
    A key of its own each time: the examples share the store, and an older version of one
    key that holds now is what get() answers when the newer one does not."""
    key = f"tag{next(KEYS)}"
    args = {"namespace": "rules", "key": key, "value": "v", "fact_kind": kind.value}
    for name, value in (("occurred_at", occurred), ("valid_from", start), ("valid_until", end)):
        if value is not None:
            args[name] = value.isoformat()
    stored = tools.call("store_fact", args, db=store)
    assert stored.ok, stored.text
    with store.begin() as mem:
        record = mem.facts.get("rules", key)
        assert record is not None
        tag = record.time_tag()
        prefix = mem.prefix.build(limits=PrefixLimits(budget_tokens=10**5)).text
    assert f"Stored rules.{key} {tag}" in stored.text
    # the prefix shows what holds now (not an expired state, nor one yet to begin)
    assert (f'- rules.{key} = "v" {tag}' in prefix) is record.is_valid_at(NOW)
    assert tag in tools.call("get_fact", {"namespace": "rules", "key": key}, db=store).text
    listed = tools.call("list_facts", {"namespace": "rules"}, db=store).text
    assert (tag in listed) is record.is_valid_at(NOW)  # lists what holds now
    if store.path is not None:
        shown = CliRunner().invoke(
            app, ["facts", "get", "rules", key, "--db", str(store.path), "--json"]
        )
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.output)["time"] == tag
    return tag


@pytest.mark.parametrize(
    ("case", "kind", "occurred", "start", "end", "tag"), TAGS, ids=[c[0] for c in TAGS]
)
def test_the_time_tag_is_one_rule_for_every_path(
    store: Store,
    case: str,
    kind: FactKind,
    occurred: datetime | None,
    start: datetime | None,
    end: datetime | None,
    tag: str,
) -> None:
    assert _tag_on_every_path(store, kind, occurred, start, end) == tag


times = st.none() | st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
).map(lambda t: t.replace(microsecond=t.microsecond // 1000 * 1000))


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(kind=st.sampled_from(FactKind), occurred=times, start=times, end=times)
def test_every_stored_time_of_a_fact_is_shown_the_same_everywhere(
    store: Store,
    kind: FactKind,
    occurred: datetime | None,
    start: datetime | None,
    end: datetime | None,
) -> None:
    assume(start is None or end is None or start <= end)
    tag = _tag_on_every_path(store, kind, occurred, start, end)
    for value in (occurred, start, end):  # each time it has is in its tag
        if value is not None:
            assert iso(value) in tag
    if kind is FactKind.STATE and occurred is not None:
        assert f", as of {iso(occurred)} |" in tag
    if kind is FactKind.EVENT and (start, end) != (None, None):
        assert ", valid " in tag


# --- fact ranking ----------------------------------------------------------------------------


def test_fact_ranking_is_one_rule_for_the_service_and_the_prefix(store: Store) -> None:
    ages = {"fresh": 0, "week": 7, "month": 30, "year": 365}
    with store.begin() as mem:
        for key, days in ages.items():
            for ns in ("context", "user.home"):  # two time constants
                mem.facts.store(ns, key, key)
                mem.session.execute(
                    text(
                        "UPDATE memory_facts SET created_at = :at, last_accessed_at = :at"
                        " WHERE namespace = :ns AND key = :k"
                    ),
                    {"at": to_epoch_ms(NOW - timedelta(days=days)), "ns": ns, "k": key},
                )
        ranked = mem.facts.list(None, ranked=True, include_expired=False)
        expected = sorted(
            ranked,
            key=lambda f: (
                -fact_rules.rank_score(
                    namespace=f.namespace,
                    confidence=f.confidence,
                    created_ms=to_epoch_ms(f.created_at),
                    accessed_ms=to_epoch_ms(f.last_accessed_at) if f.last_accessed_at else None,
                    tau_override=f.decay_tau_days,
                    now_ms=to_epoch_ms(NOW),
                )
            ),
        )
        assert [(f.namespace, f.key) for f in ranked] == [(f.namespace, f.key) for f in expected]
        prefix = mem.prefix.build().text
        positions = [prefix.index(f"- {f.namespace}.{f.key} =") for f in ranked]
        assert positions == sorted(positions)


# --- "is this skill callable" ----------------------------------------------------------------

COMPLETE = {"steps": ["unzip -d out file.zip"], "verification": "ls out", "tool_policy": ["shell"]}
INCOMPLETE = {"steps": ["unzip -d out file.zip"], "verification": None, "tool_policy": ["shell"]}
CALLABLE: list[tuple[Grade, dict[str, object] | None, bool]] = [
    (Grade.PLAYBOOK, None, False),
    (Grade.DRAFT, None, True),
    (Grade.CONFIRMED, None, True),
    (Grade.STABLE, None, True),
    (Grade.DEPRECATED, None, False),
    (Grade.DRAFT, COMPLETE, True),
    (Grade.DRAFT, INCOMPLETE, False),
    (Grade.PLAYBOOK, COMPLETE, False),
    (Grade.STABLE, INCOMPLETE, False),
]


@pytest.mark.parametrize(
    ("grade", "recipe", "expected"),
    CALLABLE,
    ids=[
        f"{g.value}-{'none' if r is None else 'complete' if r is COMPLETE else 'partial'}"
        for g, r, _e in CALLABLE
    ],
)
def test_skill_callability_is_one_rule_for_every_path(
    store: Store, grade: Grade, recipe: dict[str, object] | None, expected: bool
) -> None:
    with store.begin() as mem:
        mem.skills.create("unzip-archive", "Unpack a zip archive", "zip unzip", "1. unzip")
        if grade is not Grade.DRAFT:
            mem.skills.set_grade("unzip-archive", grade, reason="the case under test")
        if recipe is not None:
            mem.skills.set_recipe("unzip-archive", **recipe)  # type: ignore[arg-type]
        record = mem.skills.get("unzip-archive", record_access=False)
        assert record is not None
        assert record.callable is expected
        assert (
            callable_skill(
                maturity=grade,
                recipe_revision=None if record.recipe is None else record.recipe.revision,
                steps=None if record.recipe is None else record.recipe.steps,
                verification=None if record.recipe is None else record.recipe.verification,
                tool_policy=None if record.recipe is None else record.recipe.tool_policy,
            )
            is expected
        )
        listed = [s.name for s in mem.skills.list(callable_only=True)]
        assert ("unzip-archive" in listed) is expected
        found = [h.name for h in mem.search.skills("unzip zip archive", callable_only=True)]
        assert ("unzip-archive" in found) is expected
        assert ("- unzip-archive " in mem.prefix.build().text) is expected
    used = tools.call("use_skill", {"name": "unzip-archive"}, db=store)
    assert used.ok is expected


@pytest.mark.parametrize("kind", ["positive", "weird", "Positive", ""])
@pytest.mark.parametrize("maturity", ["draft", "legacy", "Stable", ""])
def test_a_grade_or_kind_other_software_stored_is_read_one_way_by_every_path(
    store: Store, maturity: str, kind: str
) -> None:
    """An unknown stored grade reads as draft and an unknown kind as positive (the record,
    ``use``); ``skills.list(kind=..., callable_only=...)``, ``search.skills`` and the prefix
    compared the stored text and left such a skill out."""
    with store.begin() as mem:
        mem.skills.create("unzip-archive", "Unpack a zip archive", "zip unzip", "1. unzip")
        mem.session.execute(
            text("UPDATE memory_skills SET maturity = :m, kind = :k"), {"m": maturity, "k": kind}
        )
    with store.begin() as mem:
        record = mem.skills.get("unzip-archive", record_access=False)
        assert record is not None
        assert (record.grade, record.kind, record.callable) == ("draft", "positive", True)
        paths = {
            "list kind": [s.name for s in mem.skills.list(kind="positive")],
            "list callable": [s.name for s in mem.skills.list(callable_only=True)],
            "search kind": [h.name for h in mem.search.skills("unzip", kind="positive")],
            "search callable": [h.name for h in mem.search.skills("unzip", callable_only=True)],
            "prefix": ["unzip-archive"] if "- unzip-archive " in mem.prefix.build().text else [],
        }
        assert mem.skills.list(kind="negative") == []
        assert mem.search.skills("unzip", kind="negative") == []
    assert {path: names for path, names in paths.items() if names != ["unzip-archive"]} == {}
    assert tools.call("use_skill", {"name": "unzip-archive"}, db=store).ok
