"""Files an import creates: removed again when it fails, so a failure leaves nothing behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from philont import settings


def _missing_dirs(path: Path) -> list[Path]:
    """The directories that creating ``path`` would create (its backups/ too), deepest first."""
    missing = [settings.backup_dir_for(path)]
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return [d for d in missing if not d.exists()]


@contextmanager
def removed_on_failure(path: Path | None) -> Iterator[None]:
    """Around work that may create the SQLite file ``path``: if the work fails, a file that did
    not exist is removed (with its -wal/-shm and the directories made for it), and one that
    existed empty is emptied again. An existing database is left to its own transaction."""
    if path is None or (path.exists() and path.stat().st_size > 0):
        yield
        return
    existed = path.exists()
    made = _missing_dirs(path)
    try:
        yield
    except BaseException:
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        if existed:
            os.truncate(path, 0)
        else:
            path.unlink(missing_ok=True)
        for directory in made:
            with suppress(OSError):  # not empty (someone else's), or already gone
                directory.rmdir()
        raise
