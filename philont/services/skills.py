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
import enum
import re
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final
from uuid import uuid4

from sqlalchemy import ColumnElement, case, delete, func, literal, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import InstrumentedAttribute

from philont.db.models import Skill, SkillRecipe, SkillRevision
from philont.db.models.recipes import NO_RECIPE_REVISION
from philont.db.types import EpochMillis
from philont.domain.kinds import AccessTarget, SkillKind
from philont.domain.maturity import (
    DEFAULT_DISUSE_AFTER,
    Grade,
    Outcome,
    callable_skill,
    caveat,
    disuse_grade,
    is_callable,
    next_grade,
    string_list,
)
from philont.domain.skill_score import score_skill
from philont.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    SkillNotFoundError,
    SkillNotUsableError,
)
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.skills import (
    GradeChange,
    RecipeRecord,
    RecipeRevisionRecord,
    SkillRecord,
    SkillUse,
)
from philont.services.base import Service

__all__ = ["NAME_PATTERN", "UNSET", "RecipeNotFoundError", "SkillService"]

log = get_logger(__name__)

NAME_PATTERN: Final = inputs.SKILL_NAME_PATTERN
"""A new skill's name: a kebab-case slug of 1..80 characters (matched in full)."""

_KEYWORD_SEPARATORS: Final = re.compile(r"[\s,]+")


class RecipeNotFoundError(NotFoundError):
    """The skill exists but has no recipe (call ``set_recipe`` first)."""

    code = "recipe_not_found"

    def __init__(self, name: str) -> None:
        super().__init__(f"skill {name!r} has no recipe; set one with set_recipe", name=name)
        self.name = name


class _Unset(enum.Enum):
    UNSET = "unset"


UNSET: Final = _Unset.UNSET
"""Default of :meth:`SkillService.update`'s ``source``: keep the current value."""


# --- input validation (before anything is written) ---------------------------------------------


def _required_text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"{field} must be a non-blank string, got {value!r}")
    return value


def _optional_text(value: object, field: str) -> str | None:
    """None, or a string; a blank string means "none" and is stored as NULL."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string or None, got {type(value).__name__}")
    return value if value.strip() else None


def _keywords(value: object) -> list[str]:
    """A string is split on whitespace and commas; a sequence must hold strings. Blank entries
    are dropped, the rest stripped and de-duplicated in order."""
    if isinstance(value, str):
        items: list[str] = _KEYWORD_SEPARATORS.split(value)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        items = []
        for item in value:
            if not isinstance(item, str):
                raise InvalidInputError(
                    f"trigger_keywords must be strings, got {type(item).__name__}"
                )
            items.append(item)
    else:
        raise InvalidInputError(
            "trigger_keywords must be a string or a sequence of strings, "
            f"got {type(value).__name__}"
        )
    return list(dict.fromkeys(item.strip() for item in items if item.strip()))


def _lines(value: object, field: str) -> list[str]:
    """A recipe list (steps, tool policy): a sequence of strings, blank entries dropped."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{field} must be a list of strings, got {type(value).__name__}")
    items: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise InvalidInputError(f"{field} entries must be strings, got {type(item).__name__}")
        if item.strip():
            items.append(item)
    return items


def _kind(value: object) -> SkillKind:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return SkillKind(value)
    except ValueError as exc:
        raise InvalidInputError(f"kind must be 'positive' or 'negative', got {value!r}") from exc


def _grade(value: object) -> Grade:
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return Grade(value)
    except ValueError as exc:
        allowed = ", ".join(g.value for g in Grade)
        raise InvalidInputError(f"grade must be one of {allowed}, got {value!r}") from exc


