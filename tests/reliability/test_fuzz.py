"""Long fuzzing runs (marker ``reliability``: 10 000 examples each for the tool dispatcher and
the query builder, 3 000 searches of the real schema) and a short search fuzz in the default
suite."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from philont import tools
from philont.db.engine import create_engine
from philont.domain.query import build_plan
from philont.services.search import SearchService
from philont.store import Store
from tests.properties.test_tool_fuzz import arguments, field_names, json_values, names
from tests.tools.helpers import MEMORY_TABLES_EXCEPT_ACTIONS
from tests.unit.test_query import ANY_CHAR, ANY_TEXT, run_plan
from tests.unit.test_query import fts as fts  # the builder test's fixture, re-used

HEAVY_EXAMPLES = 10_000
HEAVY_SEARCH_EXAMPLES = 3_000  # beyond the brief; keeps the heavy run well inside its budget
LIGHT_SEARCH_EXAMPLES = 100

# the dispatcher fuzz of tests/properties plus text holding lone surrogates (invalid UTF-8)
SURROGATE_TEXT = st.text(ANY_CHAR, max_size=30)
ARGUMENTS = arguments | st.dictionaries(field_names, json_values | SURROGATE_TEXT, max_size=6)
NAMES = names | SURROGATE_TEXT


@pytest.fixture
def engine(tool_db: Path) -> Iterator[Engine]:
    eng = create_engine(tool_db)
    with Store(eng).begin() as mem:  # something for the read tools to find
        mem.facts.store("user.home", "city", "Berlin")
        mem.notes.add("the spare key is under the blue pot")
        mem.timeline.append("remember that the meeting moved to Friday")
    yield eng
    eng.dispose()


@pytest.fixture
def counter(tool_db: Path) -> Iterator[sqlite3.Connection]:
    with closing(sqlite3.connect(str(tool_db), isolation_level=None)) as conn:
        yield conn


def _counts(conn: sqlite3.Connection) -> tuple[int, ...]:
    return tuple(
        conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in MEMORY_TABLES_EXCEPT_ACTIONS
    )


def _actions(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM memory_actions").fetchone()[0])


@pytest.mark.reliability
@settings(
    max_examples=HEAVY_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(name=NAMES, args=ARGUMENTS, joined=st.booleans())
def test_ten_thousand_arbitrary_tool_calls_never_raise_and_failures_write_nothing(
    engine: Engine, counter: sqlite3.Connection, name: str, args: object, joined: bool
) -> None:
    before, actions_before = _counts(counter), _actions(counter)
    if joined:  # inside the caller's unit of work
        with Store(engine).begin() as mem:
            result = tools.call(name, args, db=mem)  # type: ignore[arg-type]
    else:  # the call's own unit of work, retried when busy
        result = tools.call(name, args, db=Store(engine))  # type: ignore[arg-type]
    assert isinstance(result, tools.ToolResult)
    if not result.ok:
        assert result.error_code and result.error
        assert result.error_code != "internal_error", result.error
        assert _counts(counter) == before
    assert _actions(counter) == actions_before + 1


@pytest.mark.reliability
@settings(
    max_examples=HEAVY_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ANY_TEXT)
def test_ten_thousand_arbitrary_texts_give_none_or_a_plan_that_runs_without_error(
    fts: sqlite3.Connection, text: str
) -> None:
    plan = build_plan(text)
    if plan is None:
        return
    assert plan.terms
    for value in (*plan.terms, plan.fts_expression or "", plan.trigram_expression or ""):
        value.encode("utf-8")
    run_plan(fts, plan)


def _search_everything(engine: Engine, text: str) -> None:
    with Store(engine).begin(write=False) as mem:
        search = SearchService(mem)
        hits = search.messages(text, limit=10)
        search.notes(text, limit=10, include_forgotten=True)
        search.skills(text, limit=10, include_deprecated=True)
    if build_plan(text) is None:
        assert hits == []


@settings(
    max_examples=LIGHT_SEARCH_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ANY_TEXT)
def test_searching_the_real_schema_with_any_text_never_raises(engine: Engine, text: str) -> None:
    _search_everything(engine, text)


@pytest.mark.reliability
@settings(
    max_examples=HEAVY_SEARCH_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(ANY_TEXT)
def test_thousands_of_searches_of_the_real_schema_never_raise(engine: Engine, text: str) -> None:
    _search_everything(engine, text)
