"""The memory prefix: a condensed, token-capped index of what memory holds, for the system
prompt — facts ranked by decay score with time tags, callable skills with their caveat,
lessons to avoid, important notes, the host environment and an active plan."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING

from philont.db.backend import Raw
from philont.db.queries import facts as fact_rows
from philont.db.queries import notes as note_rows
from philont.db.queries import skills as skill_rows
from philont.db.queries.skills import RankedSkill
from philont.db.types import dumps_compact, to_epoch_ms
from philont.domain import decay
from philont.domain.facts import is_valid_at, time_tag
from philont.domain.kinds import SkillKind
from philont.domain.maturity import (
    caveat,
    parse_grade,
)
from philont.domain.skill_score import score_idle
from philont.domain.tokens import TokenEstimator, default_estimator
from philont.errors import InvalidInputError
from philont.schemas import inputs
from philont.schemas.prefix import MemoryPrefixResult, PrefixSection
from philont.services.base import Service
from philont.services.fact_base import score_raw

if TYPE_CHECKING:
    from philont.memory import Memory

HEADER = "[Memory — what I already know; no need to ask again]"
FOOTER = "[End of memory]"
VALUE_CHARS = 200
TEXT_CHARS = 160

# The prefix is built on every turn, so it reads stored values through the query modules and
# formats only the entries it may show; the rules it applies (fact expiry and ranking, the time
# tag, "is this skill callable", skill ranking) are the same functions the services call.
_KINDS = {k.value: k for k in SkillKind}
_POSITIVE = SkillKind.POSITIVE  # enum members are slow to look up, and every skill needs it
_US_PER_DAY = decay.MS_PER_DAY * 1000

_Section = tuple[str, str, int, Iterable[str]]


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


def _check_limits(limits: PrefixLimits) -> None:
    for name in ("facts", "skills", "lessons", "notes"):
        value = getattr(limits, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"limits.{name} must be a positive integer, got {value!r}")


def _compact_json(stored: str) -> str:
    """``dumps_compact(json.loads(stored))``: a stored value as the model sees it. A plain JSON
    string (the usual value) comes back unchanged, so it skips the round trip: without quotes,
    backslashes, control or other non-printable characters inside, nothing in it is escaped
    either way."""
    inner = stored[1:-1]
    if (
        len(stored) >= 2
        and stored[0] == '"'
        and stored[-1] == '"'
        and '"' not in inner
        and "\\" not in inner
        and inner.isprintable()
    ):
        return stored
    return dumps_compact(json.loads(stored))


def _stored_kind(value: str) -> SkillKind:
    return _KINDS.get(value, _POSITIVE)  # the model reads an unknown kind as positive


class MemoryPrefix(Service):
    """Builds the prefix deterministically from the database and ``now``. Reading facts here
    does not refresh their access time (the original bumped self facts every turn, Q-P3)."""

    def __init__(self, mem: Memory, *, estimator: TokenEstimator = default_estimator) -> None:
        super().__init__(mem)
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
        _check_limits(limits)
        now = self._now() if now is None else inputs.check(inputs.AwareTime, now, "now")
        raw = self.mem.raw()
        sections: list[_Section] = []
        if environment:
            sections.append(("environment", "## Runtime environment", 1, [_cut(environment, 400)]))
        if plan:
            sections.append(("plan", "## Active plan", 1, [_cut(plan, 1200)]))
        now_ms = to_epoch_ms(now)
        facts, total = self._facts(raw, now_ms, limits.facts)
        sections.append(("facts", "## Known facts (most relevant first)", total, facts))
        skills, lessons = self._skills(raw, limits)
        sections.append(
            ("skills", "## Skills I can use (use_skill(name) for the steps)", len(skills), skills)
        )
        sections.append(("lessons", "## Lessons — avoid repeating these", len(lessons), lessons))
        notes = [
            f"- ({n.importance:.1f}) {_cut(n.content, TEXT_CHARS)}"
            for n in note_rows.most_important(raw, limits.notes)
        ]
        sections.append(("notes", "## Notes", len(notes), notes))
        return self._assemble(sections, limits.budget_tokens)

    def _facts(self, raw: Raw, now_ms: int, limit: int) -> tuple[Iterator[str], int]:
        """The best ``limit`` current facts valid at ``now_ms`` by decay score (ties keep
        namespace, key order), as lines formatted on demand; and how many such facts exist."""
        scored = [
            (-score_raw(row, now_ms), row)
            for row in fact_rows.current(raw)
            if is_valid_at(
                fact_kind=row.fact_kind,
                valid_from_ms=row.valid_from,
                valid_until_ms=row.valid_until,
                at_ms=now_ms,
            )
        ]
        scored.sort(key=itemgetter(0))  # stable: equal scores keep the SQL order
        lines = (
            f"- {f.namespace}.{f.key} = {_cut(_compact_json(f.value_json), VALUE_CHARS)} "
            + time_tag(
                fact_kind=f.fact_kind,
                created_ms=f.created_at,
                occurred_ms=f.occurred_at,
                valid_from_ms=f.valid_from,
                valid_until_ms=f.valid_until,
            )
            for _s, f in scored[:limit]
        )
        return lines, len(scored)

    def _skills(self, raw: Raw, limits: PrefixLimits) -> tuple[list[str], list[str]]:
        """Callable positive skills and lessons (negative skills), each ranked by
        ``score_skill`` at the clock's now, as ``SkillService.list`` ranks them (ties keep
        use_count, created_at order)."""
        now = self.clock()
        now_us = to_epoch_ms(now) * 1000 + now.microsecond % 1000  # exact, as datetimes subtract

        def score(row: RankedSkill) -> float:
            last = row.last_used_at
            return score_idle(
                use_count=row.use_count,
                success_count=row.success_count,
                failure_count=row.failure_count,
                idle_days=None if last is None else (now_us - last * 1000) / _US_PER_DAY,
                kind=_stored_kind(row.kind),
            )

        # One stable sort serves both lists: filtering a stably sorted list keeps the order
        # that sorting the filtered rows would give.
        ranked = sorted(skill_rows.not_deprecated(raw), key=score, reverse=True)
        usable = [
            row
            for row in itertools.islice(filter(skill_rows.is_callable, ranked), limits.skills)
            if _stored_kind(row.kind) == _POSITIVE
        ]
        negative = [row for row in ranked if row.kind == SkillKind.NEGATIVE.value][: limits.lessons]
        skills = [
            f"- {s.name} {caveat(parse_grade(s.maturity))}: {_cut(s.description, TEXT_CHARS)}"
            + (f" — when: {_cut(s.when_to_use, 120)}" if s.when_to_use else "")
            for s in usable
        ]
        lessons = [f"- {s.name}: {_cut(s.description, TEXT_CHARS)}" for s in negative]
        return skills, lessons

    def _assemble(self, sections: list[_Section], budget: int) -> MemoryPrefixResult:
        """Fill sections in order under the token budget. A section is (name, heading, how
        many entries it has, its best entries in order); entries past the budget are never
        formatted, and the ones left out are counted."""
        lines = [HEADER]
        used = self.estimator(HEADER) + self.estimator(FOOTER)
        report: list[PrefixSection] = []
        for name, heading, count, items in sections:
            if not count:
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
            omitted = count - shown
            if omitted and shown:
                note = f"  ({omitted} more {name} not shown)"
                lines.append(note)
                used += self.estimator(note)
            report.append(PrefixSection(name=name, shown=shown, omitted=omitted))
        lines.append(FOOTER)
        text = "\n".join(lines)
        return MemoryPrefixResult(text=text, tokens=self.estimator(text), sections=report)
