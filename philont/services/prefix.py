"""The memory prefix: a condensed, token-capped index of what memory holds, for the system
prompt — facts ranked by decay score with time tags, callable skills with their caveat,
lessons to avoid, important notes, the host environment and an active plan."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter, neg
from typing import TYPE_CHECKING

from philont.db.backend import Raw
from philont.db.queries import facts as fact_rows
from philont.db.queries import notes as note_rows
from philont.db.queries import skills as skill_rows
from philont.db.queries.skills import RankedSkill
from philont.db.stored_values import careful_read
from philont.db.types import dumps_compact, to_epoch_ms
from philont.domain.facts import time_tag
from philont.domain.graphemes import clip
from philont.domain.kinds import SkillKind
from philont.domain.maturity import (
    callable_skill,
    caveat,
    parse_grade,
)
from philont.domain.skill_score import score_stored
from philont.domain.tokens import TokenEstimator, default_estimator
from philont.errors import InvalidInputError
from philont.schemas import inputs
from philont.schemas.inputs import RUNTIME_NAMESPACE_ROOT
from philont.schemas.prefix import MemoryPrefixResult, PrefixSection
from philont.services.base import Service
from philont.services.fact_base import holding, scores_raw

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
_NEGATIVE = SkillKind.NEGATIVE.value  # as stored

_Entries = Callable[[], Iterable[str]]
"""A section's best entries in order, formatted as they are asked for (a section the budget
never reaches is never ranked or formatted)."""
_Section = tuple[str, str, int, _Entries]


@dataclass(frozen=True)
class PrefixLimits:
    """Caps: total tokens, and how many candidates each section considers."""

    budget_tokens: int = 2000
    facts: int = 60
    skills: int = 15
    lessons: int = 5
    notes: int = 10


def _cut(text: str, n: int) -> str:
    return clip(" ".join(text.split()), n)


def _frame_tokens(estimator: TokenEstimator) -> int:
    """What the header and the footer alone cost: the least budget that can hold a prefix."""
    return estimator(f"{HEADER}\n{FOOTER}")


def _check_limits(limits: PrefixLimits, estimator: TokenEstimator) -> None:
    for name in ("facts", "skills", "lessons", "notes"):
        value = getattr(limits, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError.of(
                "limits", f"{name} must be a positive integer, got {value!r}"
            )
    budget, frame = limits.budget_tokens, _frame_tokens(estimator)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < frame:
        raise InvalidInputError.of(
            "limits",
            f"budget_tokens must be an integer >= {frame} (the header and footer alone), "
            f"got {budget!r}",
        )


def _more(omitted: int, name: str, shown: int = 1) -> str:
    return f"  ({omitted} {'more ' if shown else ''}{name} not shown)"


_JSON_WORDS = frozenset({"true", "false", "null"})


def _compact_json(stored: str) -> str:
    """``dumps_compact(json.loads(stored))``: a stored value as the model sees it. A plain JSON
    string (the usual value) comes back unchanged, so it skips the round trip: without quotes,
    backslashes, control or other non-printable characters inside, nothing in it is escaped
    either way. So do ``true``, ``false``, ``null`` and an integer written as JSON writes it
    (no leading zero, no ``-0``, no exponent; up to 18 digits)."""
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
    if stored in _JSON_WORDS:
        return stored
    digits = stored[1:] if stored[:1] == "-" else stored
    if (
        0 < len(digits) <= 18
        and digits.isascii()
        and digits.isdigit()
        and (digits[0] != "0" or stored == "0")
    ):
        return stored
    return dumps_compact(json.loads(stored))


FACT_LINES_KEPT = 1024
"""How many fact lines :func:`_kept_fact_line` keeps formatted."""
KEPT_VALUE_CHARS = 1024
"""Lines are kept only for values up to this long as stored (a line shows 200 characters of
a value; what a kept line holds stays a few megabytes whatever the facts hold)."""
SKILL_CHECKS_KEPT = 1024
"""How many skills' "may it be called" answers :func:`_kept_callable_skill` keeps."""


def _fact_line(
    namespace: str,
    key: str,
    value_json: str,
    fact_kind: str,
    created_ms: int,
    occurred_ms: int | None,
    valid_from_ms: int | None,
    valid_until_ms: int | None,
) -> str:
    """A fact's line as the model reads it: its key, compact value and time tag. A function
    of the stored values it is given and of nothing else (not of the clock, the database or
    the unit of work)."""
    return f"- {namespace}.{key} = {_cut(_compact_json(value_json), VALUE_CHARS)} " + time_tag(
        fact_kind=fact_kind,
        created_ms=created_ms,
        occurred_ms=occurred_ms,
        valid_from_ms=valid_from_ms,
        valid_until_ms=valid_until_ms,
    )


