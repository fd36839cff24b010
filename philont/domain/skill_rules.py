"""What reflection may do to the skill layer: create, update, merge, or refuse; and which drafts
the cap prunes.

Philont's reflector (spec §10, §17.3) overwrote any skill whose name the model proposed —
bundled, ClawHub and stable ones included, flipping polarity on the way (Q-K3) — merged
near-duplicates into playbooks, and its draft cap deleted disk-loaded skills, oldest first
(Q-K4). The rules here:

* A skill is *protected* when it is a playbook, stable, has a recipe, or came from outside
  (its ``source`` is set and does not start with ``self:``). Reflection never writes to a
  protected skill, neither by name nor by merging; a deprecated skill is not rewritten either
  (revive it by hand first).
* A proposal never changes a skill's kind.
* A proposal with a new name that is a near-duplicate (:mod:`philont.domain.similarity`) of a
  same-kind, non-deprecated skill is merged into the closest one, unless that one is
  protected: then the proposal is refused (it restates a curated skill).
* The draft cap counts and prunes only drafts reflection may delete: no recipe, and a source
  that is empty or ``self:...``. The lowest-scored go first; ties go oldest first, then by id.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from philont.domain.kinds import SkillKind
from philont.domain.maturity import Grade
from philont.domain.similarity import DUPLICATE_THRESHOLD, SkillText, near_duplicates

__all__ = [
    "DEFAULT_MAX_DRAFTS",
    "MAX_KEYWORDS",
    "SELF_SOURCE_PREFIX",
    "DraftSkill",
    "KnownSkill",
    "Refusal",
    "SkillContent",
    "WriteAction",
    "WriteDecision",
    "decide_write",
    "drafts_to_prune",
    "is_external_source",
    "protection",
]

SELF_SOURCE_PREFIX: Final = "self:"
"""Sources of skills the agent made itself (Philont: ``self:reflect-…``)."""

DEFAULT_MAX_DRAFTS: Final = 40
"""Philont's ``MAX_DRAFT_SKILLS``."""

MAX_KEYWORDS: Final = 20
"""Trigger keywords kept when an update or merge unites old and new ones."""


def is_external_source(source: str | None) -> bool:
    """Whether a skill came from outside (disk, a package, a hub...) rather than from the agent:
    a non-blank ``source`` that does not start with ``self:`` (Philont's
    ``listExternalSkills``)."""
    return source is not None and bool(source.strip()) and not source.startswith(SELF_SOURCE_PREFIX)


class Refusal(enum.StrEnum):
    """Why a proposal was refused."""

    PLAYBOOK = "protected_playbook"
    STABLE = "protected_stable"
    RECIPE = "protected_recipe"
    EXTERNAL = "protected_external"
    DEPRECATED = "deprecated"
    KIND_CONFLICT = "kind_conflict"


def protection(grade: Grade, source: str | None, *, has_recipe: bool) -> tuple[Refusal, str] | None:
    """Why reflection must not rewrite a skill (a clause: "is a playbook ..."), or None when
    it may."""
    if grade == Grade.PLAYBOOK:
        return Refusal.PLAYBOOK, "is a playbook (a curated lesson)"
    if grade == Grade.STABLE:
        return Refusal.STABLE, "is stable (earned by observed outcomes)"
    if has_recipe:
        return Refusal.RECIPE, "has a recipe (curated steps and verification)"
    if is_external_source(source):
        return Refusal.EXTERNAL, f"came from outside (source {source!r})"
    if grade == Grade.DEPRECATED:
        return Refusal.DEPRECATED, "is deprecated (proven unreliable; revive it by hand first)"
    return None


@dataclass(frozen=True)
class SkillContent:
    """The text of a skill that reflection writes."""

    description: str
    trigger_keywords: tuple[str, ...]
    action_template: str
    when_to_use: str | None = None


@dataclass(frozen=True)
class KnownSkill:
    """An existing skill, as far as the rules need it."""

    name: str
    kind: SkillKind
    grade: Grade
    source: str | None
    has_recipe: bool
    content: SkillContent
    created_at: datetime

    def text(self) -> SkillText:
        return SkillText(self.name, self.content.when_to_use, self.content.description)


class WriteAction(enum.StrEnum):
    CREATE = "created"
    UPDATE = "updated"
    MERGE = "merged"
    UNCHANGED = "unchanged"
    REFUSE = "refused"


