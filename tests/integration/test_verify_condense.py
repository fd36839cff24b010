"""Verify-then-condense: judged runs, cases, skills condensed from them, and the judge's
agreement with the outcomes attribution observes."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, select, update

from philont.db.models import JudgeVerdict, RawMessage
from philont.domain.attribution import AttributionWindow
from philont.domain.maturity import Grade
from philont.errors import InvalidInputError
from philont.learning import (
    CaseBook,
    Consolidator,
    ConsolidatorConfig,
    JudgeResult,
    Learner,
    LearningConfig,
    ModelJudge,
    Run,
    ToolCall,
)
from philont.learning.window import runs_of
from philont.llm import ScriptedModel
from philont.schemas.learning import ConsolidationStatus, Verdict
from tests.conftest import FakeClock
from tests.integration.learning_helpers import (
    UnitFactory,
    answer,
    csv_then_scrape,
    skill_item,
    unit_factory,
)

BOTH_BACKENDS = True
VERIFY = LearningConfig(verify_then_condense=True, summary_min_messages=10_000)


@pytest.fixture
def units(engine: Engine, clock: FakeClock) -> UnitFactory:
    return unit_factory(engine, clock)


class RuleJudge:
    """A host's own judge: a run is verified when all its tool calls succeeded."""

    name = "all-tools-succeeded"

    def judge(self, run: Run) -> Any:
        from philont.learning import JudgeResult

        ok = all(call.success for call in run.trace)
        return JudgeResult(Verdict.VERIFIED if ok else Verdict.FAILED, "tool results")


def two_runs(units: UnitFactory, clock: FakeClock) -> None:
    """A successful run (csv export via a skill) and a failed one (a scrape)."""
    with units() as mem:
        csv_then_scrape(mem, clock, "Export the invoices table as CSV")


CONDENSED = skill_item(
    "export-table-as-csv",
    description="Export a database table to a CSV file",
    when_to_use="when the user wants a table as a CSV file",
    trigger_keywords=["csv", "export"],
    action_template="1. run the query\n2. write the rows to <name>.csv\n3. report the count",
)


def test_runs_are_a_request_and_the_tool_calls_until_the_next_one(
    units: UnitFactory, clock: FakeClock
) -> None:
    two_runs(units, clock)
    with units(write=False) as mem:
        window = Learner(mem, ScriptedModel([])).window(session_id="s1")
    runs = runs_of(window)
    assert [(r.goal, len(r.trace), r.result, r.skill_name) for r in runs] == [
        ("Export the invoices table as CSV", 3, "Wrote invoices.csv (120 rows)", "export-csv"),
        ("Now scrape the competitor prices", 2, "The site did not answer.", "export-csv"),
    ]


def test_the_loop_judges_runs_keeps_cases_and_condenses_a_confirmed_skill_linked_to_them(
    units: UnitFactory, clock: FakeClock
) -> None:
    two_runs(units, clock)
    clock.advance(hours=1)
    proposals = answer(skill_item("export-csv-files"))  # from conversation: refused in this mode
    model = ScriptedModel.by_task(
        {"extract": "[]", "reflect": proposals, "condense": answer(CONDENSED)}
    )
    worker = Consolidator(
        units, model, clock=clock, config=VERIFY, judge=RuleJudge(),
        schedule=ConsolidatorConfig(backlog=True, min_messages=1),
    )  # fmt: skip
    report = worker.run_once()
    assert report.status == ConsolidationStatus.CONSOLIDATED
    assert [v.verdict for v in report.verdicts] == [Verdict.VERIFIED, Verdict.FAILED]
    assert report.reflection is not None
    assert [(w.action, w.reason) for w in report.reflection.writes] == [
        ("refused", "needs_verified_case")
    ]
    assert report.condensed is not None and report.condensed.names("created") == [
        "export-table-as-csv"
    ]
    with units(write=False) as mem:
        skill = mem.skills.get("export-table-as-csv", record_access=False)
        assert skill is not None
        assert skill.grade == Grade.CONFIRMED  # born validated
        case_id = report.verdicts[0].case_id
        assert case_id is not None and skill.source == f"self:case-{case_id}"
        [case] = CaseBook(mem).cases_of("export-table-as-csv")
        assert (case.id, case.goal) == (case_id, "Export the invoices table as CSV")
        assert [step["tool"] for step in case.trace] == ["use_skill", "sql", "write_file"]
        assert report.verdicts[1].case_id is None  # a failed run is not a case
    again = worker.run_once()
    assert again.status == ConsolidationStatus.NOTHING_NEW


