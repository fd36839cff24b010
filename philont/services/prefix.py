"""The memory prefix: a condensed, token-capped index of what memory holds, for the system
prompt — facts ranked by decay score with time tags, callable skills with their caveat,
lessons to avoid, important notes, the host environment and an active plan."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from philont.clock import Clock, utc_now
from philont.db.types import dumps_compact
from philont.domain.kinds import SkillKind
from philont.domain.maturity import caveat
from philont.domain.tokens import TokenEstimator, default_estimator
from philont.schemas.prefix import MemoryPrefixResult, PrefixSection
from philont.services.facts import FactService
from philont.services.notes import NoteService
from philont.services.skills import SkillService

HEADER = "[Memory — what I already know; no need to ask again]"
FOOTER = "[End of memory]"
VALUE_CHARS = 200
TEXT_CHARS = 160


@dataclass(frozen=True)
class PrefixLimits:
    """Caps: total tokens, and how many candidates each section considers."""

    budget_tokens: int = 2000
    facts: int = 60
    skills: int = 15
    lessons: int = 5
    notes: int = 10


def _cut(text: str, n: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


class MemoryPrefix:
    """Builds the prefix deterministically from the database and ``now``. Reading facts here
    does not refresh their access time (the original bumped self facts every turn, Q-P3)."""

    def __init__(
        self,
        session: Session,
        *,
        clock: Clock = utc_now,
        estimator: TokenEstimator = default_estimator,
    ) -> None:
        self.session = session
        self.clock = clock
        self.estimator = estimator

    def build(
        self,
        *,
        environment: str | None = None,
        plan: str | None = None,
        limits: PrefixLimits | None = None,
        now: datetime | None = None,
    ) -> MemoryPrefixResult:
        limits = limits or PrefixLimits()
        now = now or self.clock()
        sections: list[tuple[str, str, Sequence[str]]] = []
        if environment:
            sections.append(("environment", "## Runtime environment", [_cut(environment, 400)]))
        if plan:
            sections.append(("plan", "## Active plan", [_cut(plan, 1200)]))
        fact_service = FactService(self.session, clock=self.clock)
        facts = fact_service.list(
            None, ranked=True, now=now, include_expired=False, limit=limits.facts
        )
        totals = {"facts": fact_service.count(now=now, include_expired=False)}
        sections.append(
            (
                "facts",
                "## Known facts (most relevant first)",
                [
                    f"- {f.namespace}.{f.key} = {_cut(dumps_compact(f.value), VALUE_CHARS)} "
                    f"{f.time_tag()}"
                    for f in facts
                ],
            )
        )
        skills = SkillService(self.session, clock=self.clock)
        usable = [
            s
            for s in skills.list(limits.skills, callable_only=True)
            if s.kind == SkillKind.POSITIVE
        ]
        sections.append(
            (
                "skills",
                "## Skills I can use (use_skill(name) for the steps)",
                [
                    f"- {s.name} {caveat(s.grade)}: {_cut(s.description, TEXT_CHARS)}"
                    + (f" — when: {_cut(s.when_to_use, 120)}" if s.when_to_use else "")
                    for s in usable
                ],
            )
        )
        lessons = skills.list(limits.lessons, kind=SkillKind.NEGATIVE)
        sections.append(
            (
                "lessons",
                "## Lessons — avoid repeating these",
                [f"- {s.name}: {_cut(s.description, TEXT_CHARS)}" for s in lessons],
            )
        )
        notes = NoteService(self.session, clock=self.clock).list(limit=limits.notes)
        sections.append(
            (
                "notes",
                "## Notes",
                [f"- ({n.importance:.1f}) {_cut(n.content, TEXT_CHARS)}" for n in notes],
            )
        )
        return self._assemble(sections, limits.budget_tokens, totals)

    def _assemble(
        self,
        sections: list[tuple[str, str, Sequence[str]]],
        budget: int,
        totals: dict[str, int],
    ) -> MemoryPrefixResult:
        """Fill sections in order under the token budget; ``totals`` gives a section's full
        size when only its best candidates were passed in."""
        lines = [HEADER]
        used = self.estimator(HEADER) + self.estimator(FOOTER)
        report: list[PrefixSection] = []
        for name, heading, items in sections:
            if not items:
                continue
            shown = 0
            head_cost = self.estimator(heading)
            for item in items:
                cost = self.estimator(item) + (head_cost if shown == 0 else 0)
                if used + cost > budget:
                    break
                if shown == 0:
                    lines.append(heading)
                lines.append(item)
                used += cost
                shown += 1
            omitted = max(totals.get(name, 0), len(items)) - shown
            if omitted and shown:
                note = f"  ({omitted} more {name} not shown)"
                lines.append(note)
                used += self.estimator(note)
            report.append(PrefixSection(name=name, shown=shown, omitted=omitted))
        lines.append(FOOTER)
        text = "\n".join(lines)
        return MemoryPrefixResult(text=text, tokens=self.estimator(text), sections=report)