def _aware(value: object, name: str) -> datetime:
    return inputs.check(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def _later(column: InstrumentedAttribute[datetime | None], at: datetime) -> ColumnElement[Any]:
    """SQL for "the later of the stored time and ``at``": an outcome credited after the fact
    (the reflector passes the action's time) never moves ``last_*_at`` backwards."""
    value = literal(at, EpochMillis())
    return case((or_(column.is_(None), column < value), value), else_=column)


def _has_recipe(recipe: SkillRecipe | Any | None) -> bool:
    return recipe is not None and recipe.revision > NO_RECIPE_REVISION


def _to_record(skill: Skill | Any, recipe_row: SkillRecipe | Any | None) -> SkillRecord:
    """A read model from ORM objects, or from one column row holding both (``_LIST``)."""
    recipe: RecipeRecord | None = None
    if recipe_row is not None and _has_recipe(recipe_row):
        recipe = RecipeRecord(
            steps=string_list(recipe_row.steps),
            verification=recipe_row.verification,
            tool_policy=string_list(recipe_row.tool_policy),
            revision=recipe_row.revision,
        )
    callable_ = callable_skill(
        maturity=skill.maturity,
        recipe_revision=None if recipe is None else recipe.revision,
        steps=None if recipe is None else recipe.steps,
        verification=None if recipe is None else recipe.verification,
        tool_policy=None if recipe is None else recipe.tool_policy,
    )
    return SkillRecord(
        id=skill.id,
        name=skill.name,
        description=skill.description,
        when_to_use=skill.when_to_use or None,
        trigger_keywords=string_list(skill.trigger_keywords),
        action_template=skill.action_template,
        kind=skill.kind,
        source=skill.source,
        grade=skill.maturity,
        use_count=skill.use_count,
        success_count=skill.success_count,
        failure_count=skill.failure_count,
        consecutive_failures=skill.consecutive_failures or 0,
        last_used_at=skill.last_used_at,
        last_success_at=skill.last_success_at,
        last_failure_at=skill.last_failure_at,
        created_at=skill.created_at,
        callable=callable_,
        recipe=recipe,
    )


def _not_usable_reason(record: SkillRecord) -> str | None:
    if record.grade == Grade.PLAYBOOK:
        return "it is a playbook (a lesson to read, not a recipe to call)"
    if record.grade == Grade.DEPRECATED:
        return "it is deprecated (proven unreliable)"
    if not record.callable:
        return "its recipe is incomplete (it needs steps, a verification and a tool policy)"
    return None


_LIST_COLUMNS = (
    *(getattr(Skill, attr.key) for attr in Skill.__mapper__.column_attrs),
    SkillRecipe.steps,
    SkillRecipe.verification,
    SkillRecipe.tool_policy,
    SkillRecipe.revision,
)
# A skill and its recipe in one column row (no name is shared); ``revision`` is NULL when the
# skill has no recipe row. Ties keep ``use_count DESC, created_at DESC``.
_LIST = (
    select(*_LIST_COLUMNS)
    .outerjoin(SkillRecipe, SkillRecipe.skill_id == Skill.id)
    .order_by(Skill.use_count.desc(), Skill.created_at.desc(), Skill.id)
)


def _row_callable(row: Any) -> bool:
    """``_to_record(row, ...).callable`` without building the record."""
    return callable_skill(
        maturity=row.maturity,
        recipe_revision=row.revision,
        steps=row.steps,
        verification=row.verification,
        tool_policy=row.tool_policy,
    )


class SkillService(Service):
    """Skills and their recipes in one database session (flushes, never commits)."""

    # --- reading ---------------------------------------------------------------------------

    def _fetch(self, where: ColumnElement[bool]) -> tuple[Skill, SkillRecipe | None] | None:
        stmt = (
            select(Skill, SkillRecipe)
            .outerjoin(SkillRecipe, SkillRecipe.skill_id == Skill.id)
            .where(where)
            .execution_options(populate_existing=True)
        )
        row = self.session.execute(stmt).one_or_none()
        return None if row is None else (row[0], row[1])

    def _require(self, name: str) -> tuple[Skill, SkillRecipe | None]:
        found = self._fetch(Skill.name == inputs.check(inputs.SkillNameLookup, name, "name"))
        if found is None:
            raise SkillNotFoundError(f"no skill named {name!r}", name=name)
        return found

    def _reload(self, skill_id: str) -> SkillRecord:
        found = self._fetch(Skill.id == skill_id)
        assert found is not None, "the row was written in this transaction"
        return _to_record(*found)

    def get(self, name: str, *, record_access: bool = True) -> SkillRecord | None:
        """Return the skill named exactly ``name`` (case-sensitive), or None.

        A found skill gets an access-log row (target ``skill``) unless ``record_access`` is
        False. Reading never changes counters or the grade.
        """
        found = self._fetch(Skill.name == inputs.check(inputs.SkillNameLookup, name, "name"))
        if found is None:
            return None
        if record_access:
            self.mem.access.record(AccessTarget.SKILL, found[0].id)
        return _to_record(*found)

    def get_by_id(self, skill_id: str) -> SkillRecord | None:
        """Return the skill with this id, or None (no access-log row: an internal lookup)."""
        if not isinstance(skill_id, str):
            raise InvalidInputError(f"a skill id must be a string, got {type(skill_id).__name__}")
        found = self._fetch(Skill.id == skill_id)
        return None if found is None else _to_record(*found)

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
        limit = inputs.check(inputs.Limit, limit, "limit")
        # Plain column rows, not ORM objects: the memory prefix lists skills on every turn.
        # Every matching row is scored; records are built only for the ones returned.
        stmt = _LIST
        if not include_deprecated:
            stmt = stmt.where(Skill.maturity != Grade.DEPRECATED)
        if kind is not None:
            stmt = stmt.where(Skill.kind == _kind(kind))
        if callable_only:
            stmt = stmt.where(Skill.maturity.in_([g for g in Grade if is_callable(g)]))
        rows: builtins.list[Any] = builtins.list(self.session.execute(stmt))
        if callable_only:
            rows = [r for r in rows if _row_callable(r)]
        now = self.clock()

        def score(row: Any) -> float:
            return score_skill(
                use_count=row.use_count,
                success_count=row.success_count,
                failure_count=row.failure_count,
                last_used_at=row.last_used_at,
                now=now,
                kind=row.kind,
            )

        # sorted() is stable also with reverse=True, so ties keep the SQL order.
        best = sorted(rows, key=score, reverse=True)[:limit]
        return [_to_record(r, r if r.revision is not None else None) for r in best]

    def is_callable(self, name: str) -> bool:
        """Return whether :meth:`use` would hand the skill out (grade callable, recipe complete)."""
        return _to_record(*self._require(name)).callable

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
        description = _required_text(description, "description")
        keywords = _keywords(trigger_keywords)
        action_template = _required_text(action_template, "action_template")
        kind = _kind(kind)
        source = _optional_text(source, "source")
        when_to_use = _optional_text(when_to_use, "when_to_use")
        grade = _grade(grade)
        if grade == Grade.DEPRECATED:
            raise InvalidInputError("a new skill cannot start deprecated", name=name)
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
        except IntegrityError as exc:  # another writer took the name after our check
            raise ConflictError(f"a skill named {name!r} already exists", name=name) from exc
        log.info("skill.created", name=name, skill_id=row.id, kind=kind.value, grade=grade.value)
        return _to_record(row, None)

    def update(
        self,
        name: str,
        *,
        description: str | None = None,
        trigger_keywords: str | Sequence[str] | None = None,
        action_template: str | None = None,
        when_to_use: str | None = None,
        source: str | _Unset | None = UNSET,
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
            changes["description"] = _required_text(description, "description")
        if trigger_keywords is not None:
            changes["trigger_keywords"] = _keywords(trigger_keywords)
        if action_template is not None:
            changes["action_template"] = _required_text(action_template, "action_template")
        if when_to_use is not None:
            changes["when_to_use"] = _optional_text(when_to_use, "when_to_use")
        if not isinstance(source, _Unset):
            changes["source"] = _optional_text(source, "source")
        if kind is not None:
            changes["kind"] = _kind(kind)
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
            .values(use_count=Skill.use_count + 1, last_used_at=self.clock())
            .returning(Skill.id)
            .execution_options(synchronize_session=False)
        )
        return self.session.execute(stmt).scalar_one_or_none()

    def record_usage(self, name: str) -> SkillRecord:
        """Count one use: ``use_count + 1`` and ``last_used_at = now``, nothing else.

        A use is not a success (Philont's ``incrementUseCount`` recorded one, Q-K1): success
        counts and the grade change only through :meth:`record_outcome`.
        """
        skill_id = self._touch(Skill.name == inputs.check(inputs.SkillNameLookup, name, "name"))
        if skill_id is None:
            raise SkillNotFoundError(f"no skill named {name!r}", name=name)
        return self._reload(skill_id)

    def use(self, name: str) -> SkillUse:
        """Hand a skill out for use: its record (after counting the use) and its grade caveat.

        Raises :class:`SkillNotFoundError` for an unknown name and :class:`SkillNotUsableError`
        for a playbook, a deprecated skill or an incomplete recipe (nothing is counted then).
        Using is not a success: see :meth:`record_usage`.
        """
        skill, recipe = self._require(name)
        reason = _not_usable_reason(_to_record(skill, recipe))
        if reason is not None:
            raise SkillNotUsableError(
                f"skill {name!r} cannot be used: {reason}", name=name, grade=skill.maturity.value
            )
        self._touch(Skill.id == skill.id)
        record = self._reload(skill.id)
        return SkillUse(skill=record, caveat=caveat(record.grade))

    def record_outcome(
        self, name: str, *, success: bool, at: datetime | None = None
    ) -> SkillRecord:
        """Record one observed outcome and move the grade by the ladder (``next_grade``).

        Success: ``success_count + 1``, ``consecutive_failures = 0``, ``last_success_at``.
        Failure: ``failure_count + 1``, ``consecutive_failures + 1``, ``last_failure_at``.
        ``at`` (default now) never moves ``last_*_at`` backwards. ``use_count`` is not touched:
        the use was counted when the skill was used. Logs ``skill.grade_changed`` on a change.
        """
        if not isinstance(success, bool):
            raise InvalidInputError(f"success must be a bool, got {type(success).__name__}")
        at = self.clock() if at is None else _aware(at, "at")
        name = inputs.check(inputs.SkillNameLookup, name, "name")
        values: dict[str, Any]
        if success:
            values = {
                "success_count": Skill.success_count + 1,
                "consecutive_failures": 0,
                "last_success_at": _later(Skill.last_success_at, at),
            }
        else:
            values = {
                "failure_count": Skill.failure_count + 1,
                "consecutive_failures": func.coalesce(Skill.consecutive_failures, 0) + 1,
                "last_failure_at": _later(Skill.last_failure_at, at),
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
            raise SkillNotFoundError(f"no skill named {name!r}", name=name)
        skill_id, current, successes, failures, streak = row
        outcome = Outcome.SUCCESS if success else Outcome.FAILURE
        new = next_grade(
            current,
            successes=successes,
            failures=failures,
            consecutive_failures=streak,
            outcome=outcome,
        )
        if new != current:
            # This transaction already holds the write lock on the row: no one can interleave.
            self.session.execute(
                update(Skill)
                .where(Skill.id == skill_id)
                .values(maturity=new)
                .execution_options(synchronize_session=False)
            )
            log.info(
                "skill.grade_changed",
                name=name,
                old=current.value,
                new=new.value,
                reason=f"outcome:{outcome.value}",
            )
        return self._reload(skill_id)

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

    def set_grade(self, name: str, grade: Grade | str, *, reason: str) -> SkillRecord:
        """Set the grade by hand, bypassing the ladder (e.g. revive a deprecated skill as draft).

        Counters are kept, except that reviving a deprecated skill resets its streak of
        consecutive failures (otherwise its next failure would deprecate it again at once). The
        disuse period restarts now. ``reason`` is required and logged.
        """
        grade = _grade(grade)
        reason = _required_text(reason, "reason")
        skill, _recipe = self._require(name)
        old = skill.maturity
        skill.maturity = grade
        if old == Grade.DEPRECATED and grade != Grade.DEPRECATED:
            skill.consecutive_failures = 0
        self.session.flush()
        self._anchor(skill.id, self.clock())
        log.info(
            "skill.grade_changed", name=skill.name, old=old.value, new=grade.value, reason=reason
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
        now = self.clock() if now is None else _aware(now, "now")
        if not isinstance(after, timedelta) or after <= timedelta(0):
            raise InvalidInputError(f"after must be a positive timedelta, got {after!r}")
        stmt = (
            select(Skill, SkillRecipe.grade_anchor_at)
            .outerjoin(SkillRecipe, SkillRecipe.skill_id == Skill.id)
            .where(Skill.maturity.in_([Grade.STABLE, Grade.CONFIRMED]))
            .order_by(Skill.created_at, Skill.id)
            .execution_options(populate_existing=True)
        )
        changes: builtins.list[GradeChange] = []
        for skill, anchor in self.session.execute(stmt).all():
            stamps = (
                skill.last_used_at,
                skill.last_success_at,
                skill.last_failure_at,
                anchor,
            )
            latest = max((s for s in stamps if s is not None), default=None)
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
            skill.maturity = new
            self.session.flush()
            self._anchor(skill.id, now)
            log.info(
                "skill.grade_changed",
                name=skill.name,
                old=changes[-1].old.value,
                new=new.value,
                reason="disuse",
            )
        return changes

    # --- recipes ---------------------------------------------------------------------------

    def _outcomes_of_current_revision(self, skill: Skill) -> tuple[int, int]:
        """The skill's totals minus what its replaced revisions accumulated."""
        stmt = select(
            func.coalesce(func.sum(SkillRevision.success_count), 0),
            func.coalesce(func.sum(SkillRevision.failure_count), 0),
        ).where(SkillRevision.skill_id == skill.id)
        earlier_successes, earlier_failures = self.session.execute(stmt).one()
        return (
            max(0, skill.success_count - int(earlier_successes)),
            max(0, skill.failure_count - int(earlier_failures)),
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
    ) -> None:
        successes, failures = self._outcomes_of_current_revision(skill)
        row = SkillRevision(
            skill_id=skill.id,
            revision=revision,
            description=skill.description,
            action_template=skill.action_template,
            trigger_keywords=skill.trigger_keywords,
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
        except IntegrityError as exc:  # a concurrent revise_recipe got there first
            raise ConflictError(
                f"revision {revision} of skill {skill.name!r} was replaced concurrently",
                name=skill.name,
            ) from exc

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
        steps_ = _lines(steps, "steps")
        verification_ = _optional_text(verification, "verification")
        policy = _lines(tool_policy, "tool_policy")
        skill, recipe = self._require(name)
        if recipe is not None and _has_recipe(recipe):
            raise ConflictError(
                f"skill {name!r} already has a recipe (revision {recipe.revision}); "
                "use revise_recipe",
                name=name,
            )
        now = self.clock()
        if skill.success_count + skill.failure_count > 0:
            self._snapshot(
                skill,
                revision=NO_RECIPE_REVISION,
                steps=[],
                verification=None,
                tool_policy=[],
                created_at=skill.created_at,
                replaced_at=now,
            )
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
            changes["steps"] = _lines(steps, "steps")
        if verification is not None:
            changes["verification"] = _optional_text(verification, "verification")
        if tool_policy is not None:
            changes["tool_policy"] = _lines(tool_policy, "tool_policy")
        skill_changes: dict[str, str] = {}
        if description is not None:
            skill_changes["description"] = _required_text(description, "description")
        if action_template is not None:
            skill_changes["action_template"] = _required_text(action_template, "action_template")
        if not changes and not skill_changes:
            raise InvalidInputError("revise_recipe needs at least one field to change")
        skill, recipe = self._require(name)
        if recipe is None or not _has_recipe(recipe):
            raise RecipeNotFoundError(skill.name)
        now = self.clock()
        old_revision = recipe.revision
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

    def revisions(self, name: str) -> builtins.list[RecipeRevisionRecord]:
        """Return the skill's revisions, oldest first; the one in force is last, with live counts.

        Compare ``success_rate`` across revisions to see whether a rewrite helped. A skill
        without a recipe has no revisions (``[]``).
        """
        skill, recipe = self._require(name)
        if recipe is None or not _has_recipe(recipe):
            return []
        stmt = (
            select(SkillRevision)
            .where(SkillRevision.skill_id == skill.id)
            .order_by(SkillRevision.revision)
        )
        history = [
            RecipeRevisionRecord(
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
            for row in self.session.scalars(stmt)
        ]
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
