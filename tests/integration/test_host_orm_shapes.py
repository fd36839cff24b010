"""A host's own statements on philont's models, run on a unit of work's Session: every ORM
shape (subqueries, aliased subqueries, CTEs, unions, exists, joins to aliases, scalar
subqueries, lateral) returns the served agent's rows only on PostgreSQL, with a second agent's
rows present and read as the owner (no row-level security: only philont's own agent filter
keeps them apart), and the same rows SQLite returns for the same data; a shape that reads a
model's Table where philont cannot add the agent's condition (a nested SELECT, an outer
join's optional side, a nested SELECT of an INSERT/UPDATE/DELETE) is refused with
InvalidInputError before anything runs on PostgreSQL (SQLite: one file is one agent, nothing
to refuse)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Executable, exists, func, insert, select, true, union_all, update
from sqlalchemy.orm import aliased, load_only

from philont.db.models import Note, RawMessage, RawSession
from philont.errors import InvalidInputError
from philont.store import Store
from tests.pg_support import Layout

MINE = ("mine one", "mine two")
THEIRS = ("theirs one", "theirs two", "theirs three")
notes = Note.__table__


def _shapes() -> dict[str, Callable[[], Executable]]:
    def other() -> Any:
        return aliased(Note)

    def both(name: str, make: Callable[[Any], Executable]) -> dict[str, Callable[[], Executable]]:
        """The shape over the ORM entity and over the model's Table."""
        return {f"{name}/orm": lambda: make(Note), f"{name}/table": lambda: make(notes)}

    def col(source: Any, name: str) -> Any:
        return getattr(source, name) if source is Note else source.c[name]

    shapes: dict[str, Callable[[], Executable]] = {
        "aliased subquery": lambda: select(aliased(Note, select(Note).subquery()).content),
        "aliased subquery of the table": lambda: select(
            aliased(Note, select(notes).subquery()).content
        ),
        "subquery with a loader option": lambda: (
            lambda sq: select(Note).options(load_only(Note.content)).where(Note.id.in_(sq))
        )(select(notes.c.id).where(notes.c.content.in_(MINE + THEIRS))),
        "aliased cte": lambda: select(aliased(Note, select(Note).cte()).content),
        "join to an aliased subquery": lambda: (
            lambda sq: select(Note.content).join(sq, sq.importance == Note.importance)
        )(aliased(Note, select(Note).subquery())),
        "union with an alias": lambda: union_all(select(Note.content), select(other().content)),
        "subquery of an alias's column": lambda: (lambda sq: select(sq.c.content))(
            select(other().content).subquery()
        ),
        "not exists of an alias": lambda: (
            lambda a: select(Note.content).where(
                ~exists(select(a.id).where(a.importance == Note.importance, a.content.in_(THEIRS)))
            )
        )(other()),
        "join to an alias": lambda: (
            lambda a: select(Note.content, a.content).join(a, a.importance == Note.importance)
        )(other()),
        "outer join to an alias": lambda: (
            lambda a: select(Note.content, a.content).outerjoin(a, a.importance == Note.importance)
        )(other()),
        "outer join to an alias of the table": lambda: (
            lambda a: select(notes.c.content, a.c.content).outerjoin(
                a, a.c.importance == notes.c.importance
            )
        )(notes.alias()),
        "outer join of the tables in select_from": lambda: (
            lambda a: select(notes.c.content, a.c.content).select_from(
                notes.outerjoin(a, a.c.importance == notes.c.importance)
            )
        )(notes.alias()),
        "orm entity outer-joined to an alias of the table": lambda: (
            lambda a: select(Note.content, a.c.content).outerjoin(
                a, a.c.importance == Note.importance
            )
        )(notes.alias()),
        "outer join in a subquery": lambda: (
            lambda a: (lambda sq: select(sq.c.content, sq.c.other))(
                select(notes.c.content, a.c.content.label("other"))
                .outerjoin(a, a.c.importance == notes.c.importance)
                .subquery()
            )
        )(notes.alias()),
    }
    shapes.update(
        both("subquery", lambda s: (lambda sq: select(sq.c.content))(select(s).subquery()))
    )
    shapes.update(both("cte", lambda s: (lambda c: select(c.c.content))(select(s).cte())))
    shapes.update(
        both(
            "union",
            lambda s: union_all(select(col(s, "content")), select(col(s, "content"))),
        )
    )
    shapes.update(
        both(
            "union subquery",
            lambda s: (lambda u: select(u.c.content))(
                union_all(select(col(s, "content")), select(col(s, "content"))).subquery()
            ),
        )
    )
    shapes.update(
        both(
            "exists",
            lambda s: select(func.count()).where(
                exists(select(col(s, "id")).where(col(s, "content").in_(THEIRS)))
            ),
        )
    )
    shapes.update(
        both(
            "scalar subquery in the select list",
            lambda s: select(Note.content, select(func.count(col(s, "id"))).scalar_subquery()),
        )
    )
    shapes.update(
        both(
            "scalar subquery in where",
            lambda s: select(Note.content).where(
                select(func.count(col(s, "id"))).scalar_subquery() == len(MINE)
            ),
        )
    )
    shapes.update(
        both(
            "in subquery",
            lambda s: (
                select(func.count())
                .select_from(notes)
                .where(notes.c.content.in_(select(col(s, "content"))))
            ),
        )
    )
    shapes.update(
        both(
            "lateral",
            lambda s: (lambda lat: select(Note.content, lat.c.content).join(lat, true()))(
                select(col(s, "content")).where(col(s, "importance") == Note.importance).lateral()
            ),
        )
    )
    return shapes


