"""Every public method of every service (``philont.services``, ``.learning``, ``.embed``),
given a bad value for each of its arguments in turn (the others good), answers in one of three
ways: it takes the value, it answers with another typed error (not found, conflict), or it
refuses it with an ``InvalidInputError`` that names the argument, having changed nothing in
the unit of work. Naming it: the message starts with ``<argument>: `` and the ``argument``
detail is its name; or, for a combination refused (``name`` and ``id`` of one schedule that
disagree), the message starts with the names and the ``arguments`` detail holds them. An
untyped error (TypeError, AttributeError, a driver's error) fails the test."""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.engine import URL

import philont.embed
import philont.learning
import philont.services
from philont.db.schema import metadata
from philont.domain.attribution import AttributionWindow
from philont.embed.hashing import HashEmbedder
from philont.errors import InvalidInputError, ModelUnavailableError, PhilontError
from philont.learning import CaseBook, JudgeResult, Learner, LearningConfig, Run, Window
from philont.learning.extract import MemoryWriter
from philont.learning.parse import ExtractionAnswer, SkillAnswer
from philont.learning.skills import SkillWriter
from philont.llm.base import Completion
from philont.memory import Memory
from philont.schemas.learning import Verdict
from philont.schemas.timeline import MessageIn
from philont.services.base import Service
from philont.services.prefix import PrefixLimits
from philont.store import Store
from tests.support import public_methods

BOTH_BACKENDS = True

NOW = datetime(2026, 6, 14, 12, 0, tzinfo=UTC)
BAD = "bad \ud800 text"


class _Opaque:
    """An object no argument takes."""


BAD_VALUES: tuple[object, ...] = (
    None,
    "",
    "x",
    BAD,
    b"bytes",
    5,
    -1,
    2**63,
    1.5,
    math.nan,
    True,
    [],
    [5],
    ["x"],
    {"k": 1},
    datetime(2026, 1, 1),  # naive
    timedelta(days=-1),
    _Opaque(),
)


class _NoModel:
    """A model client that is never reachable (a call that gets as far as asking it ends in a
    typed error)."""

    def complete(self, prompt: str) -> Completion:
        raise ModelUnavailableError("no model in this test")


class _NoJudge:
    """A judge that is never reachable."""

    name = "nobody"

    def judge(self, run: Run) -> JudgeResult:
        raise ModelUnavailableError("no judge in this test")


@dataclass(frozen=True)
class _Seeded:
    """A value known once the store is seeded (an id)."""

    key: str


GOOD: dict[str, object] = {
    "namespace": "user",
    "key": "city",
    "value": "Berlin",
    "fact_id": _Seeded("fact_id"),
    "record": _Seeded("fact"),
    "days": 30.0,
    "at": NOW,
    "id": "n1",
    "content": "hello",
    "session_id": "global",
    "messages": [MessageIn(content="hi")],
    "role": "user",
    "message": "remember when we met",
    "name": "seed-skill",
    "description": "d",
    "trigger_keywords": "k",
    "action_template": "t",
    "grade": "draft",
    "reason": "why",
    "steps": ["one"],
    "verification": "v",
    "tool_policy": [],
    "tool_name": "get_fact",
    "params": {},
    "params_json": "{}",
    "success": True,
    "action_ids": [1],
    "skill_name": "seed-skill",
    "target_type": "fact",
    "target_id": "1",
    "title": "Dentist",
    "starts_at": NOW + timedelta(days=1),
    "timezone": "UTC",
    "ref": "ext-1",
    "start": NOW - timedelta(days=1),
    "end": NOW + timedelta(days=1),
    "schedule_id": _Seeded("schedule_id"),
    "ok": True,
    "fired_at": NOW,
    "duration_ms": 10,
    "summary": "done",
    "model": _NoModel(),
    "window": AttributionWindow(),
    "limits": PrefixLimits(),
    "query": "hello",
    "skill_id": "no-such-id",
    "embedder": HashEmbedder(),
    "run": Run("book a table", (), "booked"),
    "result": JudgeResult(Verdict.UNSURE),
    "judge": "judge",
    "first_action_ids": [1],
    "session_ids": ["global"],
    "case_id": "no-such-case",
    "note": "n",
    "tag": "t",
    "first_day": date(2026, 6, 20),
}
"""A good value of each required argument, by name."""

OVERRIDES: dict[str, dict[str, object]] = {
    "TimelineService.end_session": {"id": "global"},
    "TimelineService.get_session": {"id": "global"},
    "ScheduleService.create": {"name": "new-one", "interval_ms": 60_000},
    "ScheduleService.replace": {"name": "seed-schedule", "interval_ms": 60_000},
    "ScheduleService.get": {"id": _Seeded("schedule_id")},
    "ScheduleService.find_by_name": {"name": "seed-schedule"},
    "ScheduleService.cancel": {"name": "seed-schedule"},
    "CalendarService.get": {"id": _Seeded("event_id")},
    "CalendarService.delete": {"id": _Seeded("event_id")},
    "CalendarService.upcoming": {"window": timedelta(days=7)},
    "SkillService.create": {"name": "new-skill"},
    "Learner.learn": {"window": Window("t", (), ())},
    "Learner.window": {"session_id": "global"},
    "Learner.reflect": {"session_id": "global"},
    "Learner.extract": {"session_id": "global"},
    "SkillWriter.write": {"answer": SkillAnswer(), "messages": 1},
    "MemoryWriter.write": {"answer": ExtractionAnswer(), "window": Window("t", (), ())},
    "FactTime.as_of": {"at": NOW},
    "ReflectorService.reflect": {"session_id": "global"},
    "SkillRecipes.revise_recipe": {"name": "recipe-skill", "description": "new", "steps": ["two"]},
    "ActionLog.record_call": {"result": "the tool's text"},
}
"""Good values that differ from ``GOOD`` for one method."""

