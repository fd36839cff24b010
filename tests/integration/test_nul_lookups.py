"""A lookup by text that cannot exist in the database answers "not found" on every backend.

SQLite keeps U+0000 (NUL) in text, PostgreSQL's text cannot hold it. A lookup, change or
removal of rows by a name holding a NUL (``facts.get("user", "a\\x00b")``, the ``use_skill`` and
``cancel_schedule`` tools) answered "not found" on SQLite but was refused (``invalid_input``)
on PostgreSQL. Nothing can be stored under such a name on PostgreSQL, so there it is "not found"
too (:func:`philont.finds.finds`); a write of such text is still refused there.

Each case is answered on the backend under test and compared with what SQLite answers for the
same text (the reference: it runs the lookup and finds nothing). On SQLite the checks of
PostgreSQL are run too (``as_postgres``: the service's checks told that text cannot hold a
NUL, the database still SQLite), so the "not found" answers are compared with what a real
lookup answers even without a PostgreSQL server.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.engine import URL

from philont import tools
from philont.db.backend import Backend
from philont.errors import InvalidInputError, PhilontError
from philont.finds import finds_of
from philont.learning import Learner
from philont.learning.verify import CaseBook
from philont.llm import ScriptedModel
from philont.memory import Memory
from philont.store import Store
from tests.support import service_classes

BOTH_BACKENDS = True

NOW = datetime(2026, 6, 14, 12, 0, tzinfo=UTC)
T0, T1 = NOW - timedelta(days=1), NOW + timedelta(days=1)

Call = Callable[[Memory, str], object]
_MODEL = ScriptedModel(["[]"] * 1000)


def _learner(mem: Memory) -> Learner:
    return Learner(mem, ScriptedModel(["[]"]))


LOOKUPS: dict[str, Call] = {
    "AccessLog.count_for": lambda m, v: m.access.count_for("fact", v),
    "AccessLog.recent_for": lambda m, v: m.access.recent_for("fact", v),
    "ActionLog.count": lambda m, v: m.actions.count(tool_name=v),
    "ActionLog.query session_id": lambda m, v: m.actions.query(session_id=v),
    "ActionLog.query tool_name": lambda m, v: m.actions.query(tool_name=v),
    "ActionLog.query linked_skill": lambda m, v: m.actions.query(linked_skill=v),
    "ActionLog.recent_failures": lambda m, v: m.actions.recent_failures(session_id=v),
    "CalendarService.delete": lambda m, v: m.calendar.delete(v),
    "CaseBook.cases_of": lambda m, v: CaseBook(m).cases_of(v),
    "CaseBook.is_condensed": lambda m, v: CaseBook(m).is_condensed(v),
    "CalendarService.find_by_external_ref": lambda m, v: m.calendar.find_by_external_ref(v),
    "CalendarService.get": lambda m, v: m.calendar.get(v),
    "FactService.forget": lambda m, v: m.facts.forget(v),
    "FactService.forget_candidates": lambda m, v: m.facts.forget_candidates(namespace=v),
    "FactService.get key": lambda m, v: m.facts.get("user", v),
    "FactService.get namespace": lambda m, v: m.facts.get(v, "city"),
    "FactService.get_by_id": lambda m, v: m.facts.get_by_id(v),
    "FactService.history": lambda m, v: m.facts.history("user", v),
    "FactService.list": lambda m, v: m.facts.list(v),
    "FactService.pin": lambda m, v: m.facts.pin(v),
    "FactService.set_tau": lambda m, v: m.facts.set_tau(v, 3.0),
    "FactService.unforget": lambda m, v: m.facts.unforget(v),
    "FactService.unpin": lambda m, v: m.facts.unpin(v),
    "FactTime.as_of": lambda m, v: m.facts.as_of(v, "city", NOW),
    "FactTime.events": lambda m, v: m.facts.events(v),
    "Learner.extract": lambda m, v: _learner(m).extract(session_id=v),
    "Learner.reflect": lambda m, v: _learner(m).reflect(session_id=v),
    "Learner.summarize": lambda m, v: _learner(m).summarize(v),
    "Learner.window": lambda m, v: _learner(m).window(session_id=v),
    "NoteService.forget": lambda m, v: m.notes.forget(v),
    "NoteService.get": lambda m, v: m.notes.get(v),
    "NoteService.latest_session_summary": lambda m, v: m.notes.latest_session_summary(v),
    "NoteService.unforget": lambda m, v: m.notes.unforget(v),
    "ScheduleService.cancel id": lambda m, v: m.schedules.cancel(id=v),
    "ScheduleService.cancel name": lambda m, v: m.schedules.cancel(name=v),
    "ScheduleService.find_by_name": lambda m, v: m.schedules.find_by_name(v),
    "ScheduleService.get": lambda m, v: m.schedules.get(v),
    "ReflectorService.reflect": lambda m, v: m.reflector.reflect(_MODEL, session_id=v),
    "ReflectorService.run": lambda m, v: m.reflector.run(session_id=v),
    "ScheduleService.outcomes": lambda m, v: m.schedules.outcomes(v),
    "ScheduleService.record_outcome": lambda m, v: m.schedules.record_outcome(
        v, ok=True, fired_at=NOW, duration_ms=5, summary="done"
    ),
    "SkillRecipes.revise_recipe": lambda m, v: m.skills.revise_recipe(v, steps=["1. do"]),
    "SkillRecipes.revisions": lambda m, v: m.skills.revisions(v),
    "SkillRecipes.set_recipe": lambda m, v: m.skills.set_recipe(
        v, steps=["do"], verification="v", tool_policy=[]
    ),
    "SkillService.delete": lambda m, v: m.skills.delete(v),
    "SkillService.get": lambda m, v: m.skills.get(v),
    "SkillService.get_by_id": lambda m, v: m.skills.get_by_id(v),
    "SkillService.is_callable": lambda m, v: m.skills.is_callable(v),
    "SkillService.record_outcome": lambda m, v: m.skills.record_outcome(v, success=True),
    "SkillService.record_usage": lambda m, v: m.skills.record_usage(v),
    "SkillService.set_grade": lambda m, v: m.skills.set_grade(v, "draft", reason="test"),
    "SkillService.update": lambda m, v: m.skills.update(v, description="new"),
    "SkillService.use": lambda m, v: m.skills.use(v),
    "SearchService.message_rows": lambda m, v: m.search.message_rows("Berlin", session_ids=[v]),
    "SearchService.message_rows among others": lambda m, v: m.search.message_rows(
        "Berlin", session_ids=[v, "global"]
    ),
    "SearchService.message_rows reversed window": lambda m, v: m.search.message_rows(
        "Berlin", session_ids=[v], since=T1, until=T0
    ),
    "SearchService.messages": lambda m, v: m.search.messages("hello", session_ids=[v]),
    "SearchService.messages among others": lambda m, v: m.search.messages(
        "hello", session_ids=["global", v]
    ),
    "SearchService.messages naive now": lambda m, v: m.search.messages(
        "hello", session_ids=[v], now=datetime(2026, 1, 1)
    ),
    "TimelineRetriever.retrieve": lambda m, v: m.retriever.retrieve("Berlin", session_ids=[v]),
    "TimelineRetriever.retrieve among others": lambda m, v: m.retriever.retrieve(
        "Berlin", session_ids=[v, "global"]
    ),
    "TimelineRetriever.retrieve negative budget": lambda m, v: m.retriever.retrieve(
        "Berlin", session_ids=[v], recall_budget_tokens=-1
    ),
    "TimelineService.append": lambda m, v: m.timeline.append("hi", session_id=v),
    "TimelineService.count": lambda m, v: m.timeline.count(session_id=v),
    "TimelineService.end_session": lambda m, v: m.timeline.end_session(v),
    "TimelineService.get_session": lambda m, v: m.timeline.get_session(v),
    "TimelineService.messages": lambda m, v: m.timeline.messages(v),
    "TimelineService.query": lambda m, v: m.timeline.query(session_ids=[v]),
    "TimelineService.query among others": lambda m, v: m.timeline.query(session_ids=[v, "global"]),
    "TimelineService.overviews": lambda m, v: sorted(m.timeline.overviews([v, "global"])),
}  # fmt: skip
"""Every public method marked ``finds``, by each of its keys that is text."""

SEARCHES: dict[str, Call] = {
    "NoteService.search": lambda m, v: m.notes.search(v),
    "RecallTrigger.detect": lambda m, v: m.recall_trigger.detect(v),
    "RecallTrigger.recall": lambda m, v: m.recall_trigger.recall(f"remember when we {v}"),
    "SearchService.messages": lambda m, v: m.search.messages(v),
    "SearchService.notes": lambda m, v: m.search.notes(v),
    "SearchService.skills": lambda m, v: m.search.skills(v),
    "TimelineRetriever.retrieve": lambda m, v: m.retriever.retrieve(v).recall_count,
}
"""Searched text: any text, a NUL included, is a query (what it finds is compared)."""

TOOLS: dict[str, Callable[[str], dict[str, Any]]] = {
    "use_skill": lambda v: {"name": v},
    "cancel_schedule name": lambda v: {"name": v},
    "cancel_schedule id": lambda v: {"id": v},
    "get_fact": lambda v: {"namespace": "user", "key": v},
    "search_notes": lambda v: {"query": v},
    "search_skills": lambda v: {"query": v},
    "recall_sessions": lambda v: {"query": v},
}


def _seed(store: Store) -> None:
    with store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
        mem.notes.add("a note about Berlin", id="n1")
        mem.notes.add("the summary", id="session-summary-s1", session_id="global")
        mem.timeline.append("hello Berlin", session_id="global")
        mem.skills.create("seed-skill", "Seeds", "seed", "1. seed")
        mem.schedules.create("daily", interval_ms=60_000)
        mem.calendar.create("dentist", NOW + timedelta(hours=1), timezone="UTC")
        mem.actions.record("get_fact", params={}, success=False, result="no")


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    s = Store.open(target, clock=lambda: NOW)
    _seed(s)
    yield s
    s.close()


@pytest.fixture
def reference(tmp_path: Path) -> Iterator[Store]:
    """SQLite, seeded alike: what a lookup that finds nothing answers."""
    s = Store.open(tmp_path / "reference.db", clock=lambda: NOW)
    _seed(s)
    yield s
    s.close()


class _NulRefusing:
    """A backend as the services' checks see it on PostgreSQL (text cannot hold a NUL); the
    database (its statements, raw cursors, scorer) stays the real one."""

    keeps_nul = False

    def __init__(self, real: Backend) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@pytest.fixture(params=["own checks", "as_postgres"])
def checks(
    request: pytest.FixtureRequest, backend: str, store: Store, monkeypatch: pytest.MonkeyPatch
) -> str:
    """On SQLite, also run the checks of ``store``'s services as on PostgreSQL (text cannot
    hold a NUL); the reference's stay SQLite's."""
    if request.param == "as_postgres":
        if backend == "postgres":
            pytest.skip("PostgreSQL's own checks are the ones under test")

        def seen(mem: Memory) -> Any:
            real = mem.store.backend
            return _NulRefusing(real) if mem.store is store else real

        monkeypatch.setattr(Memory, "backend", property(seen))
    return str(request.param)


class _Undo(Exception):
    """Ends a unit of work by rolling it back, carrying the answer out."""

    def __init__(self, answer: object) -> None:
        super().__init__()
        self.answer = answer


def _answer(store: Store, call: Call, value: str) -> object:
    """What ``call`` answers (a value with ids left out, or the error's class, code and
    message), in a unit of work rolled back."""
    try:
        with store.begin() as mem:
            try:
                answer: object = ("answer", _plain(call(mem, value)))
            except PhilontError as exc:
                answer = ("error", type(exc).__name__, exc.code, exc.message)
            raise _Undo(answer)
    except _Undo as undo:
        return undo.answer


def _plain(value: object) -> object:
    """A comparable view of an answer: records by what they hold (not their ids)."""
    if isinstance(value, str | bytes | int | float | None):
        return value
    for name in ("content", "name", "value", "title"):
        if hasattr(value, name):
            return (type(value).__name__, getattr(value, name))
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _with_nul(text: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(
        lambda text, at: text[:at] + "\x00" + text[at:], text, st.integers(0, 12)
    ) | st.sampled_from(_NEAR_NAMES)


_NEAR_NAMES = [
    *("\x00", "a\x00b", "seed-skill\x00", "city\x00", "user\x00", "global\x00", "daily\x00"),
    *("n1\x00", "Berlin\x00", "Berlin\x00zzz", "hello\x00Berlin", "remember\x00Berlin"),
    " \x00 ",
]
_WITH_NUL = _with_nul(st.text(max_size=12))
"""Text with a NUL character: around any text, next to the names that exist."""
_ASCII_WITH_NUL = _with_nul(st.text(st.characters(max_codepoint=127), max_size=12))
"""The same around ASCII text, for what the backends search alike: their word indexes fold
other letters apart (SQLite's strips accents, PostgreSQL's ``english`` does not; docs/search.md)."""

_PROPERTY = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("case", sorted(LOOKUPS))
@_PROPERTY
@given(value=_WITH_NUL)
def test_a_lookup_by_text_with_a_nul_answers_as_on_sqlite(
    store: Store, reference: Store, checks: str, case: str, value: str
) -> None:
    call = LOOKUPS[case]
    assert _answer(store, call, value) == _answer(reference, call, value)


@pytest.mark.parametrize("case", sorted(SEARCHES))
@_PROPERTY
@given(value=_ASCII_WITH_NUL)
def test_a_search_with_a_nul_finds_what_it_finds_on_sqlite(
    store: Store, reference: Store, checks: str, case: str, value: str
) -> None:
    call = SEARCHES[case]
    assert _answer(store, call, value) == _answer(reference, call, value)


@pytest.mark.parametrize("case", sorted(SEARCHES))
@_PROPERTY
@given(value=_WITH_NUL)
def test_a_nul_in_a_search_separates_words_like_a_space(
    store: Store, case: str, value: str
) -> None:
    # notes.search's LIKE read its pattern up to the NUL on SQLite ('Berlin\x00zzz' found
    # 'a note about Berlin') and found nothing on PostgreSQL
    call = SEARCHES[case]
    assert _answer(store, call, value) == _answer(store, call, value.replace("\x00", " "))


def _tool(store: Store, name: str, arguments: dict[str, Any]) -> object:
    result = tools.call(name, arguments, db=store)
    return (result.ok, result.error_code, result.text)


@pytest.mark.parametrize("case", sorted(TOOLS))
@_PROPERTY
@given(value=_ASCII_WITH_NUL)  # some tools search (see the searches above)
def test_a_tool_given_a_nul_answers_as_on_sqlite(
    store: Store, reference: Store, checks: str, case: str, value: str
) -> None:
    name, arguments = case.split(" ")[0], TOOLS[case](value)
    assert _tool(store, name, arguments) == _tool(reference, name, arguments)


def test_the_tools_answer_not_found_for_a_name_with_a_nul(store: Store) -> None:
    # use_skill / cancel_schedule answered invalid_input on PostgreSQL, not_found on SQLite
    assert _tool(store, "use_skill", {"name": "seed-skill\x00"})[:2] == (False, "skill_not_found")
    cancelled = _tool(store, "cancel_schedule", {"name": "daily\x00"})
    assert cancelled[:2] == (False, "schedule_not_found")
    assert "Currently enabled: daily" in str(cancelled[2])


def test_a_write_of_text_with_a_nul_is_still_refused_on_postgresql(
    store: Store, backend: str
) -> None:
    with store.begin() as mem:
        if backend == "postgres":
            with pytest.raises(InvalidInputError, match=r"^content: text with a NUL"):
                mem.notes.add("a\x00b", id="nul")
            with pytest.raises(InvalidInputError, match=r"^id: text with a NUL"):
                mem.timeline.start_session("a\x00b")
        else:  # SQLite keeps it, and finds it by it
            mem.notes.add("a\x00b", id="nul\x00")
            mem.timeline.start_session("a\x00b")
            assert mem.notes.get("nul\x00") is not None
            assert mem.timeline.get_session("a\x00b") is not None


def test_every_method_that_finds_by_text_is_in_the_table() -> None:
    marked = set()
    for cls in service_classes():
        for name, fn in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(fn) and finds_of(fn) is not None:
                marked.add(f"{cls.__name__}.{name}")
    assert marked == {case.split(" ")[0] for case in LOOKUPS}
