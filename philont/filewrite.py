"""Files philont writes for a caller (an export, the copy a restore puts in place): a write that
fails, because the disk is full (``ENOSPC``), a file size limit is reached (``EFBIG``,
``RLIMIT_FSIZE``), a quota is used up or the device fails, is the typed refusal of the path
the caller named, never a bare ``OSError`` that names no file (the command line printed
``error (EFBIG): File too large``) or names another one (a restore blamed the backup it was
reading for the copy it could not write)."""

from __future__ import annotations

import fcntl
import glob
import io
import os
import re
import stat
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from philont.errors import FilePathError, PhilontError

if TYPE_CHECKING:  # collections.abc.Buffer from Python 3.12 on
    from typing_extensions import Buffer

__all__ = [
    "COMPANIONS",
    "TEMP_ID",
    "UNLOCKED_KEPT_S",
    "WRITING",
    "LockedTemp",
    "NamedWrites",
    "cannot_write",
    "fsync",
    "may",
    "not_regular",
    "refusing",
    "regular",
    "remove_with_companions",
    "sweep",
    "temp_beside",
    "temp_id",
    "text_writer",
]

Refusal = Callable[[str, str], PhilontError]
"""How a failed write is reported: ``(path, reason) -> error`` (``FilePathError`` or
``DatabasePathError``)."""


WRITING = "cannot write it"


def may(path: Path, mode: int) -> bool:
    """Whether this process may access ``path`` as ``mode`` (``os.R_OK``, ``os.W_OK`` ...):
    by its effective ids and capabilities, as an ``open`` would be judged, not its real ids."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a pipe (fifo)"),
    (stat.S_ISSOCK, "a socket"),
)


def not_regular(path: Path) -> str | None:
    """What ``path``, which exists, is when it is no regular file to keep data in: a device,
    pipe or socket (``/dev/null``: SQLite said "disk I/O error", an export replaced it with
    its file; a pipe was waited on), or a file the kernel makes up
    (:data:`philont.locktable.KERNEL_FILESYSTEMS`: ``/proc``, ``/sys``; ``/proc/self/status``
    was "read-only", or read as a new database, its size being 0). None for a regular file, or
    where the filesystem's type is not known. Judged by ``stat`` alone: nothing is opened."""
    from philont import locktable

    try:
        found = path.stat()
        if not stat.S_ISREG(found.st_mode):
            return next((what for test, what in _KINDS if test(found.st_mode)), "no file")
        kind = locktable.mount_type(found.st_dev)
    except OSError:  # gone meanwhile: the caller's to find missing; no mount table to read
        return None
    return (
        f"the kernel makes it up: a {kind} file" if kind in locktable.KERNEL_FILESYSTEMS else None
    )


def regular(path: Path, refusal: Refusal = FilePathError) -> None:
    """The one check of a file the caller named (the database, a backup to restore, a file to
    import or to export to): an existing ``path`` that is a directory or no regular file
    (:func:`not_regular`) is refused by ``refusal`` naming it, before anything opens it (a
    pipe is never waited on, a device never written or replaced). A missing one passes: what
    that means is the caller's."""
    if path.is_dir():
        raise refusal(str(path), "it is a directory")
    if path.exists() and (what := not_regular(path)) is not None:
        raise refusal(str(path), f"it is not a regular file ({what})")


def cannot_write(
    path: Path,
    exc: OSError,
    refusal: Refusal = FilePathError,
    doing: str = WRITING,
    state: str = "",
) -> PhilontError:
    """The refusal of ``path`` for a write that failed with ``exc`` (``doing``: what failed;
    ``state``: what the files are left as, when the caller must know)."""
    reason = f"{doing} ({exc.strerror or exc})"
    return refusal(str(path), f"{reason}; {state}" if state else reason)


class NamedWrites(io.FileIO):
    """A file opened for writing whose every write that fails raises the refusal of ``named``
    (the path the caller gave; the file written may be a temporary one beside it)."""

    def __init__(
        self, fd: int, named: Path, refusal: Refusal = FilePathError, doing: str = WRITING
    ) -> None:
        super().__init__(fd, "w")
        self.named = named
        self.refusal = refusal
        self.doing = doing

    def write(self, data: Buffer, /) -> int:
        try:
            return super().write(data)
        except OSError as exc:
            raise cannot_write(self.named, exc, self.refusal, self.doing) from exc


@contextmanager
def refusing(named: Path, refusal: Refusal, doing: str, state: str = "") -> Iterator[None]:
    """Inside the block, an ``OSError`` (of any call on a file done for ``named``: a read,
    a ``stat``, a write, an ``fsync``, a rename; the file may be another one beside it) is
    the refusal of ``named``: ``doing`` says what failed (:func:`cannot_write`)."""
    try:
        yield
    except OSError as exc:
        raise cannot_write(named, exc, refusal, doing, state) from exc


def text_writer(fd: int, named: Path) -> TextIO:
    """A UTF-8 text stream on ``fd`` (lines end with ``\\n``) whose failed writes, however
    buffered, are :class:`FilePathError` of ``named``."""
    raw = NamedWrites(fd, named)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", newline="\n")


