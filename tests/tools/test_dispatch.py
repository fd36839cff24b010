"""The dispatcher: validates, runs one unit of work, logs every call, never raises."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from philont import Memory, tools
from philont.store import Store
from tests.support import write_lock_is_free
from tests.tools.helpers import DbTarget, actions, snapshot

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py: tool_target)

ELEVEN = {
    "store_fact",
    "get_fact",
    "list_facts",
    "search_notes",
    "search_skills",
    "use_skill",
    "recall_sessions",
    "create_calendar_event",
    "list_upcoming",
    "schedule_reminder",
    "cancel_schedule",
}


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


class _Unshowable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def test_the_eleven_tools_are_registered_with_their_exact_names() -> None:
    assert set(tools.TOOL_NAMES) == ELEVEN


@pytest.mark.parametrize(
    ("name", "arguments", "code"),
    [
        ("no_such_tool", {}, "unknown_tool"),
        ("store_fact", "{not json", "invalid_json"),
        ("store_fact", "[1, 2]", "invalid_arguments"),
        ("store_fact", {"namespace": "user", "key": "k"}, "invalid_arguments"),
        (
            "store_fact",
            {"namespace": "user", "key": "k", "value": 1, "extra": 2},
            "invalid_arguments",
        ),
        ("store_fact", {"namespace": 5, "key": "k", "value": 1}, "invalid_arguments"),
        (
            "store_fact",
            {"namespace": "user", "key": "k", "value": 1, "confidence": 2},
            "invalid_arguments",
        ),
        (
            "store_fact",
            {"namespace": "user", "key": "k", "value": 1, "confidence": "high"},
            "invalid_arguments",
        ),
        ("store_fact", {"namespace": "self", "key": "k", "value": 1}, "reserved_namespace"),
        (
            "store_fact",
            {"namespace": "system", "key": "last_consolidated_ts", "value": 9e12},
            "reserved_namespace",
        ),
        ("store_fact", {"namespace": "system.x", "key": "k", "value": 1}, "reserved_namespace"),
        # refused by the shared input types, before any transaction begins
        ("store_fact", {"namespace": "user", "key": "a b", "value": 1}, "invalid_arguments"),
        (
            "store_fact",
            {
                "namespace": "user",
                "key": "k",
                "value": 1,
                "valid_from": "2026-02-01",
                "valid_until": "2026-01-01",
            },
            "invalid_time_range",
        ),
        (
            "store_fact",
            {
                "namespace": "user",
                "key": "k",
                "value": 1,
                "occurred_at": "tomorrow",
                "fact_kind": "event",
            },
            "invalid_input",
        ),
        ("get_fact", {"namespace": "user", "key": "missing"}, "fact_not_found"),
        ("use_skill", {"name": "missing"}, "skill_not_found"),
    ],
)
def test_a_failing_call_reports_a_code_and_leaves_memory_unchanged(
    name: str, arguments: object, code: str, tool_target: DbTarget
) -> None:
    before = snapshot(tool_target)
    result = tools.call(name, arguments, db=tool_target)  # type: ignore[arg-type]
    assert not result.ok and result.error_code == code
    assert result.text.startswith(f"error ({code})")
    assert snapshot(tool_target) == before
    logged = actions(tool_target)
    assert logged[-1][0] == name and logged[-1][1] == 0


def test_every_successful_call_is_recorded_with_its_params_and_result(
    tool_target: DbTarget,
) -> None:
    args = {"namespace": "user", "key": "name", "value": "Lena"}
    result = tools.call("store_fact", json.dumps(args), db=tool_target)
    assert result.ok
    tool_name, success, params, logged = actions(tool_target)[-1]
    assert (tool_name, success) == ("store_fact", 1)
    assert json.loads(str(params)) == args
    assert str(logged).startswith("Stored user.name")


@pytest.mark.parametrize(
    "arguments",
    [
        "{not json",
        "[1, 2]",
        {1: "a key that is not text"},
        {"namespace": "user", "key": "k", "value": float("nan")},
        {"namespace": "user", "key": "k", "value": {1, 2}},
        {"namespace": "user", "key": "k", "value": "lone \ud800 surrogate"},
        # plain repr() of these raised out of call(), which never raises
        {"namespace": "user", "key": "k", "value": _nested(sys.getrecursionlimit() + 100)},
        {"namespace": "user", "key": "k", "value": _Unshowable()},
        {"namespace": "user", "key": "k", "value": [{1, 2}] * 100_000},
    ],
    ids=[
        "bad JSON",
        "not an object",
        "int key",
        "NaN",
        "a set",
        "lone surrogate",
        "deeper than the recursion limit",
        "a repr that raises",
        "huge",
    ],
)
def test_arguments_the_log_cannot_store_as_given_are_logged_as_their_repr(
    arguments: object, tool_target: DbTarget
) -> None:
    result = tools.call("store_fact", arguments, db=tool_target)  # type: ignore[arg-type]
    assert not result.ok
    tool_name, success, params, _logged = actions(tool_target)[-1]
    assert (tool_name, success) == ("store_fact", 0)
    logged = json.loads(str(params))
    assert set(logged) == {"_raw"} and 0 < len(logged["_raw"]) <= 1000


def test_a_call_inside_the_callers_unit_of_work_joins_it(tool_target: DbTarget) -> None:
    with pytest.raises(RuntimeError), Memory.open(tool_target) as mem:
        assert tools.call("store_fact", {"namespace": "user", "key": "a", "value": 1}, db=mem).ok
        raise RuntimeError("the host's turn failed")
    assert tools.call("get_fact", {"namespace": "user", "key": "a"}, db=tool_target).ok is False


def test_a_nul_character_is_kept_on_sqlite_and_refused_on_postgres_without_harm(
    tool_target: DbTarget, backend: str
) -> None:
    event = {"title": "before\x00after", "starts_at": "2099-01-01T10:00:00Z", "timezone": "UTC"}
    with Memory.open(tool_target) as mem:
        assert tools.call("store_fact", {"namespace": "user", "key": "a", "value": 1}, db=mem).ok
        created = tools.call("create_calendar_event", event, db=mem)
        unknown = tools.call("\x00", {}, db=mem)
    assert unknown.error_code == "unknown_tool"
    if backend == "postgres":  # PostgreSQL text cannot hold U+0000: a typed refusal
        assert created.error_code == "invalid_input" and "NUL" in (created.error or "")
        nul_name = "\\x00"  # the action log escapes it
    else:
        assert created.ok and created.data["title"] == "before\x00after"
        nul_name = "\x00"
    # Every call was logged, and the caller's unit of work survived the refusal.
    assert [(n, ok) for n, ok, *_ in actions(tool_target)] == [
        ("store_fact", 1),
        ("create_calendar_event", 0 if backend == "postgres" else 1),
        (nul_name, 0),
    ]
    assert tools.call("get_fact", {"namespace": "user", "key": "a"}, db=tool_target).ok


def test_the_default_database_is_read_from_memory_db_path_at_call_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMORY_DB_PATH", str(tmp_path / "a.sqlite"))
    assert tools.call("store_fact", {"namespace": "user", "key": "x", "value": 1}).ok
    monkeypatch.setenv("MEMORY_DB_PATH", str(tmp_path / "b.sqlite"))
    assert not tools.call("get_fact", {"namespace": "user", "key": "x"}).ok


def test_an_unusable_database_is_a_failure_not_an_exception(tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database")
    result = tools.call("get_fact", {"namespace": "user", "key": "x"}, db=junk)
    assert not result.ok and result.error_code == "not_a_database"


def test_schemas_for_openai_and_anthropic_are_closed_and_described() -> None:
    openai = {t["function"]["name"]: t["function"] for t in tools.openai_tools()}
    anthropic = {t["name"]: t for t in tools.anthropic_tools()}
    assert set(openai) == set(anthropic) == ELEVEN
    for name, fn in openai.items():
        schema = fn["parameters"]
        assert fn["description"] and anthropic[name]["description"] == fn["description"]
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert "$ref" not in json.dumps(schema) and "$defs" not in schema
        for prop, spec in schema["properties"].items():
            assert spec.get("description"), f"{name}.{prop} has no description"
        assert anthropic[name]["input_schema"] == schema


# --- read-only tools and the write lock ------------------------------------------------------

READ_ONLY = [
    ("get_fact", {"namespace": "user", "key": "city"}, "philont.services.facts.FactService.get"),
    ("list_facts", {"namespace": "user"}, "philont.services.facts.FactService.list"),
    ("search_notes", {"query": "deposit"}, "philont.services.search.SearchService.notes"),
    ("search_skills", {"query": "zip"}, "philont.services.search.SearchService.skills"),
    ("recall_sessions", {"query": "Berlin"}, "philont.services.search.SearchService.messages"),
    (
        "list_upcoming",
        {"window_days": 7},
        "philont.services.calendar.CalendarService.between",
    ),
]
WRITING = [
    (
        "store_fact",
        {"namespace": "user", "key": "city", "value": "Paris"},
        "philont.services.facts.FactService.store",
    ),
]


@pytest.mark.parametrize(("name", "args", "target"), READ_ONLY + WRITING)
def test_read_only_tools_do_their_work_without_the_write_lock(
    tool_db: Path, monkeypatch: pytest.MonkeyPatch, name: str, args: dict[str, Any], target: str
) -> None:
    with Store.open(tool_db) as store:
        with store.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
        module, cls, method = target.rsplit(".", 2)
        owner = getattr(importlib.import_module(module), cls)
        original = getattr(owner, method)
        seen: list[bool] = []

        def probing(self: Any, *a: Any, **kw: Any) -> Any:
            seen.append(write_lock_is_free(str(tool_db)))  # while the tool's own work runs
            return original(self, *a, **kw)

        monkeypatch.setattr(owner, method, probing)
        result = tools.call(name, args, db=store)
    assert result.ok, result.text
    assert seen == [(name, args, target) in READ_ONLY]


def test_a_calendar_rule_is_checked_before_the_write_lock_is_taken(
    tool_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from philont.domain import series

    original = series.check_event
    seen: list[bool] = []

    def probing(*a: Any, **kw: Any) -> Any:
        seen.append(write_lock_is_free(str(tool_db)))
        return original(*a, **kw)

    monkeypatch.setattr(series, "check_event", probing)
    with Store.open(tool_db) as store:
        result = tools.call(
            "create_calendar_event",
            {
                "title": "Yoga",
                "starts_at": "2026-05-04T18:00:00",
                "timezone": "Europe/Berlin",
                "rrule": "FREQ=WEEKLY;BYDAY=MO",
            },
            db=store,
        )
    assert result.ok, result.text
    assert seen and seen[0] is True  # checked while another connection could still write
