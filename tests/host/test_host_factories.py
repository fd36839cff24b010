"""From a host's point of view: its own models next to philont's, philont's factories (and the
host's subclasses of them) seeding its tests, and the SAVEPOINT-per-test recipe that undoes even
what the code under test committed."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, create_engine, func, insert, select
from sqlalchemy.orm import Session

from philont.db import models as m
from philont.domain.maturity import Grade
from philont.errors import InvalidInputError
from philont.store import Store
from philont.testing import factories as f
from philont.testing.sessions import rollback_session

HOST = MetaData()
USERS = Table(
    "host_users",
    HOST,
    Column("id", Integer, primary_key=True),
    Column("name", String(100), nullable=False),
)


def register_user(store: Store, session: Session, name: str) -> None:
    """Host code under test: writes its own row and a memory fact, and commits."""
    session.execute(insert(USERS).values(name=name))
    with store.join(session) as mem:
        mem.facts.store("user", "name", name)
    session.commit()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "app.sqlite") as s:
        HOST.create_all(s.engine)
        yield s


@pytest.fixture
def db_session(store: Store) -> Iterator[Session]:
    """The recipe a host puts in its conftest.py."""
    with rollback_session(store) as session, f.bound(session):
        yield session


def test_what_the_code_under_test_committed_is_gone_after_the_test(store: Store) -> None:
    with rollback_session(store) as session, f.bound(session):
        f.FactFactory.create(namespace="seeded")
        register_user(store, session, "Lena")
        assert session.scalar(select(func.count()).select_from(USERS)) == 1
    with Session(store.engine) as fresh:
        assert fresh.scalar(select(func.count()).select_from(USERS)) == 0
        assert fresh.scalar(select(func.count()).select_from(m.Fact)) == 0


def test_a_plain_sqlite_engine_is_refused_for_the_recipe(tmp_path: Path) -> None:
    plain = create_engine(f"sqlite:///{tmp_path / 'plain.sqlite'}")
    with pytest.raises(InvalidInputError, match="pysqlite"), rollback_session(plain):
        pass  # pragma: no cover - refused before
    plain.dispose()


class VipFactFactory(f.FactFactory):
    """A host's own factory built on philont's."""

    namespace = "vip"


def test_a_hosts_subclass_of_a_factory_is_bound_too(db_session: Session) -> None:
    fact = VipFactFactory.create(key="tier")
    assert db_session.get(m.Fact, fact.id) is not None and fact.namespace == "vip"


def test_bound_restores_the_outer_session(tmp_path: Path, db_session: Session) -> None:
    with Store.open(tmp_path / "other.sqlite") as other, rollback_session(other) as inner:
        with f.bound(inner):
            inner_note = f.NoteFactory.create(content="inner")
        outer_note = f.NoteFactory.create(content="outer")
        assert inner.get(m.Note, inner_note.id) is not None
        assert db_session.get(m.Note, outer_note.id) is not None
        assert inner.get(m.Note, outer_note.id) is None


def test_without_a_bound_session_a_factory_says_what_to_do() -> None:
    with pytest.raises(RuntimeError, match="bound"):
        f.FactFactory.create()


def test_related_rows_come_from_sub_factories(db_session: Session) -> None:
    message = f.RawMessageFactory.create(in_new_session=True)
    assert message.session_id != "global"
    assert db_session.get(m.RawSession, message.session_id) is not None
    recipe = f.SkillRecipeFactory.create()
    assert db_session.get(m.Skill, recipe.skill_id) is not None
    node = f.ReasoningNodeFactory.create()
    assert db_session.get(m.ReasoningSession, node.session_id) is not None


def test_factory_parameters_are_named_as_the_read_models(store: Store, db_session: Session) -> None:
    skill = f.SkillFactory.create(name="unzip-archive", grade=Grade.STABLE)
    with store.join(db_session) as mem:
        record = mem.skills.get("unzip-archive", record_access=False)
    assert record is not None and record.grade is Grade.STABLE == skill.maturity


TYPED = """
from philont.db import models as m
from philont.testing import factories as f
fact: m.Fact = f.FactFactory.create()
facts: list[m.Fact] = f.FactFactory.create_batch(2)
wrong: int = f.FactFactory.create()
"""


def test_factory_results_are_typed_under_mypy_strict(tmp_path: Path) -> None:
    source = tmp_path / "host_code.py"
    source.write_text(TYPED)
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(source)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and "host_code.py:6" in errors[0], done.stdout
