"""The pieces of the concurrent-learners test (tests/integration/test_learning_race.py), and a
child process of it: learn once from the conversation, after every other learner has read it.

``python learn_worker.py DB_URL GATE_DIR LEARNERS NOW_MS MODE SCRIPT`` — reads the window and
what the prompts need in one unit of work, waits (in its first model call) until ``LEARNERS``
processes have got that far, then writes in another unit, as the consolidator does; prints
``done``.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from philont.db.engine import create_engine
from philont.db.types import from_epoch_ms
from philont.learning import JudgeResult, LearningConfig, Run
from philont.learning.batch import apply, gather, think
from philont.llm import ScriptedModel
from philont.schemas.learning import Verdict
from philont.store import Store

MODES = ("shadow", "verify")
SCRIPTS = ("full", "bare")
"""What the model answers. ``full``: facts, a note, a skill and a session summary. Writing a
fact, a summary or a new skill waits for a lock of its own (the fact's key, the summary's id,
the skill name's unique index), and so does crediting a skill (the claim of its retrieval's
row): the learners racing behind the first one waited for its commit there. ``bare``: a note
only, no skill, no summary, and the skill's outcomes credited before: the note, the verdicts
and the cases are then written with nothing in between."""
START = datetime(2026, 6, 14, 4, 0, tzinfo=UTC)
EVENT_AT = "2026-06-14T04:03:00.000Z"


def config(mode: str, script: str) -> LearningConfig:
    return LearningConfig(
        verify_then_condense=mode == "verify",
        summary_min_messages=2 if script == "full" else 10_000,
    )


def skill(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "positive",
        "description": f"How to {name.replace('-', ' ')}",
        "when_to_use": f"when the user asks to {name.replace('-', ' ')}",
        "trigger_keywords": name.split("-"),
        "action_template": f"1. do {name}\n2. check the result",
    }


NOTE = {"action": "store_note", "content": "The user exports the invoices table every month"}
FACTS = [
    {"action": "store_fact", "namespace": "user.preferences", "key": "format", "value": "csv"},
    {"action": "store_fact", "namespace": "user.exports", "key": "invoices",
     "value": "120 rows", "fact_kind": "event", "occurred_at": EVENT_AT},
]  # fmt: skip


def model(wait: Callable[[], None], script: str) -> ScriptedModel:
    """Deterministic answers; ``wait`` is called before the extraction answer is given."""
    full = script == "full"
    actions = [NOTE, *FACTS] if full else [NOTE]

    def extract(prompt: str) -> str:
        wait()
        return json.dumps(actions)

    return ScriptedModel.by_task(
        {
            "extract": extract,
            "reflect": json.dumps([skill("export-invoices")] if full else []),
            "summarize": "They exported the invoices table as CSV; the scrape failed.",
            "condense": json.dumps([skill("export-table-as-csv")]),
        }
    )


class RuleJudge:
    """A run is verified when all its tool calls succeeded."""

    name = "all-tools-succeeded"

    def judge(self, run: Run) -> JudgeResult:
        ok = all(call.success for call in run.trace)
        return JudgeResult(Verdict.VERIFIED if ok else Verdict.FAILED, "tool results")


def learn_in_two_units(store: Store, mode: str, script: str, wait: Callable[[], None]) -> None:
    """Read (and think) in one unit of work, write in the next: no transaction is open while
    the model thinks (the consolidator's way, and the one SQLite needs with several writers)."""
    from philont.learning import Learner

    cfg = config(mode, script)
    with store.begin(write=False) as mem:
        learner = Learner(mem, model(wait, script), config=cfg, judge=RuleJudge())
        window = learner.window(since=START, until=START + timedelta(hours=1))
        context = gather(mem, window, cfg, learner.judge)
    thought = think(learner.model, window, context, cfg, learner.judge)
    with store.begin() as mem:
        apply(mem, window, thought, cfg, judge_name=RuleJudge.name)


def file_gate(directory: Path, learners: int) -> Callable[[], None]:
    """Wait until ``learners`` processes have reached this point (a file each)."""

    def wait() -> None:
        (directory / f"ready-{os.getpid()}").touch()
        deadline = time.monotonic() + 60
        while len(list(directory.glob("ready-*"))) < learners:
            if time.monotonic() > deadline:
                raise SystemExit("the other learners never came")
            time.sleep(0.005)

    return wait


def main(url: str, gate_dir: str, learners: str, now_ms: str, mode: str, script: str) -> None:
    now = from_epoch_ms(int(now_ms))
    store = Store(create_engine(url), clock=lambda: now)  # create_all schema: no version check
    learn_in_two_units(store, mode, script, file_gate(Path(gate_dir), int(learners)))
    store.engine.dispose()
    print("done")


if __name__ == "__main__":
    main(*sys.argv[1:7])
