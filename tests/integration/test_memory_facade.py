"""The Memory facade: open, upgrade, one unit of work that commits or rolls back."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont import Memory, migrate
from philont.domain.maturity import Grade
from philont.errors import UnitOfWorkError

# Tests taking `target` run on a new SQLite file and on a new PostgreSQL agent schema; the
# default-path and adoption tests are about SQLite files and run once (tests/conftest.py).
BOTH_BACKENDS = True


def test_the_readme_example_works_on_a_new_database(target: Path | URL) -> None:
    path = target
    with Memory.open(path) as mem:
        mem.facts.store(namespace="user.home", key="city", value="Berlin")
        got = mem.facts.get("user.home", "city")
        assert got is not None and got.value == "Berlin"
        mem.skills.create(
            name="unzip-archive",
            description="Unpack a zip archive",
            trigger_keywords="zip unzip",
            action_template="1. unzip -d out file.zip",
        )
        mem.skills.record_usage("unzip-archive")
        mem.skills.record_outcome("unzip-archive", success=True)
        report = mem.reflector.run()
        assert report.credited == []
    assert migrate.status(path).at_head
    with Memory.open(path) as mem:
        skill = mem.skills.get("unzip-archive")
        assert skill is not None and skill.success_count == 1 and skill.grade == Grade.DRAFT
        assert mem.facts.get("user.home", "city") is not None


def test_an_exception_rolls_the_whole_unit_of_work_back(target: Path | URL) -> None:
    path = target
    with pytest.raises(RuntimeError), Memory.open(path) as mem:
        mem.facts.store("user", "name", "Lena")
        raise RuntimeError("host code failed")
    with Memory.open(path) as mem:
        assert mem.facts.get("user", "name") is None


def test_the_default_database_follows_memory_db_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_DB_PATH", str(tmp_path / "env" / "m.sqlite"))
    with Memory.open() as mem:
        mem.notes.add("remember the milk")
    assert (tmp_path / "env" / "m.sqlite").exists()


def test_services_outside_a_unit_of_work_are_refused(target: Path | URL) -> None:
    mem = Memory.open(target)
    with pytest.raises(UnitOfWorkError, match="has not begun"):
        mem.facts.get("user", "name")
    with mem:
        facts = mem.facts
    with pytest.raises(UnitOfWorkError, match="has ended"):
        facts.get("user", "name")


def test_an_adopted_philont_database_opens_through_the_facade(copy_fixture) -> None:  # type: ignore[no-untyped-def]
    path = copy_fixture("v27")
    with Memory.open(path) as mem:
        assert mem.facts.get("user", "name") is not None
        assert mem.timeline.count() == 201
