"""What the learning loop writes and the database fails to keep (a host's trigger refuses it,
the file is busy, a PostgreSQL conflict) is the unit of work's failure, raised for its owner to
run again or report: never one item "rejected" while the rest of the unit commits, which lost
that item for good (the batch counted as learned). Generated: each kind of write the learner
makes x the table that refuses it."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from philont import Store
from philont.db.retry import database_error_of
from philont.errors import PhilontError
from philont.learning import Learner, LearningConfig
from philont.llm import ScriptedModel
from philont.memory import Memory

CONFIG = LearningConfig(summary_min_messages=1)
SKILL = {
    "name": "export-invoices",
    "kind": "positive",
    "description": "How to export invoices",
    "when_to_use": "when the user asks to export invoices",
    "trigger_keywords": ["export", "invoices"],
    "action_template": "1. export\n2. check the result",
}
ANSWERS = {
    "extract": json.dumps(
        [
            {"action": "store_fact", "namespace": "user", "key": "city", "value": "Paris"},
            {"action": "store_note", "content": "The user moved to Paris"},
        ]
    ),
    "reflect": json.dumps([SKILL]),
    "summarize": "They talked about moving to Paris.",
    "condense": "[]",
}

# the learner's step, and the table whose refusal it meets
WRITES: dict[str, tuple[Callable[[Learner], Any], str]] = {
    "a fact": (lambda learner: learner.extract(session_id="s1"), "memory_facts"),
    "a note": (lambda learner: learner.extract(session_id="s1"), "memory_notes"),
    "a skill": (lambda learner: learner.reflect(session_id="s1"), "memory_skills"),
    "a summary": (lambda learner: learner.summarize("s1"), "memory_notes"),
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = Store.open(tmp_path / "m.sqlite")
    with opened.begin() as mem:
        mem.timeline.start_session("s1")
        mem.timeline.append("I moved to Paris and export invoices monthly", session_id="s1")
    yield opened
    opened.close()


def _refuse_inserts(path: Path, table: str) -> None:
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(
            f"CREATE TRIGGER refuse BEFORE INSERT ON {table} "
            "BEGIN SELECT RAISE(ABORT, 'the host refuses it'); END"
        )
        conn.commit()


def _rows(store: Store, table: str) -> int:
    with closing(sqlite3.connect(str(store.path))) as conn:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_write_the_database_refuses_fails_the_unit_of_work_not_the_item(
    store: Store, write: str
) -> None:
    step, table = WRITES[write]
    assert store.path is not None
    before = {t: _rows(store, t) for t in ("memory_facts", "memory_notes", "memory_skills")}
    _refuse_inserts(store.path, table)
    model = ScriptedModel.by_task(ANSWERS)

    def learn(mem: Memory) -> Any:
        return step(Learner(mem, model, config=CONFIG))

    with pytest.raises(PhilontError) as caught:
        store.run(learn)
    assert database_error_of(caught.value) is not None, caught.value
    assert {t: _rows(store, t) for t in before} == before  # nothing of the unit was kept
