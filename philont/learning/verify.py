"""Verify-then-condense: a pluggable judge gives a verdict on a run; verified runs become cases;
skills are condensed from cases and link to them; every verdict is kept next to the outcome
attribution later observes for the skill the run used, so the judge's agreement rate is known.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from sqlalchemy import Select, select

from philont.db.models import Action, JudgeVerdict, LearningCase, RawMessage, Skill
from philont.db.stored_values import record, report, rows_read
from philont.db.types import dumps_compact, kinds_of
from philont.domain.attribution import ActionEvent, AttributionWindow, UserTurn, attribute
from philont.domain.kinds import Role
from philont.domain.timepolicy import clamp
from philont.errors import InvalidInputError, ModelError
from philont.finds import finds
from philont.learning.lock import hold_learning_lock
from philont.learning.parse import SkillAnswer, first_object, parse_skills, storable
from philont.learning.prompts import condense_prompt, judge_prompt
from philont.learning.window import Run, ToolCall
from philont.llm.base import ModelClient, ask, call_foreign, checked_tokens
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.inputs import MAX_SETTING
from philont.schemas.learning import CaseRecord, JudgeAgreement, Verdict, VerdictRecord
from philont.schemas.stored import Int64
from philont.services.base import Service

if TYPE_CHECKING:
    from philont.memory import Memory

__all__ = ["CaseBook", "Judge", "JudgeResult", "ModelJudge", "ask_judge", "ask_to_condense"]

log = get_logger(__name__)

DEFAULT_WINDOW = AttributionWindow()
_AGREES = {(Verdict.VERIFIED.value, "success"), (Verdict.FAILED.value, "failure")}


@dataclass(frozen=True)
class JudgeResult:
    verdict: Verdict
    reason: str = ""
    tokens_used: int = 0


@runtime_checkable
class Judge(Protocol):
    """Gives a verdict on a run: did the agent achieve the goal? A test suite, a checker of the
    host's own, or a model (:class:`ModelJudge`). ``name`` is recorded with each verdict."""

    name: str

    def judge(self, run: Run) -> JudgeResult: ...


class ModelJudge:
    """A judge that asks a model, reading its answer defensively: no verdict found is
    ``unsure``, never an exception (model failures still raise ``ModelError``)."""

    def __init__(
        self,
        model: ModelClient,
        *,
        name: str = "model",
        max_chars: int = 2_000,
        max_prompt_chars: int = 120_000,
    ):
        # refused by name now: taken as given, each failed every batch's judging as a model
        # error (None as the model, "5" as a size), asked again without end
        if not isinstance(model, ModelClient):
            raise InvalidInputError.of(
                "model",
                f"must be a model client (complete(prompt) -> Completion), got {model!r:.80}",
            )
        if not isinstance(name, str) or not name.strip() or storable(name) != name:
            raise InvalidInputError.of("name", f"must be non-blank storable text, got {name!r:.80}")
        for argument, value in (("max_chars", max_chars), ("max_prompt_chars", max_prompt_chars)):
            if (
                isinstance(value, bool)
                or not isinstance(value, int)
                or not 1 <= value <= MAX_SETTING
            ):
                raise InvalidInputError.of(
                    argument, f"must be a whole number from 1 to {MAX_SETTING:,}, got {value!r:.80}"
                )
        self.model = model
        self.name = name
        self.max_chars = max_chars
        self.max_prompt_chars = max_prompt_chars

    def judge(self, run: Run) -> JudgeResult:
        prompt = judge_prompt(run, max_chars=self.max_chars, total=self.max_prompt_chars)
        completion = ask(self.model, prompt)
        found = first_object(completion.text, _has_verdict)
        if found is None:
            return JudgeResult(
                Verdict.UNSURE, "no verdict in the judge's answer", completion.tokens_used
            )
        reason = found.get("reason")
        text = reason[:1_000] if isinstance(reason, str) else ""
        return JudgeResult(Verdict(found["verdict"]), text, completion.tokens_used)


