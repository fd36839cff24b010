"""Online backups into ``backups/`` (Philont's naming and rotation), verification and restore."""

from __future__ import annotations

import ctypes
import io
import os
import re
import shutil
import sqlite3
import sys
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy.engine import URL

from philont import filewrite, migrate, settings
from philont.db import connections
from philont.db.engine import (
    DIR_MODE,
    FILE_MODE,
    file_kind,
    missing_reason,
    resolve_url,
    sqlite_path,
)
from philont.db.retry import cannot_open, file_error, typed_errors
from philont.errors import (
    DatabaseBusyError,
    DatabasePathError,
    FilePathError,
    InvalidDatabaseError,
    InvalidInputError,
    NotADatabaseError,
    StorageError,
    UnrecognizedSchemaError,
)
from philont.interrupts import point_of_no_return
from philont.locktable import FileLocks, file_locks
from philont.log import get_logger
from philont.migrate.plan import plan_from, table_names
from philont.store import release_shared

log = get_logger(__name__)

BACKUP_SUFFIX = ".sqlite"
PRE_RESTORE_LABEL = "-pre-restore"
_TAG = re.compile(r"[0-9]{8}T[0-9]{6}")
_SEQ = re.compile(r"(.*)-(\d+)")


def _prefix(db_path: Path) -> str:
    """What the names of ``db_path``'s backups begin with: ``<stem>-`` (``memory-`` for
    ``memory.sqlite``; :func:`philont.settings.backup_stem`)."""
    return f"{settings.backup_stem(db_path)}-"


def _tagged(name: str, db_path: Path) -> re.Match[str] | None:
    """``name`` as a backup of ``db_path``: ``<stem>-<TAG>``, then a label (``-pre-upgrade``,
    ``-pre-restore``: group ``label``) and the ``-N`` of a name taken (group ``seq``), each
    maybe; None when it is not one. A backup of another database sharing the folder, whose
    stem may begin like this one's (``a`` and ``a-b``, ``a-<TAG>``), is never this one's."""
    return re.fullmatch(
        rf"{re.escape(_prefix(db_path))}[0-9]{{8}}T[0-9]{{6}}"
        rf"(?P<label>(?:-[a-z]+)+)?(?P<seq>-[0-9]+)?{re.escape(BACKUP_SUFFIX)}",
        name,
    )


DbTarget = str | Path | URL | None

Progress = Callable[[str, int, int], None]
"""``progress(step, done, total)`` as a backup or a restore goes: :data:`COPYING` (bytes of a
restore's copy; 0/1 then 1/1 for a backup's online copy, one SQLite step), :data:`VERIFYING`
(checks done: ``integrity_check``, then each FTS5 index) and :data:`KEEPING` (a restore's copy
of the database it replaces). A step ends with ``done == total``."""
COPYING = "copying"
VERIFYING = "verifying"
KEEPING = "keeping the current database"


class BackupVerificationError(StorageError):
    """A database copy failed ``integrity_check`` or an FTS5 ``integrity-check``."""

    code = "backup_corrupt"

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{str(path)!r} is not a sound database: {reason}", path=str(path))
        self.path = path
        self.reason = reason


@dataclass(frozen=True)
class BackupInfo:
    """One file in ``backups/``; ``taken_at`` (UTC) comes from its name (None if it has none)."""

    path: Path
    taken_at: datetime | None
    size: int


@dataclass(frozen=True)
class Verification:
    """A database file that passed every check, and the schema it carries."""

    path: Path
    revision: str | None  # the recorded Alembic revision, or the one it would be adopted as
    schema_version: str | None  # memory_meta.schema_version
    fts_tables: tuple[str, ...]


@dataclass(frozen=True)
class RestoreReport:
    """What ``restore`` did: the live file now holds ``restored_from``'s content."""

    database: Path
    restored_from: Path
    safety_backup: Path | None  # the previous live file (None when it was missing or empty)
    previous_was_corrupt: bool  # then ``safety_backup`` is a byte copy ``<db>.corrupt-<TAG>``
    revision: str | None
    schema_version: str | None


# --- helpers ---------------------------------------------------------------------------------


def _db_file(db: DbTarget) -> Path:
    path = sqlite_path(resolve_url(db))
    if path is None:
        raise InvalidDatabaseError(
            "backups and restores are of SQLite files; on PostgreSQL use `philont export` "
            "per agent, or pg_dump for the database"
        )
    return path


def _tag(at: datetime) -> str:
    return f"{at.astimezone(UTC):%Y%m%dT%H%M%S}"


