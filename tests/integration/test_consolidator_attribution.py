"""Attribution without a new batch: a skill use whose window is still open when its batch is
consolidated is decided by a later tick once the window closes, though no message comes."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, event, select

from philont.db.models import Action, JudgeVerdict, RawMessage
from philont.domain.attribution import ActionEvent, UserTurn, attribute
from philont.domain.kinds import Role
from philont.domain.maturity import Outcome
from philont.learning import (
    Consolidator,
    ConsolidatorConfig,
    Judge,
    JudgeResult,
    LearningConfig,
    Run,
)
from philont.llm import ScriptedModel
from philont.schemas.learning import ConsolidationReport, Verdict
from philont.schemas.learning import ConsolidationStatus as S
from tests.conftest import FakeClock
from tests.integration.learning_helpers import (
    Conversation,
    UnitFactory,
    csv_then_scrape,
    unit_factory,
)

BOTH_BACKENDS = True


@pytest.fixture
def units(engine: Engine, clock: FakeClock) -> UnitFactory:
    return unit_factory(engine, clock)


def worker(
    units: UnitFactory, clock: FakeClock, judge: Judge | None = None, **schedule: Any
) -> Consolidator:
    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]", "summarize": "summary"})
    options: dict[str, Any] = {"backlog": True, "min_messages": 1} | schedule
    return Consolidator(
        units,
        model,
        clock=clock,
        judge=judge,
        config=LearningConfig(summary_min_messages=10_000),
        schedule=ConsolidatorConfig(**options),
    )


def export_then_silence(units: UnitFactory, clock: FakeClock) -> None:
    """A skill used, its calls succeeding, the answer given; nothing said after."""
    with units() as mem:
        mem.skills.create("export-csv", "export a table as CSV", "export", "1. query\n2. write")
        chat = Conversation(mem, clock, "s1")
        chat.user("Export the invoices table as CSV")
        chat.act("use_skill", name="export-csv")
        chat.act("sql", query="select * from invoices")
        chat.act("write_file", path="invoices.csv")
        chat.assistant("Wrote invoices.csv")


def counts(units: UnitFactory, name: str) -> tuple[int, int]:
    with units(write=False) as mem:
        skill = mem.skills.get(name, record_access=False)
        assert skill is not None
        return skill.success_count, skill.failure_count


def test_the_last_use_of_a_conversation_is_credited_after_silence(
    units: UnitFactory, clock: FakeClock
) -> None:
    # The conversation ends right after a skill use whose calls succeeded; nothing more is
    # said. Its batch ran while the use's window was open (pending), and no later batch came:
    # the use was never attributed, and the skill's counts never moved.
    export_then_silence(units, clock)
    consolidator = worker(units, clock)
    clock.advance(minutes=6)
    first = consolidator.tick()
    assert [r.status for r in first] == [S.CONSOLIDATED, S.NOTHING_NEW]
    assert first[0].credited == 0  # the window was open: pending
    assert counts(units, "export-csv") == (0, 0)
    clock.advance(minutes=30)
    shown: list[ConsolidationReport] = []  # as `philont consolidate` prints them
    reports = consolidator.tick(on_report=shown.append)
    assert [r.status for r in reports] == [S.NOTHING_NEW]
    assert counts(units, "export-csv") == (1, 0)
    assert (reports[-1].credited, shown[-1].credited) == (1, 1)  # the log alone said so
    for _ in range(3):  # once: neither a later tick nor a later batch counts it again
        clock.advance(minutes=10)
        assert [r.credited for r in consolidator.tick()] == [0]
    with units() as mem:
        Conversation(mem, clock, "s1").user("Thanks")
    clock.advance(minutes=6)
    assert [r.status for r in consolidator.tick()] == [S.CONSOLIDATED, S.NOTHING_NEW]
    assert counts(units, "export-csv") == (1, 0)


def test_a_failed_last_use_is_blamed_after_silence_when_no_batch_can_run(
    units: UnitFactory, clock: FakeClock
) -> None:
    # Also while the timeline has too few messages for a batch (min_messages): the batch
    # waits, the attribution does not.
    with units() as mem:
        mem.skills.create("scrape", "scrape prices", "scrape", "1. fetch")
        chat = Conversation(mem, clock, "s1")
        chat.user("Scrape the prices")
        chat.act("use_skill", name="scrape")
        chat.act("http_get", ok=False, url="https://example.invalid")
    consolidator = worker(units, clock, min_messages=4)
    clock.advance(minutes=6)
    assert [r.status for r in consolidator.tick()] == [S.TOO_FEW]
    assert counts(units, "scrape") == (0, 0)  # still open
    clock.advance(minutes=30)
    reports = consolidator.tick()
    assert [(r.status, r.credited) for r in reports] == [(S.TOO_FEW, 1)]
    assert counts(units, "scrape") == (0, 1)


def test_consolidators_attributing_at_once_count_each_use_once(
    units: UnitFactory, clock: FakeClock
) -> None:
    with units() as mem:
        mem.skills.create("plan", "plan a trip", "plan", "1. ask")
        for n in range(5):
            chat = Conversation(mem, clock, f"s{n}")
            chat.user("Plan a trip")
            chat.act("use_skill", name="plan")
            chat.act("search", ok=n != 0, q="trains")
    clock.advance(minutes=40)
    workers = [worker(units, clock, min_messages=1_000) for _ in range(4)]
    start = threading.Barrier(len(workers))
    errors: list[BaseException] = []

    def run(w: Consolidator) -> None:
        try:
            start.wait()
            w.tick()
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert counts(units, "plan") == (4, 1)


STEP = st.one_of(
    st.tuples(
        st.just("use"), st.integers(0, 2), st.integers(0, 1), st.lists(st.booleans(), max_size=3)
    ),
    st.tuples(st.just("user"), st.integers(0, 1)),
    st.tuples(st.just("wait"), st.sampled_from([1, 5, 6, 20, 31])),
    st.tuples(st.just("tick"), st.integers(0, 1)),
)


class _Undo(Exception):
    """Rolls a unit of work back."""


def assert_due_is_what_a_run_decides(units: UnitFactory) -> None:
    """The read an idle tick makes first (``due``) counts the retrievals a run would decide
    now: a tick that finds none takes no lock and decides nothing, so a window it missed
    (closed by a user turn, the next retrieval, 20 actions or the time) would never be."""
    with contextlib.suppress(_Undo), units() as mem:
        due = mem.reflector.due()
        run = mem.reflector.run()
        assert due == len(run.credited) + len(run.skipped) - run.pending
        raise _Undo


@given(plan=st.lists(STEP, max_size=14))
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_use_is_attributed_exactly_once(
    units: UnitFactory, clock: FakeClock, plan: list[tuple[Any, ...]]
) -> None:
    """Uses of skills (their calls succeeding or failing), user turns, waits and ticks of two
    consolidators in any order; once every window has closed and the consolidators ticked,
    each skill's counts are the outcomes of its uses, each counted once, as the domain's
    attribution decides them over the whole log."""
    tag = uuid.uuid4().hex[:8]  # the examples share one database
    names = [f"skill-{tag}-{n}" for n in range(3)]
    sessions = [f"s-{tag}-{n}" for n in range(2)]
    with units() as mem:
        for name in names:
            mem.skills.create(name, f"the skill {name}", name, "1. do it")
        for sid in sessions:
            mem.timeline.start_session(sid)
    workers = [worker(units, clock), worker(units, clock)]
    for step in plan:
        if step[0] == "use":
            _, skill, where, outcomes = step
            with units() as mem:
                chat = Conversation(mem, clock, sessions[where])
                chat.act("use_skill", minutes=0.5, name=names[skill])
                for ok in outcomes:
                    chat.act("step", ok, minutes=0.5)
        elif step[0] == "user":
            with units() as mem:
                Conversation(mem, clock, sessions[step[1]]).user("next", minutes=0.5)
        elif step[0] == "wait":
            clock.advance(minutes=step[1])
        else:
            assert_due_is_what_a_run_decides(units)
            workers[step[1]].tick()
    clock.advance(minutes=31)
    for w in workers:
        w.tick()
    workers[0].tick()
    with units(write=False) as mem:
        actions = mem.session.scalars(select(Action).where(Action.session_id.in_(sessions))).all()
        turns = mem.session.execute(
            select(RawMessage.session_id, RawMessage.timestamp).where(
                RawMessage.session_id.in_(sessions), RawMessage.role == Role.USER
            )
        ).all()
    events = [
        ActionEvent(a.id, a.session_id, a.tool_name, a.success, a.timestamp, a.params)
        for a in actions
    ]
    expected = {name: [0, 0] for name in names}
    for credit in attribute(events, [UserTurn(s, t) for s, t in turns]):
        if credit.outcome is not None:
            expected[credit.skill_name][credit.outcome != Outcome.SUCCESS] += 1
    assert {name: counts(units, name) for name in names} == {
        name: tuple(v) for name, v in expected.items()
    }


def test_a_use_skill_row_naming_no_skill_does_not_make_every_tick_read_the_log(
    units: UnitFactory, clock: FakeClock
) -> None:
    # A successful use_skill row without a usable name (written by another program) is never
    # a retrieval, so never marked: each run took it as the earliest undecided retrieval and
    # read the whole log after it, now at every tick.
    with units() as mem:
        mem.skills.create("plan", "plan a trip", "plan", "1. ask")
        chat = Conversation(mem, clock, "s1")
        chat.act("use_skill", name=" ")
        for n in range(300):
            chat.act("search", minutes=0.01, q=str(n))
        chat.act("use_skill", name="plan")  # pending: its window is open
        chat.act("search", q="trains")
    consolidator = worker(units, clock, min_messages=1_000)
    loaded: list[int] = []

    def count(target: Action, context: object) -> None:
        loaded.append(target.id)

    event.listen(Action, "load", count)
    try:
        consolidator.tick()
    finally:
        event.remove(Action, "load", count)
    assert len(loaded) == 2  # the retrieval and its call, not the 300 before
    clock.advance(minutes=31)
    consolidator.tick()
    assert counts(units, "plan") == (1, 0)


class AllSucceeded:
    """A host's judge: a run is verified when all its tool calls succeeded."""

    name = "all-succeeded"

    def judge(self, run: Run) -> JudgeResult:
        ok = all(call.success for call in run.trace)
        return JudgeResult(Verdict.VERIFIED if ok else Verdict.FAILED, "tool results")


