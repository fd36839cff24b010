"""A process killed while it writes a backup (the pre-upgrade copy, `philont backup`, the
safety copy of a restore) leaves no half-written file under a backup's name: a later
`restore` or a look into backups/ must never take a partial copy for a backup. The next
backup clears what the killed one left."""

from __future__ import annotations

import fcntl
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from philont import filewrite
from philont import settings as philont_settings
from philont.backup import RESTORE_COPY
from philont.migrate import backup_file
from philont.transfer.export import EXPORT_COPY
from tests.support import DEAD_PID, held_by_another_process

_WRITER = """
import sys
from pathlib import Path
from philont.db import connections
from philont.migrate import backup_file

copy = connections.Connection.backup


def in_steps(self, target, *, pages=-1, progress=None, **kwargs):
    # the copy in steps of 1 MiB; once its partial file holds more than 4 MiB and pages remain,
    # say so and stop there (until killed): the moment the test kills it is mid-copy for sure
    def mid_copy(status, remaining, total):
        if progress is not None:
            progress(status, remaining, total)
        if remaining and any(p.stat().st_size > 4 << 20 for p in Path(sys.argv[2]).iterdir()):
            print("mid-copy", flush=True)
            sys.stdin.read()

    copy(self, target, pages=256, progress=mid_copy, **kwargs)


connections.Connection.backup = in_steps
backup_file(Path(sys.argv[1]), label="-pre-upgrade")
"""
MEGABYTES = 16


