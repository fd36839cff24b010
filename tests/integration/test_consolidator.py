"""The idle consolidator: cursor, batches, failures and retries, claims, and racing processes."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, select, update
from sqlalchemy.orm import Session
from structlog.testing import capture_logs

from philont.db.engine import create_engine
from philont.db.models import Fact, LearningBatch
from philont.db.types import to_epoch_ms
from philont.domain.timepolicy import MAX_EPOCH_MS, MIN_EPOCH_MS
from philont.errors import InvalidInputError, ModelHTTPError, PhilontError
from philont.learning import (
    Consolidator,
    ConsolidatorConfig,
    Learner,
    LearningConfig,
    read_cursor,
)
from philont.learning.consolidate import CURSOR_KEY, CURSOR_NAMESPACE
from philont.llm import ScriptedModel
from philont.llm.scripted import Answer
from philont.memory import Memory
from philont.schemas.inputs import MAX_SETTING, MAX_SETTING_DURATION
from philont.schemas.learning import ConsolidationStatus as S
from philont.store import Store
from tests.conftest import FakeClock
from tests.integration.learning_helpers import UnitFactory, unit_factory

BOTH_BACKENDS = True
WORKER = Path(__file__).with_name("consolidate_worker.py")


@pytest.fixture
def units(engine: Engine, clock: FakeClock) -> UnitFactory:
    return unit_factory(engine, clock)


def fact_answer(prompt: str) -> str:
    """One fact per batch, named after the batch's last message."""
    last = [line for line in prompt.splitlines() if "] [user] " in line][-1]
    key = last.rsplit(" ", 1)[-1]
    return json.dumps([{"action": "store_fact", "namespace": "seen", "key": key, "value": 1}])


def scripted(extract: Answer | Callable[[str], Answer] = fact_answer) -> ScriptedModel:
    return ScriptedModel.by_task({"extract": extract, "reflect": "[]", "summarize": "summary"})


def consolidator(
    units: UnitFactory, clock: FakeClock, model: ScriptedModel, **schedule: Any
) -> Consolidator:
    options: dict[str, Any] = {"backlog": True, "min_messages": 1}
    options.update(schedule)
    return Consolidator(
        units,
        model,
        clock=clock,
        config=LearningConfig(summary_min_messages=10_000),
        schedule=ConsolidatorConfig(**options),
    )


def append(units: UnitFactory, clock: FakeClock, n: int, *, at: datetime | None = None) -> None:
    with units() as mem:
        for i in range(n):
            if at is None:
                clock.advance(seconds=10)
            mem.timeline.append(f"message m{to_epoch_ms(clock.now)}x{i}", role="user", at=at)


def idle(clock: FakeClock) -> None:
    clock.advance(minutes=6)


def cursor_rows(units: UnitFactory) -> list[Any]:
    with units(write=False) as mem:
        return list(
            mem.session.scalars(
                select(Fact.value).where(Fact.namespace == CURSOR_NAMESPACE, Fact.key == CURSOR_KEY)
            )
        )


def seen(units: UnitFactory) -> set[str]:
    with units(write=False) as mem:
        return set(mem.session.scalars(select(Fact.key).where(Fact.namespace == "seen")))


def batches(units: UnitFactory) -> list[tuple[str, int]]:
    with units(write=False) as mem:
        rows = mem.session.scalars(select(LearningBatch).order_by(LearningBatch.id))
        return [(b.status, b.attempts) for b in rows]


def test_nothing_happens_while_the_timeline_is_not_idle(
    units: UnitFactory, clock: FakeClock
) -> None:
    append(units, clock, 5)
    clock.advance(minutes=4)
    model = scripted()
    assert consolidator(units, clock, model).run_once().status == S.NOT_IDLE
    assert (cursor_rows(units), batches(units), model.prompts) == ([], [], [])


def test_the_first_run_without_backlog_anchors_the_cursor_like_philont(
    units: UnitFactory, clock: FakeClock
) -> None:
    append(units, clock, 5)
    newest = to_epoch_ms(clock.now)
    idle(clock)
    model = scripted()
    worker = consolidator(units, clock, model, backlog=False)
    assert worker.run_once().status == S.ANCHORED
    assert cursor_rows(units) == [newest]
    assert model.prompts == []
    append(units, clock, 4)
    idle(clock)
    report = worker.run_once()
    assert (report.status, report.messages, report.after_ts) == (S.CONSOLIDATED, 4, newest)
    assert len(seen(units)) == 1


