"""Read models of skills (layer 3): the skill, its recipe, its revisions and one use of it."""

from __future__ import annotations

from datetime import datetime
from typing import NamedTuple

from philont.domain.kinds import SkillKind
from philont.domain.maturity import Grade
from philont.schemas.base import ReadModel


class RecipeRecord(ReadModel):
    """The structured recipe of a skill, at its current revision (1 for the first recipe)."""

    steps: list[str]
    verification: str | None
    tool_policy: list[str]
    revision: int


class SkillRecord(ReadModel):
    """One skill.

    ``callable`` is true when the grade may be used (draft, confirmed, stable) and the skill
    either has no recipe or a complete one (steps, verification and tool policy).
    ``when_to_use`` is None when empty (Philont shows it as ``''``).
    """

    id: str
    name: str
    description: str
    when_to_use: str | None
    trigger_keywords: list[str]
    action_template: str
    kind: SkillKind
    source: str | None
    grade: Grade
    use_count: int
    success_count: int
    failure_count: int
    consecutive_failures: int
    last_used_at: datetime | None
    last_success_at: datetime | None
    last_failure_at: datetime | None
    created_at: datetime
    callable: bool
    recipe: RecipeRecord | None


class RecipeRevisionRecord(ReadModel):
    """One revision of a skill's content and the outcomes recorded while it was current.

    Revision 0, when present, is the skill as it was before its first recipe (listed only when
    outcomes had been recorded by then). ``replaced_at`` is None and ``current`` true for the
    revision in force; its counts are live.
    """

    revision: int
    description: str
    action_template: str
    trigger_keywords: list[str]
    steps: list[str]
    verification: str | None
    tool_policy: list[str]
    success_count: int
    failure_count: int
    created_at: datetime
    replaced_at: datetime | None
    current: bool

    @property
    def success_rate(self) -> float | None:
        """Successes per recorded outcome during this revision, None when none was recorded."""
        total = self.success_count + self.failure_count
        return None if total == 0 else self.success_count / total


class SkillUse(ReadModel):
    """What the tool layer hands to the model when it uses a skill: the skill and its caveat."""

    skill: SkillRecord
    caveat: str

    @property
    def name(self) -> str:
        return self.skill.name

    @property
    def action_template(self) -> str:
        return self.skill.action_template


class GradeChange(NamedTuple):
    """A grade changed by disuse decay: ``(name, old, new)``."""

    name: str
    old: Grade
    new: Grade
