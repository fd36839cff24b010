"""Messages and tool calls that arrive late, stamped at or before the consolidator's cursor after
it moved past their time (a clock stepped back, a process whose clock runs behind,
``append(at=...)`` of what was said earlier), are learned from once. The cursor is a time, so
they were in no batch and the consolidator never learned from them: after an NTP step back of
an hour, everything the user said in that hour was lost to learning (``nothing_new`` for
ever), and the tool calls of that hour were never judged nor reflected on."""

from __future__ import annotations

import itertools
import json
import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, event, select

from philont.db.models import LearningBatch
from philont.learning import Consolidator, ConsolidatorConfig, JudgeResult, LearningConfig, Run
from philont.learning.window import Window
from philont.llm import ScriptedModel
from philont.schemas.learning import ConsolidationStatus as S
from philont.schemas.learning import Verdict
from tests.conftest import FakeClock
from tests.integration.learning_helpers import UnitFactory, unit_factory

BOTH_BACKENDS = True
WORD = "said-"


@pytest.fixture
def units(engine: Engine, clock: FakeClock) -> UnitFactory:
    return unit_factory(engine, clock)


def words(prompt: str) -> list[str]:
    """The words of the user turns a prompt shows (each message is ``said-<word>``)."""
    return [line.rsplit(WORD, 1)[-1] for line in prompt.splitlines() if f"] [user] {WORD}" in line]


class Recorder:
    """A model that stores one fact per user message it is shown, and counts what it saw."""

    def __init__(self) -> None:
        self.seen: Counter[str] = Counter()
        self.model = ScriptedModel.by_task(
            {"extract": self.extract, "reflect": "[]", "summarize": "summary"}
        )

    def extract(self, prompt: str) -> str:
        said = words(prompt)
        self.seen.update(said)
        facts = [{"action": "store_fact", "namespace": "seen", "key": w, "value": 1} for w in said]
        return json.dumps(facts)


class Watching(Consolidator):
    """A consolidator that keeps the window of every batch it wrote."""

    windows: list[Window]

    def _finish(self, mem: Any, claim: Any, window: Any, thought: Any) -> Any:
        applied = super()._finish(mem, claim, window, thought)
        self.windows.append(window)
        return applied


class RecordingJudge:
    name = "recording"

    def __init__(self) -> None:
        self.runs: list[tuple[str, list[str]]] = []

    def judge(self, run: Run) -> JudgeResult:
        self.runs.append((run.goal, [c.tool_name for c in run.trace]))
        return JudgeResult(Verdict.VERIFIED, "ok", 0)


def consolidator(
    units: UnitFactory,
    clock: FakeClock,
    model: ScriptedModel,
    windows: list[Window] | None = None,
    judge: RecordingJudge | None = None,
    **schedule: object,
) -> Consolidator:
    options: dict[str, object] = {"backlog": True, "min_messages": 1}
    options.update(schedule)
    worker = Watching(
        units,
        model,
        clock=clock,
        judge=judge,
        config=LearningConfig(summary_min_messages=10_000),
        schedule=ConsolidatorConfig(**options),  # type: ignore[arg-type]
    )
    worker.windows = [] if windows is None else windows
    return worker


def call(units: UnitFactory, tool: str, *, at: datetime | None = None, sid: str = "global") -> int:
    with units() as mem:
        return mem.actions.record(tool, params={}, success=True, session_id=sid, at=at).id


def calls_seen(windows: list[Window]) -> Counter[int]:
    return Counter(c.id for w in windows for c in w.calls)


def say(units: UnitFactory, *said: str, at: datetime | None = None) -> None:
    with units() as mem:
        for word in said:
            mem.timeline.append(f"{WORD}{word}", role="user", at=at)


def drain(worker: Consolidator, clock: FakeClock) -> list[S]:
    """Run batches until there is nothing to do, the timeline idle."""
    clock.advance(minutes=6)
    statuses = []
    for _ in range(50):
        report = worker.run_once()
        statuses.append(report.status)
        if report.status != S.CONSOLIDATED:
            return statuses
    raise AssertionError(f"no end: {statuses}")


