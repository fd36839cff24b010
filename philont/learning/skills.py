"""Reflection that writes skills: ask the model for skills, then create, update, merge or refuse
each proposal by the rules of :mod:`philont.domain.skill_rules`, and keep drafts under the cap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import select

from philont.db.models import Skill, SkillRecipe
from philont.db.models.recipes import NO_RECIPE_REVISION
from philont.db.retry import database_error_of
from philont.domain.kinds import SkillKind
from philont.domain.maturity import Grade
from philont.domain.skill_rules import (
    SELF_SOURCE_PREFIX,
    DraftSkill,
    KnownSkill,
    SkillContent,
    WriteAction,
    WriteDecision,
    decide_write,
    drafts_to_prune,
)
from philont.errors import PhilontError
from philont.learning.config import LearningConfig
from philont.learning.lock import hold_learning_lock
from philont.learning.parse import SkillAnswer, SkillProposal, parse_skills, problem_of
from philont.learning.prompts import reflect_prompt
from philont.learning.window import Window
from philont.llm.base import ModelClient, ask
from philont.log import get_logger
from philont.schemas.learning import SkillReflectionReport, SkillWrite
from philont.services.base import Service
from philont.services.skill_base import row_score

if TYPE_CHECKING:
    from philont.memory import Memory

__all__ = ["UNVERIFIED", "SkillWriter", "ask_for_skills"]

log = get_logger(__name__)

UNVERIFIED = "needs_verified_case"
"""Refusal code of a positive proposal from conversation in verify-then-condense mode."""


def ask_for_skills(
    model: ModelClient, window: Window, config: LearningConfig
) -> tuple[SkillAnswer, int]:
    """The model's skill proposals for a window and the tokens spent; no call (and nothing
    proposed) when the window has no dialogue. Raises :class:`~philont.errors.ModelError`."""
    if not window.dialogue:
        return SkillAnswer(), 0
    prompt = reflect_prompt(
        window, max_chars=config.max_message_chars, total=config.max_prompt_chars
    )
    completion = ask(model, prompt)
    return parse_skills(completion.text), completion.tokens_used


def _content(skill: Skill) -> SkillContent:
    keywords = skill.trigger_keywords if isinstance(skill.trigger_keywords, list) else []
    return SkillContent(
        skill.description,
        tuple(k for k in keywords if isinstance(k, str)),
        skill.action_template,
        skill.when_to_use or None,
    )


class SkillWriter(Service):
    """Writes skill proposals into one unit of work (flushes, never commits)."""

    def __init__(self, mem: Memory, config: LearningConfig) -> None:
        super().__init__(mem)
        self.config = config

    def _known(self) -> dict[str, KnownSkill]:
        rows = self.mem.session.execute(
            select(Skill, SkillRecipe.revision)
            .outerjoin(SkillRecipe, SkillRecipe.skill_id == Skill.id)
            .order_by(Skill.created_at, Skill.id)
            .execution_options(populate_existing=True)
        )
        return {
            skill.name: KnownSkill(
                skill.name,
                skill.kind,
                skill.maturity,
                skill.source,
                revision is not None and revision > NO_RECIPE_REVISION,
                _content(skill),
                skill.created_at,
            )
            for skill, revision in rows
        }

    def write(
        self,
        answer: SkillAnswer,
        *,
        tag: str,
        messages: int,
        tokens_used: int = 0,
        verified: bool = False,
        source: str | None = None,
        grade: Grade = Grade.DRAFT,
    ) -> SkillReflectionReport:
        """Apply every proposal of ``answer`` (each in its own savepoint: a proposal is written
        whole or not at all), then prune drafts to the cap. ``verified`` marks proposals
        condensed from judge-verified cases; new skills get ``source`` (default
        ``self:reflect-<tag>``) and ``grade``."""
        hold_learning_lock(self.mem)
        writes = [
            SkillWrite(proposed=r.name, action="rejected", reason="malformed", detail=r.reason)
            for r in answer.rejected
        ]
        known = self._known()
        for proposal in answer.proposals:
            write = self._one(
                proposal,
                known,
                verified=verified,
                source=source or f"{SELF_SOURCE_PREFIX}reflect-{tag}",
                grade=grade,
            )
            writes.append(write)
            if write.action in ("created", "updated", "merged"):
                known = self._known()
        pruned = self.prune() if answer.proposals else []
        report = SkillReflectionReport(
            tag=tag,
            messages=messages,
            writes=writes,
            pruned=pruned,
            problem=problem_of(answer),
            tokens_used=tokens_used,
        )
        log.info(
            "learning.skills_written",
            tag=tag,
            created=report.created,
            updated=report.updated,
            refused=report.refused,
            pruned=len(pruned),
        )
        return report

    def _one(
        self,
        proposal: SkillProposal,
        known: dict[str, KnownSkill],
        *,
        verified: bool,
        source: str,
        grade: Grade,
    ) -> SkillWrite:
        base: dict[str, Any] = {"proposed": proposal.name, "kind": proposal.kind}
        if (
            self.config.verify_then_condense
            and not verified
            and proposal.kind == SkillKind.POSITIVE
        ):
            return SkillWrite(
                **base,
                action="refused",
                reason=UNVERIFIED,
                detail="verify-then-condense: positive skills come from verified cases only",
            )
        decision = decide_write(
            proposal.name,
            proposal.kind,
            proposal.content,
            same_name=known.get(proposal.name),
            others=list(known.values()),
            threshold=self.config.duplicate_threshold,
        )
        try:
            with self.mem.session.begin_nested():
                self._execute(proposal, decision, source=source, grade=grade)
        except PhilontError as exc:  # a service refused it: nothing of it was kept
            if database_error_of(exc) is not None:
                raise  # the database failed, not the item: the unit of work runs again or fails
            return SkillWrite(
                **base,
                action="refused",
                target=decision.target,
                reason=exc.code,
                detail=exc.message,
            )
        return SkillWrite(
            **base,
            action=decision.action.value,
            target=decision.target,
            reason=decision.refusal.value if decision.refusal else None,
            detail=decision.detail,
            similarity=decision.similarity,
        )

    def _execute(
        self, proposal: SkillProposal, decision: WriteDecision, *, source: str, grade: Grade
    ) -> None:
        content = decision.content
        if content is None:
            return
        if decision.action == WriteAction.CREATE:
            self.mem.skills.create(
                proposal.name,
                content.description,
                list(content.trigger_keywords),
                content.action_template,
                kind=proposal.kind,
                source=source,
                when_to_use=content.when_to_use,
                grade=grade,
            )
        elif decision.action in (WriteAction.UPDATE, WriteAction.MERGE):
            self.mem.skills.update(
                decision.target,
                description=content.description,
                trigger_keywords=list(content.trigger_keywords),
                action_template=content.action_template,
                when_to_use=content.when_to_use,
            )

    def prune(self) -> list[str]:
        """Delete the drafts beyond the cap (:func:`~philont.domain.skill_rules.drafts_to_prune`)
        and return their names."""
        rows = self.mem.session.execute(
            select(Skill, SkillRecipe.revision)
            .outerjoin(SkillRecipe, SkillRecipe.skill_id == Skill.id)
            .where(Skill.maturity == Grade.DRAFT)
        )
        now = self.mem.clock()
        drafts = [
            DraftSkill(
                skill.id,
                skill.name,
                skill.source,
                revision is not None and revision > NO_RECIPE_REVISION,
                row_score(skill, now),
                skill.created_at,
            )
            for skill, revision in rows
        ]
        pruned = [d.name for d in drafts_to_prune(drafts, self.config.max_drafts)]
        for name in pruned:
            self.mem.skills.delete(name)
        if pruned:
            log.info("learning.drafts_pruned", count=len(pruned), cap=self.config.max_drafts)
        return pruned
