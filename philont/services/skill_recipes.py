"""Recipes of skills: steps, verification and tool policy, with revision history and
per-revision outcome counts."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from philont.db.models import Skill, SkillRecipe, SkillRevision
from philont.db.models.recipes import NO_RECIPE_REVISION
from philont.db.queries.skills import SKILL_ROW
from philont.db.retry import is_duplicate
from philont.db.stored_values import INT64_MAX, clean, record, whole
from philont.db.types import bumped
from philont.domain.maturity import (
    string_list,
)
from philont.errors import (
    ConflictError,
    InvalidInputError,
    UnreadableRowError,
)
from philont.finds import PASS_ON, finds
from philont.schemas import inputs
from philont.schemas.skills import (
    RecipeRevisionRecord,
    SkillRecord,
)
from philont.services.skill_base import (
    RecipeNotFoundError,
    SkillBase,
    has_recipe,
    lines_of,
    log,
    no_skill,
    optional_text,
    required_text,
)


class SkillRecipes(SkillBase):
    """The recipe methods of :class:`~philont.services.skills.SkillService`."""

    # --- recipes ---------------------------------------------------------------------------

    def _outcomes_of_current_revision(self, skill: Skill) -> tuple[int, int]:
        """The skill's totals minus what its replaced revisions accumulated."""
        stmt = select(
            func.coalesce(func.sum(SkillRevision.success_count), 0),
            func.coalesce(func.sum(SkillRevision.failure_count), 0),
        ).where(SkillRevision.skill_id == skill.id)
        earlier_successes, earlier_failures = self.session.execute(stmt).one()
        counts = clean(skill, SKILL_ROW, raw=False, fields=("success_count", "failure_count"))
        return (
            max(0, counts.success_count - whole(earlier_successes)),
            max(0, counts.failure_count - whole(earlier_failures)),
        )

    def _charge_replaced_revision(self, skill_id: str, *, success: bool, at: datetime) -> None:
        """An outcome of a run that fetched the skill at ``at``, under a revision replaced
        since, belongs to that revision: its stored count is raised too, so the revision in
        force now (the totals minus the replaced ones) is unchanged."""
        column = SkillRevision.success_count if success else SkillRevision.failure_count
        charged = self.session.execute(
            update(SkillRevision)
            .where(
                SkillRevision.skill_id == skill_id,
                SkillRevision.created_at <= at,
                SkillRevision.replaced_at > at,
            )
            .values({column: bumped(column)})
            .returning(SkillRevision.id)
            .execution_options(synchronize_session=False)
        ).first()
        if charged is None:
            self._charge_before_first_recipe(skill_id, success=success, at=at)

    def _charge_before_first_recipe(self, skill_id: str, *, success: bool, at: datetime) -> None:
        """An outcome of a run that fetched the skill at ``at``, before it had a recipe, when
        no revision 0 keeps the recipe-less skill's counts (``set_recipe`` keeps one only for
        outcomes recorded by then): revision 0 is kept now, holding this outcome, so the
        first recipe is not charged with a run that never read it."""
        skill, recipe = self._fetch(Skill.id == skill_id) or (None, None)
        if skill is None or recipe is None or not has_recipe(recipe):
            return
        oldest = self.session.scalars(
            select(SkillRevision)
            .where(SkillRevision.skill_id == skill_id)
            .order_by(SkillRevision.revision)
            .limit(1)
        ).first()
        if oldest is not None:
            kept = clean(oldest, SKILL_ROW, raw=False, fields=("revision",)).revision
            if kept <= NO_RECIPE_REVISION:
                return  # revision 0 is kept: ``at`` lies outside the skill's life
        first_recipe_at = recipe.updated_at if oldest is None else oldest.created_at
        if not skill.created_at <= at < first_recipe_at:
            return
        self._keep_recipe_less(
            skill,
            replaced_at=first_recipe_at,
            counts=(int(success), int(not success)),
            text=oldest or skill,  # the text of the first recipe, which set_recipe kept
        )

    def _keep_recipe_less(
        self,
        skill: Skill,
        *,
        replaced_at: datetime,
        counts: tuple[int, int] | None = None,
        text: Skill | SkillRevision | None = None,
    ) -> None:
        """Keep revision 0: the skill from its making until its first recipe
        (:meth:`_snapshot`)."""
        self._snapshot(
            skill,
            revision=NO_RECIPE_REVISION,
            steps=[],
            verification=None,
            tool_policy=[],
            created_at=skill.created_at,
            replaced_at=replaced_at,
            counts=counts,
            text=text,
        )

    def _snapshot(
        self,
        skill: Skill,
        *,
        revision: int,
        steps: Any,
        verification: str | None,
        tool_policy: Any,
        created_at: datetime,
        replaced_at: datetime,
        counts: tuple[int, int] | None = None,
        text: Skill | SkillRevision | None = None,
    ) -> None:
        """Keep a replaced revision: its recipe as given, the text of ``text`` (default: the
        skill's now) and ``counts`` (default: the outcomes of the revision in force)."""
        successes, failures = counts or self._outcomes_of_current_revision(skill)
        text = text or skill
        row = SkillRevision(
            skill_id=skill.id,
            revision=revision,
            description=text.description,
            action_template=text.action_template,
            trigger_keywords=text.trigger_keywords,
            steps=steps,
            verification=verification,
            tool_policy=tool_policy,
            success_count=successes,
            failure_count=failures,
            created_at=created_at,
            replaced_at=replaced_at,
        )
        try:
            with self.session.begin_nested():
                self.session.add(row)
        except IntegrityError as exc:
            if not is_duplicate(exc, SkillRevision.__tablename__, "skill_id", "revision"):
                raise  # a host's trigger, a check, ...: typed as such, no concurrent revision
            # a concurrent revise_recipe got there first
            raise ConflictError(
                f"revision {revision} of skill {skill.name!r} was replaced concurrently",
                name=skill.name,
            ) from exc

    @finds(name=inputs.SkillNameLookup, absent=PASS_ON)  # its arguments first: _named
    def set_recipe(
        self,
        name: str,
        *,
        steps: Sequence[str],
        verification: str | None,
        tool_policy: Sequence[str],
    ) -> SkillRecord:
        """Give a skill its first recipe (revision 1).

        ``steps`` and ``tool_policy`` are lists of strings (blank entries dropped);
        ``verification`` says how to check the result. An incomplete recipe is stored, but the
        skill is then not callable until :meth:`revise_recipe` completes it. If outcomes were
        recorded before, the recipe-less skill is kept as revision 0 with those counts, so
        revision 1's counts measure the recipe alone. Raises :class:`ConflictError` when the
        skill already has a recipe.
        """
        steps_ = lines_of(steps, "steps")
        verification_ = optional_text(verification, "verification")
        policy = lines_of(tool_policy, "tool_policy")
        skill, recipe = self._require(name)
        if recipe is not None and has_recipe(recipe):
            raise ConflictError(
                f"skill {name!r} already has a recipe (revision {recipe.revision}); "
                "use revise_recipe",
                name=name,
            )
        now = self.clock()
        counts = clean(skill, SKILL_ROW, raw=False, fields=("success_count", "failure_count"))
        if counts.success_count + counts.failure_count > 0:
            self._keep_recipe_less(skill, replaced_at=now)
        if recipe is None:
            recipe = SkillRecipe(skill_id=skill.id, grade_anchor_at=None)
            self.session.add(recipe)
        recipe.steps = steps_
        recipe.verification = verification_
        recipe.tool_policy = policy
        recipe.revision = 1
        recipe.updated_at = now
        self.session.flush()
        log.info("skill.recipe_set", name=skill.name, revision=1)
        return self._reload(skill.id)

    @finds(name=inputs.SkillNameLookup, absent=PASS_ON)  # its arguments first: _named
    def revise_recipe(
        self,
        name: str,
        *,
        steps: Sequence[str] | None = None,
        verification: str | None = None,
        tool_policy: Sequence[str] | None = None,
        description: str | None = None,
        action_template: str | None = None,
    ) -> SkillRecord:
        """Replace parts of a skill's recipe and text as a new revision, keeping the old one.

        The revision in force (its description, template, keywords, recipe and the outcomes
        recorded while it was current) is copied to the history, then the given fields replace
        the current ones and ``revision`` grows by one. None keeps a field; ``verification=""``
        clears it. Counters and grade are kept. Raises :class:`RecipeNotFoundError` when the
        skill has no recipe and :class:`InvalidInputError` when nothing is given.
        """
        changes: dict[str, Any] = {}
        if steps is not None:
            changes["steps"] = lines_of(steps, "steps")
        if verification is not None:
            changes["verification"] = optional_text(verification, "verification")
        if tool_policy is not None:
            changes["tool_policy"] = lines_of(tool_policy, "tool_policy")
        skill_changes: dict[str, str] = {}
        if description is not None:
            skill_changes["description"] = required_text(description, "description")
        if action_template is not None:
            skill_changes["action_template"] = required_text(action_template, "action_template")
        if not changes and not skill_changes:
            raise InvalidInputError.of_together(
                ("steps", "verification", "tool_policy", "description", "action_template"),
                "revise_recipe needs at least one of them to change",
            )
        skill, recipe = self._require(name)
        if recipe is None or not has_recipe(recipe):
            raise RecipeNotFoundError(skill.name)
        now = self.clock()
        old_revision = clean(recipe, SKILL_ROW, raw=False, fields=("revision",)).revision
        if old_revision >= INT64_MAX:
            raise UnreadableRowError(
                f"philont_skill_recipes.revision of skill {skill.id!r} is {old_revision} and "
                "cannot grow (another program stored it)",
                id=skill.id,
            )
        self._snapshot(
            skill,
            revision=old_revision,
            steps=recipe.steps,
            verification=recipe.verification,
            tool_policy=recipe.tool_policy,
            created_at=recipe.updated_at,
            replaced_at=now,
        )
        for field, value in changes.items():
            setattr(recipe, field, value)
        recipe.revision = old_revision + 1
        recipe.updated_at = now
        for field, text_value in skill_changes.items():
            setattr(skill, field, text_value)
        self.session.flush()
        log.info(
            "skill.recipe_revised",
            name=skill.name,
            revision=recipe.revision,
            fields=sorted([*changes, *skill_changes]),
        )
        return self._reload(skill.id)

    @finds(name=inputs.SkillNameLookup, absent=no_skill)
    def revisions(self, name: str) -> builtins.list[RecipeRevisionRecord]:
        """Return the skill's revisions, oldest first; the one in force is last, with live counts.

        Compare ``success_rate`` across revisions to see whether a rewrite helped. A skill
        without a recipe has no revisions (``[]``).
        """
        skill, recipe = self._require(name)
        if recipe is None or not has_recipe(recipe):
            return []
        skill, recipe = clean(skill, SKILL_ROW, raw=False), clean(recipe, SKILL_ROW, raw=False)
        stmt = (
            select(SkillRevision)
            .where(SkillRevision.skill_id == skill.id)
            .order_by(SkillRevision.revision)
        )
        history = [record(_revision_record, row) for row in self.session.scalars(stmt)]
        successes, failures = self._outcomes_of_current_revision(skill)
        history.append(
            RecipeRevisionRecord(
                revision=recipe.revision,
                description=skill.description,
                action_template=skill.action_template,
                trigger_keywords=string_list(skill.trigger_keywords),
                steps=string_list(recipe.steps),
                verification=recipe.verification,
                tool_policy=string_list(recipe.tool_policy),
                success_count=successes,
                failure_count=failures,
                created_at=recipe.updated_at,
                replaced_at=None,
                current=True,
            )
        )
        return history


def _revision_record(row: SkillRevision | Any) -> RecipeRevisionRecord:
    return RecipeRevisionRecord(
        revision=row.revision,
        description=row.description,
        action_template=row.action_template,
        trigger_keywords=string_list(row.trigger_keywords),
        steps=string_list(row.steps),
        verification=row.verification,
        tool_policy=string_list(row.tool_policy),
        success_count=row.success_count,
        failure_count=row.failure_count,
        created_at=row.created_at,
        replaced_at=row.replaced_at,
        current=False,
    )
