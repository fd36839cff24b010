"""Extraction writes what the tools and services write, and refuses what they refuse, on each
backend: a NUL character (U+0000) in a fact's value is stored on both (its JSON escapes it, as
the ``store_fact`` tool stores it), one in a note's content is stored on SQLite and refused on
PostgreSQL with ``NoteService.add``'s refusal. The extractor refused every NUL itself, even
where the tool stores it; a refused item never costs the answer its other items."""

from __future__ import annotations

import itertools
import json
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from sqlalchemy import Engine

from philont import tools
from philont.db.models import LearningBatch
from philont.errors import PhilontError
from philont.learning import Consolidator, ConsolidatorConfig, Learner
from philont.learning.extract import StoreNoteArgs
from philont.llm import Completion, ScriptedModel
from philont.memory import Memory
from philont.schemas import inputs
from tests.conftest import FakeClock
from tests.integration.learning_helpers import Conversation, unit_factory

BOTH_BACKENDS = True

_SESSIONS = itertools.count()


class _Undo(Exception):
    """Rolls a unit of work (or a savepoint) back."""


def _direct(mem: Memory, item: dict[str, Any]) -> tuple[str, ...]:
    """What the tool (a fact) or the note's argument model and ``NoteService.add`` (a note) do
    with ``item``: ``stored``, or ``rejected`` with the error's code and message; undone."""
    arguments = {k: v for k, v in item.items() if k != "action"}
    try:
        with mem.session.begin_nested():
            if item["action"] == "store_fact":
                result = tools.call("store_fact", arguments, db=mem, session_id="s")
                if not result.ok:
                    return ("rejected", str(result.error_code), str(result.error))
            else:  # no tool: the note's argument model, then the service
                mem.notes.add(StoreNoteArgs.model_validate(arguments).content, session_id="s")
            raise _Undo
    except _Undo:
        return ("stored",)
    except ValidationError as exc:
        return ("rejected", "invalid_arguments", inputs.describe(exc))
    except PhilontError as exc:
        return ("rejected", exc.code, exc.message)


_TEXT = st.builds(
    lambda text, at, nul: text[:at] + "\x00" * nul + text[at:],
    st.text(st.characters() | st.just("\ud800"), min_size=1, max_size=10),
    st.integers(min_value=0, max_value=10),
    st.integers(min_value=0, max_value=2),
)
"""Text with none, one or two NUL characters somewhere (and now and then a lone surrogate,
which neither backend stores: refused as the tool refuses it)."""


def _item(kind: str, text: str, index: int) -> dict[str, Any]:
    if kind == "store_fact":
        return {"action": kind, "namespace": "user", "key": f"k{index}", "value": text}
    return {"action": kind, "content": f"note {index}: {text}"}


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(st.tuples(st.sampled_from(["store_fact", "store_note"]), _TEXT), max_size=6))
def test_extraction_stores_and_refuses_text_with_a_nul_as_the_tools_do(
    engine: Engine, clock: FakeClock, proposed: list[tuple[str, str]]
) -> None:
    items = [_item(kind, text, i) for i, (kind, text) in enumerate(proposed)]
    session = f"s{next(_SESSIONS)}"
    try:
        with unit_factory(engine, clock)() as mem:
            talk = Conversation(mem, clock, session)
            talk.user("I moved to Berlin")
            talk.assistant("Noted.")
            expected = [_direct(mem, item) for item in items]
            model = ScriptedModel([json.dumps(items)])
            report = Learner(mem, model).extract(session_id=session)
            got = [
                (w.outcome,) if w.outcome == "stored" else (w.outcome, w.code, w.detail)
                for w in report.writes
            ]
            assert got == expected
            for item, write in zip(items, report.writes, strict=True):
                if write.outcome == "stored" and item["action"] == "store_fact":
                    fact = mem.facts.get("user", item["key"])
                    assert fact is not None and fact.value == item["value"]
                elif write.outcome == "stored":
                    note = mem.notes.get(str(write.id))
                    assert note is not None and note.content == item["content"]
            raise _Undo
    except _Undo:
        pass