_VERDICTS = frozenset(v.value for v in Verdict)


def _has_verdict(obj: dict[str, Any]) -> bool:
    """Whether an object of the judge's answer gives a verdict. Its value may be any JSON: a
    list or an object (unhashable) was a TypeError that failed the batch as a model error,
    asked again and again without end."""
    verdict = obj.get("verdict")
    return isinstance(verdict, str) and verdict in _VERDICTS


def ask_judge(judge: Judge, run: Run) -> JudgeResult:
    """``judge.judge(run)`` as the loop asks every judge: a :class:`JudgeResult` with a
    :class:`Verdict`, a text reason and a token count of at least 0, or a
    :class:`~philont.errors.ModelError` (a judge's own exception is translated)."""
    who = f"the judge {type(judge).__name__}"
    result: object = call_foreign(who, lambda: judge.judge(run))
    if not isinstance(result, JudgeResult):
        raise ModelError(f"{who} returned {type(result).__name__}, not a JudgeResult", client=who)
    try:
        verdict = Verdict(result.verdict)
    except ValueError as exc:
        raise ModelError(f"{who} gave the verdict {result.verdict!r}", client=who) from exc
    if not isinstance(result.reason, str):
        raise ModelError(f"{who} gave a reason that is not text: {result.reason!r}", client=who)
    return JudgeResult(verdict, result.reason, checked_tokens(result.tokens_used, who=who))


