"""The ground the skill service stands on: input checks, records from rows, and the
lookups every skill method shares."""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, NoReturn, TypeVar

from sqlalchemy import ColumnElement, case, literal, or_, select
from sqlalchemy.orm import InstrumentedAttribute

from philont.db.models import Skill, SkillRecipe
from philont.db.models.recipes import NO_RECIPE_REVISION
from philont.db.ordering import code_points
from philont.db.queries.skills import SKILL_ROW
from philont.db.stored_values import UNREADABLE, clean
from philont.db.types import EpochMillis
from philont.domain.kinds import SkillKind
from philont.domain.maturity import (
    Grade,
    callable_skill,
    string_list,
)
from philont.domain.names import NEAR_CANDIDATES, did_you_mean, near
from philont.domain.skill_score import score_skill
from philont.errors import (
    InvalidInputError,
    NotFoundError,
    SkillNotFoundError,
    UnreadableRowError,
)
from philont.log import get_logger
from philont.schemas import inputs
from philont.schemas.skills import (
    RecipeRecord,
    SkillRecord,
)
from philont.services.base import Service

log = get_logger("philont.services.skills")

E = TypeVar("E", bound=enum.Enum)

NAME_PATTERN: Final = inputs.SKILL_NAME_PATTERN
"""A new skill's name: a kebab-case slug of 1..80 characters (matched in full)."""

KEYWORD_SEPARATORS: Final = re.compile(r"[\s,]+")


class RecipeNotFoundError(NotFoundError):
    """The skill exists but has no recipe (call ``set_recipe`` first)."""

    code = "recipe_not_found"
    keyed = False  # the skill was found

    def __init__(self, name: str) -> None:
        super().__init__(f"skill {name!r} has no recipe; set one with set_recipe", name=name)
        self.name = name


class Unset(enum.Enum):
    UNSET = "unset"


UNSET: Final = Unset.UNSET
"""Default of :meth:`SkillService.update`'s ``source``: keep the current value."""


# --- input validation (before anything is written) ---------------------------------------------