def test_a_failed_model_call_loses_nothing_and_is_retried_with_backoff(
    units: UnitFactory, clock: FakeClock
) -> None:
    append(units, clock, 6)
    idle(clock)
    failures = [ModelHTTPError("overloaded", status=529), ModelHTTPError("again", status=503)]

    def flaky(prompt: str) -> Answer:
        return failures.pop(0) if failures else fact_answer(prompt)

    worker = consolidator(units, clock, scripted(flaky))
    first = worker.run_once()
    assert (first.status, first.attempts) == (S.FAILED, 1)
    assert first.retry_at == clock.now + timedelta(minutes=1)
    assert first.error is not None and "model_http_error" in first.error
    assert (cursor_rows(units), seen(units)) == ([], set())
    assert worker.run_once().status == S.BACKING_OFF
    clock.advance(minutes=1)
    second = worker.run_once()
    assert (second.status, second.attempts) == (S.FAILED, 2)
    assert second.retry_at == clock.now + timedelta(minutes=2)  # doubled
    clock.advance(minutes=2)
    third = worker.run_once()
    assert (third.status, third.attempts, third.messages) == (S.CONSOLIDATED, 3, 6)
    assert cursor_rows(units) == [third.until_ts]
    assert len(seen(units)) == 1
    assert batches(units) == [("done", 3)]


@pytest.mark.parametrize("readable_from", [1, 2, 3, 4, None])
@pytest.mark.parametrize("step", ["extract", "reflect"])
def test_an_unreadable_answer_is_asked_again_and_the_last_attempt_keeps_what_it_read(
    units: UnitFactory, clock: FakeClock, step: str, readable_from: int | None
) -> None:
    """Answers with no JSON array fail the batch (nothing written, the cursor kept) until the
    model answers in form or the batch's third attempt, which is consolidated with what could
    be read and says what the answer lost."""
    append(units, clock, 6)
    idle(clock)
    asked = 0

    def answer(prompt: str) -> Answer:
        nonlocal asked
        asked += 1
        if readable_from is not None and asked >= readable_from:
            return fact_answer(prompt) if step == "extract" else "[]"
        return "Sorry, I cannot help with that."

    tasks: dict[str, Any] = {"extract": fact_answer, "reflect": "[]", "summarize": "summary"}
    tasks[step] = answer
    worker = consolidator(units, clock, ScriptedModel.by_task(tasks))
    reports = []
    for _ in range(4):
        reports.append(worker.run_once())
        if reports[-1].status != S.FAILED:
            break
        assert (cursor_rows(units), seen(units)) == ([], set())  # a failed try wrote nothing
        assert reports[-1].error is not None
        assert reports[-1].error.startswith("model_unreadable_answer")
        clock.advance(hours=1)
    tries = min(readable_from or 3, 3)
    assert [r.status for r in reports] == [S.FAILED] * (tries - 1) + [S.CONSOLIDATED]
    done = reports[-1]
    assert (done.attempts, cursor_rows(units)) == (tries, [done.until_ts])
    lost = readable_from is None or readable_from > 3
    assert len(seen(units)) == (0 if step == "extract" and lost else 1)
    part = done.extraction if step == "extract" else done.reflection
    assert part is not None
    assert part.problem == ("no JSON array in the answer" if lost else None)


