"""A host's UPDATE or DELETE on a unit of work's Session that reads a table of ours besides
its target (PostgreSQL's ``UPDATE ... FROM``, ``DELETE ... USING``) or whose target is an
alias of one of our tables: on PostgreSQL, as the owner (no row-level security), it touches
and reads the served agent's rows only (what it does to a memory of that agent alone); the
other agent's rows are unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Executable, delete, select, update
from sqlalchemy.orm import aliased

from philont.db.models import Note
from philont.errors import InvalidInputError
from philont.store import Store
from tests.pg_support import Layout

MINE = ("mine one", "mine two")
THEIRS = ("theirs one", "theirs two")
notes = Note.__table__


def _orm_alias() -> Any:
    return aliased(Note)


def _table_alias() -> Any:
    return notes.alias("other")


WRITES: dict[str, tuple[Callable[[], Executable], list[str]]] = {
    "orm update from an alias": (
        lambda: (
            lambda a: (
                update(Note)
                .where(Note.importance == a.importance, a.content == THEIRS[0])
                .values(content=a.content)
            )
        )(_orm_alias()),
        sorted(MINE),
    ),
    "table update from an alias": (
        lambda: (
            lambda a: (
                update(notes)
                .where(notes.c.importance == a.c.importance, a.c.content == THEIRS[0])
                .values(content=a.c.content)
            )
        )(_table_alias()),
        sorted(MINE),
    ),
    "orm delete using an alias": (
        lambda: (
            lambda a: delete(Note).where(Note.importance == a.importance, a.content == THEIRS[0])
        )(_orm_alias()),
        sorted(MINE),
    ),
    "table delete using an alias": (
        lambda: (
            lambda a: delete(notes).where(
                notes.c.importance == a.c.importance, a.c.content == THEIRS[0]
            )
        )(_table_alias()),
        sorted(MINE),
    ),
    "update of an alias of the table": (
        lambda: (lambda a: update(a).values(content="overwritten"))(_table_alias()),
        ["overwritten", "overwritten"],
    ),
    "delete of an alias of the table": (
        lambda: (lambda a: delete(a))(_table_alias()),
        [],
    ),
}


def _contents(store: Store) -> list[str]:
    with store.begin() as mem:
        return sorted(mem.session.scalars(select(Note.content)))


def _seed(store: Store, contents: tuple[str, ...]) -> None:
    with store.begin() as mem:
        for content in contents:
            mem.notes.add(content, importance=0.5)


def _run(store: Store, statement: Executable) -> None:
    with store.begin() as mem:
        mem.session.execute(statement.execution_options(synchronize_session=False))


@pytest.fixture
def pg_stores(pg_layout: Layout, pg_agent_name: Callable[[], str]) -> Any:
    store = Store.open(pg_layout.url, upgrade=False)  # the owner: no row-level security
    mine, theirs = store.for_agent(pg_agent_name()), store.for_agent(pg_agent_name())
    _seed(mine, MINE)
    _seed(theirs, THEIRS)
    yield mine, theirs
    store.close()


@pytest.mark.postgres
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_host_write_reading_a_table_of_ours_keeps_to_the_agent(
    pg_stores: tuple[Store, Store], write: str
) -> None:
    mine, theirs = pg_stores
    statement, expected = WRITES[write]
    _run(mine, statement())
    assert _contents(theirs) == sorted(THEIRS)
    assert _contents(mine) == expected


@pytest.mark.postgres
def test_a_refused_statement_leaves_the_unit_of_work_usable(
    pg_stores: tuple[Store, Store],
) -> None:
    """A refusal (of a SELECT, of an UPDATE) comes before anything runs: the unit of work goes
    on, and commits."""
    mine, theirs = pg_stores
    with mine.begin() as mem:
        mem.notes.add("before the refusal", importance=0.5)
        with pytest.raises(InvalidInputError):
            mem.session.execute(select(select(notes.c.content).subquery().c.content))
        with pytest.raises(InvalidInputError):
            mem.session.execute(
                update(Note).values(content=select(Note.content).limit(1).scalar_subquery())
            )
        mem.notes.add("after the refusal", importance=0.5)
    assert _contents(mine) == sorted([*MINE, "after the refusal", "before the refusal"])
    assert _contents(theirs) == sorted(THEIRS)