def _ensure_private_dir(directory: Path) -> None:
    if not directory.is_dir():
        directory.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
        os.chmod(directory, DIR_MODE)


def _missing_dirs(*directories: Path) -> list[Path]:
    """The directories among ``directories`` and their parents that do not exist yet, the
    deepest first: what a refused restore removes again once it made them."""
    missing = {
        d for directory in directories for d in (directory, *directory.parents) if not d.exists()
    }
    return sorted(missing, key=lambda d: len(d.parts), reverse=True)


def _remove_empty(directories: list[Path]) -> None:
    """Remove each of ``directories`` (deepest first) that is empty: one another process put
    a file in meanwhile stays."""
    for directory in directories:
        with suppress(OSError):
            directory.rmdir()


def _fsync(path: Path, *, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _order_key(path: Path) -> tuple[str, int, str]:
    """Newest-last sort key: the name's stem (Philont sorts by name), then the ``-N`` that
    ``backup`` appends when a name is taken, so a second backup in the same UTC second ranks
    after the first (plain name order would put ``X.sqlite`` after ``X-2.sqlite``)."""
    stem = path.name[: -len(BACKUP_SUFFIX)]
    m = _SEQ.fullmatch(stem)
    if m:
        return (m.group(1), int(m.group(2)), path.name)
    return (stem, 1, path.name)


def _taken_at(path: Path, db_path: Path) -> datetime | None:
    m = _TAG.match(path.name[len(_prefix(db_path)) :])
    if m is None:
        return None
    try:
        return datetime.strptime(m.group(), "%Y%m%dT%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None


def _backup_files(db_path: Path) -> list[Path]:
    """``db_path``'s backups (``<stem>-<TAG>[-N|label].sqlite``) in its backup directory,
    newest first; those of another database sharing the folder are not among them."""
    directory = settings.backup_dir_for(db_path)
    if not directory.is_dir():
        return []
    files = [p for p in directory.iterdir() if _tagged(p.name, db_path) is not None and p.is_file()]
    return sorted(files, key=_order_key, reverse=True)


def fts5_tables(conn: sqlite3.Connection) -> list[str]:
    """Every FTS5 virtual table (their shadow tables are ordinary tables and not listed)."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
    ).fetchall()
    return sorted(name for name, sql in rows if re.search(r"\busing\s+fts5\b", sql, re.I))


def verify(path: Path, *, schema: bool = True, progress: Progress | None = None) -> Verification:
    """Check a database file (meant for copies we own: the FTS check opens it read-write).

    Raises ``NotADatabaseError`` when it is not SQLite and ``BackupVerificationError`` when
    ``integrity_check`` or an FTS5 ``integrity-check`` fails. With ``schema``, also a
    ``SchemaError`` when its schema is none this release can adopt (unknown or newer versions,
    unrecognised shapes, no memory tables at all).
    """
    with typed_errors("backup.verify_failed", where=str(path)):
        with filewrite.refusing(path, FilePathError, _READING):  # an I/O error
            if file_kind(path) == "other":
                raise NotADatabaseError(str(path))
        return _checked(path, path, schema=schema, progress=progress)


def _checked(
    path: Path, named: Path, *, schema: bool = True, progress: Progress | None = None
) -> Verification:
    """:func:`verify`'s checks of the SQLite file ``path``, whose refusals name ``named``: a
    restore checks its copy of the backup ``named`` (a hidden file beside the database, gone
    by the time the refusal is read) and names the backup."""
    step = progress or _no_progress
    try:
        with closing(connections.connect(str(path), isolation_level=None)) as conn:
            fts = fts5_tables(conn)
            step(VERIFYING, 0, 1 + len(fts))
            rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
            if rows != ["ok"]:
                raise BackupVerificationError(named, "integrity_check: " + "; ".join(rows[:5]))
            step(VERIFYING, 1, 1 + len(fts))
            conn.execute("BEGIN")
            try:
                for done, name in enumerate(fts, start=2):
                    try:
                        conn.execute(
                            f'INSERT INTO "{name}"("{name}", rank) VALUES (\'integrity-check\', 1)'
                        )
                    except sqlite3.DatabaseError as exc:
                        raise BackupVerificationError(named, f"{name}: {exc}") from exc
                    step(VERIFYING, done, 1 + len(fts))
            finally:
                conn.execute("ROLLBACK")
            version = None
            if "memory_meta" in table_names(conn):
                row = conn.execute(
                    "SELECT value FROM memory_meta WHERE key = 'schema_version'"
                ).fetchone()
                version = None if row is None else str(row[0])
            revision = None
            if schema:
                # migrate's own read-only inspection: the rules ``upgrade`` adopts a file by
                plan = plan_from(conn)
                revision = plan.revision or plan.stamp
                if revision is None:
                    raise UnrecognizedSchemaError(f"{str(named)!r} holds no memory database")
    except sqlite3.DatabaseError as exc:
        raise BackupVerificationError(named, str(exc)) from exc
    return Verification(
        path=named, revision=revision, schema_version=version, fts_tables=tuple(fts)
    )


def is_rotating(path: Path, db_path: Path) -> bool:
    """Whether ``path`` is an ordinary rotating backup of the database ``db_path``
    (``<stem>-<TAG>.sqlite``, ``-2``, ``-3``…; not a safety copy made before a restore or an
    upgrade, nor another database's backup, nor any other file): what ``backup(keep=)`` may
    count and delete."""
    m = _tagged(path.name, db_path)
    return m is not None and m["label"] is None


def _rotate(db_path: Path, keep: int, newest: Path) -> list[Path]:
    """Delete all but the newest ``keep`` ordinary backups; the one just taken always stays,
    and safety copies (``-pre-restore``, ``-pre-upgrade``) are neither counted nor deleted."""
    others = [p for p in _backup_files(db_path) if p != newest and is_rotating(p, db_path)]
    doomed = others[keep - 1 :]
    for p in doomed:
        try:
            p.unlink()
        except OSError as exc:  # like Philont: a failed delete is only a warning
            log.warning("backup.rotate_failed", path=str(p), error=str(exc))
    return doomed


# --- public API ------------------------------------------------------------------------------


def backup(
    db: DbTarget = None,
    *,
    keep: int | None = None,
    at: datetime | None = None,
    progress: Progress | None = None,
) -> Path:
    """Take an online backup (SQLite backup API: consistent while others write) of the database
    into its sibling ``backups/`` as ``<stem>-YYYYMMDDTHHMMSS.sqlite`` (``memory`` for
    ``memory.sqlite``: :func:`philont.settings.backup_stem`; UTC of ``at``, default
    now; ``-2``, ``-3``… when taken), mode 0600 in a 0700 directory, verify it, then keep only
    the newest ``keep`` ordinary backups (``None``: delete nothing). Only names ``backup``
    gives count and go (:func:`is_rotating`): the ``-pre-restore`` and ``-pre-upgrade`` safety
    copies, and any other file, are never counted nor deleted. Returns the path.
    ``progress(step, done, total)`` reports as it goes (:data:`Progress`).
    """
    if keep is not None and keep < 1:
        raise InvalidInputError.of("keep", f"must be at least 1, got {keep}", keep=keep)
    path = _db_file(db)
    with typed_errors("backup.failed", where=str(path)):
        return _backup(path, keep, at, progress)


def _backup(path: Path, keep: int | None, at: datetime | None, progress: Progress | None) -> Path:
    """:func:`backup` of the SQLite file ``path``."""
    if path.is_dir():
        raise DatabasePathError(str(path), "it is a directory")
    if not path.is_file():
        raise DatabasePathError(str(path), missing_reason(path))
    with filewrite.refusing(path, DatabasePathError, _READING):  # gone, an I/O error
        if path.stat().st_size == 0:
            raise DatabasePathError(str(path), "the file is empty; there is nothing to back up")
        if file_kind(path) == "other":
            raise NotADatabaseError(str(path))
    step = progress or _no_progress
    step(COPYING, 0, 1)
    made = _missing_dirs(settings.backup_dir_for(path))
    try:
        target = migrate.backup_file(path, at=at)
    except sqlite3.DatabaseError as exc:
        raise StorageError(f"backup of {str(path)!r} failed: {exc}", path=str(path)) from exc
    step(COPYING, 1, 1)
    try:
        verify(target, schema=False, progress=progress)
    except BaseException:  # Ctrl-C too: never leave an unverified file among the backups
        filewrite.remove_with_companions(target)
        _remove_empty(made)  # nor the directory made for it
        raise
    with point_of_no_return():  # the backup is taken (mode 0600): Ctrl-C is too late now
        log.info("backup.taken", path=str(target))
        if keep is not None:
            removed = _rotate(path, keep, target)
            if removed:
                log.info("backup.rotated", removed=[str(p) for p in removed])
    return target


def list_backups(db: DbTarget = None) -> list[BackupInfo]:
    """The database's backups in its ``backups/`` (``<stem>-<TAG>….sqlite``, ``memory-…`` for
    ``memory.sqlite``; not those of another database in the folder), newest first."""
    path = _db_file(db)
    found = []
    for p in _backup_files(path):
        try:
            size = p.stat().st_size
        except FileNotFoundError:  # rotated away meanwhile
            continue
        found.append(BackupInfo(path=p, taken_at=_taken_at(p, path), size=size))
    return found


@contextmanager
def _held(path: Path) -> Iterator[sqlite3.Connection | None]:
    """The live file locked against every other connection for the whole restore (None when
    there is no sound live file to lock: missing, empty or damaged). An SQLite connection
    that is open, even idle between transactions (a Store's pool, a server, another
    process), keeps a lock that an EXCLUSIVE one waits for: such a file is refused with
    ``DatabaseBusyError`` (:func:`_lock`), since that connection would go on reading and
    writing the replaced file and its writes would be lost. Whether the file is sound is
    asked under the lock: a lock held by another connection is never taken for damage. The
    lock is kept until the new file is in place. A ``-wal`` the live file has (a crashed
    process's) stays as it is when the restore is refused: closing this connection
    checkpoints nothing (:func:`_no_checkpoint_on_close`). Once all is checked and kept,
    just before the rename, the old file is left in rollback-journal mode, so closing this
    connection removes no ``-wal`` beside the new file."""
    if not path.exists() or path.stat().st_size == 0:
        yield None
        return
    conn = connections.connect(str(path), isolation_level=None, timeout=0)
    try:
        if Path(f"{path}-wal").exists():  # else closing removes the -wal it made, and only that
            _no_checkpoint_on_close(conn)
        sound = _lock(conn, path) and _quick_check(conn)
        if not sound:
            conn.close()  # damaged: kept as a byte copy, nothing of it is read through SQLite
        yield conn if sound else None
    finally:
        conn.close()


_BUSY_CODES = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def _is_lock(exc: sqlite3.Error) -> bool:
    return getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY_CODES


def _lock(conn: sqlite3.Connection, path: Path) -> bool:
    """Lock ``path`` through ``conn`` (``locking_mode`` EXCLUSIVE: kept after the transaction);
    False when SQLite cannot use the file (damaged). Another connection's lock is waited for
    (up to the busy timeout) only when it may be let go: a transaction, or the checkpoint of
    a closing connection. A WAL file whose lock is held by connections that merely have it
    open (each keeps a shared lock while it is open, idle or not) is refused at once: waiting
    would not end that, and the refusal would only come later."""
    conn.execute("PRAGMA locking_mode = EXCLUSIVE")
    try:
        try:
            conn.execute("BEGIN EXCLUSIVE")
        except sqlite3.OperationalError as exc:
            if not _is_lock(exc) or _kept_open(path):
                raise
            conn.execute(f"PRAGMA busy_timeout = {settings.BUSY_TIMEOUT_MS}")
            conn.execute("BEGIN EXCLUSIVE")
        conn.execute("COMMIT")  # the lock stays: locking_mode EXCLUSIVE
    except sqlite3.DatabaseError as exc:
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_CANTOPEN:
            raise cannot_open(path, str(exc)) from exc  # what it needs beside it: no damage
        if not _is_lock(exc):
            return False
        raise DatabaseBusyError(
            f"{str(path)!r} is open in another connection (a Store, a server, another "
            "process); close it before restoring: it would go on using the replaced file",
            path=str(path),
        ) from exc
    return True


def _kept_open(path: Path) -> bool:
    """Whether the lock on ``path`` that a restore cannot take is one held for as long as
    other connections are open, rather than one that ends by itself (a commit in
    rollback-journal mode, a closing connection's checkpoint: those are waited for).

    Told from the system's table of locks (:mod:`philont.locktable`: nothing is opened, read
    or written, so the ``-shm`` other processes share is left as it is and no lock of this
    process is dropped) when it can tell (:func:`kept_open_by_locks`); else a reader is asked
    instead: it can read a WAL file other connections have open, not one locked by a lock
    that ends by itself (nor, there, one in ``locking_mode`` EXCLUSIVE: waited for)."""
    wal = Path(f"{path}-wal").exists()
    db, shm = file_locks(path, Path(f"{path}-shm"))
    told = kept_open_by_locks(db, shm, wal=wal)
    if told is not None:
        return told
    try:
        with closing(connections.connect(str(path), isolation_level=None, timeout=0)) as probe:
            mode = probe.execute("PRAGMA journal_mode").fetchone()[0]
    except sqlite3.DatabaseError:
        return False
    return str(mode).lower() == "wal"


_SHARED_FIRST = 0x40000000 + 2  # SQLite's lock bytes: PENDING_BYTE + 2, the SHARED range
_SHARED_SIZE = 510


def kept_open_by_locks(db: FileLocks, shm: FileLocks, *, wal: bool) -> bool | None:
    """What the locks held on a database file (``db``) and its ``-shm`` say of the lock a
    restore cannot take: True, held for as long as connections are open; False, one that ends
    by itself; None, the table cannot tell (a reader must be asked).

    Connections that have a WAL file open hold locks on its ``-shm``: kept open, unless one of
    them holds SQLite's EXCLUSIVE lock on the file (the last one, checkpointing as it
    closes). A connection in ``locking_mode`` EXCLUSIVE keeps that lock and its WAL index in
    its own memory, no lock on the ``-shm``: kept open too (with a ``-wal`` beside the file).
    A lock seen is a lock held, so "kept open" stands on what is seen; "ends by itself" only
    where the table lists every lock on both files (``whole``): one of a process it does not
    show could keep the file open. No lock seen says nothing (it may have ended already)."""
    if not db.held:
        return None
    last = _SHARED_FIRST + _SHARED_SIZE - 1
    exclusive = any(
        lock.access == "WRITE"
        and lock.start <= _SHARED_FIRST
        and (lock.end is None or last <= lock.end)
        for lock in db.held
    )
    kept = not exclusive if shm.held else exclusive and wal
    if kept or (db.whole and shm.whole):
        return kept
    return None


_NO_CKPT_ON_CLOSE = 1006
"""``SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE`` (SQLite 3.16; ``sqlite3.SQLITE_DBCONFIG_…`` from
Python 3.12)."""


def _no_checkpoint_on_close(conn: sqlite3.Connection) -> bool:
    """Make closing ``conn`` leave the file's ``-wal`` alone (the last connection to close
    folds it into the file and removes it); whether that is so. Python 3.12's
    ``Connection.setconfig``; on CPython 3.11, whose connection object begins with its
    ``sqlite3 *``, the same ``sqlite3_db_config`` call through ctypes, on Linux only (where a
    variadic call is made as a plain one). Elsewhere False: closing folds the ``-wal`` in."""
    setconfig = getattr(conn, "setconfig", None)
    if setconfig is not None:
        setconfig(_NO_CKPT_ON_CLOSE, True)
        return bool(conn.getconfig(_NO_CKPT_ON_CLOSE))  # type: ignore[attr-defined]
    if (
        sys.implementation.name != "cpython"
        or sys.version_info[:2] != (3, 11)
        or not sys.platform.startswith("linux")
    ):
        return False
    try:  # the SQLite the module is linked with (None: built into the interpreter)
        library = ctypes.CDLL(getattr(sys.modules.get("_sqlite3"), "__file__", None))
        db_config = library.sqlite3_db_config
    except (OSError, AttributeError):
        return False
    handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__)
    now = ctypes.c_int(-1)
    code = db_config(handle, ctypes.c_int(_NO_CKPT_ON_CLOSE), ctypes.c_int(1), ctypes.byref(now))
    return code == 0 and now.value == 1


def _quick_check(conn: sqlite3.Connection) -> bool:
    """Philont's open-time test, on the locked file: ``PRAGMA quick_check`` says ok."""
    try:
        return [r[0] for r in conn.execute("PRAGMA quick_check").fetchall()] == ["ok"]
    except sqlite3.DatabaseError:
        return False


def _no_progress(_step: str, _done: int, _total: int) -> None:
    pass


def _keep_previous(path: Path, live: sqlite3.Connection | None) -> tuple[Path | None, bool]:
    """Keep the live file before it is replaced: a backup ``<stem>-<TAG>-pre-restore.sqlite``
    taken through the locked connection when it is sound, a byte copy when it is damaged.
    Returns the copy and whether the file was damaged."""
    if live is not None:
        # not verified: it keeps whatever the live file was, sound or not
        safety = migrate.backup_file(path, label=PRE_RESTORE_LABEL, source=live)
        return safety, False  # mode 0600 already
    if path.exists() and path.stat().st_size > 0:
        return _quarantine_copy(path), True
    return None, False


def _quarantine_copy(path: Path) -> Path:
    """Byte copies of a damaged live file (and what SQLite kept beside it: its ``-wal``, a
    hot ``-journal``, which the restore then removes) as ``<db>.corrupt-<TAG>``, Philont's
    quarantine name; not a backup's name, so no recovery ever picks them."""
    stem = f"{path}.corrupt-{_tag(datetime.now(UTC))}"
    target = Path(stem)
    n = 1
    while target.exists():
        n += 1
        target = Path(f"{stem}-{n}")
    try:
        with filewrite.refusing(path, DatabasePathError, _QUARANTINING, LEFT_AS_IT_WAS):
            for suffix in ("", *filewrite.COMPANIONS):
                src = Path(f"{path}{suffix}")
                if src.exists():  # made 0600: a damaged file's bytes are the user's memory
                    dst = os.open(
                        f"{target}{suffix}", os.O_CREAT | os.O_EXCL | os.O_WRONLY, FILE_MODE
                    )
                    with src.open("rb") as fin, os.fdopen(dst, "wb") as fout:
                        shutil.copyfileobj(fin, fout)
    except BaseException:
        filewrite.remove_with_companions(target)  # no half copy that looks like a whole one
        raise
    return target


_QUARANTINING = "cannot keep a byte copy of the damaged database"
LEFT_AS_IT_WAS = "the database was left as it was"
"""What a restore refused before its last step says of the files: none was changed."""


def _backup_source(source: Path) -> Path:
    """A file to restore from: an existing SQLite file (typed errors otherwise)."""
    if source.is_dir():
        raise FilePathError(str(source), "it is a directory, not a backup file")
    filewrite.regular(source)  # a device, pipe or /proc file: said so, never opened
    if not source.is_file():
        reason = missing_reason(source)
        raise FilePathError(
            str(source), "no such backup file" if reason == "no such file" else reason
        )
    if not filewrite.may(source, os.R_OK):
        raise FilePathError(str(source), "it cannot be read (permission denied)")
    try:
        with filewrite.refusing(source, FilePathError, _READING):  # an I/O error
            kind = file_kind(source)
    except DatabasePathError as exc:  # SQLite cannot open it: a backup, not the database
        raise FilePathError(str(source), exc.reason) from exc
    if kind == "other":
        raise NotADatabaseError(str(source))
    return source


_COPYING = "cannot write the backup's copy beside it"
_READING = "cannot read it"
COPY_CHUNK = 1 << 20
"""Bytes read and written at a time when a restore copies a backup beside the database."""


def _same_file(source: Path, path: Path) -> bool:
    """Whether ``source`` is the database file ``path`` itself (by another name, a link)."""
    try:
        return path.exists() and os.path.samefile(source, path)
    except OSError:
        return False


def _copy_beside(copies: list[tuple[Path, Path]], path: Path, progress: Progress) -> None:
    """Copy each backup file (the backup, its ``-wal``) into a new file beside the database
    ``path``: a write that fails there (a full disk, a file size limit) refuses ``path``
    (DatabasePathError), never the backup being read (:mod:`philont.filewrite`). Bytes copied
    go to ``progress``, one step for all. The first file, the copy itself, is made already
    (:func:`_locked_copy`)."""
    total = sum(_size(source) for source, _ in copies)
    done = 0
    progress(COPYING, done, total)
    for n, (source, target) in enumerate(copies):
        with filewrite.refusing(path, DatabasePathError, _COPYING):
            new = os.O_CREAT | os.O_EXCL if n else 0
            fd = os.open(target, new | os.O_WRONLY, FILE_MODE)
        with (
            filewrite.NamedWrites(fd, path, DatabasePathError, _COPYING) as raw,
            io.BufferedWriter(raw) as dst,
            filewrite.refusing(source, FilePathError, _READING),
            open(source, "rb") as src,
        ):
            while chunk := src.read(COPY_CHUNK):
                dst.write(chunk)
                done += len(chunk)
                progress(COPYING, min(done, total), total)
    if done != total:  # grew while copied: a step still ends with done == total
        progress(COPYING, done, done)


def _with_wal(source: Path, tmp: Path) -> list[tuple[Path, Path]]:
    """What a restore copies: the backup, and the ``-wal`` beside it when that holds changes
    (a copy of a database in WAL mode taken with its ``-wal``: without it, what the ``-wal``
    holds would be silently missing)."""
    wal = Path(f"{source}-wal")
    with filewrite.refusing(wal, FilePathError, _READING):
        held = wal.is_file() and wal.stat().st_size > 0
    return [(source, tmp), (wal, Path(f"{tmp}-wal"))] if held else [(source, tmp)]


def _size(source: Path) -> int:
    """The size of a backup file a restore reads; a failure is the refusal of that file."""
    with filewrite.refusing(source, FilePathError, _READING):
        return source.stat().st_size


def _fold_wal(tmp: Path, path: Path) -> None:
    """Fold the copied ``-wal`` into the copy (``journal_mode = DELETE`` checkpoints it and
    removes it): the copy alone is put in place. The fold writes the copy beside the
    database ``path``: one that fails there (a full disk, a file size limit, an I/O error) is
    the refusal of ``path``, like any write of the copy."""
    try:
        with closing(connections.connect(str(tmp), isolation_level=None)) as conn:
            mode = conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]
    except sqlite3.OperationalError as exc:
        raise DatabasePathError(str(path), f"{_COPYING} ({exc})") from exc
    if str(mode).lower() != "delete" or Path(f"{tmp}-wal").exists():
        raise StorageError(f"the -wal copied beside {str(tmp)!r} could not be folded into it")