@given(
    kinds=st.lists(st.sampled_from(["outage", "unreadable"]), min_size=1, max_size=7),
    budget=st.integers(1, 3),
)
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(kinds=["outage"] * 3 + ["unreadable"] * 3, budget=2)
@example(kinds=["outage"] * 7, budget=1)  # the 7th backs off retry_max (1 h), not 64 min
def test_outages_and_unreadable_answers_are_counted_apart(
    units: UnitFactory, clock: FakeClock, kinds: list[str], budget: int
) -> None:
    """Each try fails as ``kinds`` says (then answers in form): an outage never spends the
    unreadable answers' budget, nor an unreadable answer the outages' backoff; each kind backs
    off by its own count and the report (and the row) says how many of each. They shared the
    batch's attempts: after ``budget`` outages the first unreadable answer was kept at once."""
    append(units, clock, 4)  # each example: a new batch after the cursor
    idle(clock)
    plan = list(kinds)

    def answer(prompt: str) -> Answer:
        kind = plan[0] if plan else None
        if kind == "outage":
            return ModelHTTPError("overloaded", status=529)
        return "Sorry, I cannot help with that." if kind == "unreadable" else fact_answer(prompt)

    worker = consolidator(units, clock, scripted(answer), answer_attempts=budget)
    counts = {"outage": 0, "unreadable": 0}
    for tries in range(1, len(kinds) + 2):
        report = worker.run_once()
        assert report.attempts == tries
        kind = plan.pop(0) if plan else None
        if kind is None or (kind == "unreadable" and counts["unreadable"] + 1 == budget):
            break  # consolidated: answered in form, or the last unreadable answer kept
        counts[kind] += 1
        assert report.status == S.FAILED
        assert (report.outages, report.unreadable_answers) == (
            counts["outage"],
            counts["unreadable"],
        )
        backoff = min(timedelta(minutes=2 ** (counts[kind] - 1)), timedelta(hours=1))  # retry_max
        assert report.retry_at == clock.now + backoff
        assert (report.error or "").startswith(
            "model_http_error" if kind == "outage" else "model_unreadable_answer"
        )
        clock.advance(hours=2)
    if kind == "unreadable":
        counts["unreadable"] += 1
    assert report.status == S.CONSOLIDATED, report
    assert (report.outages, report.unreadable_answers) == (counts["outage"], counts["unreadable"])
    assert plan == [] or kind == "unreadable"
    with units(write=False) as mem:
        row = mem.session.get(LearningBatch, report.batch_id)
        assert row is not None and row.status == "done"
        assert (row.report["outages"], row.report["unreadable_answers"]) == (
            counts["outage"],
            counts["unreadable"],
        )


def test_a_batch_of_late_messages_counts_its_unreadable_answers_afresh(
    units: UnitFactory, clock: FakeClock
) -> None:
    """A batch of late rows takes over the row of the batch after the cursor when one was done
    there: its unreadable answers start at 0 (the done batch's are in the row's report)."""
    append(units, clock, 4)
    idle(clock)
    worker = consolidator(units, clock, scripted("Sorry."), answer_attempts=2)
    assert worker.run_once().status == S.FAILED
    clock.advance(hours=1)
    done = worker.run_once()
    assert (done.status, done.unreadable_answers) == (S.CONSOLIDATED, 2)
    rows = []
    for _ in range(2):  # a row inserted for the first late batch, then taken over when done
        append(units, clock, 1, at=clock.now - timedelta(days=1))  # late: before the cursor
        idle(clock)
        late = worker.run_once()
        assert (late.status, late.late) == (S.FAILED, True)
        assert (late.unreadable_answers, late.outages, late.attempts) == (1, 0, 1)
        clock.advance(hours=1)
        kept = worker.run_once()
        assert (kept.status, kept.unreadable_answers, kept.attempts) == (S.CONSOLIDATED, 2, 2)
        rows.append(kept.batch_id)
    assert rows[0] == rows[1] != done.batch_id


def test_a_typed_failure_is_logged_in_one_line_without_the_batch(
    units: UnitFactory, clock: FakeClock, caplog: pytest.LogCaptureFixture, unconfigured: None
) -> None:
    """A model's failure (typed: its report says it) was logged with its traceback, whose
    locals (printed on the command line: 174 lines of stderr) held the batch's messages."""
    append(units, clock, 4)
    idle(clock)
    worker = consolidator(units, clock, scripted("Sorry, I cannot help with that."))
    with caplog.at_level("DEBUG", logger="philont.learning.consolidate"):
        report = worker.run_once()
    assert report.status == S.FAILED
    failed, trace = [r for r in caplog.records if "consolidator.batch_failed" in r.getMessage()]
    assert (failed.levelname, bool(failed.exc_info)) == ("WARNING", False)
    assert (trace.levelname, bool(trace.exc_info)) == ("DEBUG", True)  # at debug only
    assert "Traceback" not in failed.getMessage()
    assert "error='model_unreadable_answer'" in failed.getMessage()
    assert "message m" not in caplog.text  # no message of the batch


class OneRound(threading.Event):
    """A stop event that is set once the loop waits for its next round."""

    def wait(self, timeout: float | None = None) -> bool:
        self.set()
        return True


