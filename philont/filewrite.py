"""Files philont writes for a caller (an export, the copy a restore puts in place): a write that
fails, because the disk is full (``ENOSPC``), a file size limit is reached (``EFBIG``,
``RLIMIT_FSIZE``), a quota is used up or the device fails, is the typed refusal of the path
the caller named, never a bare ``OSError`` that names no file (the command line printed
``error (EFBIG): File too large``) or names another one (a restore blamed the backup it was
reading for the copy it could not write)."""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from philont.errors import FilePathError, PhilontError

if TYPE_CHECKING:  # collections.abc.Buffer from Python 3.12 on
    from typing_extensions import Buffer

__all__ = ["NamedWrites", "cannot_write", "fsync", "may", "text_writer", "writes_named"]

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