def _leave_wal_mode(live: sqlite3.Connection, path: Path) -> None:
    """Put the live file ``path`` in rollback-journal mode through ``live`` (its ``-wal``
    folded into it and removed), so closing ``live`` removes no ``-wal`` beside the new file.
    The fold writes the live file: one that fails (a full disk, a file size limit, an I/O
    error) is the typed refusal of ``path``; the file and its ``-wal`` still hold what they
    held (a checkpoint cut short leaves the ``-wal`` whole)."""
    try:
        live.execute("PRAGMA journal_mode = DELETE")
    except sqlite3.Error as exc:
        typed = file_error(exc, path=str(path))
        raise typed or StorageError(
            f"{str(path)!r} could not be folded with its -wal ({exc})", path=str(path)
        ) from exc


def _put_in_place(tmp: Path, path: Path, quarantined: Path | None) -> None:
    """The last step of a restore: remove what SQLite kept beside the old file (a sound one's
    ``-wal`` is folded into it by now; a damaged one's is in its byte copy ``quarantined``),
    then rename the verified copy ``tmp`` over ``path``. An ``OSError`` here (a directory
    where the ``-wal`` was, a folder made read-only, an I/O error) is the refusal of ``path``
    saying what the files are left as: the old file stays, and so does the byte copy of a
    damaged one (its ``-wal`` and ``-journal`` may be gone from beside it by then)."""
    if quarantined is None:
        state = "the backup was not put in place; the database file holds all it held"
    else:
        state = (
            "the backup was not put in place; the damaged database file stays, and its byte "
            f"copy (with its -wal, its -journal) is kept: {str(quarantined)!r}"
        )
    for stale in (Path(f"{path}{suffix}") for suffix in filewrite.COMPANIONS):
        doing = f"cannot remove {stale.name!r}"
        with filewrite.refusing(path, DatabasePathError, doing, state):
            stale.unlink(missing_ok=True)
    with filewrite.refusing(path, DatabasePathError, "cannot rename the copy over it", state):
        os.replace(tmp, path)


