"""A process killed while it writes a backup (the pre-upgrade copy, `philont backup`, the
safety copy of a restore) leaves no half-written file under a backup's name: a later
`restore` or a look into backups/ must never take a partial copy for a backup. The next
backup clears what the killed one left."""

from __future__ import annotations

import fcntl
import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from philont import filewrite, settings
from philont.migrate import backup_file
from tests.support import DEAD_PID, held_by_another_process

_WRITER = """
import sys
from pathlib import Path
from philont.migrate import backup_file
backup_file(Path(sys.argv[1]), label="-pre-upgrade")
"""


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
    """Start a backup in another process and SIGKILL it once its copy has begun to grow."""
    directory = settings.backup_dir_for(db)
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(db)])
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if any(p.stat().st_size > 4 << 20 for p in _files(directory) if p.is_file()):
                break
            time.sleep(0.001)
        assert proc.poll() is None, "the copy finished before it could be interrupted"
    finally:
        proc.kill()
        proc.wait()


def test_a_backup_killed_mid_copy_leaves_nothing_named_like_a_backup(tmp_path: Path) -> None:
    db = tmp_path / "memory.sqlite"
    _big_database(db, 400)
    directory = settings.backup_dir_for(db)

    _kill_mid_copy(db)

    left = _files(directory)
    named = [p for p in left if p.name.startswith("memory-")]
    assert named == [], f"a partial copy carries a backup's name: {named}"
    assert all(p.name.startswith(".") for p in left), left  # hidden leftovers only

    done = backup_file(db, label="-pre-upgrade")
    assert _files(directory) == [done]  # the killed copy's leftovers were cleared
    with closing(sqlite3.connect(f"file:{done}?mode=ro", uri=True)) as conn:
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
        assert conn.execute("SELECT count(*) FROM blobs").fetchone() == (400,)
    assert oct(done.stat().st_mode & 0o777) == oct(0o600)


def test_a_running_backups_partial_copy_is_not_swept(tmp_path: Path) -> None:
    """Whatever the pid in its name says: a partial copy its writer holds (a backup at work,
    in a container sharing the volume: its pid is none of this PID namespace's) is left
    alone; one nobody holds goes (a pid alive here or not)."""
    db = tmp_path / "memory.sqlite"
    _big_database(db, 1)
    directory = settings.backup_dir_for(db)
    directory.mkdir(parents=True)
    running = directory / f".memory-20260101T000000.sqlite.partial-{DEAD_PID}-abc"
    running.write_bytes(b"x")
    for pid in (os.getpid(), DEAD_PID):
        (directory / f".memory-20260101T000000.sqlite.partial-{pid}-def").write_bytes(b"x")

    with held_by_another_process(running):
        done = backup_file(db)

    assert sorted(_files(directory)) == sorted([running, done])


_SWEEP = """
import sys
from pathlib import Path
from philont import filewrite
filewrite.sweep(Path(sys.argv[1]), sys.argv[2])
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
                [sys.executable, "-c", _SWEEP, str(tmp_path), "*.tmp"],
                check=True,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            )
        real_flock(fd, op)

    monkeypatch.setattr(filewrite.fcntl, "flock", sweep_first)
    path = tmp_path / "x.tmp"
    with filewrite.LockedTemp(path, 0o600) as held:
        assert swept and os.path.samestat(os.stat(path), os.fstat(held.fd))
        monkeypatch.setattr(filewrite.fcntl, "flock", real_flock)
        filewrite.sweep(tmp_path, "*.tmp")  # another open file of it: refused like a process
        assert path.exists()
    assert not path.exists()
