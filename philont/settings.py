"""Where the memory lives and the tunables read from the environment."""

from __future__ import annotations

import os
from pathlib import Path

ENV_DB_PATH = "MEMORY_DB_PATH"
AGENT_ENV = "PHILONT_AGENT"
"""With a PostgreSQL URL and no explicit agent: the agent units of work serve
(:func:`default_agent`)."""
DEFAULT_RELATIVE_PATH = Path(".philont") / "memory" / "memory.sqlite"
BACKUP_DIR_NAME = "backups"
BUSY_TIMEOUT_MS = 5000
MIGRATION_BUSY_TIMEOUT_MS = 15 * 60 * 1000
"""How long an upgrade waits for another process's upgrade (or write) of the same file: long
enough for the slowest migration measured (a million messages: about a minute)."""
SCHEMA_VERSION = 31  # Philont's schema version; our additive revisions keep recording this
VERSION_TABLE = "philont_alembic_version"


def default_db_path() -> Path:
    """``$MEMORY_DB_PATH`` when set and non-empty, else ``~/.philont/memory/memory.sqlite``."""
    env = os.environ.get(ENV_DB_PATH, "").strip()
    if env:
        return Path(env).expanduser()
    home = os.environ.get("HOME") or str(Path.home())
    return Path(home) / DEFAULT_RELATIVE_PATH


def default_agent() -> str | None:
    """``$PHILONT_AGENT``, the agent of PostgreSQL work that names none (a Store's units of
    work, an export or import, the MCP server; ``philont --agent NAME`` sets it for one
    command): surrounding whitespace is dropped, unset or blank is None, anything else must be
    an agent name (:class:`~philont.errors.InvalidInputError` naming ``$PHILONT_AGENT``). The
    one reading of it, so that every path takes and refuses the same values."""
    value = os.environ.get(AGENT_ENV, "").strip()
    if not value:
        return None
    from philont.db.agents import check_name

    return check_name(value, f"${AGENT_ENV}")


def backup_dir_for(db_path: Path) -> Path:
    """The sibling ``backups/`` directory of a database file."""
    return db_path.parent / BACKUP_DIR_NAME


def backup_stem(db_path: Path) -> str:
    """What the names of a database file's backups begin with (then ``-<UTC second>``): its
    file name without ``.sqlite`` (``memory`` for ``memory.sqlite``, Philont's
    ``memory-<TAG>.sqlite``), so that databases sharing a folder, and so ``backups/``, each
    count and list their own backups only."""
    return db_path.name.removesuffix(".sqlite")