def test_each_verdict_is_kept_next_to_what_attribution_observed(
    units: UnitFactory, clock: FakeClock
) -> None:
    two_runs(units, clock)
    optimistic = ScriptedModel([json.dumps({"verdict": "verified", "reason": "looks done"})] * 2)
    with units() as mem:
        learner = Learner(mem, optimistic, judge=ModelJudge(optimistic, name="optimist"))
        for run in runs_of(learner.window(session_id="s1")):
            learner.judge_run(run)
        assert [a.observed for a in learner.judge_report()] == [0, 0]  # nothing decided yet
    clock.advance(hours=1)
    with units() as mem:
        mem.reflector.run()  # attribution credits export-csv once, blames it once
        report = Learner(mem, optimistic).judge_report()
    [per_skill, overall] = report
    assert (per_skill.skill, per_skill.verdicts, per_skill.observed, per_skill.agreed) == (
        "export-csv",
        2,
        2,
        1,
    )
    assert overall.skill is None and overall.rate == 0.5
    with units(write=False) as mem:
        observed = mem.session.execute(
            select(JudgeVerdict.verdict, JudgeVerdict.observed_outcome).order_by(JudgeVerdict.id)
        ).all()
    assert [tuple(row) for row in observed] == [("verified", "success"), ("verified", "failure")]


@pytest.mark.parametrize(
    "reply", ["I think it worked.", '{"verdict": "maybe"}', '```json\n{"verdict": 3}\n```']
)
def test_a_judge_answer_without_a_verdict_is_unsure_and_makes_no_case(
    units: UnitFactory, clock: FakeClock, reply: str
) -> None:
    two_runs(units, clock)
    model = ScriptedModel([reply])
    with units() as mem:
        learner = Learner(mem, model, judge=ModelJudge(model))
        run = runs_of(learner.window(session_id="s1"))[0]
        record = learner.judge_run(run)
        assert (record.verdict, record.case_id) == (Verdict.UNSURE, None)
        assert CaseBook(mem).pending_cases() == []


def test_cases_recorded_before_the_mode_is_on_are_condensed_when_it_is(
    units: UnitFactory, clock: FakeClock
) -> None:
    two_runs(units, clock)
    with units() as mem:
        shadow = Learner(mem, ScriptedModel([]), judge=RuleJudge())  # judging in shadow mode
        for run in runs_of(shadow.window(session_id="s1")):
            shadow.judge_run(run)
        with pytest.raises(InvalidInputError):
            shadow.condense()
    with units() as mem:
        model = ScriptedModel([answer(CONDENSED)])
        [report] = Learner(mem, model, config=VERIFY).condense()
        assert report.names("created") == ["export-table-as-csv"]
        assert "Export the invoices table as CSV" in model.prompts[0]
        assert CaseBook(mem).pending_cases() == []
        assert len(CaseBook(mem).cases_of("export-table-as-csv")) == 1


@pytest.mark.parametrize("path", ["judge_run", "record", "learn"])
def test_a_run_is_judged_once_whatever_the_path(
    units: UnitFactory, clock: FakeClock, path: str
) -> None:
    # Learner.judge_run (and CaseBook.record) judged a run again on every call: each call
    # added a verdict and a case, and the agreement counted one run three times.
    two_runs(units, clock)
    judge = RuleJudge()
    with units() as mem:
        learner = Learner(
            mem, ScriptedModel.by_task({"extract": "[]", "reflect": "[]"}), judge=judge
        )
        window = learner.window(session_id="s1")
        runs = runs_of(window)
        first = [learner.judge_run(run) for run in runs]
        for _ in range(2):
            if path == "judge_run":
                again = [learner.judge_run(run) for run in runs]
            elif path == "record":
                book = CaseBook(mem)
                again = [book.record(run, judge.judge(run), judge=judge.name) for run in runs]
            else:
                again = learner.learn(window).verdicts  # the loop: nothing left to judge
        assert [v.id for v in again] == ([] if path == "learn" else [v.id for v in first])
        verdicts = mem.session.scalars(select(JudgeVerdict)).all()
        assert len(verdicts) == 2
        assert [(a.skill, a.verdicts) for a in learner.judge_report()] == [
            ("export-csv", 2),
            (None, 2),
        ]


class EveryRunVerified:
    name = "all-verified"

    def judge(self, run: Run) -> Any:
        from philont.learning import JudgeResult

        return JudgeResult(Verdict.VERIFIED, "trusted")


