"""Our Alembic scripts: where they live (checkout or wheel), the head, the history."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic.config import Config
from alembic.script import Script, ScriptDirectory
from sqlalchemy.engine import URL

from philont.db import fork
from philont.db.engine import resolve_url


def script_location() -> Path:
    """The Alembic scripts: shipped inside the wheel, or the checkout's top-level ``alembic/``."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_alembic"
    return packaged if packaged.is_dir() else here.parent / "alembic"


def alembic_ini() -> Path:
    """The ``alembic.ini`` shipped beside our scripts (``script_location = %(here)s``), for
    the alembic command line: ``alembic -c <this> -x url=... upgrade head``."""
    return script_location() / "alembic.ini"


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


BACKENDS = ("sqlite", "postgresql")
"""The backends a revision changes unless its module says otherwise (``backends = (...)``)."""


@functools.cache
def heads_for(backend: str) -> frozenset[str]:
    """The revisions a database of ``backend`` counts as at head from: the head and each
    revision below it reached only through revisions that change nothing there (a module
    constant ``backends`` that leaves ``backend`` out: v038, v039 are PostgreSQL's alone). A
    SQLite file made before a PostgreSQL-only revision has its head's schema, and is read as
    it is (read-only, by the CLI, with ``upgrade=False``); an upgrade still stamps it."""
    if backend not in BACKENDS:
        raise ValueError(f"no backend {backend!r}; one of {BACKENDS}")
    script = script_directory()
    current: Script | None = script.get_revision(head_revision())
    found = set()
    while current is not None:
        found.add(current.revision)
        if backend in getattr(current.module, "backends", BACKENDS):
            break
        down = current.down_revision
        current = script.get_revision(down) if isinstance(down, str) else None
    return frozenset(found)


@functools.cache
def known_revisions() -> frozenset[str]:
    """Every revision id of our scripts."""
    return frozenset(s.revision for s in script_directory().walk_revisions())


def history() -> list[tuple[str, str]]:
    """(revision, first docstring line) from the first revision to head."""
    revs = list(script_directory().walk_revisions())
    return [(r.revision, (r.doc or "").strip()) for r in reversed(revs)]


_ALEMBIC_LOCK = fork.Lock(reentrant=True)


@contextmanager
def isolated() -> Iterator[None]:
    """Run an Alembic command of ours without disturbing one that is running.

    Alembic publishes the running environment and its operations as module globals
    (``alembic.context``, ``alembic.op``): a nested run replaces them and deletes them when it
    ends, so the outer run (a host's ``env.py`` or revision that called ``upgrade()``) then
    fails (``KeyError: 'script'``). Their state is saved before our run and put back after it;
    one of our runs at a time per process, since two threads would share those globals.
    """
    import alembic.context
    import alembic.op

    with _ALEMBIC_LOCK:
        saved = [(vars(module), dict(vars(module))) for module in (alembic.context, alembic.op)]
        try:
            yield
        finally:
            for namespace, before in saved:
                for name in [n for n in namespace if n not in before]:
                    del namespace[name]
                namespace.update(before)
