"""A child process of the consolidator race test: wait for the go file, consolidate once, print
the report as one JSON line.

``python consolidate_worker.py DB_URL GO_FILE NOW_MS`` — the model takes a second over its
extraction (so the two processes overlap) and stores one fact naming this process.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

from philont.db.engine import create_engine
from philont.db.types import from_epoch_ms
from philont.learning import Consolidator, ConsolidatorConfig, LearningConfig
from philont.llm import ScriptedModel
from philont.store import Store


def main(url: str, go_file: str, now_ms: str) -> None:
    now = from_epoch_ms(int(now_ms))
    pid = os.getpid()

    def extract(prompt: str) -> str:
        time.sleep(1.0)
        fact = {"action": "store_fact", "namespace": "race", "key": f"by_{pid}", "value": pid}
        return json.dumps([fact])

    model = ScriptedModel.by_task({"extract": extract, "reflect": "[]", "summarize": "sum"})
    store = Store(create_engine(url))  # a test schema made by create_all: no version check
    consolidator = Consolidator.for_store(
        store,
        model,
        clock=lambda: now,
        config=LearningConfig(summary_min_messages=10_000),
        schedule=ConsolidatorConfig(backlog=True, idle_after=timedelta(minutes=5)),
    )
    deadline = time.monotonic() + 30
    while not Path(go_file).exists():
        if time.monotonic() > deadline:
            raise SystemExit("no go file")
        time.sleep(0.005)
    report = consolidator.run_once()
    print(json.dumps({"pid": pid, "status": report.status.value, "batch": report.batch_id}))
    store.engine.dispose()


if __name__ == "__main__":
    main(*sys.argv[1:4])
