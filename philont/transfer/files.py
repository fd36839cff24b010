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
from philont.migrate.report import UpgradeReport


def _missing_dirs(path: Path) -> list[Path]:
    """The directories that creating ``path`` would create (its backups/ too), deepest first."""
    missing = [settings.backup_dir_for(path)]
    parent = path.parent
    while not parent.exists():
        missing.append(parent)
        parent = parent.parent
    return [d for d in missing if not d.exists()]


class Claim:
    """What an import made of the file it may remove again besides the file itself: its
    schema (this import's own upgrade created the tables, instead of finding them made by
    someone else)."""

    def __init__(self) -> None:
        self.made_schema = False

    def upgraded(self, report: UpgradeReport) -> None:
        """After this import's upgrade of the file: whether it created the schema."""
        self.made_schema = report.from_revision is None and bool(report.applied)


@contextmanager
def removed_on_failure(path: Path | None) -> Iterator[Claim]:
    """Around work that may create the SQLite file ``path``: if the work fails, a file that did
    not exist is removed (with its -wal/-shm and the directories made for it), and one that
    existed empty is emptied again. An existing database is left to its own transaction, and
    so is the file when, by then, it is not only ours: another connection has it open, or it
    holds anything this import did not make: memory or tables another process wrote, or the
    schema a concurrent import of the same new path created (that import may be about to fill
    it). Tell the claim what the upgrade did (:meth:`Claim.upgraded`)."""
    if path is None or (path.exists() and path.stat().st_size > 0):
        yield Claim()
        return
    made = _missing_dirs(path)
    existed = not check_file(path, create=True)
    claim = Claim()
    try:
        yield claim
    except BaseException:
        with _claimed(path, claim) as ours:
            if ours:
                _remove(path, existed=existed)
        if ours and not existed:
            for directory in made:
                with suppress(OSError):  # not empty (someone else's), or already gone
                    directory.rmdir()
        raise


@contextmanager
def _claimed(path: Path, claim: Claim) -> Iterator[bool]:
    """True, with the file locked against every other connection, when nobody else has it
    open and it holds nothing but what this import made (nothing, or the schema its own
    upgrade created with the bootstrap rows); else False, nothing held."""
    if not path.exists():
        yield False
        return
    conn = connections.connect(str(path), isolation_level=None, timeout=0)
    try:
        try:
            conn.execute("PRAGMA locking_mode = EXCLUSIVE")
            conn.execute("BEGIN EXCLUSIVE")  # the lock stays until the connection closes
            empty = not _holds_anything(conn, made_schema=claim.made_schema)
            conn.execute("COMMIT")
            if empty:
                conn.execute("PRAGMA journal_mode = DELETE")  # closing removes no WAL by name
        except sqlite3.Error:
            empty = False  # busy (someone has it open) or unreadable: not ours to remove
        yield empty
    finally:
        conn.close()


def _holds_anything(conn: sqlite3.Connection, *, made_schema: bool) -> bool:
    from philont.errors import ConflictError
    from philont.migrate.checks import philont_tables
    from philont.migrate.plan import table_names
    from philont.transfer.merge import refuse_unless_empty

    tables = {t for t in table_names(conn) if not t.startswith("sqlite_")}
    if not tables:
        return False
    if set(philont_tables(tables)) != tables or not made_schema:
        return True  # another application's tables, or another import's schema
    try:
        refuse_unless_empty(conn)
    except ConflictError:
        return True
    return False


def _remove(path: Path, *, existed: bool) -> None:
    for suffix in ("-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    if existed:
        os.truncate(path, 0)
    else:
        path.unlink(missing_ok=True)