def _locked_copy(tmp: Path, path: Path) -> filewrite.LockedTemp:
    """Make the file ``tmp`` a restore copies the backup into, held until it is renamed or
    removed (:class:`philont.filewrite.LockedTemp`); refusing ``path`` when it cannot be."""
    with filewrite.refusing(path, DatabasePathError, _COPYING):
        return filewrite.LockedTemp(tmp, FILE_MODE)


def _in_place(copy: os.stat_result | None, path: Path) -> bool:
    """Whether the file ``copy`` (a restore's copy, None before it may be renamed) is the
    file ``path`` now: the restore is done."""
    try:
        return copy is not None and os.path.samestat(copy, os.stat(path))
    except OSError:
        return False


def _settle(path: Path) -> None:
    """What follows the rename of a restore's copy over ``path``, however the restore ends
    (an interrupt included): the file made 0600 (narrower under a strict umask) and the
    rename made durable. A failure of either is logged: the restore stands."""
    try:
        os.chmod(path, FILE_MODE)
    except OSError as exc:
        log.warning("backup.restored_mode_not_set", path=str(path), error=str(exc))
    with suppress(OSError):  # some filesystems refuse a directory fsync; the rename stands
        _fsync(path.parent, directory=True)


RESTORE_COPY = ".restore-"
"""Marks a restore's copy of a backup beside the database (``.<db>.restore-<id>.tmp``,
:func:`philont.filewrite.temp_beside`)."""