def test_what_is_said_after_the_clock_steps_back_is_learned_once(
    units: UnitFactory, clock: FakeClock
) -> None:
    recorder = Recorder()
    worker = consolidator(units, clock, recorder.model)
    say(units, "a1")
    clock.advance(seconds=10)
    say(units, "a2")
    assert drain(worker, clock) == [S.CONSOLIDATED, S.NOTHING_NEW]
    clock.advance(hours=-1)  # the host's clock is corrected an hour back
    for word in ("b1", "b2", "b3"):
        clock.advance(seconds=10)
        say(units, word)
    assert drain(worker, clock) == [S.CONSOLIDATED, S.NOTHING_NEW]
    assert recorder.seen == Counter(a1=1, a2=1, b1=1, b2=1, b3=1)
    assert drain(consolidator(units, clock, recorder.model), clock) == [S.NOTHING_NEW]


def test_messages_appended_with_an_earlier_time_are_learned_once(
    units: UnitFactory, clock: FakeClock
) -> None:
    # a transcript of what was said offline, and a message from before 1970 (no cursor
    # value comes before it: a first batch never took it either)
    recorder = Recorder()
    worker = consolidator(units, clock, recorder.model)
    say(units, "old", at=datetime(1960, 5, 1, tzinfo=UTC))
    say(units, "now")
    assert drain(worker, clock) == [S.CONSOLIDATED, S.CONSOLIDATED, S.NOTHING_NEW]
    say(units, "offline1", "offline2", at=clock.now - timedelta(days=3))
    say(units, "later")
    assert drain(worker, clock) == [S.CONSOLIDATED, S.CONSOLIDATED, S.NOTHING_NEW]
    assert recorder.seen == Counter(old=1, now=1, offline1=1, offline2=1, later=1)
    with units(write=False) as mem:
        assert {f.key for f in mem.facts.list("seen")} == set(recorder.seen)


def test_many_late_messages_come_in_batches_of_the_batch_size(
    units: UnitFactory, clock: FakeClock
) -> None:
    recorder = Recorder()
    worker = consolidator(units, clock, recorder.model, batch_size=4)
    say(units, "first")
    drain(worker, clock)
    say(units, *(f"late{i}" for i in range(10)), at=clock.now - timedelta(hours=2))
    statuses = drain(worker, clock)
    assert statuses == [S.CONSOLIDATED] * 3 + [S.NOTHING_NEW]
    assert recorder.seen == Counter({"first": 1, **{f"late{i}": 1 for i in range(10)}})
    with units(write=False) as mem:
        rows = mem.session.scalars(select(LearningBatch.message_count).order_by(LearningBatch.id))
        assert list(rows) == [1, 2]  # 4, 4, 2: the late batches reuse the row after the cursor


def test_a_late_message_before_a_session_s_first_extends_its_summary(
    units: UnitFactory, clock: FakeClock
) -> None:
    # A late window is not the session from its start because its first message is the
    # session's first: it holds that message only. Written afresh from it, the summary of
    # everything else the session said was lost.
    prompts: list[str] = []

    def summarize(prompt: str) -> str:
        prompts.append(prompt)
        return f"summary {len(prompts)}"

    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]", "summarize": summarize})
    worker = Consolidator(
        units,
        model,
        clock=clock,
        config=LearningConfig(summary_min_messages=2),
        schedule=ConsolidatorConfig(backlog=True, min_messages=1),
    )
    with units() as mem:
        mem.timeline.start_session("s")
        start = clock.now
        for word in ("one", "two", "three"):
            clock.advance(seconds=10)
            mem.timeline.append(f"{WORD}{word}", session_id="s")
    drain(worker, clock)
    with units() as mem:
        mem.timeline.append(f"{WORD}zero", session_id="s", at=start - timedelta(minutes=1))
    drain(worker, clock)
    assert len(prompts) == 2
    assert "Summary of the earlier part of this session (extend it): summary 1" in prompts[1]
    with units(write=False) as mem:
        note = mem.notes.get("session-summary-s")
        assert note is not None and note.content == "summary 2"


