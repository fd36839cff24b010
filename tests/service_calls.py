"""Every public method of every service (``philont.services``, ``.learning``, ``.embed``) and
a good call of each: the arguments it needs (``GOOD``, ``OVERRIDES``), how a unit of work
reaches its service (``ACCESS``), and the rows those arguments name (:func:`seed`). Shared by
the tests that call every method (test_service_refusals, test_read_only_store)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from philont.domain.attribution import AttributionWindow
from philont.embed.hashing import HashEmbedder
from philont.errors import ModelUnavailableError
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

NOW = datetime(2026, 6, 14, 12, 0, tzinfo=UTC)


class NoModel:
    """A model client that is never reachable (a call that gets as far as asking it ends in a
    typed error)."""

    def complete(self, prompt: str) -> Completion:
        raise ModelUnavailableError("no model in this test")


class NoJudge:
    """A judge that is never reachable."""

    name = "nobody"

    def judge(self, run: Run) -> JudgeResult:
        raise ModelUnavailableError("no judge in this test")


@dataclass(frozen=True)
class Seeded:
    """A value known once the store is seeded (an id)."""

    key: str


GOOD: dict[str, object] = {
    "namespace": "user",
    "key": "city",
    "value": "Berlin",
    "fact_id": Seeded("fact_id"),
    "record": Seeded("fact"),
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
    "schedule_id": Seeded("schedule_id"),
    "ok": True,
    "fired_at": NOW,
    "duration_ms": 10,
    "summary": "done",
    "model": NoModel(),
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
    "ScheduleService.get": {"id": Seeded("schedule_id")},
    "ScheduleService.find_by_name": {"name": "seed-schedule"},
    "ScheduleService.cancel": {"name": "seed-schedule"},
    "ScheduleService.claim_due": {"now": NOW + timedelta(days=1)},  # the seeded one is due
    "CalendarService.get": {"id": Seeded("event_id")},
    "CalendarService.delete": {"id": Seeded("event_id")},
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
        m, NoModel(), config=LearningConfig(verify_then_condense=True), judge=NoJudge()
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


def arguments(case: str) -> tuple[dict[str, object], list[str]]:
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


def seed(mem: Memory) -> None:
    """The rows the good arguments name (a fact, a note, skills, a calendar event, ...)."""
    mem.facts.store("user", "city", "Berlin")
    mem.notes.add("a note", id="n1")
    mem.timeline.append("hello", session_id="global")
    mem.skills.create("seed-skill", "Seeds", "seed", "1. seed")
    mem.skills.create("recipe-skill", "Recipes", "recipe", "1. cook")
    mem.skills.set_recipe("recipe-skill", steps=["one"], verification="v", tool_policy=[])
    mem.actions.record("get_fact", params={}, success=True, result="ok")
    mem.calendar.create("Seed", NOW + timedelta(days=2), timezone="UTC", external_ref="ext-1")
    mem.schedules.create("seed-schedule", interval_ms=60_000)


def seeds(store: Store) -> dict[str, object]:
    """The values of the seeded rows known only once they are stored (ids)."""
    with store.begin(write=False) as mem:
        fact = mem.facts.get("user", "city")
        event = mem.calendar.find_by_external_ref("ext-1")
        schedule = mem.schedules.find_by_name("seed-schedule")
        assert fact is not None and event is not None and schedule is not None
        return {"fact": fact, "fact_id": fact.id, "event_id": event.id, "schedule_id": schedule.id}


def good_call(case: str, known: dict[str, object]) -> dict[str, object]:
    """The good arguments of a call of ``case``, seeded values filled in from ``known``."""
    good, _ = arguments(case)
    return {k: known[v.key] if isinstance(v, Seeded) else v for k, v in good.items()}