def test_a_storage_error_outside_a_batch_is_logged_in_one_line(tmp_path: Path) -> None:
    """Storage trouble outside a batch (the claim, the embedding) was logged by ``run_forever``
    with its whole traceback at error level (100+ lines; its locals can hold users' messages).
    A typed error is one line, a warning with its code, as a failed batch's; the traceback is
    kept at debug only."""
    store = Store.open(tmp_path / "memory.sqlite")
    with store.begin() as mem:
        mem.timeline.append("my secret is 42", role="user")
    worker = Consolidator.for_store(store, scripted())
    (tmp_path / "memory.sqlite").unlink()  # deleted under the running process
    with capture_logs() as logs:
        worker.run_forever(OneRound())
    store.close()
    assert [(e["event"], e["log_level"]) for e in logs] == [
        ("consolidator.tick_failed", "warning"),
        ("consolidator.tick_failed.traceback", "debug"),
    ]
    failed, trace = logs
    assert failed["error"] == "database_gone" and "deleted" in failed["reason"]
    assert "exc_info" not in failed and isinstance(trace["exc_info"], BaseException)


def test_a_batch_never_splits_the_messages_of_one_millisecond(
    units: UnitFactory, clock: FakeClock
) -> None:
    append(units, clock, 3)
    clock.advance(seconds=10)
    append(units, clock, 4, at=clock.now)  # four messages in one millisecond
    idle(clock)
    worker = consolidator(units, clock, scripted(), batch_size=5)
    assert [r.messages for r in worker.tick()] == [3, 4, 0]
    append(units, clock, 1)
    clock.advance(seconds=10)
    append(units, clock, 7, at=clock.now)  # one millisecond over the limit: taken whole
    idle(clock)
    assert [(r.status, r.messages) for r in worker.tick()][:2] == [
        (S.CONSOLIDATED, 1),
        (S.CONSOLIDATED, 7),
    ]


def test_the_cursor_is_one_fact_row_moved_in_place(units: UnitFactory, clock: FakeClock) -> None:
    worker = consolidator(units, clock, scripted(), batch_size=2)
    for _ in range(3):
        append(units, clock, 2)
        idle(clock)
        assert worker.run_once().status == S.CONSOLIDATED
    rows = cursor_rows(units)
    assert len(rows) == 1
    with units(write=False) as mem:
        assert read_cursor(mem.session) == rows[0]
        fact = mem.facts.get(CURSOR_NAMESPACE, CURSOR_KEY)
        assert fact is not None and fact.value == rows[0]


@pytest.mark.parametrize("written_by", ["us", "philont"])
def test_the_cursor_outlives_the_decay_sweep_and_learning_goes_on(
    units: UnitFactory, clock: FakeClock, written_by: str
) -> None:
    # Moving the cursor never refreshes its access time: unpinned, namespace `system` (tau 365
    # days) would fall below the sweep's threshold after about three years, and the messages
    # after a forgotten cursor would never be learned from. The cursor is pinned when it moves.
    worker = consolidator(units, clock, scripted())
    if written_by == "philont":
        with units() as mem:  # Philont's cursor: an ordinary, unpinned fact
            mem.facts.store(CURSOR_NAMESPACE, CURSOR_KEY, to_epoch_ms(clock.now))
    for _ in range(2):
        append(units, clock, 2)
        idle(clock)
        assert worker.run_once().status == S.CONSOLIDATED
    clock.advance(days=4 * 365)
    with units() as mem:
        mem.facts.sweep()  # forgets the learned `seen.*` facts of four years ago
        fact = mem.facts.get(CURSOR_NAMESPACE, CURSOR_KEY)
        assert fact is not None and fact.pinned
    append(units, clock, 3)
    idle(clock)
    report = worker.run_once()
    assert (report.status, report.messages) == (S.CONSOLIDATED, 3)


def test_a_cursor_written_by_philont_is_read_and_a_newer_version_followed(
    units: UnitFactory, clock: FakeClock
) -> None:
    append(units, clock, 3)
    with units() as mem:  # what Philont's consolidator writes (a new version each time)
        mem.facts.store(CURSOR_NAMESPACE, CURSOR_KEY, to_epoch_ms(clock.now))
    append(units, clock, 2)
    idle(clock)
    report = consolidator(units, clock, scripted()).run_once()
    assert (report.status, report.messages) == (S.CONSOLIDATED, 2)
    append(units, clock, 2)
    with units() as mem:  # Philont moves the cursor past the new messages
        mem.facts.store(CURSOR_NAMESPACE, CURSOR_KEY, to_epoch_ms(clock.now))
    idle(clock)
    assert consolidator(units, clock, scripted()).run_once().status == S.NOTHING_NEW