def test_a_consolidator_that_read_the_cursor_before_another_s_batch_was_done_claims_nothing(
    units: UnitFactory, clock: FakeClock, engine: Engine, backend: str
) -> None:
    # On PostgreSQL (READ COMMITTED) a claim that read the cursor before another process
    # wrote its batch, and the batch row after that, found the row done and took it over:
    # a wasted model call, and the row that recorded the watermark of the new cursor
    # overwritten, so a message that came late after that was taken as learned from. SQLite's
    # claims read first too (a deferred unit): the first write of a claim that read before
    # the batch was done is refused (its snapshot is stale) and the claim runs again.
    recorder = Recorder()
    first = consolidator(units, clock, recorder.model)
    second = consolidator(units, clock, recorder.model)
    say(units, "a1")
    drain(first, clock)
    say(units, "b1")
    clock.advance(minutes=6)
    fired = threading.Event()

    def meanwhile(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if fired.is_set() or "philont_learning_batches" not in statement:
            return
        if threading.current_thread() is not claimer:
            return
        fired.set()  # the second one has read the cursor: the first one does the batch now
        helper = threading.Thread(target=first.run_once)
        helper.start()
        helper.join()

    claimer = threading.current_thread()
    event.listen(engine, "before_cursor_execute", meanwhile)
    try:
        report = second.run_once()
    finally:
        event.remove(engine, "before_cursor_execute", meanwhile)
    assert fired.is_set()
    assert report.status in (S.CLAIMED_ELSEWHERE, S.NOTHING_NEW)
    assert recorder.seen == Counter(a1=1, b1=1)
    say(units, "late", at=clock.now - timedelta(hours=1))
    drain(first, clock)
    assert recorder.seen == Counter(a1=1, b1=1, late=1)


def test_tool_calls_made_after_the_clock_steps_back_are_judged_and_reflected_on(
    units: UnitFactory, clock: FakeClock
) -> None:
    # The late batch held the hour's messages but none of its tool calls: the run of the
    # request made in that hour had no trace, so the judge never saw it, and the reflection
    # never saw what the agent did.
    prompts: list[str] = []

    def reflect(prompt: str) -> str:
        prompts.append(prompt)
        return "[]"

    judge = RecordingJudge()
    model = ScriptedModel.by_task({"extract": "[]", "reflect": reflect, "summarize": "summary"})
    worker = consolidator(units, clock, model, judge=judge)
    say(units, "a1")
    assert drain(worker, clock) == [S.CONSOLIDATED, S.NOTHING_NEW]
    clock.advance(hours=-1)  # the host's clock is corrected an hour back
    clock.advance(seconds=10)
    say(units, "b1")
    for tool in ("fetch", "parse"):
        clock.advance(seconds=10)
        call(units, tool)
    assert drain(worker, clock) == [S.CONSOLIDATED, S.NOTHING_NEW]
    assert judge.runs == [(f"{WORD}b1", ["fetch", "parse"])]
    assert "[Tool calls]" in prompts[-1] and "fetch" in prompts[-1] and "parse" in prompts[-1]


def test_late_requests_over_the_batch_size_are_judged_with_their_own_tool_calls(
    units: UnitFactory, clock: FakeClock
) -> None:
    # Three requests after the clock stepped back, two per batch: each run whole, the calls
    # after the second request in its batch, not in the third request's batch (where no run
    # has them: the judge would never see them).
    judge = RecordingJudge()
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]", "summarize": "summary"})
    worker = consolidator(units, clock, model, judge=judge, batch_size=2)
    say(units, "a1")
    drain(worker, clock)
    clock.advance(hours=-1)
    for n in (1, 2, 3):
        clock.advance(seconds=10)
        say(units, f"b{n}")
        clock.advance(seconds=10)
        call(units, f"tool{n}")
    assert drain(worker, clock) == [S.CONSOLIDATED, S.CONSOLIDATED, S.NOTHING_NEW]
    assert judge.runs == [(f"{WORD}b{n}", [f"tool{n}"]) for n in (1, 2, 3)]


