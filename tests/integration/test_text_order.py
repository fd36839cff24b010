"""Records tied on everything but their text keys are listed in code point order on both
backends, whatever the PostgreSQL database's collation: facts by namespace and key
(``FactService.list``, the ``list_facts`` tool, the memory prefix's ties of the decay score),
notes by id (``NoteService.list``, the prefix's notes) and sessions by id
(``TimelineService.list_sessions``). Before, PostgreSQL ordered
them by its database's locale, so a database made with ``initdb`` under ``en_US.UTF-8`` (most
systems' default) listed ``user.Zoe`` after ``user.apple`` and ``a_b`` after ``ab`` where SQLite
(and Python's ``sorted``) put them first."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import make_url

from philont import Store
from philont.errors import ScheduleNotFoundError
from philont.learning.config import LearningConfig
from philont.learning.extract import MemoryWriter
from philont.services.prefix import PrefixLimits
from philont.tools import call as call_tool
from tests.pg_support import admin_autocommit, server_url

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)

# Keys whose code point order differs from a linguistic one: case, punctuation, digits.
KEYS = ["Zoe", "apple", "a_b", "ab", "a-c", "a.c", "b2", "b10", "B", "z", "A_b"]


@pytest.fixture(scope="module")
def linguistic_db() -> Iterator[str]:
    """The URL of a new PostgreSQL database whose default collation is ICU's English (dropped
    after): text ordered there without a collation is ordered as words, not code points."""
    pytest.importorskip("psycopg")
    name = f"philont_coll_{uuid.uuid4().hex[:8]}"
    try:
        admin_autocommit(
            f"CREATE DATABASE {name} ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en'"
            " LOCALE 'C.UTF-8' TEMPLATE template0"
        )
    except Exception as exc:  # a server where this role may not create databases, or no ICU
        pytest.skip(f"cannot create an ICU-collated database here: {exc}")
    yield make_url(server_url()).set(database=name).render_as_string(hide_password=False)
    admin_autocommit(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _open(
    request: pytest.FixtureRequest, backend: str, tmp_path_factory: pytest.TempPathFactory
) -> Store:
    """A new memory at NOW: a new file, or a new agent in the ICU-collated database."""
    if backend == "postgres":
        target: str | Path = request.getfixturevalue("linguistic_db")
    else:
        target = tmp_path_factory.mktemp("order") / "memory.sqlite"
    return Store.open(target, agent=f"a{uuid.uuid4().hex[:8]}", clock=lambda: NOW)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    keys=st.lists(st.sampled_from(KEYS), min_size=2, max_size=8, unique=True),
    namespaces=st.lists(
        st.sampled_from(["user", "user_x", "userx", "use", "user-x", "user.a"]),
        min_size=1,
        max_size=3,
    ),
)
def test_tied_facts_are_listed_in_code_point_order(
    request: pytest.FixtureRequest,
    backend_name: str,
    tmp_path_factory: pytest.TempPathFactory,
    keys: list[str],
    namespaces: list[str],
) -> None:
    pairs = [(ns, k) for ns in dict.fromkeys(namespaces) for k in keys]
    expected = sorted(pairs)
    store = _open(request, backend_name, tmp_path_factory)
    try:
        with store.begin() as mem:
            for ns, k in reversed(pairs):  # stored in the wrong order, at one instant
                mem.facts.store(ns, k, "v")
        with store.begin() as mem:
            listed = [(f.namespace, f.key) for f in mem.facts.list("*", now=NOW)]
            ranked = [(f.namespace, f.key) for f in mem.facts.list("*", ranked=True, now=NOW)]
            prefix = mem.prefix.build(limits=PrefixLimits(budget_tokens=10_000), now=NOW).text
        assert listed == expected
        assert ranked == expected  # equal scores keep the listing's order
        shown = [line.split(" = ")[0] for line in prefix.splitlines() if " = " in line]
        assert shown == [f"- {ns}.{k}" for ns, k in expected]
        tool = call_tool("list_facts", {"namespace": "*"}, db=store)
        assert [(f["namespace"], f["key"]) for f in tool.data] == expected
    finally:
        store.close()


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ids=st.lists(st.sampled_from(KEYS), min_size=2, max_size=8, unique=True))
def test_tied_notes_and_sessions_are_listed_in_code_point_order(
    request: pytest.FixtureRequest,
    backend_name: str,
    tmp_path_factory: pytest.TempPathFactory,
    ids: list[str],
) -> None:
    store = _open(request, backend_name, tmp_path_factory)
    try:
        with store.begin() as mem:
            for i in reversed(ids):  # at one instant, equally important
                mem.notes.add(f"note {i}", importance=0.5, id=i)
                mem.timeline.start_session(i)
        with store.begin() as mem:
            notes = [n.id for n in mem.notes.list(limit=50)]
            sessions = [s.id for s in mem.timeline.list_sessions(limit=50) if s.id in ids]
            prefix = mem.prefix.build(limits=PrefixLimits(budget_tokens=10_000), now=NOW).text
        assert notes == sorted(ids)
        assert sessions == sorted(ids, reverse=True)  # newest first, then by id descending
        shown = [line.split("note ")[1] for line in prefix.splitlines() if "note " in line]
        assert shown == sorted(ids)
    finally:
        store.close()


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(names=st.lists(st.sampled_from(KEYS), min_size=2, max_size=8, unique=True))
def test_enabled_schedules_tied_on_time_are_named_in_code_point_order(
    request: pytest.FixtureRequest,
    backend_name: str,
    tmp_path_factory: pytest.TempPathFactory,
    names: list[str],
) -> None:
    """A cancel that matches nothing lists what is enabled, soonest first and then by name
    (``ScheduleNotFoundError``): in code point order on both backends."""
    store = _open(request, backend_name, tmp_path_factory)
    try:
        with store.begin() as mem:
            for name in reversed(names):  # each next run at one instant
                mem.schedules.create(name, message="m", interval_ms=3_600_000)
        with pytest.raises(ScheduleNotFoundError) as caught, store.begin() as mem:
            mem.schedules.cancel(name="nobody has this one")
        shown = str(caught.value).split("Currently enabled: ")[1]
        assert shown == ", ".join(sorted(names))
    finally:
        store.close()


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ids=st.lists(st.sampled_from(KEYS), min_size=2, max_size=6, unique=True))
def test_extraction_names_the_first_of_tied_same_notes_in_code_point_order(
    request: pytest.FixtureRequest,
    backend_name: str,
    tmp_path_factory: pytest.TempPathFactory,
    ids: list[str],
) -> None:
    """Notes saying the same (up to case and spacing), stored at one instant: the note an
    extraction finds already held (its proposal 'unchanged', naming it) is the first of them
    by id in code point order."""
    store = _open(request, backend_name, tmp_path_factory)
    try:
        with store.begin() as mem:
            for n, i in enumerate(reversed(ids)):  # the same note, spelt differently
                mem.notes.add("buy" + " " * (n + 1) + "milk", id=i)
        with store.begin() as mem:
            writer = MemoryWriter(mem, LearningConfig())
            assert writer._active_note("BUY MILK") == min(ids)
    finally:
        store.close()


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ids=st.lists(st.sampled_from(KEYS), min_size=2, max_size=6, unique=True))
def test_extraction_names_the_first_of_tied_identical_notes_in_code_point_order(
    request: pytest.FixtureRequest,
    backend_name: str,
    tmp_path_factory: pytest.TempPathFactory,
    ids: list[str],
) -> None:
    """The same for notes of exactly the proposal's text: a proposal held as is names the
    note the case-folded look-up would, not whichever row the database reads first."""
    store = _open(request, backend_name, tmp_path_factory)
    try:
        with store.begin() as mem:
            for i in reversed(ids):
                mem.notes.add("buy milk", id=i)
        with store.begin() as mem:
            writer = MemoryWriter(mem, LearningConfig())
            base = {"index": 0, "action": "store_note"}
            window = cast(Any, None)  # not read: the note is held
            held = writer._note(base, {"content": "buy milk"}, window, None)
        assert (held.outcome, held.id) == ("unchanged", min(ids))
    finally:
        store.close()


# --- philont.db.ordering.code_points itself ---------------------------------------------------

# Note ids and contents in crossing orders: a statement served another's compiled form (one
# cache key for two wrapped columns) lists the other column's order.
_CROSSING = {"b": "a_z", "A": "b-y", "a_b": "Zx", "a-c": "ab"}


def _wrapped(column: Any, how: str) -> Any:
    """A statement ordered by ``code_points(column)``, used as ``how`` says."""
    from sqlalchemy import select

    from philont.db.models import Note
    from philont.db.ordering import code_points

    if how == "asc":
        return select(Note.id).order_by(code_points(column))
    if how == "desc":
        return select(Note.id).order_by(code_points(column).desc())
    if how == "label":  # selected under a label and ordered by it
        return select(code_points(column).label("k")).order_by("k")
    from sqlalchemy.sql.util import ClauseAdapter

    # adapted onto an alias, as the ORM adapts an ORDER BY onto its subqueries and aliases
    return ClauseAdapter(Note.__table__.alias("n")).traverse(
        select(Note.id).order_by(code_points(column))
    )


@pytest.mark.parametrize("how", ["asc", "desc", "label", "aliased"])
def test_code_points_statements_that_differ_only_in_the_column_compile_apart(how: str) -> None:
    """Two statements that differ only in the wrapped column have different cache keys and
    compile to their own column, ``COLLATE "C"`` on PostgreSQL, with their FROM."""
    from sqlalchemy.dialects import postgresql, sqlite

    from philont.db.models import Note

    by_id, by_content = _wrapped(Note.id, how), _wrapped(Note.content, how)
    assert by_id._generate_cache_key() != by_content._generate_cache_key()
    for dialect in (postgresql.dialect(), sqlite.dialect()):
        for stmt, column in ((by_id, "id"), (by_content, "content")):
            sql = " ".join(str(stmt.compile(dialect=dialect)).split())
            assert f".{column}" in sql
            assert " FROM memory_notes" in sql  # the wrapped column's table (or its alias)
            assert ('COLLATE "C"' in sql) == (dialect.name == "postgresql")
            if how == "aliased":  # the ORDER BY adapted with the rest
                assert "memory_notes." not in sql


@pytest.mark.parametrize("how", ["asc", "desc", "label", "aliased"])
def test_code_points_statements_run_apart_on_one_engine(
    request: pytest.FixtureRequest,
    backend_name: str,
    tmp_path_factory: pytest.TempPathFactory,
    how: str,
) -> None:
    """Run on one engine (one statement cache), each statement sorts by its own column, in
    code point order (on PostgreSQL, a database of ICU's English collation)."""
    from philont.db.models import Note

    store = _open(request, backend_name, tmp_path_factory)
    try:
        with store.begin() as mem:
            for note_id, content in _CROSSING.items():
                mem.notes.add(content, id=note_id)
        with store.begin(write=False) as mem:
            for _ in range(2):  # the second time from the cache
                by_id = list(mem.session.scalars(_wrapped(Note.id, how)))
                by_content = list(mem.session.scalars(_wrapped(Note.content, how)))
                down = how == "desc"
                assert by_id == sorted(_CROSSING, reverse=down)
                assert by_content == (
                    sorted(_CROSSING.values())
                    if how == "label"  # the label selects the content itself
                    else sorted(_CROSSING, key=_CROSSING.__getitem__, reverse=down)
                )
    finally:
        store.close()