def test_too_few_new_messages_wait_for_more(units: UnitFactory, clock: FakeClock) -> None:
    append(units, clock, 3)
    idle(clock)
    report = consolidator(units, clock, scripted(), min_messages=4).run_once()
    assert (report.status, report.messages) == (S.TOO_FEW, 3)
    assert batches(units) == []


def test_a_process_whose_lease_ran_out_writes_nothing(units: UnitFactory, clock: FakeClock) -> None:
    append(units, clock, 4)
    idle(clock)
    rival = consolidator(units, clock, scripted())
    rival_reports = []

    def slow(prompt: str) -> str:
        clock.advance(minutes=11)  # longer than the 10-minute lease
        rival_reports.append(rival.run_once())
        return json.dumps(
            [{"action": "store_fact", "namespace": "seen", "key": "slow", "value": 1}]
        )

    report = consolidator(units, clock, scripted(slow)).run_once()
    assert [r.status for r in rival_reports] == [S.CONSOLIDATED]
    assert report.status == S.LOST_CLAIM
    assert "slow" not in seen(units) and len(seen(units)) == 1
    assert batches(units) == [("done", 2)]


class QuickBeat(Consolidator):
    """Renews its claim's lease often (a third of the lease, 200 s, is too long for a test)."""

    @property
    def _renew_every(self) -> float:
        return 0.02


class Beats:
    """``units`` that say when each of the heartbeat's renewals has ended (no polling)."""

    def __init__(self, units: UnitFactory) -> None:
        self.units = units
        self.ended: queue.Queue[None] = queue.Queue()

    @contextmanager
    def __call__(self, *, write: bool = True) -> Iterator[Memory]:
        with self.units(write=write) as mem:
            yield mem
        if threading.current_thread().name.startswith("philont-lease-"):
            self.ended.put(None)

    def renewed_after_now(self) -> None:
        """Wait for a renewal begun after this call to end: one in flight may have read the
        clock before, the one after it has not."""
        while not self.ended.empty():
            self.ended.get_nowait()
        for _ in range(2):
            self.ended.get(timeout=30)


def heartbeat() -> threading.Thread:
    return next(t for t in threading.enumerate() if t.name.startswith("philont-lease-"))


def lease_until(units: UnitFactory) -> datetime | None:
    with units(write=False) as mem:
        return mem.session.scalar(select(LearningBatch.lease_until))


def other_process(request: pytest.FixtureRequest, backend: str) -> Engine:
    """An engine of its own on the test's database (another process's)."""
    url = request.getfixturevalue("pg_layout").app_url if backend == "postgres" else None
    return create_engine(url or request.getfixturevalue("db_path"))


def quick_beat(units: UnitFactory, clock: FakeClock, model: ScriptedModel) -> QuickBeat:
    return QuickBeat(
        units,
        model,
        clock=clock,
        config=LearningConfig(summary_min_messages=10_000),
        schedule=ConsolidatorConfig(backlog=True),
    )


def test_a_claim_is_kept_while_its_model_takes_longer_than_the_lease(
    backend: str, units: UnitFactory, clock: FakeClock, request: pytest.FixtureRequest
) -> None:
    """A model that took longer than the lease lost the claim to a second process (its own
    Store and engine on the same database), which lost it in turn once its own lease ran out:
    with batches that outlast the lease, two processes took each other's claims without end,
    every model call wasted. The claimer renews the lease while its batch is thought on (a
    heartbeat), so the other process finds it claimed, and the batch is done once."""
    append(units, clock, 4)
    idle(clock)
    other = other_process(request, backend)
    rival = consolidator(unit_factory(other, clock), clock, scripted())
    beats = Beats(units)
    rival_reports = []

    def slow(prompt: str) -> str:
        clock.advance(minutes=11)  # longer than the 10-minute lease
        beats.renewed_after_now()
        rival_reports.append(rival.run_once())
        return fact_answer(prompt)

    try:
        report = quick_beat(beats, clock, scripted(slow)).run_once()
    finally:
        other.dispose()
    assert [r.status for r in rival_reports] == [S.CLAIMED_ELSEWHERE]
    assert report.status == S.CONSOLIDATED
    assert batches(units) == [("done", 1)]
    assert lease_until(units) is None