def test_tool_calls_logged_late_are_in_exactly_one_batch_window(
    units: UnitFactory, clock: FakeClock
) -> None:
    # Calls logged with an earlier time, alone (their messages were learned from), with late
    # messages, and while a batch after the cursor is being taken: each in one window.
    recorder = Recorder()
    worker = consolidator(units, clock, recorder.model, batch_size=2)
    say(units, "a1")
    drain(worker, clock)
    alone = [call(units, f"alone{i}", at=clock.now - timedelta(hours=1)) for i in range(3)]
    assert drain(worker, clock) == [S.CONSOLIDATED, S.CONSOLIDATED, S.NOTHING_NEW]  # 2, 1
    said_at = clock.now - timedelta(minutes=30)
    say(units, "late1", "late2", "late3", at=said_at)
    together = [call(units, f"with{i}", at=said_at + timedelta(seconds=i)) for i in range(2)]
    say(units, "new")
    statuses = drain(worker, clock)
    assert statuses[-1] == S.NOTHING_NEW
    assert calls_seen(worker.windows) == Counter(alone + together)
    assert recorder.seen == Counter(a1=1, late1=1, late2=1, late3=1, new=1)


class Flooding(Watching):
    """A consolidator whose first batch read is preceded by a flood (``flood(claim)``, in a
    unit of its own): rows that join the batch after its claim."""

    flood: Any = None
    claims: list[Any]
    rows_read: dict[str, int]  # by table, in the flooded batch's read

    def _read(self, mem: Any, claim: Any) -> Any:
        self.claims.append(claim)
        if self.flood is None:
            return super()._read(mem, claim)
        flood, self.flood = self.flood, None
        flood(claim)
        engine = mem.session.get_bind()
        event.listen(engine, "after_cursor_execute", self._count)
        try:
            return super()._read(mem, claim)
        finally:
            event.remove(engine, "after_cursor_execute", self._count)

    def _count(self, _conn: Any, cursor: Any, statement: str, params: Any, *_: Any) -> None:
        """The rows a SELECT yields, counted by the same connection in the same snapshot."""
        for table in ("memory_raw_messages", "memory_actions"):
            if statement.lstrip().upper().startswith("SELECT") and f"FROM {table}" in statement:
                counter = cursor.connection.cursor()
                counter.execute(f"SELECT count(*) FROM ({statement}) AS q", params)
                self.rows_read[table] = self.rows_read.get(table, 0) + counter.fetchone()[0]
                counter.close()


def flooding_after_a_first_batch(
    units: UnitFactory, clock: FakeClock, recorder: Recorder
) -> Flooding:
    """A :class:`Flooding` consolidator (``batch_size`` 10) that has learned one message."""
    worker = consolidator(units, clock, recorder.model, batch_size=10)
    flooding = Flooding(units, recorder.model, clock=clock, config=worker.config,
                        schedule=worker.schedule)  # fmt: skip
    flooding.windows, flooding.claims, flooding.rows_read = [], [], {}
    say(units, "first")
    drain(flooding, clock)
    return flooding


def test_a_flood_of_rows_joining_a_batch_after_its_claim_is_read_a_batch_at_a_time(
    units: UnitFactory, clock: FakeClock
) -> None:
    """Messages that join a batch after its claim (late ones, and ones stamped in its span)
    were all read into it, however many: its claim counted 2 messages, its read took 2 + 400.
    At most ``batch_size`` of them join it now (the first by id; two ids are read to find
    the last), the others are late rows for the next batches; each is learned from once, and
    each tool call is in one window or counted left out (the calls' read was and is bounded:
    the newest 200 a batch's prompts show; the late ones are read only where its span's leave
    room among those)."""
    recorder = Recorder()
    flooding = flooding_after_a_first_batch(units, clock, recorder)
    start = clock.now
    say(units, "b1")
    clock.advance(seconds=10)
    say(units, "b2")
    calls: list[int] = []

    def flood(claim: Any) -> None:
        late = [f"late{i}" for i in range(200)]
        say(units, *late, at=start - timedelta(hours=1))  # before the cursor
        say(units, *(f"span{i}" for i in range(200)), at=start + timedelta(seconds=5))
        with units() as mem:
            for i in range(600):
                at = start - timedelta(hours=1) if i % 2 else start + timedelta(seconds=5)
                calls.append(mem.actions.record("t", params={"i": i}, success=True, at=at).id)

    flooding.flood = flood
    clock.advance(minutes=6)
    statuses = drain(flooding, clock)
    assert statuses[-1] == S.NOTHING_NEW
    first, *rest = flooding.windows[1:]
    assert flooding.claims[1].messages == 2
    assert len(first.turns) == 2 + 10  # was 402: the claim's 2 and the first 10 that joined
    # rows read: those 12, 2 ids to find the last, 2 newest ids; of the 600 calls, the newest
    # 201 of its span (200 kept, one to say where the cut is) and of the late ones, all older,
    # the one that says none is kept (201 were read and dropped), a count of each, the newest id
    assert flooding.rows_read == {"memory_raw_messages": 16, "memory_actions": 205}
    assert all(len(w.turns) <= 10 for w in rest)  # late batches, of the batch size
    assert recorder.seen == Counter(
        ["first", "b1", "b2", *(f"late{i}" for i in range(200)), *(f"span{i}" for i in range(200))]
    )
    seen_calls = calls_seen(flooding.windows)  # each in one window, or counted left out
    assert set(seen_calls) <= set(calls) and set(seen_calls.values()) == {1}
    assert len(seen_calls) + sum(w.left.count for w in flooding.windows) == len(calls)