_kept_fact_line = functools.lru_cache(maxsize=FACT_LINES_KEPT, typed=True)(_fact_line)
""":func:`_fact_line`, kept for the values it was given: the same facts are formatted on every
turn, and a write gives other values, which are formatted anew. ``typed``: an integer and an
equal float or bool are different values here."""


_kept_callable_skill = functools.lru_cache(maxsize=SKILL_CHECKS_KEPT, typed=True)(callable_skill)
""":func:`~philont.domain.maturity.callable_skill` (a function of the stored values it is
given), kept for the values it was given: the same skills are checked on every turn (each a
JSON parse of its recipe's steps and tool policy), and a write gives other values, which are
checked anew."""


def _is_callable(row: RankedSkill) -> bool:
    """:func:`~philont.db.queries.skills.is_callable` of ``row``, kept
    (:func:`_kept_callable_skill`) for a recipe of text up to KEPT_VALUE_CHARS long, as a
    fact line is."""
    steps, verification, policy = row.steps, row.verification, row.tool_policy
    if _keepable(steps) and _keepable(verification) and _keepable(policy):
        return _kept_callable_skill(
            maturity=row.maturity,
            recipe_revision=row.revision,
            steps=steps,
            verification=verification,
            tool_policy=policy,
        )
    return skill_rows.is_callable(row)


def _keepable(value: object) -> bool:
    return value is None or (isinstance(value, str) and len(value) <= KEPT_VALUE_CHARS)


def _runtime(namespace: str) -> bool:
    """Whether ``namespace`` is the runtime's own (``system`` and below)."""
    return namespace.partition(".")[0] == RUNTIME_NAMESPACE_ROOT


def _stored_kind(value: str) -> SkillKind:
    return _KINDS.get(value, _POSITIVE)  # the model reads an unknown kind as positive


