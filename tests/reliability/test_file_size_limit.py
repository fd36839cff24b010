"""A file philont writes for a caller (an export, the copy a restore puts beside the database)
that the disk refuses to grow, full or past a file size limit (``RLIMIT_FSIZE``, ``EFBIG``), is
refused naming the path the caller gave (``file_path``), and nothing is left behind. It was a
bare ``OSError`` naming no file (``error (EFBIG): File too large`` from ``philont export``), and a
restore blamed the backup it read (``cannot use '<backup>': File too large``) for the copy it
could not write beside the database."""

from __future__ import annotations

import errno
import hashlib
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import backup, filewrite, transfer
from philont.errors import DatabasePathError, FilePathError
from philont.store import Store

PHILONT = [sys.executable, "-m", "philont"]


def _filled(path: Path, notes: int) -> Path:
    store = Store.open(path)
    try:
        with store.begin() as mem:
            for i in range(notes):
                mem.notes.add(f"note {i} " + "lorem ipsum " * 90)
    finally:
        store.close()
    return path


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A memory of about 300 KB of export, kept open (its ``-shm`` file, which any reader
    needs, exists at its size: the limit is met by the export's file alone)."""
    path = _filled(tmp_path_factory.mktemp("limit") / "memory.sqlite", 250)
    store = Store.open(path)
    with store.begin(write=False) as mem:
        mem.notes.list(limit=1)
    yield path
    store.close()


@contextmanager
def size_limit(limit: int) -> Iterator[None]:
    """This process may not write a file past ``limit`` bytes (writes fail with EFBIG)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, previous)


def _body(path: Path) -> list[str]:
    """An export's lines but its header (which holds the time it was made)."""
    return path.read_text(encoding="utf-8").splitlines()[1:]


def _leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(limit=st.integers(min_value=0, max_value=400_000))
def test_an_export_past_a_file_size_limit_is_refused_naming_its_file_or_written_whole(
    database: Path, tmp_path: Path, limit: int
) -> None:
    whole = tmp_path / "whole.jsonl"
    transfer.export(database, whole)
    size = whole.stat().st_size
    out = tmp_path / f"limited-{limit}.jsonl"
    try:
        with size_limit(limit):
            transfer.export(database, out)
    except FilePathError as exc:
        assert limit < size
        assert exc.path == str(out)
        assert exc.reason == f"cannot write it ({os.strerror(errno.EFBIG)})"
        assert not out.exists()
    else:
        assert limit >= size
        assert _body(out) == _body(whole)
    assert _leftovers(tmp_path) == []


def test_an_export_from_postgresql_past_a_file_size_limit_names_its_file(
    pg_agent: Callable[[], object], database: Path, tmp_path: Path
) -> None:
    url = pg_agent()
    source = tmp_path / "source.jsonl"
    transfer.export(database, source)
    transfer.import_(url, source)
    out = tmp_path / "from-pg.jsonl"
    with size_limit(50_000), pytest.raises(FilePathError) as caught:
        transfer.export(url, out)
    assert (caught.value.path, caught.value.reason) == (
        str(out),
        "cannot write it (File too large)",
    )
    assert not out.exists() and _leftovers(tmp_path) == []


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_restore_that_cannot_write_its_copy_names_the_database_and_changes_nothing(
    tmp_path: Path,
) -> None:
    live = _filled(tmp_path / "memory.sqlite", 5)
    kept = backup.backup(live)
    _filled(live, 200)  # the live file moves on; the backup is the smaller one
    before = _digest(live)
    with size_limit(kept.stat().st_size // 2), pytest.raises(DatabasePathError) as caught:
        backup.restore(kept, live)
    assert caught.value.path == str(live)
    assert caught.value.reason == "cannot write the backup's copy beside it (File too large)"
    assert _digest(live) == before
    assert _leftovers(tmp_path) == []


def _limited(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def _run(args: list[str], limit: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    return subprocess.run(
        PHILONT + args, capture_output=True, text=True, env=env, preexec_fn=_limited(limit)
    )


def test_the_commands_say_which_file_could_not_be_written_in_one_line(
    database: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    done = _run(["export", str(out), "--db", str(database)], 100_000)
    assert (done.returncode, done.stderr) == (
        1,
        f"error (file_path): cannot use '{out}': cannot write it (File too large)\n",
    )
    assert not out.exists() and _leftovers(tmp_path) == []

    live = _filled(tmp_path / "memory.sqlite", 5)
    kept = backup.backup(live)
    before = _digest(live)
    done = _run(["restore", str(kept), "--db", str(live)], kept.stat().st_size // 2)
    assert (done.returncode, done.stderr) == (
        1,
        f"error (file_path): cannot use '{live}' as a memory database: cannot write the "
        "backup's copy beside it (File too large)\n",
    )
    assert _digest(live) == before and _leftovers(tmp_path) == []


def test_a_write_to_a_full_device_is_the_refusal_of_the_named_path(tmp_path: Path) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    named = tmp_path / "export.jsonl"
    fh = filewrite.text_writer(os.open("/dev/full", os.O_WRONLY), named)
    with pytest.raises(FilePathError) as caught, fh:
        fh.write("x" * 10_000)
        fh.flush()
    assert caught.value.reason == f"cannot write it ({os.strerror(errno.ENOSPC)})"
    assert fh.closed


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(limit=st.integers(min_value=0, max_value=1_200_000))
def test_a_backup_past_a_file_size_limit_names_the_backups_folder_or_is_whole(
    database: Path, limit: int
) -> None:
    """The copy is the only file a backup writes: a write it cannot make is the refusal of the
    backups folder (``file_path``), never a storage error or a full disk of the database,
    which nothing wrote to (its disk may be another), and no partial copy stays."""
    folder = database.parent / "backups"
    before = sorted(folder.iterdir())
    try:
        with size_limit(limit):
            taken = backup.backup(database)
    except FilePathError as exc:
        assert exc.path == str(folder)
        assert exc.reason.startswith("cannot write a backup into it (")
    else:
        backup.verify(taken)
        taken.unlink()
    assert sorted(folder.iterdir()) == before


def test_a_restore_whose_safety_copy_cannot_be_written_names_the_backups_folder(
    tmp_path: Path,
) -> None:
    """The copy of the live file kept before a restore goes into backups/: when it cannot be
    written there the restore is refused naming that folder (it said the database was full),
    and nothing changed."""
    live = _filled(tmp_path / "memory.sqlite", 5)
    kept = backup.backup(live)
    _filled(live, 200)  # the live file, copied first, is the larger one
    before = _digest(live)
    folder = live.parent / "backups"
    listing = sorted(folder.iterdir())
    limit = (kept.stat().st_size + live.stat().st_size) // 2
    with size_limit(limit), pytest.raises(FilePathError) as caught:
        backup.restore(kept, live)
    assert caught.value.path == str(folder)
    assert _digest(live) == before
    assert sorted(folder.iterdir()) == listing and _leftovers(tmp_path) == []