def test_late_tool_calls_joining_a_batch_are_read_only_where_its_own_leave_room(
    units: UnitFactory, clock: FakeClock
) -> None:
    """A batch keeps the newest 200 of its tool calls (what its prompts show); those that came
    late during its claim are all older than its span's. They were read up to 200 (201) and
    then dropped; now only as many as the span's leave room for are read, and the rest
    counted: 5 in its span and 300 late, 195 of those read (and one to find the cut)."""
    recorder = Recorder()
    flooding = flooding_after_a_first_batch(units, clock, recorder)
    start = clock.now
    span = []
    with units() as mem:
        for _ in range(5):
            clock.advance(seconds=1)
            span.append(mem.actions.record("s", params={}, success=True, session_id="global").id)
    say(units, "b1")
    late: list[int] = []

    def flood(claim: Any) -> None:
        with units() as mem:
            for i in range(300):
                at = start - timedelta(hours=1) + timedelta(seconds=i)
                late.append(mem.actions.record("t", params={"i": i}, success=True, at=at).id)

    flooding.flood = flood
    clock.advance(minutes=6)
    statuses = drain(flooding, clock)
    assert statuses[-1] == S.NOTHING_NEW
    window = flooding.windows[1]
    assert [c.id for c in window.calls] == late[105:] + span
    assert (window.left.count, len(flooding.windows)) == (105, 2)
    # the span's 5 (not cut: not counted), 196 late ones and their count, the newest id
    assert flooding.rows_read["memory_actions"] == 5 + 196 + 1 + 1


def test_a_database_without_a_tool_call_watermark_starts_tracking_at_its_next_batch(
    units: UnitFactory, clock: FakeClock
) -> None:
    # A batch row written by an older philont (seen_id, no seen_action_id): the calls logged
    # before are taken as reflected on; those logged late after that batch are not.
    recorder = Recorder()
    worker = consolidator(units, clock, recorder.model)
    say(units, "a1")
    call(units, "early")
    drain(worker, clock)
    with units() as mem:
        for row in mem.session.scalars(select(LearningBatch)):
            row.report = {k: v for k, v in (row.report or {}).items() if k != "seen_action_id"}
    before = len(worker.windows)
    call(units, "old", at=clock.now - timedelta(hours=1))  # before tracking: not known
    say(units, "b1")
    drain(worker, clock)
    late = call(units, "late", at=clock.now - timedelta(hours=1))
    drain(worker, clock)
    assert calls_seen(worker.windows[before:]) == Counter([late])


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[str, int]]:
    """Steps: ("say" or "call", seconds relative to now: back in time or at now), ("clock",
    seconds to move the clock, back or forward), ("run", which of two consolidators)."""
    back = st.sampled_from([0, 0, -30, -600, -7_200, -86_400 * 400])
    step = st.one_of(
        st.tuples(st.just("say"), back),
        st.tuples(st.just("call"), back),
        st.tuples(st.just("clock"), st.integers(-7_200, 7_200)),
        st.tuples(st.just("run"), st.integers(0, 1)),
    )
    return draw(st.lists(step, max_size=25))


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=histories())
def test_every_message_and_tool_call_is_learned_exactly_once_whatever_the_clock_does(
    units: UnitFactory, clock: FakeClock, history: list[tuple[str, int]]
) -> None:
    # One database for all examples: each example's messages are its own words, and what
    # came before stays learned (the cursor and its watermarks carry on). Each tool call is in
    # exactly one batch's window.
    recorder = Recorder()
    windows: list[Window] = []
    workers = [
        consolidator(units, clock, recorder.model, windows, batch_size=3, idle_after=timedelta(0))
        for _ in range(2)
    ]
    said = []
    called = []
    prefix = next(EXAMPLES)
    latest = clock.now
    for kind, value in history:
        if kind == "say":
            word = f"{prefix}x{len(said)}"
            said.append(word)
            clock.advance(milliseconds=1)
            say(units, word, at=clock.now + timedelta(seconds=value))
            latest = max(latest, clock.now)
        elif kind == "call":
            clock.advance(milliseconds=1)
            called.append(call(units, f"{prefix}t", at=clock.now + timedelta(seconds=value)))
            latest = max(latest, clock.now)
        elif kind == "clock":
            clock.advance(seconds=value)
        else:
            workers[value].run_once()
    clock.now = max(clock.now, latest)  # every message's time has come
    clock.advance(milliseconds=1)  # a message after every call: a batch reaches them all
    said.append(f"{prefix}end")
    say(units, said[-1])
    for worker in workers:
        drain(worker, clock)
    assert recorder.seen == Counter(said)
    assert calls_seen(windows) == Counter(called)


