"""Lean reads of ``memory_skills`` (with their recipes)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from philont.db.backend import Raw
from philont.db.models import Skill, SkillRecipe
from philont.db.ordering import in_code_points
from philont.db.stored_values import register
from philont.db.types import kinds_of
from philont.domain.maturity import Grade, callable_skill, stored_as

TABLE = "memory_skills"


class SkillHitRow(NamedTuple):
    key: Any  # the column the search scored by (rowid on SQLite, id on PostgreSQL)
    id: str
    name: str
    description: str
    when_to_use: str | None
    trigger_keywords: str | None
    kind: str
    maturity: str
    use_count: int | None
    created_at: int
    revision: int | None  # the recipe's (None: no recipe row)
    steps: str | None  # JSON text
    verification: str | None
    tool_policy: str | None  # JSON text


class RankedSkill(NamedTuple):
    """What ranking and listing a skill needs (with its recipe, if any)."""

    name: str
    description: str
    when_to_use: str | None
    kind: str
    maturity: str
    use_count: int
    success_count: int
    failure_count: int
    last_used_at: int | None
    revision: int | None  # the recipe's (None: no recipe row)
    steps: str | None  # JSON text
    verification: str | None
    tool_policy: str | None  # JSON text


class GradedRecipe(NamedTuple):
    """What tells whether a skill with a recipe may be called (:func:`is_callable`)."""

    id: str
    maturity: str
    revision: int | None
    steps: str | None  # JSON text
    verification: str | None
    tool_policy: str | None  # JSON text


SKILL_ROW = kinds_of(Skill, SkillRecipe)
"""What a skill row with its recipe's columns holds (``steps``, ``tool_policy``: JSON text)."""
register(SkillHitRow, SKILL_ROW)
register(RankedSkill, SKILL_ROW)
register(GradedRecipe, SKILL_ROW)


def is_callable(row: Any) -> bool:
    """:func:`philont.domain.maturity.callable_skill` of a stored skill row with its recipe's
    columns: a row here (recipe JSON as text) or a column row of ``skill_base.LIST``."""
    return callable_skill(
        maturity=row.maturity,
        recipe_revision=row.revision,
        steps=row.steps,
        verification=row.verification,
        tool_policy=row.tool_policy,
    )


def grade_is(column: str, grades: Iterable[Grade]) -> str:
    """SQL: the stored grade in ``column`` reads as one of ``grades`` (unknown text reads as
    draft, :func:`philont.domain.maturity.stored_as`), as the skill's record shows it."""
    wanted, unknown = stored_as(grades)
    cond = f"{column} IN ({', '.join(repr(v) for v in wanted)})"
    if unknown:
        every = ", ".join(repr(g.value) for g in Grade)
        cond = f"({cond} OR {column} NOT IN ({every}))"
    return cond


def held_back_by_recipe(raw: Raw, grades: Iterable[Grade]) -> list[str]:
    """The ids of the skills of one of ``grades`` (the callable ones) whose recipe keeps them
    from being called (:func:`is_callable`: an incomplete one), for a search to leave out before
    it ranks, not after its cut."""
    rows = raw.named(
        GradedRecipe,
        "SELECT s.id, s.maturity, r.revision, r.steps_json, r.verification, r.tool_policy_json"
        f" FROM {TABLE} s JOIN philont_skill_recipes r ON r.skill_id = s.id"
        f"{raw.same_agent('r', 's')}{raw.where(grade_is('s.maturity', grades), alias='s')}",
    )
    return [r.id for r in rows if not is_callable(r)]


def by_keys(raw: Raw, key: str, keys: Sequence[Any]) -> dict[Any, SkillHitRow]:
    """The skills whose ``key`` column is one of ``keys``, by key."""
    if not keys:
        return {}
    cond, params = raw.in_ids(f"s.{key}", keys)
    rows = raw.named(
        SkillHitRow,
        f"SELECT s.{key}, s.id, s.name, s.description, s.when_to_use, s.trigger_keywords,"
        " s.kind, s.maturity, s.use_count, s.created_at, r.revision, r.steps_json,"
        f" r.verification, r.tool_policy_json FROM {TABLE} s"
        f" LEFT JOIN philont_skill_recipes r ON r.skill_id = s.id{raw.same_agent('r', 's')}"
        f"{raw.where(cond, alias='s')}",
        params,
    )
    return {r.key: r for r in rows}


def not_deprecated(raw: Raw) -> list[RankedSkill]:
    """Every skill that is not deprecated, with its recipe, in ``SkillService.list``'s order
    (most used, then newest)."""
    where = raw.where("s.maturity != 'deprecated'", alias="s")
    return raw.named(
        RankedSkill,
        "SELECT s.name, s.description, s.when_to_use, s.kind, s.maturity, s.use_count,"
        " s.success_count, s.failure_count, s.last_used_at, r.revision, r.steps_json,"
        " r.verification, r.tool_policy_json"
        f" FROM {TABLE} s LEFT JOIN philont_skill_recipes r ON r.skill_id = s.id"
        f"{raw.same_agent('r', 's')}{where}"
        f" ORDER BY s.use_count DESC, s.created_at DESC, {in_code_points('s.id', raw.postgres)}",
    )