SPEC_KEYS = {
    "ScheduleService.create": (
        "message", "payload", "at", "interval_ms", "cron", "timezone", "action_type", "project",
        "created_by",
    ),
}  # fmt: skip
SPEC_KEYS["ScheduleService.replace"] = SPEC_KEYS["ScheduleService.create"]

ACCESS: dict[str, Callable[[Memory], Service]] = {
    "TimelineService": lambda m: m.timeline,
    "ScheduleService": lambda m: m.schedules,
    "TimelineRetriever": lambda m: m.retriever,
    "ReflectorService": lambda m: m.reflector,
    "RecallTrigger": lambda m: m.recall_trigger,
    "MemoryPrefix": lambda m: m.prefix,
    "FactTime": lambda m: m.facts,
    "FactService": lambda m: m.facts,
    "CalendarService": lambda m: m.calendar,
    "ActionLog": lambda m: m.actions,
    "AccessLog": lambda m: m.access,
    "NoteService": lambda m: m.notes,
    "SearchService": lambda m: m.search,
    "SkillRecipes": lambda m: m.skills,
    "SkillService": lambda m: m.skills,
    "Learner": lambda m: Learner(
        m, _NoModel(), config=LearningConfig(verify_then_condense=True), judge=_NoJudge()
    ),
    "CaseBook": CaseBook,
    "SkillWriter": lambda m: SkillWriter(m, LearningConfig()),
    "MemoryWriter": lambda m: MemoryWriter(m, LearningConfig()),
    "EmbeddingIndex": lambda m: m.embeddings,
}


def _methods() -> dict[str, tuple[str, Callable[..., Any]]]:
    """Every public method of every service, by ``Class.method``."""
    return {case: (case.split(".")[0], inspect.unwrap(fn)) for case, fn in public_methods()}


METHODS = _methods()


def test_every_service_is_reachable_here() -> None:
    assert {cls for cls, _fn in METHODS.values()} == set(ACCESS)


def _arguments(case: str) -> tuple[dict[str, object], list[str]]:
    """The good arguments of a call of ``case`` (its required ones) and the names of all the
    arguments it takes."""
    fn = METHODS[case][1]
    good: dict[str, object] = {}
    names: list[str] = []
    overrides = OVERRIDES.get(case, {})
    for param in list(inspect.signature(fn).parameters.values())[1:]:
        if param.kind is param.VAR_KEYWORD:
            names.extend(SPEC_KEYS.get(case, ()))
            continue
        names.append(param.name)
        if param.default is param.empty:
            good[param.name] = (
                overrides[param.name] if param.name in overrides else GOOD[param.name]
            )
    for name, value in overrides.items():
        good.setdefault(name, value)
    return good, names


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    s = Store.open(target, clock=lambda: NOW)
    with s.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
        mem.notes.add("a note", id="n1")
        mem.timeline.append("hello", session_id="global")
        mem.skills.create("seed-skill", "Seeds", "seed", "1. seed")
        mem.skills.create("recipe-skill", "Recipes", "recipe", "1. cook")
        mem.skills.set_recipe("recipe-skill", steps=["one"], verification="v", tool_policy=[])
        mem.actions.record("get_fact", params={}, success=True, result="ok")
        mem.calendar.create("Seed", NOW + timedelta(days=2), timezone="UTC", external_ref="ext-1")
        mem.schedules.create("seed-schedule", interval_ms=60_000)
    yield s
    s.close()


def _seeds(store: Store) -> dict[str, object]:
    with store.begin(write=False) as mem:
        fact = mem.facts.get("user", "city")
        event = mem.calendar.find_by_external_ref("ext-1")
        schedule = mem.schedules.find_by_name("seed-schedule")
        assert fact is not None and event is not None and schedule is not None
        return {"fact": fact, "fact_id": fact.id, "event_id": event.id, "schedule_id": schedule.id}


def _snapshot(mem: Memory) -> list[tuple[str, list[str]]]:
    """Every row of every table this agent sees."""
    return [
        (table.name, sorted(repr(tuple(row)) for row in mem.session.execute(select(table))))
        for table in metadata.sorted_tables
    ]


class _Undo(Exception):
    """Leaves a unit of work whose call was answered, so that every call starts alike."""


