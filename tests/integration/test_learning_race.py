"""Concurrent learners over the same messages write exactly what one learner writes.

Every write of the loop checks what is there first (the same note, fact, verdict, condensed
case) and then inserts. Two learners of one agent on PostgreSQL used to both read "not there"
and both insert: duplicate notes, fact versions, verdicts and cases (no unique constraint can
catch them without a migration). The loop's writers now hold the agent's learning lock
(``Backend.serialize``) from their first check to the end of the transaction. SQLite's writers
already take turns (BEGIN IMMEDIATE), but a learner that read before another one wrote must
still check again under the lock (a verified case it condensed meanwhile).

The learners of the consolidator's kind (read and think in one unit of work, write in the next)
wait for each other after reading (a barrier in their first model call), so they all write at
once. Learners in one unit of work each take turns from the Learner's making (PostgreSQL's
learning lock, SQLite's write lock).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select

from philont.db.engine import create_engine
from philont.db.models import Action, Fact, JudgeVerdict, LearningCase, Note, Skill
from philont.db.types import to_epoch_ms
from philont.learning import Learner
from philont.memory import Memory
from philont.store import Store
from tests.conftest import FakeClock
from tests.integration.learn_worker import (
    MODES,
    SCRIPTS,
    START,
    RuleJudge,
    config,
    learn_in_two_units,
    model,
)
from tests.integration.learning_helpers import csv_then_scrape

BOTH_BACKENDS = True
LEARNERS = 4
PROCESSES = 2
WORKER = Path(__file__).with_name("learn_worker.py")


def converse(store: Store, clock: FakeClock, script: str) -> None:
    """Two runs with a skill (one succeeds, one fails), then a closing turn; in the ``bare``
    script, the skill's outcomes are credited at once (no learner has to)."""
    with store.begin() as mem:
        csv_then_scrape(mem, clock, "Export the invoices table as CSV, I always want CSV")
        if script == "bare":
            mem.reflector.run()
    clock.advance(hours=1)


def snapshot(mem: Memory) -> dict[str, list[Any]]:
    """What the loop wrote, without ids (two databases' ids differ)."""
    s = mem.session
    skill_of = {i: name for i, name in s.execute(select(Skill.id, Skill.name))}
    return {
        "facts": sorted(
            (f.namespace, f.key, json.dumps(f.value), f.fact_kind, str(f.occurred_at),
             f.superseded_by is None, f.forgotten_at is None)
            for f in s.scalars(select(Fact))
        ),
        "notes": sorted(
            (n.id.startswith("session-summary-"), n.content, n.importance, n.session_id)
            for n in s.scalars(select(Note))
        ),
        "skills": sorted(
            (k.name, k.kind, k.maturity, k.description, k.use_count, k.success_count,
             k.failure_count, (k.source or "").split("-")[0])
            for k in s.scalars(select(Skill))
        ),
        "verdicts": sorted(
            (v.goal, v.verdict, v.skill_name, v.case_id is not None, v.observed_outcome)
            for v in s.scalars(select(JudgeVerdict))
        ),
        "cases": sorted(
            (c.goal, skill_of.get(c.skill_id or 0), c.condense_note, str(c.condensed_at))
            for c in s.scalars(select(LearningCase))
        ),
        "linked": [
            (a.tool_name, a.linked_skill) for a in s.scalars(select(Action).order_by(Action.id))
        ],
    }  # fmt: skip


@pytest.fixture
def stores(
    backend: str, engine: Engine, db_path: Path, request: pytest.FixtureRequest
) -> Iterator[Callable[[], Store]]:
    """Factory of fresh memories with the same clock start: a new agent on PostgreSQL, a new
    copy of the test database on SQLite."""
    engines: list[Engine] = []

    def make() -> Store:
        if backend == "postgres":
            agent: str = request.getfixturevalue("pg_agent_name")()
            return Store(engine, agent=agent, clock=FakeClock(START))
        copy = db_path.with_name(f"copy{len(engines)}.sqlite")
        copy.write_bytes(db_path.read_bytes())
        engines.append(create_engine(copy))
        return Store(engines[-1], clock=FakeClock(START))

    yield make
    for made in engines:
        made.dispose()


def one_learner(store: Store, mode: str, script: str) -> dict[str, list[Any]]:
    learn_in_two_units(store, mode, script, lambda: None)
    with store.begin(write=False) as mem:
        return snapshot(mem)


def clock_of(store: Store) -> FakeClock:
    assert isinstance(store.clock, FakeClock)
    return store.clock


def run_threads(work: Callable[[], None], n: int) -> None:
    errors: list[BaseException] = []

    def body() -> None:
        try:
            work()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=body) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a learner hung"
    assert errors == []


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("units", ["one", "two"])
def test_threads_learning_at_once_write_what_one_learner_writes(
    backend: str, stores: Callable[[], Store], mode: str, units: str, script: str
) -> None:
    alone = stores()
    converse(alone, clock_of(alone), script)
    expected = one_learner(alone, mode, script)
    assert len(expected["verdicts"]) == 2 and expected["notes"] and expected["cases"]

    shared = stores()
    converse(shared, clock_of(shared), script)
    barrier = threading.Barrier(LEARNERS, timeout=60)

    def learn() -> None:
        if units == "two":  # read, think, then write in a new unit (the consolidator's way)
            learn_in_two_units(shared, mode, script, barrier.wait)
            return
        # a host's one unit of work, the model asked inside it: such units take turns from
        # their start (SQLite's BEGIN IMMEDIATE; on PostgreSQL the learning lock, which a
        # Learner takes as it is made), so they cannot all wait for each other in the model
        with shared.begin() as mem:
            cfg = config(mode, script)
            learner = Learner(mem, model(lambda: None, script), config=cfg, judge=RuleJudge())
            learner.learn(learner.window(since=START, until=START + timedelta(hours=1)))

    run_threads(learn, LEARNERS)
    with shared.begin(write=False) as mem:
        assert snapshot(mem) == expected


@pytest.mark.parametrize("script", SCRIPTS)
@pytest.mark.parametrize("mode", MODES)
def test_processes_learning_at_once_write_what_one_learner_writes(
    backend: str, stores: Callable[[], Store], mode: str, script: str, tmp_path: Path
) -> None:
    alone = stores()
    converse(alone, clock_of(alone), script)
    expected = one_learner(alone, mode, script)

    shared = stores()
    converse(shared, clock_of(shared), script)
    url = shared.engine.url.render_as_string(hide_password=False)
    now = str(to_epoch_ms(clock_of(shared).now))
    env = dict(os.environ)
    if shared.agent is not None:
        env["PHILONT_AGENT"] = shared.agent
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), url, str(tmp_path), str(PROCESSES), now, mode, script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(PROCESSES)
    ]
    for proc in procs:
        out, errors = proc.communicate(timeout=120)
        assert proc.returncode == 0, errors
        assert out.strip().endswith("done")
    with shared.begin(write=False) as mem:
        assert snapshot(mem) == expected
