"""Our Alembic scripts: where they live (checkout or wheel), the head, the history."""

from __future__ import annotations

from pathlib import Path

from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy.engine import URL

from philont.db.engine import (
    resolve_url,
)
from philont.log import get_logger

log = get_logger(__name__)

# --- configuration ---------------------------------------------------------------------------


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


def script_directory() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config(":memory:"))


def head_revision() -> str:
    head = script_directory().get_current_head()
    assert head is not None
    return head


def history() -> list[tuple[str, str]]:
    """(revision, first docstring line) from the first revision to head."""
    revs = list(script_directory().walk_revisions())
    return [(r.revision, (r.doc or "").strip()) for r in reversed(revs)]