def test_a_note_with_a_nul_is_refused_on_postgresql_only_and_the_rest_is_kept(
    engine: Engine, clock: FakeClock, backend: str
) -> None:
    with unit_factory(engine, clock)() as mem:
        talk = Conversation(mem, clock, "s1")
        talk.user("I moved to Berlin")
        items = [
            {"action": "store_fact", "namespace": "user", "key": "city", "value": "Ber\x00lin"},
            {"action": "store_note", "content": "before\x00after"},
            {"action": "store_note", "content": "a plain note"},
        ]
        report = Learner(mem, ScriptedModel([json.dumps(items)])).extract(session_id="s1")
        outcomes = [(w.outcome, w.code) for w in report.writes]
        refused = ("rejected", "invalid_input") if backend == "postgres" else ("stored", None)
        assert outcomes == [("stored", None), refused, ("stored", None)]
        fact = mem.facts.get("user", "city")
        assert fact is not None and fact.value == "Ber\x00lin"


def test_a_lone_surrogate_is_refused_as_the_tool_and_the_argument_model_refuse_it(
    engine: Engine, clock: FakeClock
) -> None:
    with unit_factory(engine, clock)() as mem:
        Conversation(mem, clock, "s1").user("I moved to Berlin")
        items = [
            {"action": "store_fact", "namespace": "user", "key": "city", "value": "B\ud800"},
            {"action": "store_note", "content": "a \ud800 note"},
        ]
        expected = [_direct(mem, item) for item in items]
        report = Learner(mem, ScriptedModel([json.dumps(items)])).extract(session_id="s1")
        assert [(w.outcome, w.code, w.detail) for w in report.writes] == expected


hostile_text = st.text(
    alphabet=st.one_of(st.characters(), st.sampled_from(["\x00", "\ud800", "\udfff"])),
    min_size=1,
    max_size=12,
)


class _Model:
    """Answers each task; its extraction fails with ``error`` when one is given."""

    def __init__(self, reflect: str, error: Exception | None) -> None:
        self.reflect, self.error = reflect, error

    def complete(self, prompt: str) -> Completion:
        if self.error is not None and prompt.startswith("TASK: extract"):
            raise self.error
        return Completion(self.reflect if prompt.startswith("TASK: reflect") else "[]", 1)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@example(text="\ud800", fails=True)
@example(text="\x00", fails=True)
@example(text="\ud800", fails=False)
@given(text=hostile_text, fails=st.booleans())
def test_foreign_text_in_a_batch_is_stored_and_reported_as_text(
    engine: Engine, clock: FakeClock, text: str, fails: bool
) -> None:
    # A client's error message or a rejected proposal's name holding a NUL or a lone
    # surrogate: the failed batch's row could not be written (it stayed claimed until its
    # lease ran out, instead of backing off) and the report could not be printed (--json: a
    # UnicodeEncodeError traceback, after the batch was written).
    units = unit_factory(engine, clock)
    with units() as unit:
        Conversation(unit, clock).user("I moved to Berlin")
    clock.advance(days=1)  # past an earlier example's backoff
    reflect = json.dumps([{"name": text, "description": "d"}])  # rejected, by its name
    model = _Model(reflect, RuntimeError(f"the server said {text}") if fails else None)
    schedule = ConsolidatorConfig(backlog=True, min_messages=1, idle_after=timedelta(0))
    report = Consolidator(units, model, clock=clock, schedule=schedule).run_once()
    json.dumps(report.model_dump(mode="json"), ensure_ascii=False).encode("utf-8")
    assert report.status == ("failed" if fails else "consolidated"), report
    with units() as unit:
        row = unit.session.get(LearningBatch, report.batch_id)
        assert row is not None and row.status == ("failed" if fails else "done")
        assert (row.last_error is not None) == fails