def test_the_judges_verdict_gets_its_observed_outcome_after_silence(
    units: UnitFactory, clock: FakeClock
) -> None:
    # What attribution observed is kept next to the judge's verdict (the agreement rate); for
    # the last run of a conversation it waited for a batch that never came.
    export_then_silence(units, clock)
    consolidator = worker(units, clock, AllSucceeded())

    def observed() -> list[tuple[str, str | None]]:
        with units(write=False) as mem:
            rows = mem.session.execute(
                select(JudgeVerdict.verdict, JudgeVerdict.observed_outcome)
            ).all()
        return [(verdict, outcome) for verdict, outcome in rows]

    clock.advance(minutes=6)
    reports = consolidator.tick()
    assert [(r.status, r.observed) for r in reports] == [(S.CONSOLIDATED, 0), (S.NOTHING_NEW, 0)]
    assert observed() == [("verified", None)]  # the window was open
    clock.advance(minutes=30)
    assert [(r.credited, r.observed) for r in consolidator.tick()] == [(1, 1)]
    assert observed() == [("verified", "success")]
    assert counts(units, "export-csv") == (1, 0)


def test_a_batch_reports_the_verdicts_it_observed(units: UnitFactory, clock: FakeClock) -> None:
    # Its windows closed by the user's next turn: the batch decides both uses and observes the
    # verdicts it has just recorded.
    with units() as mem:
        csv_then_scrape(mem, clock, "Export the invoices table as CSV")
    clock.advance(minutes=6)
    reports = worker(units, clock, AllSucceeded()).tick()
    assert [(r.status, r.credited, r.observed) for r in reports] == [
        (S.CONSOLIDATED, 2, 2),
        (S.NOTHING_NEW, 0, 0),
    ]


