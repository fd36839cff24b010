"""What an upgrade did and where a database stands."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from philont.log import get_logger

log = get_logger(__name__)

StepCallback = Callable[[str], None]


@dataclass
class UpgradeReport:
    """What an upgrade did."""

    url: str
    from_revision: str | None
    to_revision: str | None
    stamped: str | None = None
    backup: Path | None = None
    applied: list[str] = field(default_factory=list)
    bootstrap_rows: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Status:
    """Where a database stands."""

    revision: str | None
    head: str
    schema_version: str | None

    @property
    def at_head(self) -> bool:
        return self.revision == self.head