@dataclass(frozen=True)
class WriteDecision:
    """What to do with one proposal. ``target`` is the skill written (or the one in the way);
    ``content`` what to write (create, update, merge); ``refusal`` why not (refuse)."""

    action: WriteAction
    target: str
    detail: str
    content: SkillContent | None = None
    refusal: Refusal | None = None
    similarity: float | None = None


def _combined(old: SkillContent, new: SkillContent) -> SkillContent:
    """The new text, keeping the old keywords (first) and the old when-to-use if none is new."""
    keywords = tuple(dict.fromkeys((*old.trigger_keywords, *new.trigger_keywords)))
    return replace(
        new,
        trigger_keywords=keywords[:MAX_KEYWORDS],
        when_to_use=new.when_to_use if new.when_to_use else old.when_to_use,
    )


def _refuse(
    target: str, why: tuple[Refusal, str], similarity: float | None = None
) -> WriteDecision:
    return WriteDecision(WriteAction.REFUSE, target, why[1], refusal=why[0], similarity=similarity)


def _onto_same_name(
    name: str, kind: SkillKind, content: SkillContent, same: KnownSkill
) -> WriteDecision:
    why = protection(same.grade, same.source, has_recipe=same.has_recipe)
    if why is not None:
        return _refuse(name, (why[0], f"the name belongs to a skill that {why[1]}"))
    if same.kind != kind:
        detail = f"{name!r} is a {same.kind.value} skill; a {kind.value} proposal never flips it"
        return _refuse(name, (Refusal.KIND_CONFLICT, detail))
    merged = _combined(same.content, content)
    if merged == same.content:
        return WriteDecision(WriteAction.UNCHANGED, name, "same content as stored")
    return WriteDecision(WriteAction.UPDATE, name, "rewrote the skill of that name", merged)


def _onto_duplicate(content: SkillContent, target: KnownSkill, score: float) -> WriteDecision:
    why = protection(target.grade, target.source, has_recipe=target.has_recipe)
    if why is not None:
        detail = f"near-duplicate ({score:.2f}) of {target.name!r}, which {why[1]}"
        return _refuse(target.name, (why[0], detail), score)
    merged = _combined(target.content, content)
    if merged == target.content:
        detail = f"same content as {target.name!r}"
        return WriteDecision(WriteAction.UNCHANGED, target.name, detail, similarity=score)
    detail = f"near-duplicate ({score:.2f}) of {target.name!r}: merged into it"
    return WriteDecision(WriteAction.MERGE, target.name, detail, merged, similarity=score)


def decide_write(
    name: str,
    kind: SkillKind,
    content: SkillContent,
    *,
    same_name: KnownSkill | None,
    others: Sequence[KnownSkill],
    threshold: float = DUPLICATE_THRESHOLD,
) -> WriteDecision:
    """Decide what a proposed skill ``name`` (of ``kind``, with ``content``) does, given the
    skill that has that name (if any) and the ``others`` (see the module docstring)."""
    if same_name is not None:
        return _onto_same_name(name, kind, content, same_name)
    pool = [
        other.text()
        for other in others
        if other.kind == kind and other.grade != Grade.DEPRECATED and other.name != name
    ]
    probe = SkillText(name, content.when_to_use, content.description)
    hits = near_duplicates(probe, pool, threshold=threshold, limit=1)
    if not hits:
        return WriteDecision(WriteAction.CREATE, name, "new skill", content)
    best, score = hits[0]
    target = next(other for other in others if other.name == best.name)
    return _onto_duplicate(content, target, score)


@dataclass(frozen=True)
class DraftSkill:
    """A draft skill as the cap sees it."""

    id: str
    name: str
    source: str | None
    has_recipe: bool
    score: float
    created_at: datetime

    @property
    def prunable(self) -> bool:
        return not self.has_recipe and not is_external_source(self.source)


def drafts_to_prune(drafts: Sequence[DraftSkill], cap: int) -> list[DraftSkill]:
    """The drafts to delete so that at most ``cap`` prunable drafts remain: the lowest scores
    first, ties oldest first, then by id. External drafts and drafts with a recipe are neither
    counted nor deleted. A negative ``cap`` prunes nothing."""
    if cap < 0:
        return []
    prunable = [d for d in drafts if d.prunable]
    excess = len(prunable) - cap
    if excess <= 0:
        return []
    return sorted(prunable, key=lambda d: (d.score, d.created_at, d.id))[:excess]
