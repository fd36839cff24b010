"""What a failed tool call leaves: its action-log row and nothing else, whether it owns its unit
of work (rolled back whole, no SAVEPOINT) or joins the caller's (a SAVEPOINT undoes only the
tool's own writes). The tools here write before they fail, which no registered tool does."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from philont import tools
from philont.errors import InvalidInputError
from philont.memory import Memory
from philont.store import Store
from philont.tools import REGISTRY
from philont.tools.args import GetFactArgs
from philont.tools.registry import Tool, ToolContext, ToolOutput
from tests.tools.helpers import DbTarget, actions, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

FAILURES = {
    "invalid_input": InvalidInputError("the tool refused after writing"),
    "internal_error": RuntimeError("the tool broke after writing"),
}


@pytest.fixture(params=sorted(FAILURES))
def failing_tool(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """A writing tool that stores a fact, then fails with ``request.param``'s exception."""
    failure = FAILURES[request.param]

    def handler(args: GetFactArgs, mem: Memory, ctx: ToolContext) -> ToolOutput:
        mem.facts.store(args.namespace, args.key, "written before the failure")
        raise failure

    name = f"write_then_fail_{request.param}"
    monkeypatch.setitem(REGISTRY, name, Tool(name, GetFactArgs, handler, writes=True))
    return name


@contextmanager
def statements(store: Store) -> Iterator[list[str]]:
    """The SQL text every engine of ``store`` executes inside the block."""
    seen: list[str] = []

    def record(conn: Any, cursor: Any, sql: str, *args: Any) -> None:
        seen.append(sql)

    engines = {id(e): e for e in (store.engine, store.write_engine)}.values()
    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)


def _savepoints(seen: list[str]) -> list[str]:
    return [s for s in seen if "SAVEPOINT" in s.upper()]


def test_a_failed_call_on_its_own_unit_leaves_only_its_row_without_a_savepoint(
    failing_tool: str, tool_target: DbTarget
) -> None:
    before = snapshot(tool_target)
    args = {"namespace": "user", "key": "k"}
    with Store.open(tool_target, upgrade=False) as store, statements(store) as seen:
        result = tools.call(failing_tool, args, db=store)
        ok = tools.call("store_fact", {**args, "value": 1}, db=store)
    assert result.error_code == failing_tool.removeprefix("write_then_fail_")
    assert ok.ok
    assert _savepoints(seen) == []  # its own unit: rolled back whole, then its row
    rows = actions(tool_target)
    assert [(n, s) for n, s, *_ in rows[-2:]] == [(failing_tool, 0), ("store_fact", 1)]
    assert json.loads(str(rows[-2][2])) == args
    after = snapshot(tool_target)
    facts = after.pop("memory_facts")
    assert [f for f in facts if "written before the failure" in str(f)] == []
    assert len(facts) == len(before.pop("memory_facts")) + 1  # the store_fact only
    after.pop("memory_access_log")
    before.pop("memory_access_log")
    assert after == before


def test_a_failed_call_in_the_callers_unit_undoes_only_its_own_writes_by_a_savepoint(
    failing_tool: str, tool_target: DbTarget
) -> None:
    with Store.open(tool_target, upgrade=False) as store, statements(store) as seen:
        with store.begin() as mem:
            mem.facts.store("user", "before", 1)
            result = tools.call(failing_tool, {"namespace": "user", "key": "k"}, db=mem)
            mem.facts.store("user", "after", 2)
        with store.begin(write=False) as mem:
            kept = {f.key: f.value for f in mem.facts.list("user")}
    assert not result.ok
    assert kept == {"before": 1, "after": 2}
    assert _savepoints(seen)  # the tool ran inside a SAVEPOINT of the caller's transaction
    assert actions(tool_target)[-1][:2] == (failing_tool, 0)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    extra=st.dictionaries(
        st.text(max_size=8),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner),
            max_leaves=6,
        ),
        max_size=3,
    ),
    as_text=st.booleans(),
)
def test_the_logged_params_are_the_arguments_or_a_repr_of_them(
    extra: dict[str, Any], as_text: bool, tool_target: DbTarget, backend: str
) -> None:
    """Whatever a call is given, given as an object or as JSON text, its row keeps the
    arguments as JSON when the log can store them as given, else a bounded repr."""
    if backend == "postgres":
        pytest.skip("the log's encoding does not depend on the backend; SQLite is enough")
    arguments = {"namespace": "user", "key": "k", **extra}
    given_as: Any = json.dumps(arguments) if as_text else arguments
    tools.call("get_fact", given_as, db=tool_target)
    logged = json.loads(str(actions(tool_target)[-1][2]))
    try:
        expected = json.loads(json.dumps(arguments, allow_nan=False))
        json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        assert set(logged) == {"_raw"}
    else:
        assert logged == expected
