"""The Memory facade: open, upgrade, one unit of work that commits or rolls back."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont import Memory, Store, migrate
from philont.domain.maturity import Grade
from philont.errors import InvalidInputError, UnitOfWorkError

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


# --- the clock of a unit of work -----------------------------------------------------------------

MICRO = datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=UTC)


def _written_and_read(mem: Memory) -> list[tuple[object, object]]:
    """(what a write returned, what a read gives back) for every stamp a write sets."""
    made = mem.skills.create("s", "d", "k", "t")
    used = mem.skills.use("s").skill
    graded = mem.skills.record_outcome("s", success=True)
    note = mem.notes.add("n")
    fact = mem.facts.store("user", "k", 1)
    message = mem.timeline.append("m")
    action = mem.actions.record("t", params={}, success=True)
    skill = mem.skills.get("s", record_access=False)
    assert skill is not None
    return [
        (made.created_at, skill.created_at),
        (used.last_used_at, skill.last_used_at),
        (graded.last_success_at, skill.last_success_at),
        (note.created_at, mem.notes.list()[0].created_at),
        (fact.created_at, mem.facts.history("user", "k")[0].created_at),
        (message.timestamp, mem.timeline.query()[0].timestamp),
        (action.timestamp, mem.actions.query()[0].timestamp),
    ]


@pytest.mark.parametrize(
    "clock", [lambda: MICRO, lambda: MICRO.astimezone(timezone(timedelta(hours=5)))]
)
def test_what_a_write_returns_equals_what_a_read_gives_back_whatever_the_clock(
    target: Path | URL, clock: Callable[[], datetime]
) -> None:
    # The skill service read the raw clock: with microseconds (or another zone) a new skill's
    # created_at differed from the stored one, read back a moment later.
    with Store.open(target, clock=clock) as store, store.begin() as mem:
        pairs = _written_and_read(mem)
        assert mem.clock() == MICRO.replace(microsecond=123000)
    for written, read in pairs:
        assert written == read == MICRO.replace(microsecond=123000)


@pytest.mark.parametrize("bad", [datetime(2024, 5, 1, 12), "2024-05-01", None])
def test_a_clock_that_gives_no_aware_time_is_refused_by_name_before_any_write(
    target: Path | URL, bad: object
) -> None:
    # A naive clock reached the skills' INSERT and failed there as a raw StatementError.
    with Store.open(target, clock=lambda: bad) as store:  # type: ignore[arg-type,return-value]
        for write in (
            lambda m: m.skills.create("s", "d", "k", "t"),
            lambda m: m.notes.add("n"),
            lambda m: m.facts.store("user", "k", 1),
        ):
            with pytest.raises(InvalidInputError, match=r"^clock\(\)"), store.begin() as mem:
                write(mem)
        with Store.open(target) as good, good.begin() as mem:
            assert mem.skills.list() == [] and mem.notes.count() == 0