def _problem(exc: InvalidInputError, argument: str) -> str | None:
    """What is wrong with a refusal of ``argument``: it must name it (alone, or among the
    arguments whose combination is refused)."""
    together = exc.details.get("arguments")
    if together is not None:
        if argument in together and exc.message.startswith(f"{', '.join(together)}: "):
            return None
        return f"message {exc.message!r}, details {exc.details}"
    if not exc.message.startswith(f"{argument}: "):
        return f"message {exc.message!r}"
    if exc.details.get("argument") != argument:
        return f"details {exc.details}"
    return None


def _try(
    store: Store, case: str, kwargs: dict[str, object], argument: str, before: object
) -> str | None:
    """What is wrong with the answer to one call, or None."""
    cls, fn = METHODS[case]
    shown = f"{case}({argument}={kwargs.get(argument)!r})"
    try:
        with store.begin() as mem:
            problem = None
            try:
                getattr(ACCESS[cls](mem), fn.__name__)(**kwargs)
            except InvalidInputError as exc:
                problem = _problem(exc, argument)
                if problem is None and _snapshot(mem) != before:
                    problem = "refused, but wrote"
            raise _Undo(problem)  # every call starts from the same database
    except _Undo as undone:
        return None if undone.args[0] is None else f"{shown}: {undone.args[0]}"
    except PhilontError:
        return None  # another typed answer
    except Exception as exc:  # an untyped error: what the test is about
        return f"{shown}: {type(exc).__name__}: {exc}"


@pytest.mark.parametrize("case", sorted(METHODS))
def test_every_refusal_names_its_argument_and_changes_nothing(store: Store, case: str) -> None:
    seeds = _seeds(store)
    good, names = _arguments(case)
    good = {k: seeds[v.key] if isinstance(v, _Seeded) else v for k, v in good.items()}
    with store.begin(write=False) as mem:
        before = _snapshot(mem)
    assert _try(store, case, good, "", before) is None  # the good call itself is answered
    problems = [
        _try(store, case, {**good, argument: value}, argument, before)
        for argument in names
        for value in BAD_VALUES
    ]

    assert [p for p in problems if p is not None] == []


ROW_READERS = {"_rows.text_value", "_schedule_rows.decode", "_calendar_rows.decode"}
"""Functions that refuse a stored row's value (turned into ``UnreadableRowError`` by their
callers), not an argument."""


def _direct_refusals() -> Iterator[str]:
    """``module.function`` of each ``InvalidInputError(...)`` in ``philont.services`` built
    without naming an argument (``InvalidInputError.of`` / ``.of_together`` name it)."""
    for path in sorted(Path(philont.services.__file__).parent.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef):
                continue
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Name)
                    and node.func.id == "InvalidInputError"
                    and not any(k.arg == "argument" for k in node.keywords)
                ):
                    yield f"{path.stem}.{function.name}"


def test_a_service_refuses_an_argument_only_by_naming_it() -> None:
    # Messages like "reason must be a non-blank string" named the argument in prose only,
    # with no `argument` detail; every refusal is now built by InvalidInputError.of.
    assert set(_direct_refusals()) == ROW_READERS


TIME_PAIRS = (
    ("start", "end"),
    ("since", "until"),
    ("valid_from", "valid_until"),
    ("starts_at", "ends_at"),
    ("first_day", "last_day"),
    ("window_start", "window_end"),
)
"""Arguments that bound a span together: the first must not come after the second."""


def _reversed_spans() -> Iterator[tuple[str, str, str]]:
    for case in sorted(METHODS):
        names = set(_arguments(case)[1])
        for first, second in TIME_PAIRS:
            if {first, second} <= names:
                yield case, first, second


REVERSED = list(_reversed_spans())


def test_every_span_of_every_service_is_found() -> None:
    assert len(REVERSED) >= 10, REVERSED  # the walk above, not an empty parametrization


@pytest.mark.parametrize(("case", "first", "second"), REVERSED)
def test_a_span_that_ends_before_it_starts_is_refused_naming_both_bounds(
    store: Store, case: str, first: str, second: str
) -> None:
    # It said "calendar event: end (...) is earlier than start (...)": no argument named, no
    # `arguments` detail; now like any refused combination: "starts_at, ends_at: ...".
    seeds = _seeds(store)
    good, _ = _arguments(case)
    good = {k: seeds[v.key] if isinstance(v, _Seeded) else v for k, v in good.items()}
    later: object = NOW + timedelta(days=3)
    earlier: object = NOW + timedelta(days=2)
    if first == "first_day":
        later, earlier = date(2026, 6, 20), date(2026, 6, 19)
    with store.begin(write=False) as mem:
        before = _snapshot(mem)
    kwargs = {**good, first: later, second: earlier}
    if first == "since":  # the scope is a session or a time range: here the range
        kwargs.pop("session_id", None)
    cls, fn = METHODS[case]
    with store.begin() as mem:
        with pytest.raises(InvalidInputError) as err:
            getattr(ACCESS[cls](mem), fn.__name__)(**kwargs)
        assert _snapshot(mem) == before
    assert err.value.details.get("arguments") == (first, second), err.value
    assert err.value.message.startswith(f"{first}, {second}: "), err.value