def test_a_hung_model_call_holds_its_claim_at_most_max_hold_then_another_takes_it(
    backend: str, units: UnitFactory, clock: FakeClock, request: pytest.FixtureRequest
) -> None:
    """The heartbeat renewed the lease for as long as its process lived: a model call that
    hung (no time-out, a stuck socket) held the batch for good, and no process learned again.
    The renewals stop at max_hold (an hour) after the claim, the lease ending there; another
    process then takes the batch over, and the hung one, back, finds its claim lost."""
    append(units, clock, 4)
    idle(clock)
    claimed_at = clock.now
    other = other_process(request, backend)
    rival = consolidator(unit_factory(other, clock), clock, scripted())
    beats = Beats(units)
    rival_reports = []

    def hung(prompt: str) -> str:
        clock.advance(minutes=45)  # renewed to 55 minutes after the claim
        beats.renewed_after_now()
        rival_reports.append(rival.run_once())
        clock.advance(minutes=16)  # past max_hold: the last renewal ends the lease at it
        beat = heartbeat()
        beat.join(timeout=30)
        assert not beat.is_alive()
        assert lease_until(units) == claimed_at + timedelta(hours=1)
        rival_reports.append(rival.run_once())
        return fact_answer(prompt)

    try:
        report = quick_beat(beats, clock, scripted(hung)).run_once()
    finally:
        other.dispose()
    assert [r.status for r in rival_reports] == [S.CLAIMED_ELSEWHERE, S.CONSOLIDATED]
    assert report.status == S.LOST_CLAIM
    assert batches(units) == [("done", 2)]
    assert len(seen(units)) == 1


def test_units_inside_a_callers_transaction_are_refused(
    engine: Engine, units: UnitFactory, clock: FakeClock
) -> None:
    """``units`` is called from two threads (the batch's and the heartbeat's): a factory whose
    units join one Session (``store.join``) had both threads use it at once, and its claims
    were not committed while the model thought. Refused before anything is written."""
    append(units, clock, 4)
    idle(clock)
    store = Store(engine, clock=clock)
    with Session(engine) as session:
        worker = consolidator(lambda write=True: store.join(session), clock, scripted())
        with pytest.raises(InvalidInputError) as caught:
            worker.run_once()
        session.commit()
    assert caught.value.details["argument"] == "units"
    assert batches(units) == []
    assert cursor_rows(units) == []


def test_the_host_scheduler_method_and_the_loop_stop_cleanly(
    units: UnitFactory, clock: FakeClock
) -> None:
    append(units, clock, 12)
    idle(clock)
    worker = consolidator(units, clock, scripted(), batch_size=5, min_messages=4)
    assert [r.status for r in worker.tick()] == [S.CONSOLIDATED, S.CONSOLIDATED, S.TOO_FEW]
    stop = threading.Event()
    seen_reports = []

    def on_report(report: Any) -> None:
        seen_reports.append(report.status)
        stop.set()

    thread = threading.Thread(
        target=worker.run_forever, args=(stop,), kwargs={"on_report": on_report}
    )
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert seen_reports == [S.TOO_FEW]


def test_two_processes_racing_consolidate_each_batch_once(
    engine: Engine, units: UnitFactory, clock: FakeClock, tmp_path: Path
) -> None:
    append(units, clock, 6)
    idle(clock)
    go = tmp_path / "go"
    url = engine.url.render_as_string(hide_password=False)
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), url, str(go), str(to_epoch_ms(clock.now))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    go.touch()
    outputs = []
    for proc in procs:
        out, errors = proc.communicate(timeout=120)
        assert proc.returncode == 0, errors
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    statuses = [o["status"] for o in outputs]
    assert statuses.count("consolidated") == 1, statuses
    loser = next(s for s in statuses if s != "consolidated")
    assert loser in ("claimed_elsewhere", "nothing_new")
    winner = next(o for o in outputs if o["status"] == "consolidated")
    with units(write=False) as mem:
        race = list(mem.session.scalars(select(Fact.key).where(Fact.namespace == "race")))
    assert race == [f"by_{winner['pid']}"]
    assert batches(units) == [("done", 1)]


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, SystemExit])
def test_an_interrupted_batch_is_free_again_at_once_and_uncounted(
    units: UnitFactory, clock: FakeClock, interruption: type[BaseException]
) -> None:
    # Ctrl-C (or sys.exit) while the model thinks: nothing of the batch is written, and the
    # next run takes the batch at once (it used to find it claimed until the interrupted
    # process's 10-minute lease ran out) without counting the interruption as a failure.
    append(units, clock, 5)
    idle(clock)

    def interrupted(prompt: str) -> Answer:
        raise interruption()

    with pytest.raises(interruption):
        consolidator(units, clock, scripted(interrupted)).run_once()
    assert (cursor_rows(units), seen(units)) == ([], set())
    rerun = consolidator(units, clock, scripted()).run_once()
    assert (rerun.status, rerun.messages, rerun.attempts) == (S.CONSOLIDATED, 5, 1)
    assert len(seen(units)) == 1
    assert batches(units) == [("done", 1)]