class MemoryPrefix(Service):
    """Builds the prefix deterministically from the database and ``now``. Reading facts here
    does not refresh their access time (the original bumped self facts every turn, Q-P3)."""

    unstored = frozenset({"environment", "plan"})  # shown in the prefix, never stored

    def __init__(self, mem: Memory, *, estimator: TokenEstimator = default_estimator) -> None:
        super().__init__(mem)
        self.estimator = estimator

    @careful_read
    def build(
        self,
        *,
        environment: str | None = None,
        plan: str | None = None,
        limits: PrefixLimits | None = None,
        now: datetime | None = None,
    ) -> MemoryPrefixResult:
        """The prefix at ``now`` (default: the clock's). Its text never costs more than
        ``limits.budget_tokens`` by the estimator: sections are filled in order, each with its
        best entries while they fit, and a section cut short says how many it left out."""
        limits = limits or PrefixLimits()
        _check_limits(limits, self.estimator)
        now = self._now() if now is None else inputs.check(inputs.AwareTime, now, "now")
        raw = self.mem.raw()
        sections: list[_Section] = []
        # Blank text is no section (it gave a heading over an empty line).
        env_line = _cut(environment or "", 400)
        if env_line:
            sections.append(("environment", "## Runtime environment", 1, lambda: [env_line]))
        plan_line = _cut(plan or "", 1200)
        if plan_line:
            sections.append(("plan", "## Active plan", 1, lambda: [plan_line]))
        facts, total = self._facts(raw, now, limits.facts)
        sections.append(("facts", "## Known facts (most relevant first)", total, facts))
        sections.extend(self._skills(raw, limits, now))
        notes = note_rows.most_important(raw, limits.notes)
        sections.append(
            (
                "notes",
                "## Notes",
                len(notes),
                lambda: (f"- ({n.importance:.1f}) {_cut(n.content, TEXT_CHARS)}" for n in notes),
            )
        )
        return self._assemble(sections, limits.budget_tokens)

    def _facts(self, raw: Raw, now: datetime, limit: int) -> tuple[_Entries, int]:
        """The best ``limit`` facts holding at ``now`` by decay score (ties keep namespace,
        key order), as lines formatted on demand; and how many such facts exist. What holds
        is what ``FactService.list`` lists (:func:`~philont.services.fact_base.holding`).
        The runtime's own state (``system`` and below: the consolidator's cursor, pinned, so
        it outranked every fact) is no knowledge to show the model."""
        now_ms = to_epoch_ms(now)
        rows = [
            row
            for row in fact_rows.current(raw)
            # a text test first: few namespaces start with the runtime's root at all
            if not row.namespace.startswith(RUNTIME_NAMESPACE_ROOT) or not _runtime(row.namespace)
        ]
        recorded_by = to_epoch_ms(self._now())
        held = holding(rows, now_ms, lambda: fact_rows.others_of_lapsed(raw, now_ms, recorded_by))
        scored = list(zip(map(neg, scores_raw(held, now_ms)), held, strict=True))
        scored.sort(key=itemgetter(0))  # stable: equal scores keep the SQL order

        def lines() -> Iterator[str]:
            for _s, f in scored[:limit]:
                line = _kept_fact_line if len(f.value_json) <= KEPT_VALUE_CHARS else _fact_line
                yield line(
                    f.namespace,
                    f.key,
                    f.value_json,
                    f.fact_kind,
                    f.created_at,
                    f.occurred_at,
                    f.valid_from,
                    f.valid_until,
                )

        return lines, len(scored)

    def _skills(self, raw: Raw, limits: PrefixLimits, now: datetime) -> tuple[_Section, _Section]:
        """Callable positive skills and lessons (negative skills), each ranked by
        ``score_skill`` at the prefix's ``now``, as ``SkillService.list`` ranks them at its
        clock (ties keep use_count, created_at order). They are counted here and ranked only
        if the budget reaches them."""
        rows = skill_rows.not_deprecated(raw)

        def usable(row: RankedSkill) -> bool:
            return _stored_kind(row.kind) == _POSITIVE and _is_callable(row)

        @functools.cache
        def ranked() -> list[RankedSkill]:
            now_us = to_epoch_ms(now) * 1000 + now.microsecond % 1000  # exact, as datetimes do
            scores = score_stored(rows, now_us)
            # One stable sort serves both lists: filtering a stably sorted list keeps the
            # order that sorting the filtered rows would give.
            order = sorted(range(len(rows)), key=scores.__getitem__, reverse=True)
            return [rows[i] for i in order]

        def skills() -> Iterator[str]:
            for s in itertools.islice(filter(usable, ranked()), limits.skills):
                when = f" — when: {_cut(s.when_to_use, 120)}" if s.when_to_use else ""
                grade = caveat(parse_grade(s.maturity))
                yield f"- {s.name} {grade}: {_cut(s.description, TEXT_CHARS)}{when}"

        def lessons() -> Iterator[str]:
            negative = (s for s in ranked() if s.kind == _NEGATIVE)
            for s in itertools.islice(negative, limits.lessons):
                yield f"- {s.name}: {_cut(s.description, TEXT_CHARS)}"

        n_skills = sum(1 for _ in itertools.islice(filter(usable, rows), limits.skills))
        n_lessons = min(limits.lessons, sum(1 for s in rows if s.kind == _NEGATIVE))
        return (
            ("skills", "## Skills I can use (use_skill(name) for the steps)", n_skills, skills),
            ("lessons", "## Lessons — avoid repeating these", n_lessons, lessons),
        )

    def _assemble(self, sections: list[_Section], budget: int) -> MemoryPrefixResult:
        """Fill the sections under ``budget``. Each line is charged with its newline, so the
        estimate of the whole text stays within the budget for an estimator that counts a text
        at most as its lines counted apart (the default does); for any other, the fill is done
        again under a smaller budget until the whole text fits."""
        limit = budget
        while True:
            result = self._fill(sections, limit)
            if result.tokens <= budget:
                return result
            limit -= result.tokens - budget  # the header and footer alone always fit

    def _fill(self, sections: list[_Section], limit: int) -> MemoryPrefixResult:
        """A section is (name, heading, how many entries it has, its best entries in order);
        an entry is taken while it fits together with the note saying how many of its section
        are left out (if any would be), and entries past the budget are never formatted.
        Room for the heading and the "(N … not shown)" line of every later section is kept,
        so an earlier section never hides that a later one exists."""
        est = self.estimator
        lines = [HEADER]
        used = est(HEADER + "\n") + est(FOOTER)
        least = [est(h + "\n") + est(_more(c, n, 0) + "\n") if c else 0 for n, h, c, _ in sections]
        report: list[PrefixSection] = []
        for i, (name, heading, count, entries) in enumerate(sections):
            if not count:
                continue
            room = limit - sum(least[i + 1 :])
            shown = 0
            head_cost = est(heading + "\n")
            for entry in entries() if used + head_cost < room else ():
                more = est(_more(count - shown - 1, name) + "\n") if count > shown + 1 else 0
                cost = est(entry + "\n") + (head_cost if shown == 0 else 0)
                if used + cost + more > room:
                    break
                if shown == 0:
                    lines.append(heading)
                lines.append(entry)
                used += cost
                shown += 1
            note = _more(count - shown, name, shown)
            cost = est(note + "\n") + (0 if shown else head_cost)
            if count > shown and (shown or used + cost <= room):
                lines.extend([note] if shown else [heading, note])
                used += cost
            report.append(PrefixSection(name=name, shown=shown, omitted=count - shown))
        lines.append(FOOTER)
        text = "\n".join(lines)
        return MemoryPrefixResult(text=text, tokens=est(text), sections=report)