def _big_database(path: Path, megabytes: int) -> None:
    with closing(sqlite3.connect(str(path), isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE blobs (b BLOB)")
        conn.execute("BEGIN")
        for _ in range(megabytes):
            conn.execute("INSERT INTO blobs VALUES (randomblob(1048576))")
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir()) if directory.is_dir() else []


def _kill_mid_copy(db: Path) -> None:
    """Start a backup in another process and SIGKILL it once its copy has grown past 4 MiB
    (the child stops there and says so: a timer of the parent's, late on a loaded machine,
    let the copy finish first)."""
    directory = philont_settings.backup_dir_for(db)
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(db), str(directory)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        said = proc.stdout.readline()  # "" when it ended without stopping mid-copy
        assert said == "mid-copy\n", "the copy finished before it could be interrupted"
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()


def test_a_backup_killed_mid_copy_leaves_nothing_named_like_a_backup(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    _big_database(db, MEGABYTES)
    directory = philont_settings.backup_dir_for(db)

    _kill_mid_copy(db)

    left = _files(directory)
    named = [p for p in left if p.name.startswith("memory-")]
    assert named == [], f"a partial copy carries a backup's name: {named}"
    assert all(p.name.startswith(".") for p in left), left  # hidden leftovers only

    done = backup_file(db, label="-pre-upgrade")
    assert _files(directory) == [done]  # the killed copy's leftovers were cleared
    with closing(sqlite3.connect(f"file:{done}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM blobs").fetchone() == (MEGABYTES,)
    assert oct(done.stat().st_mode & 0o777) == oct(0o600)


def test_a_running_backups_partial_copy_is_not_swept(tmp_path: Path) -> None:
    """A partial copy its writer holds (a backup at work, in a container sharing the volume
    too) is left alone; one nobody holds goes."""
    db = tmp_path / "memory.sqlite"
    _big_database(db, 1)
    directory = philont_settings.backup_dir_for(db)
    directory.mkdir(parents=True)
    running = directory / f".memory-20260101T000000.sqlite.partial-{filewrite.temp_id()}"
    running.write_bytes(b"x")
    (directory / f".memory-20260101T000000.sqlite.partial-{filewrite.temp_id()}").write_bytes(b"x")

    with held_by_another_process(running):
        done = backup_file(db)

    assert sorted(_files(directory)) == sorted([running, done])


_SWEEP = """
import sys
from pathlib import Path
from philont import filewrite
filewrite.sweep(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
"""


def test_a_temp_file_swept_between_its_making_and_its_lock_is_made_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A sweep that comes between the writer's ``open(O_EXCL)`` and its ``flock`` finds the
    file held by nobody and removes it: the writer makes it again and holds it, rather than
    write into a file no name leads to."""
    real_flock = fcntl.flock
    swept: list[Path] = []

    def sweep_first(fd: int, op: int) -> None:
        if not swept:
            swept.append(tmp_path)
            subprocess.run(
                [sys.executable, "-c", _SWEEP, str(tmp_path), "*.tmp", r".*\.tmp"],
                check=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            )
        real_flock(fd, op)

    monkeypatch.setattr(filewrite.fcntl, "flock", sweep_first)
    path = tmp_path / "x.tmp"
    with filewrite.LockedTemp(path, 0o600) as held:
        assert swept and os.path.samestat(os.stat(path), os.fstat(held.fd))
        monkeypatch.setattr(filewrite.fcntl, "flock", real_flock)
        filewrite.sweep(
            tmp_path, "*.tmp", r".*\.tmp"
        )  # another open file of it: refused like a process
        assert path.exists()
    assert not path.exists()


DAY = filewrite.UNLOCKED_KEPT_S


def _restore_copies(directory: Path) -> tuple[Callable[[str], Path], Callable[[], object]]:
    db = directory / "memory.sqlite"
    return (
        lambda tail: directory / f".memory.sqlite{RESTORE_COPY}{tail}.tmp",
        lambda: filewrite.temp_beside(db, RESTORE_COPY),
    )


def _export_files(directory: Path) -> tuple[Callable[[str], Path], Callable[[], object]]:
    out = directory / "out.jsonl"
    return (
        lambda tail: directory / f".out.jsonl{EXPORT_COPY}{tail}.tmp",
        lambda: filewrite.temp_beside(out, EXPORT_COPY),
    )


def _partial_backups(directory: Path) -> tuple[Callable[[str], Path], Callable[[], object]]:
    db = directory / "memory.sqlite"
    _big_database(db, 0)
    backups = philont_settings.backup_dir_for(db)
    backups.mkdir()
    return (
        lambda tail: backups / f".memory-20260101T000000.sqlite.partial-{tail}",
        lambda: backup_file(db),
    )


TEMP_KINDS = {
    "a restore's copy": _restore_copies,
    "an export's file": _export_files,
    "a backup's partial copy": _partial_backups,
}


def _older(pid: int, kind: str) -> str:
    """The id an older release (before the lock) put in a name: its pid, then a random id."""
    return f"{pid}-{os.urandom(4 if kind.endswith('partial copy') else 16).hex()}"


@pytest.mark.parametrize("kind", sorted(TEMP_KINDS))
def test_an_older_releases_temp_file_goes_only_once_unchanged_for_a_day(
    tmp_path: Path, kind: str
) -> None:
    """An older philont still running while a new one is installed writes its temp files
    without the lock, named ``<pid>-<id>``: a sweep that took the free lock for "its writer
    is gone" deleted the file it was writing. Such a name is kept (its pid alive here or
    not) until unchanged for a day; a name only a locked writer gives goes by the lock."""
    name, sweep = TEMP_KINDS[kind](tmp_path)
    now = time.time()
    ages = {"fresh": 0.0, "almost a day": DAY - 600, "a day": DAY + 1, "a week": 7 * DAY}
    older = {(pid, age): name(_older(pid, kind)) for pid in (os.getpid(), DEAD_PID) for age in ages}
    for (_, age), path in older.items():
        path.write_bytes(b"an older writer's")
        os.utime(path, (now - ages[age], now - ages[age]))
    unheld = name(filewrite.temp_id())
    unheld.write_bytes(b"a locked writer's, killed")

    sweep()

    kept = {key for key, path in older.items() if path.exists()}
    assert kept == {
        (pid, age) for pid in (os.getpid(), DEAD_PID) for age in ("fresh", "almost a day")
    }
    assert not unheld.exists()


@settings(max_examples=60, deadline=None)
@given(tail=st.text(alphabet="0123456789abcdefABCDEF-xz.", min_size=1, max_size=40))
def test_only_a_name_a_locked_writer_gives_is_swept_by_its_lock_alone(tail: str) -> None:
    """Generated names beside a database (``.<db>.restore-<tail>.tmp``), none held, all just
    written: swept exactly when ``<tail>`` is the id a LockedTemp writer gives."""
    with tempfile.TemporaryDirectory() as directory:
        name, sweep = _restore_copies(Path(directory))
        path = name(tail)
        path.write_bytes(b"x")
        sweep()
        made_by_a_locked_writer = re.fullmatch("[0-9a-f]{32}", tail) is not None
        assert path.exists() is not made_by_a_locked_writer


def test_a_generated_id_is_the_one_a_locked_writer_gives() -> None:
    for _ in range(100):
        assert re.fullmatch(filewrite.TEMP_ID, filewrite.temp_id())
