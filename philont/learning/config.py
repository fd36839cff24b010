"""Settings of the self-learning loop (what it learns) and of the idle consolidator (when)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Final

from philont.domain.similarity import DUPLICATE_THRESHOLD
from philont.domain.skill_rules import DEFAULT_MAX_DRAFTS
from philont.domain.timeparse import zone
from philont.errors import InvalidInputError

__all__ = ["MAX_DRAFTS_ENV", "ConsolidatorConfig", "LearningConfig", "max_drafts_from_env"]

MAX_DRAFTS_ENV: Final = "PHILONT_MAX_DRAFT_SKILLS"


def max_drafts_from_env() -> int:
    """``$PHILONT_MAX_DRAFT_SKILLS`` when it is an integer of at least 5, else 40 (Philont)."""
    raw = os.environ.get(MAX_DRAFTS_ENV, "").strip()
    try:
        value = int(raw)
    except ValueError:
        return DEFAULT_MAX_DRAFTS
    return value if value >= 5 else DEFAULT_MAX_DRAFTS


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
        if not 0.0 < self.duplicate_threshold <= 1.0:
            raise InvalidInputError("duplicate_threshold must be in (0, 1]")
        for name in ("summary_min_messages", "max_window_messages", "max_message_chars"):
            if getattr(self, name) < 1:
                raise InvalidInputError(f"{name} must be at least 1")


@dataclass(frozen=True)
class ConsolidatorConfig:
    """When and how much the idle consolidator works.

    ``backlog=False`` is Philont's first run: the cursor is set to the newest message and the
    history before it is never processed (no bill for a long past). ``lease`` is how long a
    claimed batch stays ours before another process may take it over; a failed batch waits
    ``retry_base`` doubled per failure, at most ``retry_max``.
    """

    idle_after: timedelta = timedelta(minutes=5)
    min_messages: int = 4
    batch_size: int = 1_000
    backlog: bool = False
    lease: timedelta = timedelta(minutes=10)
    retry_base: timedelta = timedelta(minutes=1)
    retry_max: timedelta = timedelta(hours=1)
    interval: timedelta = timedelta(seconds=60)
    max_batches_per_tick: int = 10

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.min_messages < 1 or self.max_batches_per_tick < 1:
            raise InvalidInputError(
                "batch_size, min_messages and max_batches_per_tick must be >= 1"
            )
        if self.lease <= timedelta(0) or self.retry_base <= timedelta(0):
            raise InvalidInputError("lease and retry_base must be positive")
