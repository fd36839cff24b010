"""Our Alembic scripts: where they live (checkout or wheel), the head, the history."""

from __future__ import annotations

import functools
from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL

from philont.db.engine import resolve_url


def script_location() -> Path:
    """The Alembic scripts: shipped inside the wheel, or the checkout's top-level ``alembic/``."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_alembic"
    return packaged if packaged.is_dir() else here.parent / "alembic"


def alembic_config(target: str | Path | URL | None = None) -> Config:
    """An Alembic Config pointing at our scripts and the given (or default) database."""
    cfg = Config()
    cfg.set_main_option("script_location", str(script_location()))
    url = resolve_url(target).render_as_string(hide_password=False)
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


@functools.cache
def script_directory() -> ScriptDirectory:
    """Our revision scripts, read and compiled once per process (they do not change while it
    runs; reading them was most of the cost of opening a database)."""
    return ScriptDirectory.from_config(alembic_config(":memory:"))


@functools.cache
def head_revision() -> str:
    head = script_directory().get_current_head()
    assert head is not None
    return head


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every revision id of our scripts."""
    return frozenset(s.revision for s in script_directory().walk_revisions())


def history() -> list[tuple[str, str]]:
    """(revision, first docstring line) from the first revision to head."""
    revs = list(script_directory().walk_revisions())
    return [(r.revision, (r.doc or "").strip()) for r in reversed(revs)]