def restore(
    backup_file: Path, db: DbTarget = None, *, progress: Progress | None = None
) -> RestoreReport:
    """Replace the live database with a verified copy of ``backup_file``, atomically.

    First the live file is locked against every other connection, until the copy is in
    place: one that has it open, even idle (a Store, a server, another process), would go on
    using the replaced file and its writes would be lost, so the restore is refused with
    ``DatabaseBusyError``, nothing changed, at once (a lock that ends by itself, a commit in
    rollback-journal mode, is waited for up to the busy timeout). Then the backup is copied
    beside the database and verified there (SQLite header, ``integrity_check``, FTS5
    ``integrity-check``, a schema we can adopt); any failure raises a typed error and leaves
    the live file untouched. A ``-wal`` beside the backup that holds changes (a copy of a
    database in WAL mode taken with it) is copied too and folded into the copy. The live file
    is kept: an online backup
    ``<stem>-<TAG>-pre-restore.sqlite`` when healthy, a byte copy ``<db>.corrupt-<TAG>`` when
    not; stale ``-wal``/``-shm`` files go, and ``os.replace`` puts the copy in place with
    mode 0600. Once the copy is in place the restore stands, its safety copy stays and the
    file is made 0600 and its rename durable, whatever fails after (an error closing what it
    held is logged, an interrupt raised, even one that came as the rename returned).
    ``progress(step, done, total)`` reports as it goes (:data:`Progress`).
    """
    source = _backup_source(Path(backup_file))
    path = _db_file(db)
    with typed_errors("backup.restore_failed", where=str(path)):
        return _restore(source, path, progress)


