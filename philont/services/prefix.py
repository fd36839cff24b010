"""The memory prefix: a condensed, token-capped index of what memory holds, for the system
prompt — facts ranked by decay score with time tags, callable skills with their caveat,
lessons to avoid, important notes, the host environment and an active plan."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any

from sqlalchemy.orm import Session

from philont.clock import Clock, utc_now
from philont.db.models.recipes import NO_RECIPE_REVISION
from philont.db.types import dumps_compact, from_epoch_ms, to_epoch_ms
from philont.domain import decay
from philont.domain.kinds import SkillKind
from philont.domain.maturity import Grade, caveat, is_callable, parse_grade, recipe_is_callable
from philont.domain.skill_score import score_idle
from philont.domain.timeparse import iso
from philont.domain.tokens import TokenEstimator, default_estimator
from philont.errors import InvalidInputError
from philont.schemas.prefix import MemoryPrefixResult, PrefixSection
from philont.services._checks import aware
from philont.services.search import DbConn, driver_connection, fetch_all

HEADER = "[Memory — what I already know; no need to ask again]"
FOOTER = "[End of memory]"
VALUE_CHARS = 200
TEXT_CHARS = 160

# The prefix is built on every turn, so it reads stored values on the DB-API connection (as
# search does) and formats only the entries it may show. Each query mirrors a service call,
# kept byte-identical by tests/integration/test_prefix_golden.py:
# FactService.list(None, ranked=True, include_expired=False) and FactService.count,
# SkillService.list(callable_only=True) and SkillService.list(kind="negative"), and
# NoteService.list.
_FACTS_SQL = (
    "SELECT namespace, key, value_json, confidence, fact_kind, created_at, occurred_at, valid_from,"
    " valid_until, last_accessed_at, decay_tau_days FROM memory_facts"
    " WHERE superseded_by IS NULL AND forgotten_at IS NULL ORDER BY namespace, key, created_at"
)
_SKILLS_SQL = (
    "SELECT s.name, s.description, s.when_to_use, s.kind, s.maturity, s.use_count,"
    " s.success_count, s.failure_count, s.last_used_at, r.revision, r.steps_json,"
    " r.verification, r.tool_policy_json"
    " FROM memory_skills s LEFT JOIN philont_skill_recipes r ON r.skill_id = s.id"
    " WHERE s.maturity != 'deprecated' ORDER BY s.use_count DESC, s.created_at DESC, s.id"
)
_NOTES_SQL = (
    "SELECT importance, content FROM memory_notes WHERE forgotten_at IS NULL"
    " ORDER BY importance DESC, created_at DESC, id LIMIT ?"
)
_CALLABLE_STORED = frozenset(g.value for g in Grade if is_callable(g))
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


def _iso_ms(value: int | None, missing: str) -> str:
    return missing if value is None else iso(from_epoch_ms(value))


def _time_tag(
    kind: str, created: int, occurred: int | None, start: int | None, end: int | None
) -> str:
    """``FactRecord.time_tag`` on stored values."""
    if kind == "event":
        return f"[event@{_iso_ms(occurred, '?')} | recorded {_iso_ms(created, '')}]"
    return f"[state {_iso_ms(start, '?')} → {_iso_ms(end, '∞')} | recorded {_iso_ms(created, '')}]"


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


def _str_list(value: str | None) -> list[str]:
    items = json.loads(value) if value is not None else None
    return [i for i in items if isinstance(i, str)] if isinstance(items, list) else []


def _callable(row: Sequence[Any]) -> bool:
    """``SkillService.list(callable_only=True)``'s filter: a callable stored grade and, when
    the skill has a recipe, a complete one."""
    maturity, revision, steps, verification, policy = row[4], row[9], row[10], row[11], row[12]
    if maturity not in _CALLABLE_STORED:
        return False
    return (
        revision is None
        or revision <= NO_RECIPE_REVISION
        or recipe_is_callable(
            steps=_str_list(steps), verification=verification, tool_policy=_str_list(policy)
        )
    )


def _stored_kind(value: str) -> SkillKind:
    return _KINDS.get(value, _POSITIVE)  # the model reads an unknown kind as positive


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
        _check_limits(limits)
        now = aware(now or self.clock(), "now")
        conn = driver_connection(self.session)
        sections: list[_Section] = []
        if environment:
            sections.append(("environment", "## Runtime environment", 1, [_cut(environment, 400)]))
        if plan:
            sections.append(("plan", "## Active plan", 1, [_cut(plan, 1200)]))
        now_ms = to_epoch_ms(now)
        facts, total = self._facts(conn, now_ms, limits.facts)
        sections.append(("facts", "## Known facts (most relevant first)", total, facts))
        skills, lessons = self._skills(conn, limits)
        sections.append(
            ("skills", "## Skills I can use (use_skill(name) for the steps)", len(skills), skills)
        )
        sections.append(("lessons", "## Lessons — avoid repeating these", len(lessons), lessons))
        notes = [
            f"- ({importance:.1f}) {_cut(content, TEXT_CHARS)}"
            for importance, content in fetch_all(conn, _NOTES_SQL, (limits.notes,))
        ]
        sections.append(("notes", "## Notes", len(notes), notes))
        return self._assemble(sections, limits.budget_tokens)

    def _facts(self, conn: DbConn, now_ms: int, limit: int) -> tuple[Iterator[str], int]:
        """The best ``limit`` current, unexpired facts by decay score at ``now_ms`` (ties keep
        namespace, key order), as lines formatted on demand; and how many such facts exist."""
        score, tau_of, ms_per_day = decay.score_days, decay.effective_tau_days, decay.MS_PER_DAY
        taus: dict[tuple[str, float | None], float] = {}
        scored = []
        for row in fetch_all(conn, _FACTS_SQL):
            ns, _k, _v, confidence, kind, created, _o, _s, until, accessed, tau = row
            if until is not None and until < now_ms and kind != "event":
                continue
            tau_days = taus.get((ns, tau))
            if tau_days is None:
                tau_days = taus[ns, tau] = tau_of(ns, tau)
            age_days = (now_ms - (created if accessed is None else accessed)) / ms_per_day
            relevance = score(confidence=confidence, age_days=age_days, tau_days=tau_days)
            scored.append((-relevance, row))
        scored.sort(key=itemgetter(0))  # stable: equal scores keep the SQL order
        lines = (
            f"- {ns}.{key} = {_cut(_compact_json(value), VALUE_CHARS)} "
            + _time_tag(kind, created, occurred, start, until)
            for _s, (ns, key, value, _c, kind, created, occurred, start, until, _a, _t) in scored[
                :limit
            ]
        )
        return lines, len(scored)

    def _skills(self, conn: DbConn, limits: PrefixLimits) -> tuple[list[str], list[str]]:
        """Callable positive skills and lessons (negative skills), each ranked by
        ``score_skill`` at the clock's now, as ``SkillService.list`` ranks them (ties keep
        use_count, created_at order)."""
        now = self.clock()
        now_us = to_epoch_ms(now) * 1000 + now.microsecond % 1000  # exact, as datetimes subtract

        def score(row: tuple[Any, ...]) -> float:
            last = row[8]
            return score_idle(
                use_count=row[5],
                success_count=row[6],
                failure_count=row[7],
                idle_days=None if last is None else (now_us - last * 1000) / _US_PER_DAY,
                kind=_stored_kind(row[3]),
            )

        # One stable sort serves both lists: filtering a stably sorted list keeps the order
        # that sorting the filtered rows would give.
        ranked = sorted(fetch_all(conn, _SKILLS_SQL), key=score, reverse=True)
        usable = [
            row
            for row in itertools.islice(filter(_callable, ranked), limits.skills)
            if _stored_kind(row[3]) == _POSITIVE
        ]
        negative = [row for row in ranked if row[3] == SkillKind.NEGATIVE.value][: limits.lessons]
        skills = [
            f"- {name} {caveat(parse_grade(maturity))}: {_cut(description, TEXT_CHARS)}"
            + (f" — when: {_cut(when, 120)}" if when else "")
            for name, description, when, _k, maturity, *_rest in usable
        ]
        lessons = [f"- {row[0]}: {_cut(row[1], TEXT_CHARS)}" for row in negative]
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