def fsync(fh: TextIO, named: Path) -> None:
    """Flush ``fh`` and make it durable; a failure is the refusal of ``named``."""
    with refusing(named, FilePathError, WRITING):
        fh.flush()
        os.fsync(fh.fileno())


COMPANIONS = ("-wal", "-shm", "-journal")
"""What SQLite may leave beside a database file it wrote (a temporary copy's included)."""


class LockedTemp:
    """A temporary file this process writes, made (``O_EXCL``, ``mode``) and held under
    ``flock(LOCK_EX)`` from before a byte is written until it is renamed or removed
    (:meth:`close`): the lock, not a pid, says its writer is alive, to any process that looks
    for leftovers (:func:`sweep`), one of another PID namespace (a container sharing the
    volume) included, where ``kill(pid, 0)`` saw every writer as gone. The lock is on the
    open file, not a range of bytes: SQLite's own locks on the file are not touched."""

    def __init__(self, path: Path, mode: int) -> None:
        self.path = path
        while True:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)  # waits only for a sweep that got it first
                if os.fstat(fd).st_nlink > 0:
                    break  # held before any sweep could take it: ours until closed
            except BaseException:
                if _names(path, fd):
                    remove_with_companions(path)
                os.close(fd)
                raise
            os.close(fd)  # swept between its making and the lock: make it again
        self.fd = fd

    def close(self) -> None:
        """Remove the file (and what SQLite left beside it) unless it was renamed meanwhile,
        then let the lock go."""
        if self.fd < 0:
            return
        try:
            if _names(self.path, self.fd):
                remove_with_companions(self.path)
        finally:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> LockedTemp:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _names(path: Path, fd: int) -> bool:
    """Whether ``path`` is still a name of the file open as ``fd``."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(fd))
    except OSError:
        return False


def remove_with_companions(path: Path) -> None:
    """Remove a file made for a write that did not end well and what SQLite left beside it;
    an unlink that fails too (a read-only file system refuses even a missing name) must not
    hide the failure reported."""
    for p in (path, *(Path(f"{path}{s}") for s in COMPANIONS)):
        with suppress(OSError):
            p.unlink(missing_ok=True)


TEMP_ID = "[0-9a-f]{32}"
"""The id in a temporary file's name that :class:`LockedTemp` writers give
(:func:`temp_id`). Older releases wrote ``<pid>-<id>`` and held no lock on the file."""

UNLOCKED_KEPT_S = 86_400.0
"""How long a temporary file named as no :class:`LockedTemp` writer names one (an older
release's ``<pid>-<id>``) is kept after its last change: its writer held no lock, so the lock
being free says nothing of it, and its pid says nothing from another PID namespace. A writer
changes its file as it copies, and checks then renames it within minutes; untouched for a
day, it is a killed writer's."""


def temp_id() -> str:
    """A new id for a temporary file's name (matches :data:`TEMP_ID`)."""
    return uuid.uuid4().hex


def sweep(directory: Path, pattern: str, locked_names: str) -> None:
    """Remove the temporary files matching ``pattern`` (a glob) in ``directory`` that a writer
    killed mid-way left (``kill -9``, a power loss: each can be as big as the file it was
    for, and nothing else would ever remove it), with what SQLite left beside them: those
    whose :class:`LockedTemp` lock nobody holds, whichever process wrote them. Only a name
    that ``locked_names`` (a regular expression, matching the whole name) says a
    :class:`LockedTemp` writer gives is told by its lock alone; any other (an older
    release's, which wrote without the lock: one still running while a new one is
    installed) goes once unchanged for :data:`UNLOCKED_KEPT_S`."""
    locked = re.compile(locked_names)
    for stale in directory.glob(pattern):
        try:
            fd = os.open(stale, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: its writer is at work
            if not locked.fullmatch(stale.name) and not _unchanged_for_long(fd):
                continue  # an older writer's, maybe at work: its lock says nothing
            if _names(stale, fd):  # not renamed into place meanwhile
                remove_with_companions(stale)
        except OSError:
            pass
        finally:
            os.close(fd)


def _unchanged_for_long(fd: int) -> bool:
    """Whether the file open as ``fd`` was last changed :data:`UNLOCKED_KEPT_S` ago or more
    (a change time ahead of the clock: no)."""
    return time.time() - os.fstat(fd).st_mtime >= UNLOCKED_KEPT_S


def temp_beside(path: Path, mark: str) -> Path:
    """A new hidden name beside ``path`` for the file written to take its place
    (``.<name><mark><id>.tmp``, to be made with :class:`LockedTemp`), once those a writer
    killed mid-way left there are removed (:func:`sweep`)."""
    lead = f".{path.name}{mark}"
    sweep(path.parent, f"{glob.escape(lead)}*.tmp", rf"{re.escape(lead)}{TEMP_ID}\.tmp")
    return path.parent / f"{lead}{temp_id()}.tmp"