@contextlib.contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL the database runs meanwhile, as it runs it: on SQLite through its trace hook
    (which sees the BEGIN philont issues on the driver's connection, below SQLAlchemy), on
    PostgreSQL each statement with its parameters."""
    seen: list[str] = []
    if engine.dialect.name == "sqlite":

        def on_checkout(dbapi: Any, record: object, proxy: object) -> None:
            dbapi.set_trace_callback(seen.append)

        def on_checkin(dbapi: Any, record: object) -> None:
            dbapi.set_trace_callback(None)

        hooks: list[tuple[str, Any]] = [("checkout", on_checkout), ("checkin", on_checkin)]
    else:

        def on_execute(conn: object, cursor: object, sql: str, params: Any, *rest: object) -> None:
            seen.append(f"{sql} {params!r}")

        hooks = [("before_cursor_execute", on_execute)]
    for name, hook in hooks:
        event.listen(engine, name, hook)
    try:
        yield seen
    finally:
        for name, hook in hooks:
            event.remove(engine, name, hook)


def writes_and_learning_locks(engine: Engine, seen: list[str]) -> tuple[int, int]:
    """Writing units begun (SQLite: BEGIN IMMEDIATE; PostgreSQL begins every unit alike, so
    not counted) and learning locks taken (PostgreSQL: the advisory lock of the key
    "learning"; SQLite has none: the write lock is the learner's)."""
    if engine.dialect.name == "sqlite":
        return sum(sql.startswith("BEGIN IMMEDIATE") for sql in seen), 0
    return 0, sum("pg_advisory_xact_lock" in sql and "\\x1flearning" in sql for sql in seen)


@pytest.mark.parametrize("open_use", [False, True], ids=["all-decided", "one-open"])
def test_an_idle_tick_with_nothing_to_decide_takes_no_lock_nor_writing_unit(
    engine: Engine, units: UnitFactory, clock: FakeClock, open_use: bool
) -> None:
    # Every idle tick took the learning lock (PostgreSQL: an advisory lock; SQLite: the file's
    # write lock, BEGIN IMMEDIATE) for the attribution, though nothing was undecided or every
    # undecided window was still open: it now reads first. So does the claim's unit (it
    # began BEGIN IMMEDIATE on every tick, waiting for any writer of the file to find that
    # nothing was to be claimed).
    export_then_silence(units, clock)
    consolidator = worker(units, clock, AllSucceeded())
    clock.advance(minutes=40)
    reports = consolidator.tick()  # the batch decides the use (its window closed) and observes
    assert [(r.status, r.credited, r.observed) for r in reports] == [
        (S.CONSOLIDATED, 1, 1),
        (S.NOTHING_NEW, 0, 0),
    ]
    if open_use:  # a use whose window is open: pending, read again each tick, nothing written
        with units() as mem:
            chat = Conversation(mem, clock, "s1")
            chat.act("use_skill", name="export-csv")
            chat.act("sql", query="select 1")
    clock.advance(minutes=6)
    sqlite = engine.dialect.name == "sqlite"
    idle = (0, 0)
    for _ in range(2):
        with statements(engine) as seen:
            reports = consolidator.tick()
        assert [(r.status, r.credited) for r in reports] == [(S.NOTHING_NEW, 0)]
        assert writes_and_learning_locks(engine, seen) == idle
        clock.advance(minutes=1)
    clock.advance(minutes=30)  # the open use's window closes: this tick decides it
    with statements(engine) as seen:
        reports = consolidator.tick()
    assert [r.credited for r in reports] == [1 if open_use else 0]
    deciding = (1, 0) if sqlite else (0, 1)  # the same probe sees the lock taken
    assert writes_and_learning_locks(engine, seen) == (deciding if open_use else idle)
    assert counts(units, "export-csv") == ((2, 0) if open_use else (1, 0))


# Names no skill can have: longer than a name is looked up by (200 characters), a NUL (no text
# of PostgreSQL holds one). Lone surrogates cannot get in: a stored one reads back as U+FFFD.
UNNAMABLE = ["x" * 201, "export\x00csv", "\x00", " "]


@pytest.mark.parametrize("judged", [False, True], ids=["no judge", "judge"])
@pytest.mark.parametrize("name", UNNAMABLE, ids=["201 characters", "NUL", "NUL alone", "blank"])
def test_a_use_skill_row_naming_what_no_skill_can_be_named_stops_no_learning(
    units: UnitFactory, clock: FakeClock, name: str, judged: bool
) -> None:
    # A successful use_skill row whose name no skill can bear (written by another program or
    # by a host's actions.record) was taken for a retrieval: deciding it looked the name up
    # (refused: invalid_input) or marked its row with it (a NUL, on PostgreSQL), so every
    # reflector run raised, and with it every batch (its apply runs the reflector: the batch
    # failed, retried without end) and every idle tick's attribution; no skill was credited
    # again. With a judge, the run it began was the run of that "skill": its verdict kept the
    # name (a NUL failed the batch on PostgreSQL, again without end; a blank one was recorded).
    # It is no retrieval (it names no skill), as a row naming none: passed over.
    export_then_silence(units, clock)
    with units() as mem:
        chat = Conversation(mem, clock, "s1")
        chat.user("and again")
        chat.act("use_skill", name=name)  # ends no window: export-csv's ended with the turn
        chat.act("sql", query="select 1")
        chat.act("use_skill", name="export-csv")  # the run's skill
        chat.act("sql", query="select 2")
        chat.assistant("done")
    clock.advance(minutes=31)
    consolidator = worker(units, clock, AllSucceeded() if judged else None)
    reports = consolidator.tick()
    assert [r.status for r in reports][:1] == [S.CONSOLIDATED], reports[0].error
    assert counts(units, "export-csv") == (2, 0)
    with units(write=False) as mem:
        assert mem.reflector.due() == 0
        marked = mem.session.scalars(
            select(Action.linked_skill).where(Action.tool_name == "use_skill").order_by(Action.id)
        ).all()
        verdicts = mem.session.scalars(select(JudgeVerdict.skill_name).order_by(JudgeVerdict.id))
        assert list(verdicts) == (["export-csv"] * 2 if judged else [])
    assert marked == ["export-csv", None, "export-csv"]  # the unnamed one is never marked
