"""Files philont writes for a caller (an export, the copy a restore puts in place): a write that
fails, because the disk is full (``ENOSPC``), a file size limit is reached (``EFBIG``,
``RLIMIT_FSIZE``), a quota is used up or the device fails, is the typed refusal of the path
the caller named, never a bare ``OSError`` that names no file (the command line printed
``error (EFBIG): File too large``) or names another one (a restore blamed the backup it was
reading for the copy it could not write)."""

from __future__ import annotations

import glob
import io
import os
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from philont.errors import FilePathError, PhilontError

if TYPE_CHECKING:  # collections.abc.Buffer from Python 3.12 on
    from typing_extensions import Buffer

__all__ = [
    "NamedWrites",
    "alive",
    "cannot_write",
    "fsync",
    "may",
    "temp_beside",
    "text_writer",
    "writes_named",
]

Refusal = Callable[[str, str], PhilontError]
"""How a failed write is reported: ``(path, reason) -> error`` (``FilePathError`` or
``DatabasePathError``)."""


WRITING = "cannot write it"


def may(path: Path, mode: int) -> bool:
    """Whether this process may access ``path`` as ``mode`` (``os.R_OK``, ``os.W_OK`` ...):
    by its effective ids and capabilities, as an ``open`` would be judged, not its real ids."""
    return os.access(path, mode, effective_ids=os.access in os.supports_effective_ids)


def cannot_write(
    path: Path, exc: OSError, refusal: Refusal = FilePathError, doing: str = WRITING
) -> PhilontError:
    """The refusal of ``path`` for a write that failed with ``exc`` (``doing``: what failed)."""
    return refusal(str(path), f"{doing} ({exc.strerror or exc})")


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
def writes_named(
    named: Path, refusal: Refusal = FilePathError, doing: str = WRITING
) -> Iterator[None]:
    """Inside the block, an ``OSError`` (a flush, an ``fsync``, a rename of the file written
    for ``named``) is the refusal of ``named``."""
    try:
        yield
    except OSError as exc:
        raise cannot_write(named, exc, refusal, doing) from exc


def text_writer(fd: int, named: Path) -> TextIO:
    """A UTF-8 text stream on ``fd`` (lines end with ``\\n``) whose failed writes, however
    buffered, are :class:`FilePathError` of ``named``."""
    raw = NamedWrites(fd, named)
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding="utf-8", newline="\n")


def fsync(fh: TextIO, named: Path) -> None:
    """Flush ``fh`` and make it durable; a failure is the refusal of ``named``."""
    with writes_named(named):
        fh.flush()
        os.fsync(fh.fileno())


def alive(pid: int) -> bool:
    """Whether process ``pid`` is running (a writer whose files must not be swept)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def temp_beside(path: Path, mark: str) -> Path:
    """A new hidden name beside ``path`` for the file written to take its place
    (``.<name><mark><pid>-<id>.tmp``), once those a writer killed mid-way left there are
    removed (their process is gone: ``kill -9``, a power loss; each can be as big as the file
    and nothing else would ever remove it), with their ``-wal``/``-shm``/``-journal``."""
    lead = f".{path.name}{mark}"
    for stale in path.parent.glob(f"{glob.escape(lead)}*.tmp"):
        pid = stale.name[len(lead) :].split("-", 1)[0]
        if not pid.isdigit() or not alive(int(pid)):
            for p in (stale, *(Path(f"{stale}{s}") for s in ("-wal", "-shm", "-journal"))):
                with suppress(OSError):
                    p.unlink(missing_ok=True)
    return path.parent / f"{lead}{os.getpid()}-{uuid.uuid4().hex}.tmp"