def test_tick_reports_each_batch_as_soon_as_it_is_done(
    units: UnitFactory, clock: FakeClock
) -> None:
    append(units, clock, 6)
    idle(clock)
    prompts_at_report: list[int] = []
    model = scripted()
    worker = consolidator(units, clock, model, batch_size=2)
    reports = worker.tick(on_report=lambda report: prompts_at_report.append(len(model.prompts)))
    assert [r.status for r in reports] == [S.CONSOLIDATED] * 3 + [S.NOTHING_NEW]
    assert prompts_at_report == [2, 4, 6, 6]  # extract + reflect per batch, before the next


@pytest.mark.parametrize("backlog", [True, False])
def test_a_message_stamped_in_the_future_waits_for_its_time_and_stops_nothing(
    units: UnitFactory, clock: FakeClock, backlog: bool
) -> None:
    # One message stamped three hours ahead (a skewed clock, an import) kept the timeline
    # "not idle" for three hours, and the first run without backlog would anchor the cursor
    # past every message until then. It is learned from once its time has come.
    append(units, clock, 5)
    newest_past = to_epoch_ms(clock.now)
    append(units, clock, 1, at=clock.now + timedelta(hours=3))
    idle(clock)
    worker = consolidator(units, clock, scripted(), backlog=backlog)
    first = worker.run_once()
    if backlog:
        assert (first.status, first.messages, first.until_ts) == (S.CONSOLIDATED, 5, newest_past)
    else:
        assert first.status == S.ANCHORED and cursor_rows(units) == [newest_past]
    assert worker.run_once().status == S.NOTHING_NEW
    clock.advance(hours=3)  # its time has come, and it is six minutes old
    last = worker.run_once()
    assert (last.status, last.messages) == (S.CONSOLIDATED, 1)
    assert len(seen(units)) == (2 if backlog else 1)


def test_the_largest_settings_consolidate_and_back_off_without_overflowing(
    units: UnitFactory, clock: FakeClock
) -> None:
    # A batch_size of 2**63 - 1 (the command line took it) was an OverflowError at every claim
    # (LIMIT n + 1), a window limit as large one in Learner.window, and a retry_base of a day
    # one out of run_once at the 31st failure (base * 2**30): untyped, after the config had
    # been taken. Now the settings stop at MAX_SETTING and a year, and the largest work.
    most = {"batch_size": MAX_SETTING, "max_batches_per_tick": MAX_SETTING}
    most |= {"answer_attempts": MAX_SETTING, "lease": MAX_SETTING_DURATION}
    most |= {"retry_base": MAX_SETTING_DURATION, "retry_max": MAX_SETTING_DURATION}
    append(units, clock, 3)
    idle(clock)
    config = LearningConfig(
        max_window_messages=MAX_SETTING,
        max_runs_judged=MAX_SETTING,
        max_message_chars=MAX_SETTING,
        max_prompt_chars=MAX_SETTING,
    )
    down = ScriptedModel.by_task({"extract": ModelHTTPError("down", status=503)})
    schedule = ConsolidatorConfig(backlog=True, min_messages=1, **most)
    worker = Consolidator(units, down, clock=clock, config=config, schedule=schedule)
    for attempt in (1, 2, 31, 32):
        with units() as mem:  # as if it had failed this often
            mem.session.execute(update(LearningBatch).values(attempts=attempt - 1))
        report = worker.run_once()
        assert (report.status, report.attempts) == (S.FAILED, attempt), report
        assert report.retry_at == clock.now + MAX_SETTING_DURATION
        clock.advance(days=367)
    worker.model = scripted()
    assert worker.run_once().status == S.CONSOLIDATED
    with units() as mem:
        assert len(Learner(mem, worker.model, config=config).window(session_id="global").turns) == 3


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    st.one_of(
        st.integers(-(10**30), -(2**63)),
        st.integers(2**63, 10**30),
        st.integers(MAX_EPOCH_MS - 5, MAX_EPOCH_MS + 5),
        st.integers(MIN_EPOCH_MS - 5, MIN_EPOCH_MS + 5),
        st.sampled_from([1e300, -1e300, 2.0**63]),
    )
)
@example(10**20)
def test_a_cursor_past_every_time_a_message_can_have_is_read_as_that_end(
    units: UnitFactory, clock: FakeClock, value: float
) -> None:
    # Stored by another program (or by hand): one no 64-bit column holds failed every claim
    # with an OverflowError, for good.
    append(units, clock, 2)
    with units() as mem:
        mem.facts.store(CURSOR_NAMESPACE, CURSOR_KEY, value)
    idle(clock)
    report = consolidator(units, clock, scripted()).run_once()
    assert report.status in (S.CONSOLIDATED, S.NOTHING_NEW), report
    with units() as mem:
        assert MIN_EPOCH_MS - 1 <= (read_cursor(mem.session) or 0) <= MAX_EPOCH_MS


