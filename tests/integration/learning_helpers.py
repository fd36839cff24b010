"""Helpers of the learning-loop tests: units of work on the test database, a conversation
writer, answer builders and a snapshot of the skill layer."""

from __future__ import annotations

import json
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select

from philont.db.models import Skill
from philont.memory import Memory
from philont.store import Store
from tests.conftest import FakeClock

UnitFactory = Callable[..., AbstractContextManager[Memory]]

NEGATIVE_TEMPLATE = (
    "## Trigger\nThe user gives a relative time ('in an hour')\n"
    "## Avoid\nRunning the task right away\n"
    "## Instead\nSchedule it with schedule_reminder"
)


def unit_factory(engine: Engine, clock: FakeClock) -> UnitFactory:
    """``units()`` begins a unit of work on the test database (the one place tests build one).
    The test schemas are made by create_all, so the Store is built without a version check."""
    store = Store(engine, clock=clock)

    def units(*, write: bool = True) -> Memory:
        return store.begin(write=write)

    return units


class Conversation:
    """Writes turns and tool calls at controlled times, one minute apart by default."""

    def __init__(self, mem: Memory, clock: FakeClock, session_id: str = "global") -> None:
        self.mem = mem
        self.clock = clock
        self.session_id = session_id
        if session_id != "global" and mem.timeline.get_session(session_id) is None:
            mem.timeline.start_session(session_id)

    def say(self, role: str, text: str, *, minutes: float = 1) -> None:
        self.clock.advance(minutes=minutes)
        self.mem.timeline.append(text, role=role, session_id=self.session_id)

    def user(self, text: str, **kw: Any) -> None:
        self.say("user", text, **kw)

    def assistant(self, text: str, **kw: Any) -> None:
        self.say("assistant", text, **kw)

    def act(self, tool: str, ok: bool = True, *, minutes: float = 1, **params: Any) -> int:
        self.clock.advance(minutes=minutes)
        record = self.mem.actions.record(
            tool, params=params, success=ok, result="ok" if ok else "failed",
            session_id=self.session_id,
        )  # fmt: skip
        return record.id


def skill_item(name: str, **overrides: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "name": name,
        "kind": "positive",
        "description": f"How to {name.replace('-', ' ')}",
        "when_to_use": f"when the user asks to {name.replace('-', ' ')}",
        "trigger_keywords": name.split("-"),
        "action_template": f"1. do {name}\n2. check the result",
    }
    item.update(overrides)
    return item


def answer(*items: dict[str, Any]) -> str:
    return (
        "Here is what I found:\n```json\n" + json.dumps(list(items), ensure_ascii=False) + "\n```"
    )


def skill_rows(mem: Memory) -> dict[str, tuple[Any, ...]]:
    """Every skill as (kind, grade, description, keywords, template, when, source, counters)."""
    rows = mem.session.scalars(select(Skill).execution_options(populate_existing=True))
    return {
        s.name: (
            s.kind, s.maturity, s.description, tuple(s.trigger_keywords), s.action_template,
            s.when_to_use, s.source, s.use_count, s.success_count, s.failure_count,
        )
        for s in rows
    }  # fmt: skip


def later(clock: FakeClock, **kw: float) -> None:
    clock.now += timedelta(**kw)


def csv_then_scrape(mem: Memory, clock: FakeClock, request: str) -> None:
    """A successful run (``request``: a csv export via the skill ``export-csv``, created here)
    and a failed one (a scrape through the same skill), then a closing turn."""
    mem.skills.create("export-csv", "Export a table as CSV", ["csv"], "1. query\n2. write")
    chat = Conversation(mem, clock, "s1")
    chat.user(request)
    chat.act("use_skill", name="export-csv")
    chat.act("sql", query="select * from invoices")
    chat.act("write_file", path="invoices.csv")
    chat.assistant("Wrote invoices.csv (120 rows)")
    chat.user("Now scrape the competitor prices")
    chat.act("use_skill", name="export-csv")
    chat.act("http_get", ok=False, url="https://example.invalid")
    chat.assistant("The site did not answer.")
    chat.user("Thanks, that is all")
