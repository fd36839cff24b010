"""What an upgrade did and where a database stands."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from philont import settings
from philont.log import get_logger

log = get_logger(__name__)

StepCallback = Callable[[str], None]
HEAD_VERSION = settings.SCHEMA_VERSION


@dataclass
class UpgradeReport:
    """What an upgrade did."""

    url: str
    from_revision: str | None
    to_revision: str | None
    stamped: str | None = None
    """The revision the chain started from without running it: a Philont file's schema version
    (SQLite) or, on a new PostgreSQL schema, the layout's starting point."""
    adopted: str | None = None
    """The schema version of the original's database this upgrade adopted (SQLite only)."""
    backup: Path | None = None
    applied: list[str] = field(default_factory=list)
    bootstrap_rows: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Status:
    """Where a database stands."""

    revision: str | None
    head: str
    schema_version: str | None
    heads: frozenset[str] = frozenset()
    """The revisions that count as the head on this database's backend besides ``head``
    (:func:`philont.migrate.scripts.heads_for`: below revisions that change nothing there)."""

    @property
    def shipped(self) -> bool:
        """The revision is one this release ships (or there is none): else a later release's,
        or no revision of philont's at all, and nothing here can say what it holds."""
        from philont.migrate.scripts import known_revisions

        return self.revision is None or self.revision in known_revisions()

    @property
    def at_head(self) -> bool:
        """At the head revision (or one with the same schema on this backend), with the
        ``schema_version`` head writes (a file whose records disagree is not at head:
        upgrading it refuses it by name)."""
        if self.revision != self.head and self.revision not in self.heads:
            return False
        if self.schema_version is None:
            return False
        version = self.schema_version.strip()
        return re.fullmatch("[0-9]{1,6}", version) is not None and int(version) == HEAD_VERSION