def required_text(value: object, field: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError.of(field, f"must be a non-blank string, got {value!r}")
    return value


def optional_text(value: object, field: str) -> str | None:
    """None, or a string; a blank string means "none" and is stored as NULL."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInputError.of(field, f"must be a string or None, got {type(value).__name__}")
    return value if value.strip() else None


def keywords_of(value: object) -> list[str]:
    """A string is split on whitespace and commas; a sequence must hold strings. Blank entries
    are dropped, the rest stripped and de-duplicated in order."""
    if isinstance(value, str):
        items: list[str] = KEYWORD_SEPARATORS.split(value)
    elif isinstance(value, Sequence) and not isinstance(value, bytes | bytearray):
        items = []
        for item in value:
            if not isinstance(item, str):
                raise InvalidInputError.of(
                    "trigger_keywords", f"must be strings, got {type(item).__name__}"
                )
            items.append(item)
    else:
        raise InvalidInputError.of(
            "trigger_keywords",
            f"must be a string or a sequence of strings, got {type(value).__name__}",
        )
    return list(dict.fromkeys(item.strip() for item in items if item.strip()))


def lines_of(value: object, field: str) -> list[str]:
    """A recipe list (steps, tool policy): a sequence of strings, blank entries dropped."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InvalidInputError.of(field, f"must be a list of strings, got {type(value).__name__}")
    items: list[str] = []
    for item in value:
        if not isinstance(item, str):
            raise InvalidInputError.of(field, f"entries must be strings, got {type(item).__name__}")
        if item.strip():
            items.append(item)
    return items


def kind_of(value: object) -> SkillKind:
    return _member(SkillKind, value, "kind", "must be 'positive' or 'negative'")


def grade_of(value: object) -> Grade:
    return _member(Grade, value, "grade", f"must be one of {', '.join(g.value for g in Grade)}")


def _member(enum_type: type[E], value: object, name: str, refusal: str) -> E:
    """``value`` (a string) as a member of ``enum_type``, else the refusal of ``name``."""
    try:
        if not isinstance(value, str):
            raise ValueError(value)
        return enum_type(value)
    except ValueError as exc:
        raise InvalidInputError.of(name, f"{refusal}, got {value!r}") from exc


def aware(value: object, name: str) -> datetime:
    return inputs.check(inputs.AwareTime, value, name)  # type: ignore[no-any-return]


def later(column: InstrumentedAttribute[datetime | None], at: datetime) -> ColumnElement[Any]:
    """SQL for "the later of the stored time and ``at``": an outcome credited after the fact
    (the reflector passes the action's time) never moves ``last_*_at`` backwards."""
    value = literal(at, EpochMillis())
    return case((or_(column.is_(None), column < value), value), else_=column)


def has_recipe(recipe: SkillRecipe | Any | None) -> bool:
    if recipe is None:
        return False
    revision = recipe.revision
    if revision.__class__ is not int:  # not as stored by us: read as the column's kind
        revision = clean(recipe, SKILL_ROW, raw=False, fields=("revision",)).revision
    return bool(revision > NO_RECIPE_REVISION)


def to_record(skill: Skill | Any, recipe_row: SkillRecipe | Any | None) -> SkillRecord:
    """A read model from ORM objects, or from one column row holding both (``LIST``); a value
    of the wrong kind is read again as its column's kind (:mod:`philont.db.stored_values`)."""
    try:
        return _record(skill, recipe_row)
    except UNREADABLE:
        fixed = clean(skill, SKILL_ROW, raw=False)
        recipe = fixed if recipe_row is skill else clean(recipe_row, SKILL_ROW, raw=False)
        if fixed is skill and recipe is recipe_row:
            raise
        return _record(fixed, recipe)


def _record(skill: Skill | Any, recipe_row: SkillRecipe | Any | None) -> SkillRecord:
    recipe: RecipeRecord | None = None
    if recipe_row is not None and has_recipe(recipe_row):
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


def not_usable_reason(record: SkillRecord) -> str | None:
    if record.grade == Grade.PLAYBOOK:
        return "it is a playbook (a lesson to read, not a recipe to call)"
    if record.grade == Grade.DEPRECATED:
        return "it is deprecated (proven unreliable)"
    if not record.callable:
        return "its recipe is incomplete (it needs steps, a verification and a tool policy)"
    return None


LIST_COLUMNS = (
    *(getattr(Skill, attr.key) for attr in Skill.__mapper__.column_attrs),
    SkillRecipe.steps,
    SkillRecipe.verification,
    SkillRecipe.tool_policy,
    SkillRecipe.revision,
)
# A skill and its recipe in one column row (no name is shared); ``revision`` is NULL when the
# skill has no recipe row. Ties keep ``use_count DESC, created_at DESC``.
LIST = (
    select(*LIST_COLUMNS)
    .outerjoin(SkillRecipe, SkillRecipe.skill_id == Skill.id)
    .order_by(Skill.use_count.desc(), Skill.created_at.desc(), code_points(Skill.id))
)


def row_score(row: Any, now: datetime) -> float:
    """:func:`~philont.domain.skill_score.score_skill` of a stored skill (an ORM row or a
    column row with its counters, ``last_used_at`` and ``kind``) at ``now``."""
    return score_skill(
        use_count=row.use_count,
        success_count=row.success_count,
        failure_count=row.failure_count,
        last_used_at=row.last_used_at,
        now=now,
        kind=row.kind,
    )


def no_skill(service: Service, name: str, **_: object) -> NoReturn:
    """A name that names no skill: :class:`~philont.errors.SkillNotFoundError`, with the names
    of up to three skills it may have meant (also the answer of a method that finds a skill by
    a name this database cannot hold, ``finds``)."""
    names = service.session.scalars(select(Skill.name).limit(NEAR_CANDIDATES))
    close = near(name, (n for n in names if isinstance(n, str)))
    raise SkillNotFoundError(f"no skill named {name!r}{did_you_mean(close)}", name=name, near=close)


class SkillBase(Service):
    """Lookups shared by the skill and recipe methods."""

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

    def _named(self, name: str) -> str:
        """``name`` checked as a skill name to look up; :class:`SkillNotFoundError` when this
        database cannot hold it (a NUL character on PostgreSQL: no skill can have it)."""
        checked: str = inputs.check(inputs.SkillNameLookup, name, "name")
        if "\x00" in checked and not self.mem.backend.keeps_nul:
            no_skill(self, name)
        return checked

    def _require(self, name: str) -> tuple[Skill, SkillRecipe | None]:
        found = self._fetch(Skill.name == self._named(name))
        if found is None:
            no_skill(self, name)
        return found

    def _reload(self, skill_id: str) -> SkillRecord:
        found = self._fetch(Skill.id == skill_id)
        if found is None:  # its stored id is not UTF-8: read with U+FFFD, it finds no row
            raise UnreadableRowError(
                f"skill {skill_id!r}: its stored id is not UTF-8 text (another program stored "
                "it), so the skill cannot be written",
                id=skill_id,
            )
        return to_record(*found)
