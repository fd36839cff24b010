"""Read model of the memory prefix."""

from __future__ import annotations

from philont.schemas.base import ReadModel


class PrefixSection(ReadModel):
    name: str
    shown: int
    omitted: int


class MemoryPrefixResult(ReadModel):
    """The prefix text and what went into it; ``omitted`` counts what the cap left out."""

    text: str
    tokens: int
    sections: list[PrefixSection]

    @property
    def omitted(self) -> int:
        return sum(s.omitted for s in self.sections)
