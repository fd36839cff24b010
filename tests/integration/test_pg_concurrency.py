"""Eight concurrent workers on one PostgreSQL agent: counters and claims stay exact.

Every counter philont keeps is an atomic ``UPDATE ... SET n = n + 1`` and every schedule claim a
compare-and-set ``UPDATE ... WHERE next_run_at = <seen>``; under PostgreSQL's READ COMMITTED a
concurrent update waits and re-evaluates its WHERE, so nothing is lost or claimed twice. The
workers are threads, each with its own connection from one pool (the contention is the
server's, not Python's).
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from philont import settings
from philont.db.engine import create_engine
from philont.errors import ConflictError
from philont.services.schedules import ScheduleService
from philont.store import Store
from tests.pg_support import Layout

pytestmark = pytest.mark.postgres

WORKERS = 8
OPS_PER_WORKER = 40
SKILLS = ("deploy", "backup", "triage")
SCHEDULES = 60


def _run_workers(work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(WORKERS)

    def _thread(worker: int) -> None:
        try:
            start.wait()
            work(worker)
        except BaseException as exc:  # reported below, the test fails on it
            errors.append(exc)

    threads = [threading.Thread(target=_thread, args=(w,)) for w in range(WORKERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert errors == []


@pytest.fixture
def agent(
    pg_layout: Layout, pg_agent_name: Callable[[], str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Engine]:
    """An engine on this run's layout; every Store made on it serves a fresh agent."""
    monkeypatch.setenv(settings.AGENT_ENV, pg_agent_name())
    engine = create_engine(pg_layout.url)
    yield engine
    engine.dispose()


def test_eight_workers_keep_skill_counters_exact(agent: Engine) -> None:
    with Store(agent).begin() as mem:
        for name in SKILLS:
            mem.skills.create(name, f"{name} things", [name], f"do {name}")
    done: list[Counter[tuple[str, str]]] = [Counter() for _ in range(WORKERS)]

    def work(worker: int) -> None:
        rng = random.Random(worker)
        for _ in range(OPS_PER_WORKER):
            name = rng.choice(SKILLS)
            op = rng.choice(("use", "success", "failure"))
            with Store(agent).begin() as mem:
                if op == "use":
                    mem.skills.record_usage(name)
                else:
                    mem.skills.record_outcome(name, success=op == "success")
            done[worker][(name, op)] += 1

    _run_workers(work)
    total: Counter[tuple[str, str]] = sum(done, Counter())
    assert sum(total.values()) == WORKERS * OPS_PER_WORKER
    with Store(agent).begin() as mem:
        for name in SKILLS:
            skill = mem.skills.get(name)
            assert skill is not None
            assert skill.use_count == total[(name, "use")]
            assert skill.success_count == total[(name, "success")]
            assert skill.failure_count == total[(name, "failure")]


def test_eight_workers_claim_every_due_schedule_exactly_once(agent: Engine) -> None:
    due = datetime.now(UTC) + timedelta(seconds=5)
    with Store(agent).begin() as mem:
        schedules = ScheduleService(mem)
        ids = {schedules.create(f"job{i}", message=f"run {i}", at=due).id for i in range(SCHEDULES)}
    claimed: list[list[str]] = [[] for _ in range(WORKERS)]

    def work(worker: int) -> None:
        later = due + timedelta(minutes=1)
        while True:
            with Store(agent).begin() as mem:
                service = ScheduleService(mem)
                got = service.claim_due(later, limit=3)
                # Losing every race also returns nothing: stop only when nothing is left.
                left = any(s.enabled for s in service.list())
            claimed[worker].extend(c.schedule.id for c in got)
            if not got and not left:
                return

    _run_workers(work)
    every = [i for per_worker in claimed for i in per_worker]
    assert sorted(every) == sorted(ids)  # each one claimed, none twice
    assert sum(1 for per_worker in claimed if per_worker) > 1  # the workers really competed


def test_eight_workers_appending_lose_no_message(agent: Engine) -> None:
    acked: list[list[int]] = [[] for _ in range(WORKERS)]

    def work(worker: int) -> None:
        for n in range(OPS_PER_WORKER):
            with Store(agent).begin() as mem:
                acked[worker].append(mem.timeline.append(f"worker {worker} message {n}").id)

    _run_workers(work)
    every = [i for per_worker in acked for i in per_worker]
    assert len(set(every)) == WORKERS * OPS_PER_WORKER
    with Store(agent).begin() as mem:
        assert mem.timeline.count() == WORKERS * OPS_PER_WORKER


KEYS = ("city", "diet")


def test_eight_workers_storing_the_same_facts_leave_one_current_version_each(
    agent: Engine,
) -> None:
    # Under READ COMMITTED two stores of one key both read "no current version" (or the same
    # one) and both wrote a current version: get() then picked one of two (the original's
    # Q-S1, on PostgreSQL only). Unforgetting settles the same way.
    def work(worker: int) -> None:
        rng = random.Random(worker)
        for n in range(OPS_PER_WORKER // 2):
            key = rng.choice(KEYS)
            with Store(agent).begin() as mem:
                stored = mem.facts.store("user", key, f"{worker}-{n}")
                if n % 5 == 4:
                    mem.facts.forget(stored.id)
                    mem.facts.unforget(stored.id)

    _run_workers(work)
    with Store(agent).begin() as mem:
        for key in KEYS:
            history = mem.facts.history("user", key)
            assert sum(1 for f in history if f.active) == 1
            chain = {f.supersedes for f in history} - {None}
            assert len(chain) == len(history) - 1  # one chain, each version replacing one


def test_eight_workers_writing_the_same_ids_get_no_driver_error(agent: Engine) -> None:
    # notes.upsert/add(id=) and timeline.start_session(id) read, then insert: two of them at
    # once both inserted, and one failed with a raw unique violation.
    conflicts: list[int] = [0] * WORKERS

    def work(worker: int) -> None:
        for n in range(OPS_PER_WORKER // 4):
            with Store(agent).begin() as mem:
                mem.notes.upsert(f"shared-{n}", f"from {worker}")
            try:
                with Store(agent).begin() as mem:
                    mem.timeline.start_session(f"session-{n}")
            except ConflictError:
                conflicts[worker] += 1

    _run_workers(work)
    with Store(agent).begin() as mem:
        assert mem.notes.count() == OPS_PER_WORKER // 4
        assert len(mem.timeline.list_sessions(limit=100)) == OPS_PER_WORKER // 4 + 1  # + global
    assert sum(conflicts) == (WORKERS - 1) * (OPS_PER_WORKER // 4)