def _trace_json(trace: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    return [
        {
            "tool": c.tool_name,
            "params": c.params,
            "result": c.result,
            "success": c.success,
            "action_id": c.id,
        }
        for c in trace
    ]


def _action_id(value: object) -> int:
    """A stored step's ``action_id``: 0 when it is no whole number (a trace another program or a
    hand wrote; ``int()`` of it failed every batch while the case waited, without end)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _trace_calls(case: CaseRecord) -> list[ToolCall]:
    """A stored trace back as tool calls (what the condense prompt shows)."""
    steps = case.trace if isinstance(case.trace, list) else []
    return [
        ToolCall(
            _action_id(step.get("action_id")),
            case.session_id or "",
            str(step.get("tool", "?")),
            step.get("params"),
            str(step.get("result") or ""),
            bool(step.get("success")),
            case.created_at,
        )
        for step in steps
        if isinstance(step, dict)
    ]


def ask_to_condense(
    model: ModelClient, case: CaseRecord, *, max_chars: int, total: int
) -> tuple[SkillAnswer, int]:
    """The model's condensed skill for one verified case, and the tokens spent (the prompt
    is at most ``total`` characters)."""
    prompt = condense_prompt(
        case.goal, _trace_calls(case), case.result, max_chars=max_chars, total=total
    )
    completion = ask(model, prompt)
    return parse_skills(completion.text), completion.tokens_used


def _kept_run(mem: Memory, run: Run) -> list[dict[str, Any]]:
    """The trace :meth:`CaseBook.record` stores of ``run`` (a host may have built it), every
    part checked first: an :class:`InvalidInputError` naming it, before anything is read or
    written. Taken as they were, an id past 64 bits or params that are no JSON escaped
    untyped (``OverflowError``, a ``StatementError``), a result that is no text too
    (``AttributeError``), and on PostgreSQL a NUL failed the flush, ending the host's unit of
    work (its own writes lost), where SQLite kept it."""
    if not isinstance(run.goal, str) or not run.goal.strip():
        raise InvalidInputError.of("run", "needs a non-blank goal")
    if not isinstance(run.result, str):
        raise InvalidInputError.of("run.result", f"must be text, got {type(run.result).__name__}")
    for name in ("session_id", "skill_name"):  # as stored: a run the loop made is never refused
        value = getattr(run, name)
        if value is not None and (not isinstance(value, str) or inputs.unstorable(value)):
            raise InvalidInputError.of(f"run.{name}", f"must be valid text, got {value!r:.80}")
        if value is not None:
            mem.backend.storable_text(value, f"run.{name}")
    if run.retrieval_action_id is not None:
        inputs.check(Int64, run.retrieval_action_id, "run.retrieval_action_id")
    calls = _calls(run)
    for call in calls:
        inputs.check(Int64, call.id, _CALL_ID)
    trace = _trace_json(tuple(calls))
    dumps_compact(trace, "run.trace")
    return trace


_CALL_ID = "run.trace: a ToolCall's id"


def _calls(run: Run) -> Sequence[ToolCall]:
    calls = run.trace if isinstance(run.trace, tuple | list) else None
    if calls is None or not all(isinstance(call, ToolCall) for call in calls):
        raise InvalidInputError.of("run.trace", "must be a sequence of ToolCall")
    return calls


def _case_record(row: LearningCase) -> CaseRecord:
    return record(CaseRecord.model_validate, row)


def _stored_verdict(row: JudgeVerdict) -> Verdict:
    """A stored verdict; one this release does not know (another program's) reads as
    ``unsure``, which neither credits nor blames anything."""
    try:
        return Verdict(row.verdict)
    except ValueError:
        report("philont_judge_verdicts", "verdict", row.id, row.verdict, Verdict.UNSURE)
        return Verdict.UNSURE


def _verdict_record(row: JudgeVerdict, tokens: int = 0) -> VerdictRecord:
    return record(lambda r: _verdict(r, tokens), row)


def _verdict(row: JudgeVerdict, tokens: int) -> VerdictRecord:
    return VerdictRecord(
        id=row.id,
        verdict=_stored_verdict(row),
        reason=row.reason,
        goal=row.goal,
        case_id=row.case_id,
        skill_name=row.skill_name,
        retrieval_action_id=row.retrieval_action_id,
        judged_at=row.judged_at,
        observed_outcome=row.observed_outcome,
        tokens_used=tokens,
    )


def _observable(stmt: Select[Any]) -> Select[Any]:
    """``stmt`` over the verdicts awaiting their observed outcome whose retrieval attribution
    has decided (its ``use_skill`` row carries ``linked_skill``)."""
    return stmt.join(Action, Action.id == JudgeVerdict.retrieval_action_id).where(
        JudgeVerdict.observed_outcome.is_(None), Action.linked_skill.is_not(None)
    )


class CaseBook(Service):
    """Cases and verdicts in one unit of work (flushes, never commits)."""

    def verdict_of(self, run: Run) -> VerdictRecord | None:
        """The verdict a run (known by its first tool call) already has, if any. Only what
        this reads of the run is checked: its trace, and its first call's id."""
        calls = _calls(run)
        return self._verdict_of(inputs.check(Int64, calls[0].id, _CALL_ID) if calls else None)

    def _verdict_of(self, first_action_id: int | None) -> VerdictRecord | None:
        if first_action_id is None:
            return None
        row = self.mem.session.scalars(
            select(JudgeVerdict)
            .where(JudgeVerdict.first_action_id == first_action_id)
            .order_by(JudgeVerdict.id)
            .limit(1)
        ).first()
        return None if row is None else _verdict_record(row)

    def record(self, run: Run, result: JudgeResult, *, judge: str) -> VerdictRecord:
        """Keep a verdict; a verified run also becomes a case. A run is judged once: a run
        that has a verdict keeps it (returned; no second verdict or case is written)."""
        return self._record(run, _kept_run(self.mem, run), result, judge)

    def _judged(self, run: Run, judge: Judge) -> VerdictRecord:
        """``judge``'s verdict on ``run``, kept (:meth:`record`); the run is checked before the
        judge is asked, and one that has a verdict gets it back without asking."""
        trace = _kept_run(self.mem, run)
        existing = self._verdict_of(run.trace[0].id if run.trace else None)
        if existing is not None:
            return existing
        return self._record(run, trace, ask_judge(judge, run), judge.name)

    def _record(
        self, run: Run, trace: list[dict[str, Any]], result: JudgeResult, judge: str
    ) -> VerdictRecord:
        if not isinstance(result, JudgeResult) or not isinstance(result.verdict, Verdict):
            raise InvalidInputError.of("result", "must be a JudgeResult with a Verdict")
        if not isinstance(result.reason, str):
            raise InvalidInputError.of(
                "result.reason", f"must be text, got {type(result.reason).__name__}"
            )
        hold_learning_lock(self.mem)
        existing = self._verdict_of(run.trace[0].id if run.trace else None)
        if existing is not None:
            return existing
        now = self.mem.clock()
        case_id = None
        if result.verdict == Verdict.VERIFIED:
            case_id = str(uuid.uuid4())
            self.mem.session.add(
                LearningCase(
                    id=case_id,
                    goal=storable(run.goal),
                    trace=trace,
                    result=storable(run.result),
                    session_id=run.session_id,
                    judge=judge,
                    reason=storable(result.reason) or None,
                    created_at=now,
                )
            )
            self.mem.session.flush()  # the case first: the verdict refers to it
        row = JudgeVerdict(
            case_id=case_id,
            session_id=run.session_id,
            goal=storable(run.goal),
            verdict=result.verdict.value,
            reason=storable(result.reason) or None,
            judge=judge,
            skill_name=run.skill_name,
            retrieval_action_id=run.retrieval_action_id,
            first_action_id=run.trace[0].id if run.trace else None,
            judged_at=now,
        )
        self.mem.session.add(row)
        self.mem.session.flush()
        log.info(
            "learning.judged", verdict=result.verdict.value, case_id=case_id, skill=run.skill_name
        )
        return _verdict_record(row, result.tokens_used)

    def judged_runs(self, first_action_ids: list[int]) -> set[int]:
        """Which runs (by their first tool call) already have a verdict: each is judged once."""
        if not first_action_ids:
            return set()
        rows = self.mem.session.scalars(
            select(JudgeVerdict.first_action_id).where(
                JudgeVerdict.first_action_id.in_(first_action_ids)
            )
        )
        return {r for r in rows if r is not None}

    def pending_cases(self, limit: int = 20) -> list[CaseRecord]:
        """Verified cases no skill was condensed from yet, oldest first."""
        rows = self.mem.session.scalars(
            select(LearningCase)
            .where(LearningCase.condensed_at.is_(None))
            .order_by(LearningCase.created_at, LearningCase.id)
            .limit(limit)
        )
        return [_case_record(r) for r in rows]

    @finds("case_id")
    def is_condensed(self, case_id: str) -> bool:
        """Whether a skill was condensed from the case already (as stored now: another
        learner may have condensed it since this one read it as pending)."""
        stmt = select(LearningCase.condensed_at).where(LearningCase.id == case_id)
        return self.mem.session.scalar(stmt) is not None

    def mark_condensed(self, case_id: str, skill_name: str | None, note: str) -> None:
        hold_learning_lock(self.mem)
        row = self.mem.session.get(LearningCase, case_id)
        if row is None:
            return
        skill_id = None
        if skill_name is not None:
            skill_id = self.mem.session.scalar(select(Skill.id).where(Skill.name == skill_name))
        row.skill_id = skill_id
        row.condensed_at = self.mem.clock()
        row.condense_note = note[:1_000]
        self.mem.session.flush()

    @finds("skill_name")
    def cases_of(self, skill_name: str) -> list[CaseRecord]:
        """The verified cases a skill was condensed from."""
        rows = self.mem.session.scalars(
            select(LearningCase)
            .join(Skill, Skill.id == LearningCase.skill_id)
            .where(Skill.name == skill_name)
            .order_by(LearningCase.created_at, LearningCase.id)
        )
        return [_case_record(r) for r in rows]

    # --- agreement with attribution ---------------------------------------------------------

    def observe(self, window: AttributionWindow = DEFAULT_WINDOW) -> int:
        """Fill in the observed outcome of every verdict whose retrieval attribution has since
        decided (its ``use_skill`` row carries ``linked_skill``), by the same rules the
        reflector applied. Returns how many verdicts got an outcome."""
        pending = self.mem.session.scalars(_observable(select(JudgeVerdict))).all()
        for verdict in pending:
            verdict.observed_outcome = self._outcome_of(verdict.retrieval_action_id or 0, window)
            verdict.observed_at = self.mem.clock()
        self.mem.session.flush()
        return len(pending)

    def observable(self) -> bool:
        """Whether :meth:`observe` would fill in an outcome now (it only reads: one query)."""
        found = self.mem.session.scalar(_observable(select(JudgeVerdict.id)).limit(1))
        return found is not None

    def _outcome_of(self, retrieval_id: int, window: AttributionWindow) -> str:
        retrieval = self.mem.session.get(Action, retrieval_id)
        assert retrieval is not None  # joined above
        end = clamp(retrieval.timestamp, window.max_duration)  # past year 9999: its end
        actions = self.mem.session.scalars(
            select(Action).where(
                Action.session_id == retrieval.session_id,
                Action.timestamp >= retrieval.timestamp,
                Action.timestamp <= end,
            )
        )
        turns = self.mem.session.scalars(
            select(RawMessage.timestamp).where(
                RawMessage.session_id == retrieval.session_id,
                RawMessage.role == Role.USER,
                RawMessage.timestamp >= retrieval.timestamp,
                RawMessage.timestamp <= end,
            )
        )
        events = [
            ActionEvent(
                a.id,
                a.session_id,
                a.tool_name,
                a.success,
                a.timestamp,
                a.params if isinstance(a.params, dict) else None,
            )
            for a in actions
        ]
        user_turns = [UserTurn(retrieval.session_id, ts) for ts in turns]
        for credit in attribute(events, user_turns, window):
            if credit.retrieval_action_id == retrieval_id:
                return credit.outcome.value if credit.outcome is not None else "none"
        return "none"

    def agreement(self) -> list[JudgeAgreement]:
        """Per skill (then all together, ``skill=None``): verdicts, verdicts with an observed
        success or failure, and how many of those the judge got right (verified ↔ success,
        failed ↔ failure; ``unsure`` never agrees)."""
        rows = self.mem.session.execute(
            select(JudgeVerdict.skill_name, JudgeVerdict.verdict, JudgeVerdict.observed_outcome)
        ).all()
        return rows_read(_agreement, list(rows), kinds_of(JudgeVerdict), raw=False)

    def verdicts(self, limit: int = 100) -> list[VerdictRecord]:
        rows = self.mem.session.scalars(
            select(JudgeVerdict)
            .order_by(JudgeVerdict.judged_at.desc(), JudgeVerdict.id.desc())
            .limit(limit)
        )
        return [_verdict_record(r) for r in rows]


def _agreement(rows: list[Any]) -> list[JudgeAgreement]:
    tallies: dict[str | None, list[int]] = defaultdict(lambda: [0, 0, 0])
    for row in rows:
        skill = row.skill_name
        for key in {skill, None} if skill is not None else {None}:
            tally = tallies[key]
            tally[0] += 1
            if row.observed_outcome in ("success", "failure"):
                tally[1] += 1
                tally[2] += (row.verdict, row.observed_outcome) in _AGREES
    ordered = [*sorted(k for k in tallies if k is not None), None]
    return [
        JudgeAgreement(
            skill=k, verdicts=tallies[k][0], observed=tallies[k][1], agreed=tallies[k][2]
        )
        for k in ordered
        if k in tallies
    ]
