"""``mem.search.skills(callable_only=True)`` leaves out skills whose recipe is incomplete
before it ranks: they took the places of callable skills below them, and a search with a limit
came back short or empty although callable skills matched."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont.store import Store
from tests.conftest import FakeClock

BOTH_BACKENDS = True
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

INCOMPLETE = {
    "no verification": {"steps": ["run deploy"], "verification": None, "tool_policy": ["shell"]},
    "blank steps": {"steps": ["  "], "verification": "app answers", "tool_policy": ["shell"]},
    "no tool policy": {"steps": ["run deploy"], "verification": "app answers", "tool_policy": []},
}


@pytest.fixture
def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    target: Path | URL = (
        request.getfixturevalue("pg_agent")() if backend == "postgres" else tmp_path / "m.sqlite"
    )
    with Store.open(target, clock=FakeClock(T0)) as s:
        yield s


@pytest.mark.parametrize("missing", sorted(INCOMPLETE))
@pytest.mark.parametrize(("incomplete", "limit"), [(1, 1), (3, 1), (3, 2), (12, 1), (12, 5)])
def test_callable_skills_below_incomplete_recipes_are_found(
    store: Store, missing: str, incomplete: int, limit: int
) -> None:
    with store.begin() as mem:
        for i in range(incomplete):  # the best matches: "deploy" everywhere
            name = f"deploy-{i}"
            mem.skills.create(name, "deploy the deploy app, deploy it", "deploy", "1. deploy")
            mem.skills.set_recipe(name, **INCOMPLETE[missing])  # type: ignore[arg-type]
        callable_names = [f"ship-{i}" for i in range(limit)]
        for name in callable_names:  # weaker matches, callable
            mem.skills.create(name, "ship the app once it is ready to deploy", "ship", "1. ship")
        mem.skills.create("ship-complete", "ship and deploy", "ship", "1. ship")
        mem.skills.set_recipe(
            "ship-complete", steps=["ship"], verification="it runs", tool_policy=["shell"]
        )
        callable_names.append("ship-complete")

    with store.begin(write=False) as mem:
        assert not any(mem.skills.is_callable(f"deploy-{i}") for i in range(incomplete))
        hits = mem.search.skills("deploy", callable_only=True, limit=limit)
        every = mem.search.skills("deploy", callable_only=True, limit=100)

    assert len(hits) == limit
    assert {h.name for h in hits} <= set(callable_names)
    assert sorted(h.name for h in every) == sorted(callable_names)