def _restore(source: Path, path: Path, progress: Progress | None) -> RestoreReport:
    """:func:`restore` of the backup ``source`` onto the SQLite file ``path``."""
    step = progress or _no_progress
    filewrite.regular(path, DatabasePathError)  # the rename would replace a device or pipe
    if _same_file(source, path):
        raise InvalidInputError.of(
            "backup_file", f"{str(source)!r} is the database itself: nothing to restore"
        )
    made = _missing_dirs(path.parent, settings.backup_dir_for(path))
    try:
        _ensure_private_dir(path.parent)
    except (FileExistsError, NotADirectoryError) as exc:
        raise DatabasePathError(str(path), "a parent is not a directory") from exc
    except OSError as exc:  # a parent that cannot be written
        _remove_empty(made)
        raise filewrite.cannot_write(
            path, exc, DatabasePathError, "cannot make its folder"
        ) from exc
    tmp = filewrite.temp_beside(path, RESTORE_COPY)  # and a killed restore's copy goes
    release_shared(path)  # this process's own idle Stores of the file, reopened on use
    safety: Path | None = None
    corrupt = False
    copy: os.stat_result | None = None  # the copy's file, once the last step begins
    try:
        with (
            _held(path) as live,
            _locked_copy(tmp, path),  # removed unless renamed
            filewrite.refusing(path, DatabasePathError, "cannot restore it", LEFT_AS_IT_WAS),
        ):
            copies = _with_wal(source, tmp)
            _copy_beside(copies, path, step)
            # its kind is the backup's (_backup_source): read through SQLite alone, never with
            # open(), what fails in the copy is said of the backup, not of the hidden copy
            checked = _checked(tmp, source, progress=step)  # a copied -wal is read with it
            if len(copies) > 1:
                with filewrite.refusing(path, DatabasePathError, _COPYING):
                    _fold_wal(tmp, path)
            with filewrite.refusing(path, DatabasePathError, _COPYING):
                _fsync(tmp)
            step(KEEPING, 0, 1)
            safety, corrupt = _keep_previous(path, live)
            step(KEEPING, 1, 1)
            with point_of_no_return():  # Ctrl-C from here on: too late, the restore is done
                if live is not None:  # the live file changes only now: its -wal folded in
                    _leave_wal_mode(live, path)  # and removed
                copy = os.stat(tmp)  # a damaged file's -wal goes now: its byte copy stays
                _put_in_place(tmp, path, safety if corrupt else None)
    except BaseException as exc:
        if not _in_place(copy, path):  # told by the file: an interrupt may follow the rename
            if safety is not None and not (corrupt and copy is not None):  # no restore: no copy
                filewrite.remove_with_companions(safety)
            _remove_empty(made)  # nor the directories it made for them (emptied)
            raise
        # put in place: the restore is done, and the safety copy is the only copy of what the
        # file held; what failed after (closing the copy's descriptor, the old connection) is
        # told, not a failed restore
        if not isinstance(exc, Exception):
            raise  # interrupted (it is done; the safety copy stays; settled all the same)
        log.warning("backup.restore_cleanup_failed", path=str(path), error=str(exc))
    finally:
        if _in_place(copy, path):
            _settle(path)
    log.info(
        "backup.restored",
        path=str(path),
        source=str(source),
        safety=str(safety) if safety else None,
        revision=checked.revision,
    )
    return RestoreReport(
        database=path,
        restored_from=source,
        safety_backup=safety,
        previous_was_corrupt=corrupt,
        revision=checked.revision,
        schema_version=checked.schema_version,
    )