def test_every_skill_condensed_in_a_batch_is_in_its_report(
    units: UnitFactory, clock: FakeClock
) -> None:
    # The batch report kept the first condensed case's writes only.
    two_runs(units, clock)
    clock.advance(hours=1)
    names = iter(["export-table-as-csv", "scrape-price-pages"])

    def condense(prompt: str) -> str:
        name = next(names)
        return answer(skill_item(name, description=f"{name} procedure", trigger_keywords=[name]))

    model = ScriptedModel.by_task({"extract": "[]", "reflect": "[]", "condense": condense})
    worker = Consolidator(
        units, model, clock=clock, config=VERIFY, judge=EveryRunVerified(),
        schedule=ConsolidatorConfig(backlog=True, min_messages=1),
    )  # fmt: skip
    report = worker.run_once()
    assert report.condensed is not None
    assert report.condensed.names("created") == ["export-table-as-csv", "scrape-price-pages"]


@pytest.mark.parametrize(
    "step",
    [
        {"action_id": "seven", "tool": "sql"},
        {"action_id": {"n": 1}, "tool": "sql"},
        {"action_id": [3], "tool": "sql", "params": {"q": 1}},
        {"action_id": True, "tool": None, "result": 5, "success": "yes"},
    ],
)
def test_a_case_whose_stored_trace_is_not_ours_is_condensed_and_stops_nothing(
    units: UnitFactory, clock: FakeClock, step: dict[str, Any]
) -> None:
    """A verified case whose trace another program (or a hand) wrote: an ``action_id`` that
    is no whole number failed reading it (ValueError, TypeError) in every batch,
    which were failed and retried without end: learning stopped there for good."""
    from philont.db.models import LearningCase

    with units() as mem:
        mem.timeline.append("Hello there", role="user")
        mem.session.add(
            LearningCase(
                id="hand-made",
                goal="Export the invoices",
                trace=[step],
                result="done",
                created_at=clock.now,
            )
        )
    clock.advance(hours=1)
    model = ScriptedModel.by_task(
        {"extract": "[]", "reflect": "[]", "condense": answer([CONDENSED])}
    )
    worker = Consolidator(
        units,
        model,
        clock=clock,
        config=VERIFY,
        schedule=ConsolidatorConfig(backlog=True, min_messages=1),
    )
    report = worker.run_once()
    assert report.status == ConsolidationStatus.CONSOLIDATED, report.error
    condense = next(p for p in model.prompts if p.startswith("TASK: condense"))
    assert "Goal: Export the invoices" in condense


_AT = datetime(2026, 1, 1, tzinfo=UTC)
_CALL = ToolCall(1, "s1", "sql", {"query": "select 1"}, "ok", True, _AT)
_BAD_RUNS: dict[str, tuple[Run, str]] = {  # a host's run, and the argument its refusal names
    "session_id with a NUL": (Run("goal", (_CALL,), "done", session_id="s\x001"), "session_id"),
    "session_id not text": (Run("goal", (_CALL,), "done", session_id=5), "session_id"),  # type: ignore[arg-type]
    "skill_name with a NUL": (Run("goal", (_CALL,), "done", skill_name="a\x00b"), "skill_name"),
    "skill_name not Unicode": (Run("goal", (_CALL,), "done", skill_name="a\ud800"), "skill_name"),
    "result not text": (Run("goal", (_CALL,), None), "result"),  # type: ignore[arg-type]
    "retrieval past 64 bits": (
        Run("goal", (_CALL,), "done", retrieval_action_id=2**63),
        "retrieval_action_id",
    ),
    "call id past 64 bits": (Run("goal", (dataclasses.replace(_CALL, id=2**63),), "done"), "trace"),
    "params not JSON": (
        Run("goal", (dataclasses.replace(_CALL, params={"x": float("nan")}),), "done"),
        "trace",
    ),
    "a step no tool call": (Run("goal", ("sql",), "done"), "trace"),  # type: ignore[arg-type]
}