SHAPES = _shapes()
SQLITE_LACKS = {name for name in SHAPES if name.startswith("lateral")}
REFUSED = {name for name in SHAPES if name.endswith("/table")} | {
    "aliased subquery of the table",
    "subquery with a loader option",
    "outer join to an alias of the table",
    "outer join of the tables in select_from",
    "orm entity outer-joined to an alias of the table",
    "outer join in a subquery",
}
"""Shapes reading ``Note.__table__`` where only the ORM entity gets the agent's condition."""


def _rows(store: Store, statement: Executable) -> list[tuple[Any, ...]]:
    with store.begin() as mem:
        rows = mem.session.execute(statement).all()
        return sorted(tuple(getattr(v, "content", v) for v in row) for row in rows)


def _seed(store: Store, contents: tuple[str, ...]) -> None:
    with store.begin() as mem:
        for content in contents:
            mem.notes.add(content, importance=0.5)


@pytest.fixture(scope="module")
def sqlite_store(tmp_path_factory: pytest.TempPathFactory) -> Any:
    store = Store.open(Path(tmp_path_factory.mktemp("shapes")) / "memory.sqlite")
    _seed(store, MINE)
    yield store
    store.close()


@pytest.fixture
def pg_stores(pg_layout: Layout, pg_agent_name: Callable[[], str]) -> Any:
    store = Store.open(pg_layout.url, upgrade=False)  # the owner: no row-level security
    mine, theirs = store.for_agent(pg_agent_name()), store.for_agent(pg_agent_name())
    _seed(mine, MINE)
    _seed(theirs, THEIRS)
    yield mine, theirs
    store.close()


@pytest.mark.parametrize("shape", sorted(set(SHAPES) - SQLITE_LACKS))
def test_a_host_statement_on_sqlite_reads_the_memory(sqlite_store: Store, shape: str) -> None:
    rows = _rows(sqlite_store, SHAPES[shape]())
    assert rows and not any(t in str(rows) for t in THEIRS)


@pytest.mark.postgres
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_a_host_statement_on_postgresql_reads_only_the_served_agents_rows(
    pg_stores: tuple[Store, Store], sqlite_store: Store, shape: str
) -> None:
    mine, theirs = pg_stores
    if shape in REFUSED:
        for store in pg_stores:
            with store.begin() as mem, pytest.raises(InvalidInputError, match="ORM entity"):
                mem.session.execute(SHAPES[shape]())
        return
    rows = _rows(mine, SHAPES[shape]())
    assert not [t for t in THEIRS if t in str(rows)], rows
    # the same shape again, compiled and cached, for the other agent: its rows only
    assert not [m for m in MINE if m in str(_rows(theirs, SHAPES[shape]()))]
    if shape not in SQLITE_LACKS:
        assert rows == _rows(sqlite_store, SHAPES[shape]())
    else:
        assert {row[0] for row in rows} == set(MINE)


WRITES: dict[str, Callable[[], Executable]] = {
    "update from a table subquery": lambda: update(notes).values(
        content=select(notes.c.content).where(notes.c.content == THEIRS[0]).scalar_subquery()
    ),
    "update from an orm subquery": lambda: update(Note).values(
        content=select(Note.content).where(Note.content == THEIRS[0]).scalar_subquery()
    ),
    "update where in an orm subquery": lambda: (
        update(Note).where(Note.id.in_(select(Note.id))).values(content="overwritten")
    ),
    "insert from a table select": lambda: insert(notes).from_select(
        ["id", "content", "importance", "created_at"],
        select(notes.c.id + "x", notes.c.content, notes.c.importance, notes.c.created_at),
    ),
    "insert from an orm select": lambda: insert(Note).from_select(
        ["id", "content", "importance", "created_at"],
        select(Note.id + "x", Note.content, Note.importance, Note.created_at),
    ),
}


@pytest.mark.postgres
@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_host_write_with_a_nested_select_is_refused_on_postgresql(
    pg_stores: tuple[Store, Store], write: str
) -> None:
    """Refused before it runs (no loader criteria reach an INSERT's, UPDATE's or DELETE's
    nested SELECT): neither agent's notes change."""
    mine, _theirs = pg_stores
    before = [_rows(store, select(Note.id, Note.content)) for store in pg_stores]
    with mine.begin() as mem, pytest.raises(InvalidInputError, match="nested SELECT"):
        mem.session.execute(WRITES[write]())
    assert [_rows(store, select(Note.id, Note.content)) for store in pg_stores] == before


@pytest.mark.postgres
def test_an_outer_join_to_a_table_of_ours_is_refused(
    pg_stores: tuple[Store, Store],
) -> None:
    """Its agent's condition would have to go in the ON clause: refused, with or without
    one; an inner join to the same table is scoped."""
    mine, _theirs = pg_stores
    messages, sessions = RawMessage.__table__, RawSession.__table__
    with mine.begin() as mem:
        statement = select(messages.c.id, sessions.c.id).outerjoin(sessions)
        with pytest.raises(InvalidInputError, match="outer join"):
            mem.session.execute(statement)
        on = messages.c.session_id == sessions.c.id
        with pytest.raises(InvalidInputError, match="outer join"):
            mem.session.execute(select(messages.c.id, sessions.c.id).outerjoin(sessions, on))
        joined = select(messages.c.id, sessions.c.id).join(sessions, on)
        assert mem.session.execute(joined).all() == []  # no message written
