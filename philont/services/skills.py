"""Skills (layer 3): storage, honest usage and outcome accounting, grades, disuse decay, recipes.

Differences from Philont's ``SkillStore`` (spec §8, §9, §17.3), on purpose:

* Q-K1: fetching or using a skill is not evidence that it works. :meth:`SkillService.record_usage`
  and :meth:`SkillService.use` advance ``use_count`` and ``last_used_at`` only; success and
  failure counts, and so the grade ladder, move only through :meth:`SkillService.record_outcome`
  (which the reflector calls with attributed outcomes). :meth:`SkillService.use` refuses
  playbook and deprecated skills and skills with an incomplete recipe.
* Q-K3: :meth:`SkillService.update` changes ``kind`` only when ``kind`` is passed explicitly.
* :meth:`SkillService.list` scores every matching skill instead of pre-cutting candidates by
  ``use_count`` (Philont's ``LIMIT max(limit*4, 200)`` could hide a recent, well-scored skill).

Counters are changed with SQL expressions (``success_count = success_count + 1``) so concurrent
writers never lose an update.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any
from uuid import uuid4

from sqlalchemy import ColumnElement, delete, func, or_, select, update
from sqlalchemy.exc import IntegrityError

from philont.db.models import Skill, SkillRecipe, SkillRevision
from philont.db.models.recipes import NO_RECIPE_REVISION
from philont.db.queries import skills as skill_rows
from philont.db.retry import is_duplicate
from philont.db.stored_values import clean, rows_read
from philont.db.types import bumped
from philont.domain.kinds import AccessTarget, SkillKind
from philont.domain.maturity import (
    DEFAULT_DISUSE_AFTER,
    Grade,
    Outcome,
    caveat,
    disuse_grade,
    is_callable,
    next_grade,
    stored_as,
)
from philont.errors import (
    ConflictError,
    InvalidInputError,
    SkillNotUsableError,
)
from philont.finds import PASS_ON, finds
from philont.schemas import inputs
from philont.schemas.skills import (
    GradeChange,
    SkillRecord,
    SkillUse,
)
from philont.services.skill_base import (
    LIST,
    NAME_PATTERN,
    UNSET,
    RecipeNotFoundError,
    Unset,
    aware,
    grade_of,
    keywords_of,
    kind_of,
    later,
    log,
    no_skill,
    not_usable_reason,
    optional_text,
    required_text,
    row_score,
    to_record,
)
from philont.services.skill_recipes import SkillRecipes

__all__ = ["NAME_PATTERN", "UNSET", "RecipeNotFoundError", "SkillService"]


_COUNTERS = ("success_count", "failure_count", "consecutive_failures")


class SkillService(SkillRecipes):
    """Skills and their recipes in one unit of work (flushes, never commits)."""

    unstored = frozenset({"reason"})  # set_grade's reason is logged, never stored

    @finds(name=inputs.SkillNameLookup)
    def get(self, name: str, *, record_access: bool = True) -> SkillRecord | None:
        """Return the skill named exactly ``name`` (case-sensitive), or None.

        A found skill gets an access-log row (target ``skill``) unless ``record_access`` is
        False or the Store is read-only. Reading never changes counters or the grade.
        """
        found = self._fetch(Skill.name == inputs.check(inputs.SkillNameLookup, name, "name"))
        if found is None:
            return None
        if record_access:
            self.mem.access.refresh(AccessTarget.SKILL, found[0].id)
        return to_record(*found)

    @finds("skill_id")
    def get_by_id(self, skill_id: str) -> SkillRecord | None:
        """Return the skill with this id, or None (no access-log row: an internal lookup)."""
        if not isinstance(skill_id, str):
            raise InvalidInputError.of(
                "skill_id", f"must be a string, got {type(skill_id).__name__}"
            )
        found = self._fetch(Skill.id == skill_id)
        return None if found is None else to_record(*found)

    def list(
        self,
        limit: int = 50,
        *,
        include_deprecated: bool = False,
        kind: SkillKind | str | None = None,
        callable_only: bool = False,
    ) -> builtins.list[SkillRecord]:
        """Return up to ``limit`` skills, best first by ``score_skill`` (spec §8).

        Deprecated skills are left out unless ``include_deprecated``; ``kind`` keeps one
        polarity; ``callable_only`` keeps skills :meth:`use` would accept. Ties keep the order
        ``use_count DESC, created_at DESC``. Every matching skill is scored (no candidate cut).
        """
        # Plain column rows, not ORM objects: the memory prefix lists skills on every turn.
        # Every matching row is scored; records are built only for the ones returned.
        stmt = LIST
        if not include_deprecated:
            stmt = stmt.where(Skill.maturity != Grade.DEPRECATED)
        # as the records read the stored text: an unknown kind is positive, an unknown grade
        # draft (StrEnumText's fallbacks); an equality on the text left such skills out
        if kind is not None:
            negative = Skill.kind == SkillKind.NEGATIVE
            stmt = stmt.where(negative if kind_of(kind) is SkillKind.NEGATIVE else ~negative)
        if callable_only:
            wanted, unknown = stored_as(g for g in Grade if is_callable(g))
            graded = Skill.maturity.in_(wanted)
            unread = Skill.maturity.not_in(list(Grade))  # reads as draft
            stmt = stmt.where(or_(graded, unread) if unknown else graded)
        rows: builtins.list[Any] = builtins.list(self.session.execute(stmt))
        now = self.clock()

        def ranked(rows: builtins.list[Any]) -> builtins.list[SkillRecord]:
            if callable_only:
                rows = [r for r in rows if skill_rows.is_callable(r)]
            # sorted() is stable also with reverse=True, so ties keep the SQL order.
            best = sorted(rows, key=lambda row: row_score(row, now), reverse=True)[:limit]
            return [to_record(r, r if r.revision is not None else None) for r in best]

        return rows_read(ranked, rows, skill_rows.SKILL_ROW, raw=False)

    @finds(name=inputs.SkillNameLookup, absent=no_skill)
    def is_callable(self, name: str) -> bool:
        """Return whether :meth:`use` would hand the skill out (grade callable, recipe complete)."""
        return to_record(*self._require(name)).callable

    # --- writing content -------------------------------------------------------------------

    def create(
        self,
        name: str,
        description: str,
        trigger_keywords: str | Sequence[str],
        action_template: str,
        *,
        kind: SkillKind | str = SkillKind.POSITIVE,
        source: str | None = None,
        when_to_use: str | None = None,
        grade: Grade | str = Grade.DRAFT,
    ) -> SkillRecord:
        """Create a skill with zeroed counters.

        ``name`` must be a kebab-case slug (:data:`NAME_PATTERN`); ``description`` and
        ``action_template`` non-blank; ``trigger_keywords`` a string (split on whitespace and
        commas) or a sequence of strings. A blank ``when_to_use`` is stored as NULL. A new skill
        cannot start deprecated. Raises :class:`InvalidInputError` for bad input and
        :class:`ConflictError` when the name is taken; nothing is written then.
        """
        name = inputs.check(inputs.SkillName, name, "name")
        description = required_text(description, "description")
        keywords = keywords_of(trigger_keywords)
        action_template = required_text(action_template, "action_template")
        kind = kind_of(kind)
        source = optional_text(source, "source")
        when_to_use = optional_text(when_to_use, "when_to_use")
        grade = grade_of(grade)
        if grade == Grade.DEPRECATED:
            raise InvalidInputError.of("grade", "a new skill cannot start deprecated", name=name)
        if self._fetch(Skill.name == name) is not None:
            raise ConflictError(f"a skill named {name!r} already exists", name=name)

        row = Skill(
            id=str(uuid4()),
            name=name,
            description=description,
            trigger_keywords=keywords,
            action_template=action_template,
            use_count=0,
            created_at=self.clock(),
            success_count=0,
            failure_count=0,
            kind=kind,
            source=source,
            maturity=grade,
            consecutive_failures=0,
            when_to_use=when_to_use,
        )
        try:
            with self.session.begin_nested():
                self.session.add(row)
        except IntegrityError as exc:
            if not is_duplicate(exc, Skill.__tablename__, "name"):
                raise  # a host's trigger, a check, ...: typed as such, no name conflict
            # another writer took the name after our check
            raise ConflictError(f"a skill named {name!r} already exists", name=name) from exc
        log.info("skill.created", name=name, skill_id=row.id, kind=kind.value, grade=grade.value)
        return to_record(row, None)

    @finds(name=inputs.SkillNameLookup, absent=PASS_ON)  # its arguments first: _named
    def update(
        self,
        name: str,
        *,
        description: str | None = None,
        trigger_keywords: str | Sequence[str] | None = None,
        action_template: str | None = None,
        when_to_use: str | None = None,
        source: str | Unset | None = UNSET,
        kind: SkillKind | str | None = None,
    ) -> SkillRecord:
        """Change a skill's text fields in place; counters, grade and recipe are kept.

        Arguments left at None keep their value; ``when_to_use=""`` clears it; ``source=None``
        clears it (leave it out to keep it). ``kind`` changes only when passed (Philont's
        reflector could flip a skill's polarity by rewriting it, Q-K3). To measure whether a
        rewrite helps, use :meth:`revise_recipe`, which keeps the old version and its counts.
        """
        changes: dict[str, Any] = {}
        if description is not None:
            changes["description"] = required_text(description, "description")
        if trigger_keywords is not None:
            changes["trigger_keywords"] = keywords_of(trigger_keywords)
        if action_template is not None:
            changes["action_template"] = required_text(action_template, "action_template")
        if when_to_use is not None:
            changes["when_to_use"] = optional_text(when_to_use, "when_to_use")
        if not isinstance(source, Unset):
            changes["source"] = optional_text(source, "source")
        if kind is not None:
            changes["kind"] = kind_of(kind)
        skill, _recipe = self._require(name)
        if not changes:
            return self._reload(skill.id)
        old_kind = skill.kind
        for field, value in changes.items():
            setattr(skill, field, value)
        self.session.flush()
        log.info("skill.updated", name=skill.name, fields=sorted(changes))
        if skill.kind != old_kind:
            log.info(
                "skill.kind_changed", name=skill.name, old=old_kind.value, new=skill.kind.value
            )
        return self._reload(skill.id)

    @finds(name=inputs.SkillNameLookup)
    def delete(self, name: str) -> bool:
        """Delete the skill (its recipe and revisions go with it, by ON DELETE CASCADE).

        Returns whether a skill was deleted.
        """
        found = self._fetch(Skill.name == inputs.check(inputs.SkillNameLookup, name, "name"))
        if found is None:
            return False
        skill = found[0]
        # Explicit, although the foreign keys cascade: it keeps the identity map in step and
        # does not depend on the connection having ``foreign_keys = ON``.
        self.session.execute(delete(SkillRevision).where(SkillRevision.skill_id == skill.id))
        self.session.execute(delete(SkillRecipe).where(SkillRecipe.skill_id == skill.id))
        self.session.delete(skill)
        self.session.flush()
        log.info("skill.deleted", name=name, skill_id=skill.id)
        return True

    # --- usage, outcomes, grades ----------------------------------------------------------

    def _touch(self, where: ColumnElement[bool]) -> str | None:
        stmt = (
            update(Skill)
            .where(where)
            .values(use_count=bumped(Skill.use_count), last_used_at=self.clock())
            .returning(Skill.id)
            .execution_options(synchronize_session=False)
        )
        return self.session.execute(stmt).scalar_one_or_none()

    @finds(name=inputs.SkillNameLookup, absent=no_skill)
    def record_usage(self, name: str) -> SkillRecord:
        """Count one use: ``use_count + 1`` and ``last_used_at = now``, nothing else.

        A use is not a success (Philont's ``incrementUseCount`` recorded one, Q-K1): success
        counts and the grade change only through :meth:`record_outcome`.
        """
        skill_id = self._touch(Skill.name == inputs.check(inputs.SkillNameLookup, name, "name"))
        if skill_id is None:
            no_skill(self, name)
        return self._reload(skill_id)

    @finds(name=inputs.SkillNameLookup, absent=no_skill)
    def use(self, name: str) -> SkillUse:
        """Hand a skill out for use: its record (after counting the use) and its grade caveat.

        Raises :class:`SkillNotFoundError` for an unknown name and :class:`SkillNotUsableError`
        for a playbook, a deprecated skill or an incomplete recipe (nothing is counted then).
        Using is not a success: see :meth:`record_usage`.
        """
        skill, recipe = self._require(name)
        reason = not_usable_reason(to_record(skill, recipe))
        if reason is not None:
            raise SkillNotUsableError(
                f"skill {name!r} cannot be used: {reason}", name=name, grade=skill.maturity.value
            )
        self._touch(Skill.id == skill.id)
        record = self._reload(skill.id)
        return SkillUse(skill=record, caveat=caveat(record.grade))

    @finds(name=inputs.SkillNameLookup, absent=PASS_ON)  # its arguments first: _named
    def record_outcome(
        self,
        name: str,
        *,
        success: bool,
        at: datetime | None = None,
        retrieved_at: datetime | None = None,
    ) -> SkillRecord:
        """Record one observed outcome and move the grade by the ladder (``next_grade``).

        Success: ``success_count + 1``, ``consecutive_failures = 0``, ``last_success_at``.
        Failure: ``failure_count + 1``, ``consecutive_failures + 1``, ``last_failure_at``.
        ``at`` (default now) never moves ``last_*_at`` backwards. ``use_count`` is not touched:
        the use was counted when the skill was used. Logs ``skill.grade_changed`` on a change.
        ``retrieved_at`` (when the observed run fetched the skill) charges the outcome to the
        recipe revision in force then, when it has been replaced since (``revisions()``); to
        revision 0 when the skill had no recipe yet (kept then if it was not).
        """
        if not isinstance(success, bool):
            raise InvalidInputError.of("success", f"must be a bool, got {type(success).__name__}")
        at = self.clock() if at is None else aware(at, "at")
        if retrieved_at is not None:  # checked before anything is written
            retrieved_at = aware(retrieved_at, "retrieved_at")
        name = self._named(name)
        values: dict[str, Any]
        if success:
            values = {
                "success_count": bumped(Skill.success_count),
                "consecutive_failures": 0,
                "last_success_at": later(Skill.last_success_at, at),
            }
        else:
            values = {
                "failure_count": bumped(Skill.failure_count),
                "consecutive_failures": bumped(func.coalesce(Skill.consecutive_failures, 0)),
                "last_failure_at": later(Skill.last_failure_at, at),
            }
        stmt = (
            update(Skill)
            .where(Skill.name == name)
            .values(values)
            .returning(
                Skill.id,
                Skill.maturity,
                Skill.success_count,
                Skill.failure_count,
                Skill.consecutive_failures,
            )
            .execution_options(synchronize_session=False)
        )
        row = self.session.execute(stmt).one_or_none()
        if row is None:
            no_skill(self, name)
        # counters as a read gives them (text another program stored there counts as 0)
        row = clean(row, skill_rows.SKILL_ROW, raw=False, fields=_COUNTERS)
        skill_id, current = row.id, row.maturity
        successes, failures, streak = row.success_count, row.failure_count, row.consecutive_failures
        if retrieved_at is not None:
            self._charge_replaced_revision(skill_id, success=success, at=retrieved_at)
        outcome = Outcome.SUCCESS if success else Outcome.FAILURE
        new = next_grade(
            current,
            successes=successes,
            failures=failures,
            consecutive_failures=streak,
            outcome=outcome,
        )
        if new != current:
            self._regrade(skill_id, name, current, new, reason=f"outcome:{outcome.value}")
        return self._reload(skill_id)

    def _regrade(
        self,
        skill_id: str,
        name: str,
        old: Grade,
        new: Grade,
        *,
        reason: str,
        anchor_at: datetime | None = None,
    ) -> None:
        """Every grade change: store it, restart the disuse period at ``anchor_at`` if given,
        log ``skill.grade_changed``. (This transaction already holds the write lock on the
        row: no one can interleave.)"""
        self.session.execute(
            update(Skill)
            .where(Skill.id == skill_id)
            .values(maturity=new)
            .execution_options(synchronize_session=False)
        )
        if anchor_at is not None:
            self._anchor(skill_id, anchor_at)
        log.info("skill.grade_changed", name=name, old=old.value, new=new.value, reason=reason)

    def _anchor(self, skill_id: str, at: datetime) -> None:
        """Remember that the grade was set at ``at`` (restarts the disuse period)."""
        recipe = self.session.get(SkillRecipe, skill_id)
        if recipe is None:
            self.session.add(
                SkillRecipe(
                    skill_id=skill_id,
                    steps=[],
                    tool_policy=[],
                    revision=NO_RECIPE_REVISION,
                    grade_anchor_at=at,
                    updated_at=at,
                )
            )
        else:
            recipe.grade_anchor_at = at
        self.session.flush()

    @finds(name=inputs.SkillNameLookup, absent=PASS_ON)  # its arguments first: _named
    def set_grade(self, name: str, grade: Grade | str, *, reason: str) -> SkillRecord:
        """Set the grade by hand, bypassing the ladder (e.g. revive a deprecated skill as draft).

        Counters are kept, except that reviving a deprecated skill resets its streak of
        consecutive failures (otherwise its next failure would deprecate it again at once). The
        disuse period restarts now. ``reason`` is required and logged.
        """
        grade = grade_of(grade)
        reason = required_text(reason, "reason")
        skill, _recipe = self._require(name)
        if skill.maturity == Grade.DEPRECATED and grade != Grade.DEPRECATED:
            skill.consecutive_failures = 0
            self.session.flush()
        self._regrade(
            skill.id, skill.name, skill.maturity, grade, reason=reason, anchor_at=self.clock()
        )
        return self._reload(skill.id)

    def apply_disuse(
        self, now: datetime | None = None, after: timedelta = DEFAULT_DISUSE_AFTER
    ) -> builtins.list[GradeChange]:
        """Drop long-unused confirmed and stable skills ONE tier (stable -> confirmed -> draft).

        A skill's anchor is the latest of ``last_used_at``, ``last_success_at``,
        ``last_failure_at``, the stored grade anchor (set by :meth:`set_grade` and by this
        method) and ``created_at``. When the anchor lies more than ``after`` (default
        :data:`~philont.domain.maturity.DEFAULT_DISUSE_AFTER`, 90 days) before ``now`` (default:
        the clock), the skill drops one tier and its anchor is set to ``now``, so the next drop
        needs another full period without use. Draft, playbook and deprecated skills never
        move. Returns the changes as ``(name, old, new)``.
        """
        now = self.clock() if now is None else aware(now, "now")
        if not isinstance(after, timedelta) or after <= timedelta(0):
            raise InvalidInputError.of("after", f"must be a positive timedelta, got {after!r}")
        stmt = (
            select(Skill, SkillRecipe.grade_anchor_at)
            .outerjoin(SkillRecipe, SkillRecipe.skill_id == Skill.id)
            .where(Skill.maturity.in_([Grade.STABLE, Grade.CONFIRMED]))
            .order_by(Skill.created_at, Skill.id)
            .execution_options(populate_existing=True)
        )
        changes: builtins.list[GradeChange] = []
        for skill, anchor in self.session.execute(stmt).all():
            # created_at too: an outcome credited with an earlier time (``record_outcome``'s
            # ``at``) must not make a skill made since look unused for longer than it exists.
            stamps = (
                skill.last_used_at,
                skill.last_success_at,
                skill.last_failure_at,
                anchor,
                skill.created_at,
            )
            latest = max(s for s in stamps if s is not None)
            new = disuse_grade(
                skill.maturity,
                last_used_at=latest,
                created_at=skill.created_at,
                now=now,
                after=after,
            )
            if new == skill.maturity:
                continue
            changes.append(GradeChange(skill.name, skill.maturity, new))
            self._regrade(skill.id, skill.name, skill.maturity, new, reason="disuse", anchor_at=now)
        return changes