@pytest.mark.parametrize("how", ["judge_run", "record"])
@pytest.mark.parametrize("case", sorted(_BAD_RUNS))
def test_a_run_a_host_made_that_cannot_be_kept_is_refused_and_nothing_is_written(
    units: UnitFactory, case: str, how: str
) -> None:
    # A Run (and its ToolCalls) a host builds for Learner.judge_run / CaseBook.record was
    # stored as it was: an id past 64 bits, params that are no JSON or a result that is no
    # text escaped untyped (OverflowError, StatementError, AttributeError), and on PostgreSQL
    # a NUL failed the flush, ending the host's whole unit of work (its own writes lost), where
    # SQLite stored it. Now each is an InvalidInputError naming it, before anything is written
    # (a NUL is kept where the database keeps it, as every service's text is).
    run, argument = _BAD_RUNS[case]
    with units() as mem:
        mem.notes.add("the host's own note")
        asked: list[Run] = []

        class CountingJudge(RuleJudge):
            def judge(self, run: Run) -> JudgeResult:
                asked.append(run)
                return super().judge(run)

        judge = CountingJudge()
        learner = Learner(mem, ScriptedModel([]), judge=judge)

        def keep() -> Any:
            if how == "judge_run":
                return learner.judge_run(run)
            return CaseBook(mem).record(run, JudgeResult(Verdict.VERIFIED, "ok"), judge=judge.name)

        if "NUL" in case and mem.backend.keeps_nul:
            assert keep().verdict == Verdict.VERIFIED
            return
        with pytest.raises(InvalidInputError) as refused:
            keep()
        assert refused.value.message.startswith(f"run.{argument}"), refused.value.message
        assert mem.session.scalars(select(JudgeVerdict)).all() == []
        assert asked == []  # checked before the judge (a model: tokens spent) is asked
    with units(write=False) as mem:  # the unit committed: the host's note kept
        assert [n.content for n in mem.notes.list()] == ["the host's own note"]


@pytest.mark.parametrize("case", sorted(_BAD_RUNS))
def test_a_runs_verdict_is_looked_up_checking_only_what_the_look_up_reads(
    units: UnitFactory, case: str
) -> None:
    # CaseBook.verdict_of checked the whole run as record() keeps it: a run it answered (one
    # whose result is no text, whose params are no JSON) was refused. It reads the trace's
    # first call's id only, and refuses only a trace it cannot read that from.
    run, _argument = _BAD_RUNS[case]
    with units(write=False) as mem:
        book = CaseBook(mem)
        if case in ("call id past 64 bits", "a step no tool call"):
            with pytest.raises(InvalidInputError, match=r"^run\.trace"):
                book.verdict_of(run)
        else:
            assert book.verdict_of(run) is None


def test_a_judge_result_a_host_made_is_checked_before_it_is_kept(units: UnitFactory) -> None:
    # CaseBook.record took a JudgeResult as it was: a verdict given as text failed with an
    # AttributeError ('str' object has no attribute 'value'), untyped.
    with units() as mem:
        book = CaseBook(mem)
        for result in (
            JudgeResult("verified", "ok"),  # type: ignore[arg-type]
            JudgeResult(Verdict.VERIFIED, None),  # type: ignore[arg-type]
        ):
            with pytest.raises(InvalidInputError, match=r"^result"):
                book.record(Run("goal", (_CALL,), "done"), result, judge="j")
        assert mem.session.scalars(select(JudgeVerdict)).all() == []


def test_an_observation_window_reaching_past_the_last_time_observes_as_any(
    units: UnitFactory, clock: FakeClock
) -> None:
    # CaseBook.observe(window) read each run's actions until ``retrieval + max_duration``,
    # which overflowed past year 9999 for a window it accepted: an untyped OverflowError.
    two_runs(units, clock)
    judge = RuleJudge()
    with units() as mem:
        learner = Learner(mem, ScriptedModel([]), judge=judge)
        for run in runs_of(learner.window(session_id="s1")):
            learner.judge_run(run)
    clock.advance(hours=1)
    with units() as mem:
        mem.reflector.run()
        assert CaseBook(mem).observe(AttributionWindow(max_duration=timedelta.max)) == 2
        observed = mem.session.scalars(
            select(JudgeVerdict.observed_outcome).order_by(JudgeVerdict.id)
        ).all()
    assert observed == ["success", "failure"]


def test_a_request_with_no_text_is_no_run_to_judge_and_stops_no_batch(
    units: UnitFactory, clock: FakeClock
) -> None:
    # A user turn of blank text (the timeline refuses one; another program's row) with tool
    # calls after it made a run without a goal, which CaseBook.record refused: every judged
    # batch holding it failed (invalid_input), retried without end. Such a turn requests
    # nothing to judge: its calls make no run.
    two_runs(units, clock)
    with units() as mem:
        mem.session.execute(
            update(RawMessage)
            .where(RawMessage.content == "Export the invoices table as CSV")
            .values(content="  \n ")
        )
    clock.advance(minutes=10)
    worker = Consolidator(
        units,
        ScriptedModel.by_task({"extract": "[]", "reflect": "[]"}),
        clock=clock,
        judge=RuleJudge(),
        config=LearningConfig(summary_min_messages=10_000),
        schedule=ConsolidatorConfig(backlog=True, min_messages=1),
    )
    report = worker.run_once()
    assert report.status == ConsolidationStatus.CONSOLIDATED, report.error
    assert [v.goal for v in report.verdicts] == ["Now scrape the competitor prices"]
