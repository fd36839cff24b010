"""Settings of the self-learning loop (what it learns) and of the idle consolidator (when)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Final

from philont.domain.shown import short
from philont.domain.similarity import DUPLICATE_THRESHOLD
from philont.domain.skill_rules import DEFAULT_MAX_DRAFTS
from philont.domain.timeparse import zone
from philont.errors import InvalidInputError
from philont.schemas.inputs import MAX_SETTING, MAX_SETTING_DURATION

__all__ = ["MAX_DRAFTS_ENV", "ConsolidatorConfig", "LearningConfig", "max_drafts_from_env"]

MAX_DRAFTS_ENV: Final = "PHILONT_MAX_DRAFT_SKILLS"


def max_drafts_from_env() -> int:
    """``$PHILONT_MAX_DRAFT_SKILLS`` when it is an integer of at least 5, else 40 (Philont); one
    past :data:`MAX_SETTING` is that (a cap no count of drafts reaches either): taken as it
    was, it was refused as ``max_drafts`` by every ``LearningConfig()``, a setting the user
    never gave, and ``philont consolidate`` could not start."""
    raw = os.environ.get(MAX_DRAFTS_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_DRAFTS
    return min(value, MAX_SETTING) if value >= 5 else DEFAULT_MAX_DRAFTS


Rule = tuple[str, type | tuple[type, ...], Callable[[Any], bool], str]
"""A setting's rule: its name, the type(s) it must have, the check of its value, and what the
message says it must be."""

_ZERO: Final = timedelta(0)


def _check(config: object, rules: tuple[Rule, ...]) -> None:
    """Every setting of ``config`` by its rule (a bool is not a number): the first one broken
    is an :class:`InvalidInputError` naming it and the value given."""
    for name, kind, ok, must in rules:
        value = getattr(config, name)
        kinds = kind if isinstance(kind, tuple) else (kind,)
        wrong_type = not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)
        if wrong_type or not ok(value):
            raise InvalidInputError.of(name, f"must be {must}, got {_shown(value)}", setting=name)


def _shown(value: object) -> str:
    if isinstance(value, timedelta):
        return f"{value.total_seconds():g} seconds"
    return short(value)


def _at_least(low: int) -> Callable[[Any], bool]:
    """From ``low`` to :data:`MAX_SETTING`."""
    return lambda value: low <= value <= MAX_SETTING


_COUNT: Final = f"a whole number from 1 to {MAX_SETTING:,}"
_WAIT: Final = f"a duration from 0 to {MAX_SETTING_DURATION.days} days"
_POSITIVE_WAIT: Final = f"a positive duration of at most {MAX_SETTING_DURATION.days} days"
MIN_LEASE: Final = timedelta(seconds=1)
"""The shortest ``lease`` (and ``max_hold``): a claim's lease is renewed every third of it, each
renewal a write transaction; a millisecond's made the renewals a busy loop of writes."""
_LEASE: Final = (
    f"a duration from {MIN_LEASE.total_seconds():g} second to {MAX_SETTING_DURATION.days} days"
)


def _wait(value: timedelta) -> bool:
    return _ZERO <= value <= MAX_SETTING_DURATION


def _positive_wait(value: timedelta) -> bool:
    return _ZERO < value <= MAX_SETTING_DURATION


def _lease(value: timedelta) -> bool:
    return MIN_LEASE <= value <= MAX_SETTING_DURATION


def _any(value: object) -> bool:
    return True


LEARNING_RULES: Final[tuple[Rule, ...]] = (
    ("max_drafts", int, _at_least(1), _COUNT),
    ("duplicate_threshold", (int, float), lambda v: 0.0 < v <= 1.0, "a number in (0, 1]"),
    ("summary_min_messages", int, _at_least(1), _COUNT),
    ("verify_then_condense", bool, _any, "True or False"),
    ("max_window_messages", int, _at_least(1), _COUNT),
    ("max_message_chars", int, _at_least(1), _COUNT),
    ("max_prompt_chars", int, _at_least(1), _COUNT),
    ("max_runs_judged", int, _at_least(0), f"a whole number from 0 to {MAX_SETTING:,}"),
)

CONSOLIDATOR_RULES: Final[tuple[Rule, ...]] = (
    ("idle_after", timedelta, _wait, _WAIT),
    ("min_messages", int, _at_least(1), _COUNT),
    ("batch_size", int, _at_least(1), _COUNT),
    ("backlog", bool, _any, "True or False"),
    ("lease", timedelta, _lease, _LEASE),
    ("max_hold", timedelta, _lease, _LEASE),
    ("retry_base", timedelta, _positive_wait, _POSITIVE_WAIT),
    ("retry_max", timedelta, _positive_wait, _POSITIVE_WAIT),
    ("interval", timedelta, _positive_wait, _POSITIVE_WAIT),
    ("max_batches_per_tick", int, _at_least(1), _COUNT),
    ("answer_attempts", int, _at_least(1), _COUNT),
)


@dataclass(frozen=True)
class LearningConfig:
    """What the loop learns and how much it reads.

    ``verify_then_condense``: positive skills are only condensed from judge-verified runs
    (cases); reflection over conversations then writes negative skills only.
    """

    timezone: str = "UTC"
    max_drafts: int = field(default_factory=max_drafts_from_env)
    duplicate_threshold: float = DUPLICATE_THRESHOLD
    summary_min_messages: int = 20
    verify_then_condense: bool = False
    max_window_messages: int = 5_000
    max_message_chars: int = 2_000
    max_prompt_chars: int = 120_000
    max_runs_judged: int = 20

    def __post_init__(self) -> None:
        zone(self.timezone)  # an unknown zone is refused here, not once per extracted fact
        _check(self, LEARNING_RULES)


@dataclass(frozen=True)
class ConsolidatorConfig:
    """When and how much the idle consolidator works.

    ``backlog=False`` is Philont's first run: the cursor is set to the newest message and the
    history before it is never processed (no bill for a long past). ``lease`` (at least a
    second) is how long a claimed batch stays ours before another process may take it over;
    it is renewed every third of it while the batch is read and thought on, but never past
    ``max_hold`` after the claim (at least one lease): a claimer that died stops renewing and
    its claim lapses after the lease, and one whose model call hangs keeps the batch at most
    ``max_hold`` (the last renewal ends the lease there), then another process takes it over
    (the hung one, back, finds its claim lost and writes nothing). A failed batch waits
    ``retry_base`` doubled per failure, at most ``retry_max``. A model answer that cannot be
    read (no JSON array where one was asked for) fails the batch like a model error, so it is
    asked again; its ``answer_attempts``-th unreadable answer is kept with what could be read
    and the report says what was lost (a model that never answers in form would otherwise stop
    learning at that batch for good). Outages (the model unreachable or erring) are counted
    apart and never spend that budget; each kind backs off by its own count.
    """

    idle_after: timedelta = timedelta(minutes=5)
    min_messages: int = 4
    batch_size: int = 1_000
    backlog: bool = False
    lease: timedelta = timedelta(minutes=10)
    # 6 leases: a batch's model calls (extraction, reflection, a summary per session, up to 20
    # verdicts) at a slow model's two minutes each; a hung call holds the batch no longer
    max_hold: timedelta = timedelta(hours=1)
    retry_base: timedelta = timedelta(minutes=1)
    retry_max: timedelta = timedelta(hours=1)
    interval: timedelta = timedelta(seconds=60)
    max_batches_per_tick: int = 10
    answer_attempts: int = 3

    def __post_init__(self) -> None:
        _check(self, CONSOLIDATOR_RULES)