EXAMPLES = (f"e{i}" for i in itertools.count())


def test_a_batch_reports_the_messages_and_tool_calls_it_learned_from(
    units: UnitFactory, clock: FakeClock
) -> None:
    # A batch of late tool calls alone was reported as one of "0 late messages".
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]", "summarize": "summary"})
    worker = consolidator(units, clock, model, batch_size=2)
    call(units, "fetch")
    clock.advance(seconds=1)
    say(units, "a1")
    clock.advance(minutes=6)
    reports = [worker.run_once()]
    for i in range(3):
        call(units, f"alone{i}", at=clock.now - timedelta(hours=1))
    say(units, "late1", at=clock.now - timedelta(minutes=30))
    clock.advance(minutes=6)
    reports += [worker.run_once() for _ in range(3)]
    got = [(r.status, r.late, r.messages, r.tool_calls) for r in reports]
    assert got == [
        (S.CONSOLIDATED, False, 1, 1),
        (S.CONSOLIDATED, True, 1, 2),  # the message and the calls before it, by id
        (S.CONSOLIDATED, True, 0, 1),
        (S.NOTHING_NEW, False, 0, 0),
    ]


def test_tool_calls_logged_late_alone_credit_and_blame_the_skills_they_used(
    units: UnitFactory, clock: FakeClock
) -> None:
    # Tool calls logged late after their requests were learned from make a batch with no
    # dialogue: no model is asked about it, but attribution (the only evidence that moves a
    # skill's counts) decides each retrieval in it by the calls that followed.
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]", "summarize": "summary"})
    worker = consolidator(units, clock, model)
    with units() as mem:
        for name in ("works", "breaks"):
            mem.skills.create(name, f"a skill that {name}", name, "do it")
    clock.advance(hours=2)  # the calls below used the skills, so came after they were made
    say(units, "a1")
    assert drain(worker, clock) == [S.CONSOLIDATED, S.NOTHING_NEW]
    at = clock.now - timedelta(hours=1)
    with units() as mem:
        for n, (name, ok) in enumerate((("works", True), ("breaks", False))):
            sid, then = f"s{n}", at + timedelta(seconds=10 * n)
            mem.actions.record("use_skill", params={"name": name}, success=True, session_id=sid,
                               at=then)  # fmt: skip
            mem.actions.record("fetch", params={}, success=ok, session_id=sid,
                               at=then + timedelta(seconds=1))  # fmt: skip
    clock.advance(minutes=6)
    report = worker.run_once()
    assert (report.status, report.late, report.messages, report.tool_calls) == (
        S.CONSOLIDATED,
        True,
        0,
        4,
    )
    assert report.credited == 2
    with units() as mem:
        counts = {}
        for name in ("works", "breaks"):
            skill = mem.skills.get(name, record_access=False)
            assert skill is not None
            counts[name] = (skill.success_count, skill.failure_count)
    assert counts == {"works": (1, 0), "breaks": (0, 1)}
    assert worker.run_once().status == S.NOTHING_NEW
