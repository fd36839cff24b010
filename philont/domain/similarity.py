"""Near-duplicate skills: token Jaccard over name and when-to-use, with CJK counted by bigrams.

Philont's ``findDuplicateCandidates`` (spec §8) kept ``[a-z0-9]+`` runs and single CJK
characters, then dropped every token shorter than two characters, so Chinese text never counted
(Q-K5); and its reflector compared names only. Here:

* a run of CJK characters (Han, kana, Hangul) gives its overlapping bigrams (``会议纪要`` →
  ``会议 议纪 纪要``); a lone CJK character is a token by itself;
* any other run of letters or digits (any script) of at least two characters is a token, so a
  kebab-case name splits on its hyphens;
* a skill is compared by its name together with its when-to-use text (its description when it
  has none), on both sides alike;
* text is read composed (NFC), so a skill written decomposed (NFD: ``e`` + U+0301, Hangul as
  jamo, as macOS writes) has the tokens of the same text composed; compatibility forms
  (``ﬁ``, ``²``) stay other text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DUPLICATE_THRESHOLD",
    "SkillText",
    "jaccard",
    "near_duplicates",
    "similarity",
    "tokens",
]

DUPLICATE_THRESHOLD: Final = 0.5
"""Philont's threshold: a Jaccard of at least this makes two skills near-duplicates."""

_CJK: Final = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_RUNS: Final = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+")
_CJK_RUN: Final = re.compile(rf"[{_CJK}]+")


def tokens(text: str) -> frozenset[str]:
    """The similarity tokens of ``text`` (lower-cased; see the module docstring)."""
    found: set[str] = set()
    for run in _RUNS.findall(unicodedata.normalize("NFC", text).lower()):
        if _CJK_RUN.fullmatch(run):
            if len(run) == 1:
                found.add(run)
            else:
                found.update(run[i : i + 2] for i in range(len(run) - 1))
        elif len(run) >= 2:
            found.add(run)
    return frozenset(found)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """``|a ∩ b| / |a ∪ b|``; 0.0 when both are empty."""
    union = len(a | b)
    return len(a & b) / union if union else 0.0


@dataclass(frozen=True)
class SkillText:
    """What two skills are compared by."""

    name: str
    when_to_use: str | None = None
    description: str = ""

    def token_set(self) -> frozenset[str]:
        context = self.when_to_use if self.when_to_use and self.when_to_use.strip() else ""
        return tokens(f"{self.name} {context or self.description}")


def similarity(a: SkillText, b: SkillText) -> float:
    """Jaccard of the two skills' tokens (name plus when-to-use, or description)."""
    return jaccard(a.token_set(), b.token_set())


def near_duplicates(
    candidate: SkillText,
    existing: Sequence[SkillText],
    *,
    threshold: float = DUPLICATE_THRESHOLD,
    limit: int = 5,
) -> list[tuple[SkillText, float]]:
    """The ``existing`` skills at least ``threshold`` similar to ``candidate``, best first
    (ties by name), at most ``limit``. A candidate without tokens has no duplicates."""
    mine = candidate.token_set()
    if not mine:
        return []
    scored = [(other, jaccard(mine, other.token_set())) for other in existing]
    hits = [(other, score) for other, score in scored if score >= threshold]
    hits.sort(key=lambda hit: (-hit[1], hit[0].name))
    return hits[:limit]
