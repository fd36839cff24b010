"""Rules of facts over stored values (epoch ms, stored kind text): expiry, ranking, time tag.

One implementation each, used by every path that needs it: FactService, the memory prefix, the
tools and the CLI (through FactRecord).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from math import isfinite
from typing import TypeVar

from philont.domain import decay
from philont.domain.timeparse import iso
from philont.domain.timepolicy import MAX_INSTANT, MIN_INSTANT

__all__ = [
    "Scored",
    "Window",
    "held_rank",
    "is_expired",
    "is_valid_at",
    "latest_held",
    "link_depths",
    "rank_score",
    "rank_scores",
    "time_tag",
    "valid_at",
]

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def is_expired(*, fact_kind: str, valid_until_ms: int | None, now_ms: int) -> bool:
    """A state whose validity window closed before ``now_ms``. Events never expire."""
    return fact_kind != "event" and valid_until_ms is not None and valid_until_ms < now_ms


def is_valid_at(
    *, fact_kind: str, valid_from_ms: int | None, valid_until_ms: int | None, at_ms: int
) -> bool:
    """Whether a fact holds at ``at_ms``: a state inside its validity window (an open bound is
    open; neither expired nor yet to begin); an event always (it is an occurrence, kept)."""
    return valid_at(((fact_kind, valid_from_ms, valid_until_ms),), at_ms)[0]


Window = tuple[str, int | None, int | None]
"""What :func:`valid_at` reads of a fact: its stored kind, ``valid_from`` and
``valid_until`` (epoch ms)."""


def valid_at(facts: Iterable[Window], at_ms: int) -> list[bool]:
    """:func:`is_valid_at` of each fact at ``at_ms``, in one pass (the memory prefix and
    ``FactService.list`` check every current fact): an event, or a state neither yet to begin
    nor expired (:func:`is_expired`)."""
    return [
        kind == "event"
        or not ((start is not None and start > at_ms) or (until is not None and until < at_ms))
        for kind, start, until in facts
    ]


HeldRank = tuple[int, int, int, str]
"""Where a version ranks among those that held at a time (:func:`held_rank`)."""

V = TypeVar("V")


def held_rank(
    *,
    fact_id: str,
    fact_kind: str,
    created_ms: int,
    occurred_ms: int | None,
    valid_from_ms: int | None,
    valid_until_ms: int | None,
    at_ms: int,
    depth: int = 0,
) -> HeldRank | None:
    """Whether a version of a key counts as holding at ``at_ms``, and if so its rank (the
    greatest of a key's versions answers, :func:`latest_held`); ``None`` when it does not count.

    * A state counts inside its validity window (:func:`is_valid_at`) and ranks by when it was
      recorded, so the latest belief wins where windows overlap; supersession hides nothing
      (storing a past state keeps an open one holding now).
    * An event counts once it has occurred (``occurred_ms``, else ``created_ms``, at or before
      ``at_ms``; its window ignored) and ranks by its occurrence, then its recording.

    Equal stamps (versions stored in one millisecond) fall back to ``depth``, the version's
    place in its key's supersession chain (:func:`link_depths`: the one stored later wins),
    then to the id, so the choice is deterministic."""
    if fact_kind == "event":
        occurred = created_ms if occurred_ms is None else occurred_ms
        return (occurred, created_ms, depth, fact_id) if occurred <= at_ms else None
    valid = is_valid_at(
        fact_kind=fact_kind, valid_from_ms=valid_from_ms, valid_until_ms=valid_until_ms, at_ms=at_ms
    )
    return (created_ms, created_ms, depth, fact_id) if valid else None


def link_depths(links: Iterable[tuple[str, str | None]]) -> dict[str, int]:
    """Each version's place in its key's supersession chain among ``links`` (``(id,
    superseded_by)`` of versions of one key): 0 for one that superseded none of them, else one
    more than the deepest it superseded. ``created_at`` is millisecond-grained and ids are
    random, so this is what says which of two versions stored in one millisecond came later.
    Iterative (a key may have thousands of versions); a cycle (no store makes one) stays 0."""
    successor = dict(links)
    waiting = dict.fromkeys(successor, 0)  # how many of its predecessors are not placed yet
    for after in successor.values():
        if after in waiting:
            waiting[after] += 1
    depths = dict.fromkeys(successor, 0)
    ready = [vid for vid, n in waiting.items() if n == 0]
    while ready:
        vid = ready.pop()
        after = successor[vid]
        if after is None or after not in waiting:
            continue
        depths[after] = max(depths[after], depths[vid] + 1)
        waiting[after] -= 1
        if waiting[after] == 0:
            ready.append(after)
    return depths


def latest_held(ranked: Iterable[tuple[HeldRank | None, V]]) -> V | None:
    """The version of one key that held (``FactService.as_of``'s answer): the greatest
    :func:`held_rank` among those that count, or ``None`` when none does."""
    best: tuple[HeldRank, V] | None = None
    for rank, version in ranked:
        if rank is not None and (best is None or rank > best[0]):
            best = (rank, version)
    return None if best is None else best[1]


def rank_score(
    *,
    namespace: str,
    confidence: float,
    created_ms: int,
    accessed_ms: int | None,
    tau_override: float | None,
    now_ms: int,
) -> float:
    """The decayed relevance of a fact at ``now_ms``: its confidence decayed over the days since
    it was last accessed (or created), with its namespace's time constant unless overridden
    (pinned facts never decay; see :mod:`philont.domain.decay`). ``ValueError`` when that is
    no finite number (a stored infinite confidence): no score can be ranked or shown so."""
    return rank_scores(((namespace, confidence, created_ms, accessed_ms, tau_override),), now_ms)[0]


Scored = tuple[str, float, int, int | None, float | None]
"""What :func:`rank_scores` reads of a fact: its namespace, confidence, ``created_at`` and
``last_accessed_at`` (epoch ms) and ``decay_tau_days`` override."""


def rank_scores(facts: Iterable[Scored], now_ms: int) -> list[float]:
    """:func:`rank_score` of each fact at ``now_ms``, in one pass (the memory prefix ranks every
    current fact on every turn): each time constant (namespace and override) is resolved once,
    and each fact scored by one positional call (:func:`philont.domain.decay.decayer`)."""
    decayers: dict[tuple[str, float | None], decay.Decayer] = {}
    scores: list[float] = []
    add = scores.append
    for namespace, confidence, created_ms, accessed_ms, tau_override in facts:
        decayed = decayers.get((namespace, tau_override))
        if decayed is None:
            tau = decay.effective_tau_days(namespace, tau_override)
            decayed = decayers[namespace, tau_override] = decay.decayer(tau)
        anchor = created_ms if accessed_ms is None else accessed_ms
        score = decayed(confidence, (now_ms - anchor) / decay.MS_PER_DAY)
        if not isfinite(score):
            raise ValueError(f"the score of confidence {confidence!r} is no finite number")
        add(score)
    return scores


def _iso(ms: int | None, missing: str) -> str:
    if ms is None:
        return missing
    try:
        return iso(_EPOCH + timedelta(0, 0, 0, ms))
    except (OverflowError, ValueError):  # a stored time past the calendar: its nearest end
        return iso(MAX_INSTANT if ms > 0 else MIN_INSTANT)


def time_tag(
    *,
    fact_kind: str,
    created_ms: int,
    occurred_ms: int | None,
    valid_from_ms: int | None,
    valid_until_ms: int | None,
) -> str:
    """The tag the model and the user read next to a fact (UTC ISO), the one rule for the
    prefix, the tools and the command line: when it is true, then when it was recorded.

    * an event: ``[event@<occurred> | recorded …]``, and ``, valid <from> → <until>`` after the
      time when it was given a validity (how long what happened matters);
    * a state: ``[state <from> → <until> | recorded …]``, and ``, as of <occurred>`` when it
      was given the time it was observed or came about.

    ``?`` is an unknown start, ``∞`` no end. A field a fact does not have adds nothing, so
    most tags are as short as before (they showed neither an event's validity nor a state's
    time, although both were stored)."""
    if fact_kind == "event":
        when = f"event@{_iso(occurred_ms, '?')}"
        if valid_from_ms is not None or valid_until_ms is not None:
            when += f", valid {_window(valid_from_ms, valid_until_ms)}"
    else:
        when = f"state {_window(valid_from_ms, valid_until_ms)}"
        if occurred_ms is not None:
            when += f", as of {_iso(occurred_ms, '')}"
    return f"[{when} | recorded {_iso(created_ms, '')}]"


def _window(valid_from_ms: int | None, valid_until_ms: int | None) -> str:
    return f"{_iso(valid_from_ms, '?')} → {_iso(valid_until_ms, '∞')}"
