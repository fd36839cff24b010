"""A service's method raises philont's typed error for a database's refusal, inside the unit of
work, not only at its end: a host that catches philont's errors around one call in a
``with store.begin()`` block got SQLAlchemy's ``IntegrityError`` / ``InternalError`` (holding
the row) and philont's only when the block ended. Generated: writing methods of each service
x each kind of refusal (a trigger's RAISE, a check, a unique key, a not-null, a value of the
wrong type) on both backends. The error names no value, keeps the database's own as its cause,
is no "already exists" conflict, and leaves the unit of work's end to roll back as before (the
same error object leaves the block: typed once, not twice)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL
from structlog.testing import capture_logs

from philont import Store
from philont.errors import ConflictError, PhilontError
from philont.memory import Memory
from philont.services.skills import SkillService
from tests.integration.test_database_errors_typed import _pg_trigger

SECRET = "refused-secret-5813"


def _skill(mem: Memory, name: str = "pin-skill", description: str = "pin") -> object:
    return mem.skills.create(
        name, description=description, trigger_keywords="pin", action_template="say the pin"
    )


def _with_recipe(mem: Memory) -> None:
    _skill(mem, "recipe-skill")
    steps = [f"pin {SECRET}"]  # kept in revision 1's row when revised
    mem.skills.set_recipe("recipe-skill", steps=steps, verification=None, tool_policy=[])


NOTHING: Callable[[Memory], object] = lambda mem: None  # noqa: E731

# What each method writes, where a host's trigger watches for SECRET: its table and column,
# the method's call, and what the call needs first.
CALLS: dict[str, tuple[str, str, Callable[[Memory], object], Callable[[Memory], object]]] = {
    "notes.add": ("memory_notes", "content", lambda mem: mem.notes.add(f"pin {SECRET}"), NOTHING),
    "facts.store": (
        "memory_facts",
        "key",
        lambda mem: mem.facts.store("host", f"pin-{SECRET}", "value"),
        NOTHING,
    ),
    "skills.create": (
        "memory_skills",
        "description",
        lambda mem: _skill(mem, description=f"pin {SECRET}"),
        NOTHING,
    ),
    "skills.revise_recipe": (
        "philont_skill_revisions",
        "steps_json",
        lambda mem: mem.skills.revise_recipe("recipe-skill", steps=["two"]),
        _with_recipe,
    ),
    "timeline.append": (
        "memory_raw_messages",
        "content",
        lambda mem: mem.timeline.append(f"pin {SECRET}"),
        NOTHING,
    ),
    "calendar.create": (
        "memory_calendar",
        "title",
        lambda mem: mem.calendar.create(
            f"pin {SECRET}", datetime(2030, 1, 2, 9, tzinfo=UTC), timezone="UTC"
        ),
        NOTHING,
    ),
    "actions.record": (
        "memory_actions",
        "result",
        lambda mem: mem.actions.record("tool", params={}, success=True, result=f"pin {SECRET}"),
        NOTHING,
    ),
}

# SQLite: the trigger writes a host's table that refuses the row with the kind's own code.
SQLITE_HOST = (
    "CREATE TABLE host_check (x INTEGER CHECK (x > 0));"
    " CREATE TABLE host_unique (x INTEGER UNIQUE);"
    " CREATE TABLE host_not_null (x INTEGER NOT NULL);"
    " CREATE TABLE host_type (x INTEGER) STRICT;"
)
SQLITE_KINDS = {
    "raise": "SELECT RAISE(ABORT, 'refused');",
    "check": "INSERT INTO host_check VALUES (0);",
    "unique": "INSERT INTO host_unique VALUES (1); INSERT INTO host_unique VALUES (1);",
    "not_null": "INSERT INTO host_not_null VALUES (NULL);",
    "type": "INSERT INTO host_type VALUES ('x');",
}
# PostgreSQL: the trigger raises the kind's SQLSTATE, its message holding the row's text.
PG_KINDS = {
    "raise": "P0001",
    "check": "23514",
    "unique": "23505",
    "not_null": "23502",
    "type": "22P02",
}
CASES = [
    pytest.param(backend, call, kind, id=f"{backend}-{call}-{kind}", marks=marks)
    for backend, kinds, marks in (
        ("sqlite", SQLITE_KINDS, ()),
        ("postgres", PG_KINDS, (pytest.mark.postgres,)),
    )
    for call in CALLS
    for kind in kinds
]


@pytest.fixture
def store(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Store]:
    if backend == "sqlite":
        with Store.open(tmp_path / "memory.sqlite") as opened:
            yield opened
        return
    layout = request.getfixturevalue("pg_layout")
    with Store.open(layout.url, agent=layout.new_agent()) as opened:
        yield opened


def _refuse(
    store: Store, table: str, column: str, kind: str, request: pytest.FixtureRequest
) -> None:
    """A host's trigger refusing, with ``kind``, a row of ``table`` whose ``column`` holds
    SECRET (dropped after the test on PostgreSQL, whose layout the run's tests share)."""
    target: Path | URL | None = store.path
    if target is not None:
        with closing(sqlite3.connect(str(target))) as conn, conn:
            conn.executescript(
                f"{SQLITE_HOST} CREATE TRIGGER host_refuses BEFORE INSERT ON {table}"
                f" WHEN instr(NEW.{column}, '{SECRET}') BEGIN {SQLITE_KINDS[kind]} END;"
            )
        return
    schema = request.getfixturevalue("pg_layout").schema
    sqlstate = PG_KINDS[kind]
    _pg_trigger(schema, "INSERT", table, column, kind, request, sqlstate=sqlstate, secret=SECRET)


def _typed(error: BaseException) -> None:
    """``error`` is philont's, names no value, is no conflict, and is typed once."""
    assert isinstance(error, PhilontError), repr(error)
    said = f"{error} {error.details}"
    assert SECRET not in said, said
    assert not isinstance(error, ConflictError), repr(error)  # nothing "already exists"
    assert error.__cause__ is not None  # the database's own error, for the log
    assert not isinstance(error.__cause__, PhilontError), repr(error.__cause__)


@pytest.mark.parametrize(("backend", "call", "kind"), CASES)
def test_a_service_method_raises_the_typed_error_inside_the_unit_of_work(
    call: str, kind: str, store: Store, request: pytest.FixtureRequest
) -> None:
    table, column, write, prepare = CALLS[call]
    with store.begin() as mem:
        prepare(mem)
    _refuse(store, table, column, kind, request)

    # Caught around the one call, inside the block: philont's error already.
    ended: BaseException | None = None
    try:
        with store.begin() as mem:
            with pytest.raises(Exception) as caught:  # any error: its type is the test
                write(mem)
            _typed(caught.value)
    except PhilontError as exc:  # the unit's end may refuse to commit what a failure undid
        ended = exc
    if ended is not None:
        assert SECRET not in f"{ended} {ended.details}", ended

    # Left uncaught: the unit of work's end lets the same error out (not typed twice), and
    # logs it once.
    with capture_logs() as logs, pytest.raises(Exception) as left, store.begin() as mem:
        write(mem)
    _typed(left.value)
    logged = [e["event"] for e in logs if e["log_level"] == "warning"]
    assert logged == ["unit_of_work.storage_error"]

    with store.begin() as mem:  # nothing of it was written, and the database works on
        mem.notes.add("after")
        held = f"SELECT count(*) FROM {table} WHERE {column} LIKE '%{SECRET}%'"
        assert mem.session.execute(text(held)).scalar_one() == 0


@pytest.mark.parametrize(
    "backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
def test_a_skill_name_taken_after_the_check_is_still_a_conflict(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unique violation of the skill's name (another writer took it between ``create``'s
    check and its insert) stays :class:`ConflictError`, and only the insert is undone."""
    with store.begin() as mem:
        _skill(mem)
    monkeypatch.setattr(SkillService, "_fetch", lambda self, where: None)  # the check misses it
    with store.begin() as mem:
        with pytest.raises(ConflictError, match="already exists") as caught:
            _skill(mem, description="second")
        assert caught.value.__cause__ is not None
        mem.notes.add("after")  # the unit of work goes on
    monkeypatch.undo()
    with store.begin() as mem:
        assert [s.description for s in mem.skills.list()] == ["pin"]
        assert [n.content for n in mem.notes.list()] == ["after"]
