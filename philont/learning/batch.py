"""One pass of the loop over a window, in three steps so no transaction stays open while a model
thinks: :func:`gather` reads what the prompts need, :func:`think` calls the model (and the judge)
with no database at hand, :func:`apply` writes everything in one unit of work.

Order of :func:`apply`: extraction (facts, notes), reflection (skills, then attribution of
skill outcomes), summaries, then the judge's verdicts and, in verify-then-condense mode, the
skills condensed from verified cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from philont.domain.maturity import Grade
from philont.learning.config import LearningConfig
from philont.learning.extract import MemoryWriter, ask_for_memories
from philont.learning.lock import hold_learning_lock
from philont.learning.parse import ExtractionAnswer, SkillAnswer, parse_skills
from philont.learning.prompts import condense_prompt
from philont.learning.skills import SkillWriter, ask_for_skills
from philont.learning.summaries import Summary, ask_for_summaries, long_sessions, write_summaries
from philont.learning.verify import CaseBook, Judge, JudgeResult, ask_judge, ask_to_condense
from philont.learning.window import Run, Window, runs_of
from philont.llm.base import ModelClient, ask
from philont.schemas.learning import (
    CaseRecord,
    ExtractionReport,
    SkillReflectionReport,
    SummaryReport,
    Verdict,
    VerdictRecord,
)

if TYPE_CHECKING:
    from philont.memory import Memory

__all__ = ["Applied", "Context", "Thought", "apply", "gather", "think"]

CONDENSED_SOURCE = "self:case-"


@dataclass(frozen=True)
class Context:
    """What the prompts need from the database besides the window."""

    summaries: dict[str, str | None] = field(default_factory=dict)
    runs: tuple[Run, ...] = ()
    pending_cases: tuple[CaseRecord, ...] = ()


@dataclass(frozen=True)
class Condensed:
    """A skill the model condensed from a verified run (``run``) or stored case (``case_id``)."""

    answer: SkillAnswer
    tokens_used: int
    run: Run | None = None
    case_id: str | None = None


@dataclass(frozen=True)
class Thought:
    """Everything the model and the judge said about one window."""

    extraction: ExtractionAnswer
    extraction_tokens: int
    skills: SkillAnswer
    skill_tokens: int
    summaries: tuple[Summary, ...] = ()
    judged: tuple[tuple[Run, JudgeResult], ...] = ()
    condensed: tuple[Condensed, ...] = ()

    def unreadable(self) -> list[str]:
        """The answers nothing could be read from (no JSON array), each as "step: why"; a
        cut-off answer whose complete items were read is not one of them."""
        answers: list[tuple[str, ExtractionAnswer | SkillAnswer]] = [
            ("extraction", self.extraction),
            ("reflection", self.skills),
        ]
        answers += [("condensing", c.answer) for c in self.condensed]
        return [f"{step}: {a.problem}" for step, a in answers if a.problem is not None]

    @property
    def tokens_used(self) -> int:
        return (
            self.extraction_tokens
            + self.skill_tokens
            + sum(s.tokens_used for s in self.summaries)
            + sum(r.tokens_used for _, r in self.judged)
            + sum(c.tokens_used for c in self.condensed)
        )


@dataclass(frozen=True)
class Applied:
    extraction: ExtractionReport
    reflection: SkillReflectionReport
    summaries: list[SummaryReport]
    verdicts: list[VerdictRecord]
    condensed: list[SkillReflectionReport]
    credited: int
    observed: int

    @property
    def condensed_report(self) -> SkillReflectionReport | None:
        """Every skill condensed in the pass as one report (a batch report has one slot for
        them; only the first case's writes used to be kept, the others went unreported)."""
        if len(self.condensed) <= 1:
            return self.condensed[0] if self.condensed else None
        problems = [r.problem for r in self.condensed if r.problem]
        return SkillReflectionReport(
            tag="condensed",
            messages=0,
            writes=[w for r in self.condensed for w in r.writes],
            pruned=[name for r in self.condensed for name in r.pruned],
            problem="; ".join(problems) or None,
            tokens_used=sum(r.tokens_used for r in self.condensed),
        )


def gather(mem: Memory, window: Window, config: LearningConfig, judge: Judge | None) -> Context:
    """Read what the prompts need: long sessions with their summaries, the runs not judged
    yet (when there is a judge) and, in verify-then-condense mode, the cases awaiting a skill."""
    runs: tuple[Run, ...] = ()
    book = CaseBook(mem)
    if judge is not None:
        candidates = runs_of(window)
        judged = book.judged_runs([r.trace[0].id for r in candidates])
        runs = tuple(r for r in candidates if r.trace[0].id not in judged)[: config.max_runs_judged]
    pending = tuple(book.pending_cases()) if config.verify_then_condense else ()
    return Context(long_sessions(mem.session, window, config), runs, pending)


def _condense_run(model: ModelClient, run: Run, config: LearningConfig) -> Condensed:
    prompt = condense_prompt(
        run.goal,
        run.trace,
        run.result,
        max_chars=config.max_message_chars,
        total=config.max_prompt_chars,
    )
    completion = ask(model, prompt)
    return Condensed(parse_skills(completion.text), completion.tokens_used, run=run)


def think(
    model: ModelClient,
    window: Window,
    context: Context,
    config: LearningConfig,
    judge: Judge | None = None,
) -> Thought:
    """Every model (and judge) call for one window; no database. Raises
    :class:`~philont.errors.ModelError` when a call fails: the batch is then retried whole."""
    extraction, extraction_tokens = ask_for_memories(model, window, config)
    skills, skill_tokens = ask_for_skills(model, window, config)
    summaries = ask_for_summaries(model, window, context.summaries, config)
    judged = tuple((run, ask_judge(judge, run)) for run in context.runs) if judge else ()
    condensed: list[Condensed] = []
    if config.verify_then_condense:
        for case in context.pending_cases:
            answer, tokens = ask_to_condense(
                model, case, max_chars=config.max_message_chars, total=config.max_prompt_chars
            )
            condensed.append(Condensed(answer, tokens, case_id=case.id))
        for run, result in judged:
            if result.verdict == Verdict.VERIFIED:
                condensed.append(_condense_run(model, run, config))
    return Thought(
        extraction,
        extraction_tokens,
        skills,
        skill_tokens,
        tuple(summaries),
        judged,
        tuple(condensed),
    )


def apply(
    mem: Memory,
    window: Window,
    thought: Thought,
    config: LearningConfig,
    *,
    judge_name: str = "judge",
) -> Applied:
    """Write what :func:`think` produced, in the unit of work ``mem`` (flushes, never commits).

    The agent's other learners wait meanwhile (:mod:`philont.learning.lock`): each check of
    what is stored (a note, a fact, a skill, a verdict, a condensed case) sees what they wrote,
    so learners racing over the same messages write what one of them would."""
    hold_learning_lock(mem)
    extraction = MemoryWriter(mem, config).write(
        thought.extraction, window, tokens_used=thought.extraction_tokens
    )
    writer = SkillWriter(mem, config)
    reflection = writer.write(
        thought.skills, tag=window.tag, messages=len(window.turns), tokens_used=thought.skill_tokens
    )
    credited = len(mem.reflector.run().credited)
    summaries = write_summaries(mem, list(thought.summaries))
    book = CaseBook(mem)
    verdicts: list[VerdictRecord] = []
    case_of_run: dict[int, str] = {}
    for run, result in thought.judged:
        record = book.record(run, result, judge=judge_name)
        verdicts.append(record)
        if record.case_id is not None:
            case_of_run[id(run)] = record.case_id
    observed = book.observe()
    condensed = []
    for item in thought.condensed:
        case_id = item.case_id or (case_of_run.get(id(item.run)) if item.run else None)
        if case_id is None or book.is_condensed(case_id):  # another learner condensed it
            continue
        report = writer.write(
            item.answer,
            tag=f"case:{case_id}",
            messages=0,
            tokens_used=item.tokens_used,
            verified=True,
            source=CONDENSED_SOURCE + case_id,
            grade=Grade.CONFIRMED,
        )
        linked = next(
            (w for w in report.writes if w.action in ("created", "updated", "merged", "unchanged")),
            None,
        )
        note = linked.detail if linked else "; ".join(w.detail for w in report.writes) or "nothing"
        book.mark_condensed(case_id, linked.target if linked else None, note)
        condensed.append(report)
    return Applied(extraction, reflection, summaries, verdicts, condensed, credited, observed)