@pytest.mark.parametrize("key", ["seen_id", "seen_action_id"])
@pytest.mark.parametrize("value", [10**20, 2**63, -(10**20)])
def test_a_watermark_no_id_column_holds_is_read_as_the_nearest_id(
    units: UnitFactory, clock: FakeClock, key: str, value: int
) -> None:
    # a batch row's report edited by hand: the watermark failed every claim (OverflowError)
    append(units, clock, 2)
    idle(clock)
    worker = consolidator(units, clock, scripted())
    assert worker.run_once().status == S.CONSOLIDATED
    with units() as mem:
        row = mem.session.scalars(select(LearningBatch)).one()
        row.report = {**row.report, key: value}
    append(units, clock, 2)
    idle(clock)
    assert worker.run_once().status == S.CONSOLIDATED


def test_a_batch_failed_by_a_refused_statement_keeps_its_kind_not_its_values(
    units: UnitFactory, clock: FakeClock, engine: Engine, request: pytest.FixtureRequest
) -> None:
    """A statement the database refused (a host's trigger) failed the batch with SQLAlchemy's
    text as its error, in the report and the batch row: the statement's parameters, the
    extracted fact's value (users' text)."""
    from tests.tools.test_storage_failure_logs import SECRET, freeze

    target = engine.url if engine.dialect.name == "postgresql" else Path(str(engine.url.database))
    answer = json.dumps(
        [{"action": "store_fact", "namespace": "seen", "key": "k", "value": SECRET}]
    )
    append(units, clock, 2)
    idle(clock)
    with contextmanager(freeze)(target, "memory_facts", request):
        report = consolidator(units, clock, scripted(answer)).run_once()
        with units(write=False) as mem:
            rows = mem.session.scalars(select(LearningBatch.last_error)).all()
    assert report.status == S.FAILED
    kind = "ProgrammingError" if engine.dialect.name == "postgresql" else "IntegrityError"
    assert report.error is not None and report.error.startswith("storage_error: ")
    assert f" failed: {kind} (" in report.error, report.error
    assert SECRET not in report.error and [r for r in rows if r and SECRET in r] == []


@pytest.mark.parametrize("kind", ["raise", "check"])
def test_a_claim_a_host_refuses_is_its_error_not_another_process_claim(
    units: UnitFactory, clock: FakeClock, engine: Engine, kind: str, request: pytest.FixtureRequest
) -> None:
    """Claiming a batch is inserting its row; any refusal of that insert was taken for another
    process's claim of the same batch (``claimed_elsewhere``, nothing learned, no error). Only
    the batch's unique key is that: a host's trigger or check is its own typed error."""
    append(units, clock, 3)
    idle(clock)
    if engine.dialect.name == "sqlite":
        with engine.begin() as conn:
            conn.exec_driver_sql(
                "CREATE TRIGGER host_refuses BEFORE INSERT ON philont_learning_batches BEGIN"
                f" SELECT RAISE({'ABORT' if kind == 'raise' else 'FAIL'}, 'no batches'); END"
            )
    else:
        from tests.integration.test_database_errors_typed import _pg_trigger

        schema = request.getfixturevalue("pg_layout").schema
        table, state = "philont_learning_batches", {"raise": "P0001", "check": "23514"}[kind]
        _pg_trigger(
            schema, "INSERT", table, "status", kind, request, sqlstate=state, secret="claimed"
        )
    with pytest.raises(PhilontError) as caught:
        consolidator(units, clock, scripted()).run_once()
    assert caught.value.code == "storage_error", repr(caught.value)
    assert batches(units) == [] and cursor_rows(units) == []
