"""Read models of the self-learning loop: what reflection, extraction, summaries, the judge and
the consolidator did, and why."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Any

from pydantic import Field

from philont.domain.kinds import SkillKind
from philont.schemas.base import ReadModel


class SkillWrite(ReadModel):
    """What happened to one proposed skill.

    ``action`` is ``created``, ``updated``, ``merged`` (into ``target``), ``unchanged``,
    ``refused`` (a rule kept it out; ``reason`` is a stable code, ``detail`` the sentence) or
    ``rejected`` (the answer item was malformed).
    """

    proposed: str | None
    action: str
    target: str | None = None
    kind: SkillKind | None = None
    reason: str | None = None
    detail: str = ""
    similarity: float | None = None


class SkillReflectionReport(ReadModel):
    """One reflection over a session or a time range (``tag``)."""

    tag: str
    messages: int
    writes: list[SkillWrite] = Field(default_factory=list)
    pruned: list[str] = Field(default_factory=list)
    problem: str | None = None
    tokens_used: int = 0

    def names(self, action: str) -> list[str]:
        """The skills with this outcome (``created``, ``merged``...): targets, else proposals."""
        return [w.target or w.proposed or "" for w in self.writes if w.action == action]

    @property
    def created(self) -> int:
        return sum(1 for w in self.writes if w.action == "created")

    @property
    def updated(self) -> int:
        return sum(1 for w in self.writes if w.action in ("updated", "merged"))

    @property
    def refused(self) -> int:
        return sum(1 for w in self.writes if w.action in ("refused", "rejected"))


class MemoryWrite(ReadModel):
    """One proposed ``store_fact`` / ``store_note`` and what came of it (``stored``,
    ``unchanged``, ``forgotten`` — the same was forgotten and not said again since, ``id`` the
    forgotten row — or ``rejected`` with the tools' own error code and message)."""

    index: int
    action: str
    outcome: str
    id: str | None = None
    namespace: str | None = None
    key: str | None = None
    code: str | None = None
    detail: str = ""


class ExtractionReport(ReadModel):
    tag: str
    messages: int
    writes: list[MemoryWrite] = Field(default_factory=list)
    problem: str | None = None
    tokens_used: int = 0

    @property
    def facts(self) -> int:
        return sum(1 for w in self.writes if w.action == "store_fact" and w.outcome == "stored")

    @property
    def notes(self) -> int:
        return sum(1 for w in self.writes if w.action == "store_note" and w.outcome == "stored")

    @property
    def rejected(self) -> int:
        """Items of the answer refused (unreadable, or refused by the tool's own checks)."""
        return sum(1 for w in self.writes if w.outcome == "rejected")


class SummaryReport(ReadModel):
    session_id: str
    note_id: str | None
    written: bool
    detail: str = ""
    tokens_used: int = 0


class Verdict(enum.StrEnum):
    VERIFIED = "verified"
    FAILED = "failed"
    UNSURE = "unsure"


class VerdictRecord(ReadModel):
    """One judged run: the verdict, the case it became (verified runs only), the skill it used."""

    id: int
    verdict: Verdict
    reason: str | None
    goal: str
    case_id: str | None
    skill_name: str | None
    retrieval_action_id: int | None
    judged_at: datetime
    observed_outcome: str | None
    tokens_used: int = 0


class CaseRecord(ReadModel):
    id: str
    goal: str
    trace: Any
    result: str
    session_id: str | None
    skill_id: str | None
    created_at: datetime
    condensed_at: datetime | None
    condense_note: str | None


class JudgeAgreement(ReadModel):
    """How often the judge's verdicts matched the outcomes attribution later observed."""

    skill: str | None
    verdicts: int
    observed: int
    agreed: int

    @property
    def rate(self) -> float | None:
        return self.agreed / self.observed if self.observed else None


class ConsolidationStatus(enum.StrEnum):
    CONSOLIDATED = "consolidated"
    ANCHORED = "anchored"
    """First run without backlog: the cursor was set to the newest message, nothing processed."""
    NOTHING_NEW = "nothing_new"
    NOT_IDLE = "not_idle"
    TOO_FEW = "too_few_messages"
    CLAIMED_ELSEWHERE = "claimed_elsewhere"
    BACKING_OFF = "backing_off"
    FAILED = "failed"
    LOST_CLAIM = "lost_claim"
    """The lease ran out and another process took the batch; our work was discarded."""


class ConsolidationReport(ReadModel):
    status: ConsolidationStatus
    batch_id: int | None = None
    after_ts: int | None = None
    until_ts: int | None = None
    late: bool = False
    """A batch of late messages and tool calls (stamped at or before the cursor, which stays)."""
    messages: int = 0
    """The batch's messages: as claimed; once consolidated, those learned from (its window's,
    late ones that joined it included)."""
    tool_calls: int = 0
    """Once consolidated, the tool calls of its window (late ones that joined it included);
    else 0."""
    tool_calls_left_out: int = 0
    """Of ``tool_calls``, the older ones not read: no prompt of the batch would show them
    (the extraction and reflection prompts show the newest 200; with a judge, the newest
    ``max_window_messages`` are read for the runs' traces)."""
    attempts: int = 0
    """The batch's tries (this one included), whatever became of them."""
    unreadable_answers: int = 0
    """The batch's tries whose model answer could not be read (at most ``answer_attempts``;
    the last of them, kept with what could be read, included)."""
    outages: int = 0
    """The batch's tries that failed otherwise: the model unreachable, erring, timing out or
    answering nothing, or storage trouble. Retried without limit; they never spend the
    unreadable answers' budget."""
    retry_at: datetime | None = None
    error: str | None = None
    extraction: ExtractionReport | None = None
    reflection: SkillReflectionReport | None = None
    summaries: list[SummaryReport] = Field(default_factory=list)
    verdicts: list[VerdictRecord] = Field(default_factory=list)
    condensed: SkillReflectionReport | None = None
    credited: int = 0
    """Skill uses credited or blamed (their attribution window closed): by a consolidated
    batch; by the attribution a tick runs at its end when it wrote no batch (its last report,
    whatever its status: a conversation's last use has no batch after it)."""
    observed: int = 0
    """Judge verdicts given their observed outcome (once attribution decided their run's skill
    use), likewise."""
    tokens_used: int = 0
