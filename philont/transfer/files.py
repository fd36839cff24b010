"""Files an import creates: removed again when it fails, so a failure leaves nothing behind."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from philont import settings
from philont.db import connections
from philont.db.engine import check_file
from philont.migrate.env import PRE_UPGRADE_LABEL, backup_file
from philont.migrate.plan import _Plan, table_names
from philont.migrate.scripts import head_revision


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
    existed empty is emptied again. An existing database is left to its own transaction, and
    so is the file when, by then, it is not only ours: another connection has it open, or it
    holds any table (the import's own schema went with its rolled-back transaction, so a
    schema there is someone else's: a concurrent import of the same new path, a Store)."""
    if path is None or (path.exists() and path.stat().st_size > 0):
        yield
        return
    made = _missing_dirs(path)
    existed = not check_file(path, create=True)
    try:
        yield
    except BaseException:
        with _claimed(path) as ours:
            if ours:
                _remove(path, existed=existed)
        if ours and not existed:
            for directory in made:
                with suppress(OSError):  # not empty (someone else's), or already gone
                    directory.rmdir()
        raise


@contextmanager
def _claimed(path: Path) -> Iterator[bool]:
    """True, with the file locked against every other connection, when nobody else has it
    open and it holds no table; else False, nothing held."""
    if not path.exists():
        yield False
        return
    conn = connections.connect(str(path), isolation_level=None, timeout=0)
    try:
        try:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            conn.execute("BEGIN EXCLUSIVE")  # the lock stays until the connection closes
            empty = not any(not t.startswith("sqlite_") for t in table_names(conn))
            conn.execute("COMMIT")
            if empty:
                conn.execute("PRAGMA journal_mode = DELETE")  # closing removes no WAL by name
        except sqlite3.Error:
            empty = False  # busy (someone has it open) or unreadable: not ours to remove
        yield empty
    finally:
        conn.close()


def _remove(path: Path, *, existed: bool) -> None:
    for suffix in ("-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if existed:
        os.truncate(path, 0)
    else:
        path.unlink(missing_ok=True)


@contextmanager
def pre_upgrade_copy(path: Path, plan: _Plan) -> Iterator[Path | None]:
    """The copy of ``path`` an upgrade takes first (``backups/<stem>-<UTC>-pre-upgrade.sqlite``),
    when ``plan`` (read under the import's write lock) has an upgrade of a file holding data to
    do; the import then upgrades inside its own transaction. Removed again, with the
    ``backups/`` made for it, when the import fails: the file is then as it was."""
    if not plan.has_data or plan.revision == head_revision():
        yield None
        return
    made = not settings.backup_dir_for(path).exists()
    copy = backup_file(path, label=PRE_UPGRADE_LABEL)
    try:
        yield copy
    except BaseException:
        copy.unlink(missing_ok=True)
        if made:
            with suppress(OSError):  # another backup went in meanwhile
                copy.parent.rmdir()
        raise
