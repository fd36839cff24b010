"""ActionLog on a real SQLite file: recording tool calls, querying, failures and skill links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from philont.db.models import Action
from philont.db.types import dumps_compact
from philont.errors import InvalidInputError, InvalidTimeRangeError
from philont.services.actions import RESULT_MAX_CHARS, ActionLog, ObjectJson, object_json
from tests.support import joined

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)

if TYPE_CHECKING:
    from conftest import FakeClock

T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def actions(session: Session, clock: FakeClock) -> ActionLog:
    return ActionLog(joined(session, clock))


def _rows(session: Session) -> int:
    return int(session.scalar(select(func.count()).select_from(Action)) or 0)


def _hours(n: float) -> datetime:
    return T0 + timedelta(hours=n)


def test_recording_a_call_returns_it_with_defaults(actions: ActionLog, clock: FakeClock) -> None:
    rec = actions.record("store_fact", params={"namespace": "user", "n": [1, 2]}, success=True)

    assert rec.id > 0
    assert (rec.tool_name, rec.params, rec.success) == (
        "store_fact",
        {"namespace": "user", "n": [1, 2]},
        True,
    )
    assert (rec.session_id, rec.trigger, rec.result, rec.linked_skill) == (
        "global",
        None,
        None,
        None,
    )
    assert rec.timestamp == clock.now


def test_a_long_result_is_cut_to_the_limit(actions: ActionLog) -> None:
    rec = actions.record("fetch", params={}, success=True, result="é" * (RESULT_MAX_CHARS + 50))

    assert RESULT_MAX_CHARS == 2000
    assert rec.result == "é" * RESULT_MAX_CHARS
    assert actions.query()[0].result == rec.result


BAD_RECORDS: list[tuple[str, dict[str, Any]]] = [
    ("blank tool name", {"tool_name": "  "}),
    ("params not a dict", {"params": ["a"]}),
    ("params with a non-text key", {"params": {1: "a"}}),
    ("params not JSON", {"params": {"x": object()}}),
    ("success as text", {"success": "yes"}),
    ("success as int", {"success": 1}),
    ("result not text", {"result": 42}),
    ("blank session", {"session_id": ""}),
    ("naive time", {"at": datetime(2026, 6, 1)}),
]


@pytest.mark.parametrize("overrides", [c[1] for c in BAD_RECORDS], ids=[c[0] for c in BAD_RECORDS])
def test_a_refused_record_raises_invalid_input_and_writes_nothing(
    actions: ActionLog, session: Session, overrides: dict[str, Any]
) -> None:
    before = _rows(session)
    args: dict[str, Any] = {"tool_name": "t", "params": {}, "success": True, **overrides}

    with pytest.raises(InvalidInputError):
        actions.record(args.pop("tool_name"), **args)

    assert _rows(session) == before


def test_a_call_recorded_as_json_reads_back_like_a_recorded_one(
    actions: ActionLog, clock: FakeClock
) -> None:
    params = {"namespace": "user", "n": [1, 2.5], "é": None}
    new_id = actions.record_call(
        "store_fact",
        params_json=dumps_compact(params),
        success=False,
        result="é" * (RESULT_MAX_CHARS + 50),
        session_id="s1",
    )
    via_record = actions.record("store_fact", params=params, success=False, session_id="s1")

    read = actions.query(order="asc")
    assert [r.id for r in read] == [new_id, via_record.id]
    assert read[0].model_dump(exclude={"id", "result"}) == via_record.model_dump(
        exclude={"id", "result"}
    )
    assert read[0].result == "é" * RESULT_MAX_CHARS
    assert read[0].timestamp == clock.now


@pytest.mark.parametrize(
    "params", [{}, {"a": 1}, {"é": ["x", None, 2.5]}, {"deep": {"list": [{"k": True}]}}]
)
def test_params_encoded_by_object_json_are_stored_unparsed_and_read_back_alike(
    actions: ActionLog, params: dict[str, Any]
) -> None:
    encoded = object_json(params)
    assert isinstance(encoded, ObjectJson)
    assert encoded == dumps_compact(params)

    new_id = actions.record_call(
        "t", params_json=encoded, success=True, result="ok", session_id="s"
    )

    (read,) = actions.query(tool_name="t")
    assert (read.id, read.params) == (new_id, params)


@pytest.mark.parametrize(
    "value",
    [[1], "{}", {1: "a"}, {"a": float("nan")}, {"a": "\ud800"}, {"a": object()}, None],
    ids=["list", "text", "int key", "NaN", "lone surrogate", "object", "None"],
)
def test_object_json_refuses_what_is_not_an_object_json_can_hold(value: Any) -> None:
    with pytest.raises(InvalidInputError) as err:
        object_json(value)
    message = err.value.message  # the argument named once: by itself or by a place in it
    assert message.startswith(("params: ", "params.")) and message.count("params") == 1, message
    assert err.value.details["argument"] == "params"


BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("blank tool name", {"tool_name": " "}),
    ("params a JSON list", {"params_json": "[1]"}),
    ("params not JSON", {"params_json": "{x}"}),
    ("params with NaN", {"params_json": '{"a":NaN}'}),
    ("params not text", {"params_json": {"a": 1}}),
    ("a lone surrogate", {"params_json": '{"a":"\ud800"}'}),
    ("success as int", {"success": 1}),
    ("result not text", {"result": 42}),
    ("blank session", {"session_id": ""}),
    ("session not text", {"session_id": 7}),
]


@pytest.mark.parametrize("overrides", [c[1] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_a_refused_record_call_raises_invalid_input_and_writes_nothing(
    actions: ActionLog, session: Session, overrides: dict[str, Any]
) -> None:
    before = _rows(session)
    args: dict[str, Any] = {
        "tool_name": "t",
        "params_json": "{}",
        "success": True,
        "result": "",
        "session_id": "global",
        **overrides,
    }

    with pytest.raises(InvalidInputError):
        actions.record_call(args.pop("tool_name"), **args)

    assert _rows(session) == before


@pytest.fixture
def history(actions: ActionLog) -> ActionLog:
    """Hour 0 ok search, 1 failed fetch (s1), 2 ok fetch (s1, skill 'web'), 3 failed search."""
    actions.record("search", params={"q": "a"}, success=True, at=_hours(0))
    actions.record("fetch", params={}, success=False, session_id="s1", at=_hours(1))
    actions.record(
        "fetch", params={}, success=True, session_id="s1", linked_skill="web", at=_hours(2)
    )
    actions.record("search", params={"q": "b"}, success=False, result="boom", at=_hours(3))
    return actions


@pytest.mark.parametrize(
    ("filters", "expected_hours"),
    [
        ({}, [0, 1, 2, 3]),
        ({"session_id": "s1"}, [1, 2]),
        ({"tool_name": "search"}, [0, 3]),
        ({"success": False}, [1, 3]),
        ({"linked_skill": "web"}, [2]),
        ({"since": _hours(1), "until": _hours(2)}, [1, 2]),
        ({"since": _hours(3)}, [3]),
        ({"until": _hours(0)}, [0]),
        ({"order": "desc", "limit": 2}, [3, 2]),
        ({"tool_name": "fetch", "success": True}, [2]),
    ],
)
def test_query_filters_with_inclusive_bounds_ordered_by_time(
    history: ActionLog, filters: dict[str, Any], expected_hours: list[int]
) -> None:
    assert [a.timestamp for a in history.query(**filters)] == [_hours(h) for h in expected_hours]


@pytest.mark.parametrize(
    ("filters", "error"),
    [
        ({"since": _hours(2), "until": _hours(1)}, InvalidTimeRangeError),
        ({"limit": 0}, InvalidInputError),
        ({"order": "up"}, InvalidInputError),
        ({"success": "no"}, InvalidInputError),
    ],
)
def test_query_refuses_bad_arguments(
    history: ActionLog, filters: dict[str, Any], error: type[Exception]
) -> None:
    with pytest.raises(error):
        history.query(**filters)


def test_recent_failures_are_newest_first(history: ActionLog) -> None:
    assert [a.timestamp for a in history.recent_failures()] == [_hours(3), _hours(1)]
    assert [a.timestamp for a in history.recent_failures(since=_hours(2))] == [_hours(3)]
    assert [a.timestamp for a in history.recent_failures(session_id="s1")] == [_hours(1)]
    assert [a.result for a in history.recent_failures(limit=1)] == ["boom"]


def test_linking_actions_to_a_skill_counts_the_existing_ones(history: ActionLog) -> None:
    ids = [a.id for a in history.query(tool_name="search")]

    assert history.link_skill([*ids, 999_999], "web-search") == 2
    assert [a.id for a in history.query(linked_skill="web-search")] == ids
    assert history.link_skill([], "web-search") == 0


def test_linking_refuses_a_blank_skill_and_writes_nothing(history: ActionLog) -> None:
    ids = [a.id for a in history.query()]

    with pytest.raises(InvalidInputError):
        history.link_skill(ids, " ")

    assert [a.linked_skill for a in history.query()] == [None, None, "web", None]


def test_count_counts_all_actions_or_one_tool(history: ActionLog) -> None:
    assert (history.count(), history.count("fetch"), history.count("nope")) == (4, 2, 0)
