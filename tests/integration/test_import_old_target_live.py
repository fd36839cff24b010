"""An import into a file still in the original's rollback-journal mode, while others use it:
the import upgrades and loads it in one transaction and switches it to WAL only after the
commit (a refused import leaves it byte for byte as it was), so for the whole import the file
is in rollback-journal mode. A reader in another process reads it all along (the state before
the import) until the commit, and a process killed in the middle of the import leaves the
file as it was."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from philont import transfer
from philont.store import Store
from philont.transfer import INDEXING, load

REPO = Path(__file__).resolve().parents[2]
NOTES = 3000
"""Notes in the file and added to the old target: together well past SQLite's default page
cache (2 MB), which the import's changes used to spill into the file, locking readers out."""

_READER = """
import sqlite3, sys
from contextlib import closing
for _ in sys.stdin:
    try:
        with closing(sqlite3.connect(sys.argv[1], timeout=0)) as conn:
            print(conn.execute("SELECT count(*) FROM memory_notes").fetchone()[0], flush=True)
    except sqlite3.Error as exc:
        print(exc, flush=True)
"""


@pytest.fixture(scope="module")
def notes_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of ``NOTES`` notes of their own ids."""
    base = tmp_path_factory.mktemp("notes")
    with Store.open(base / "memory.sqlite") as store, store.begin() as mem:
        for i in range(NOTES):
            mem.notes.add(f"imported note {i}: " + "words " * 50, id=f"imported-{i}")
    out = base / "notes.jsonl"
    transfer.export(base / "memory.sqlite", out)
    return out


@pytest.fixture
def old_target(copy_fixture: Callable[[str], Path]) -> Path:
    """The original's v31 file (rollback journal), with ``NOTES`` more notes of its own."""
    target = copy_fixture("v31")
    with closing(sqlite3.connect(target)) as conn, conn:
        conn.executemany(
            "INSERT INTO memory_notes (id, content, created_at) VALUES (?, ?, 1700000000)",
            ((f"old-{i}", f"old note {i}: " + "text " * 50) for i in range(NOTES)),
        )
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    return target


def _notes(path: Path) -> int:
    with closing(sqlite3.connect(path)) as conn:
        return int(conn.execute("SELECT count(*) FROM memory_notes").fetchone()[0])


def _read_along(target: Path, file: Path) -> tuple[int, dict[str, str], str]:
    """Import ``file`` into ``target`` (merge mode) while a reader in another process, which
    does not wait for a lock, counts the target's notes at every progress report: the count
    before, what it read at each report (or its error), what it reads after the commit."""
    before = _notes(target)
    seen: dict[str, str] = {}
    with subprocess.Popen(
        [sys.executable, "-c", _READER, str(target)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as reader:
        assert reader.stdin is not None and reader.stdout is not None
        stdin, stdout = reader.stdin, reader.stdout

        def read() -> str:
            stdin.write("\n")
            stdin.flush()
            return stdout.readline().strip()

        def progress(table: str, done: int, total: int) -> None:
            seen[f"{table} {done}/{total}"] = read()

        transfer.import_(target, file, mode="merge", progress=progress)
        after = read()
        stdin.close()
    return before, seen, after


def test_a_reader_reads_the_old_file_throughout_the_import(
    old_target: Path, notes_file: Path
) -> None:
    """At every progress report of the import (its rows, then its full-text rebuild, all inside
    its transaction) a reader in another process, which does not wait for a lock, reads the
    notes as they were before; after the commit it reads the imported ones too. Before, the
    import's changes spilled from SQLite's page cache into the file once past 2 MB, which takes
    the exclusive lock: readers were locked out from then to the commit ("database is locked"),
    most of the import (13 of 17 s for an import of 20,000 notes into a file of 20 MB)."""
    before, seen, after = _read_along(old_target, notes_file)

    assert any(step.startswith(INDEXING) for step in seen), seen
    assert set(seen.values()) == {str(before)}, seen
    assert after == str(before + NOTES)


def test_past_its_memory_budget_the_import_writes_into_the_file(
    old_target: Path, notes_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pages an import keeps in memory are bounded (``load.SPILL_BYTES``; cut to 1 MiB
    here): past that SQLite writes them into the file, and a reader waits for the commit. (Set
    as a page count SQLite also reads as a boolean, 256 MiB of 4 KiB pages turned spilling
    off: memory grew with the import.)"""
    with closing(sqlite3.connect(old_target)) as conn:  # the real budget: a threshold, not off
        load._keep_readers_reading(conn)
        pages = conn.execute("PRAGMA cache_spill").fetchone()[0]
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        assert load.SPILL_BYTES / 2 < pages * page <= load.SPILL_BYTES, pages
    monkeypatch.setattr(load, "SPILL_BYTES", 1 << 20)
    _, seen, after = _read_along(old_target, notes_file)
    assert "database is locked" in seen.values(), seen
    assert after == str(_notes(old_target))


_KILLED = """
import os, sys, time
from pathlib import Path
from philont import transfer

def progress(table, done, total):
    if table == transfer.INDEXING:  # every row inserted, the indexes being rebuilt
        print("importing", flush=True)
        time.sleep(600)

transfer.import_(Path(sys.argv[1]), Path(sys.argv[2]), mode="merge", progress=progress)
"""


def _digest(path: Path) -> str:
    with closing(sqlite3.connect(path)) as conn:  # a writer's: rolls back a hot journal
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()


def test_an_import_killed_in_the_middle_leaves_the_old_file_as_it_was(
    old_target: Path, notes_file: Path
) -> None:
    """A process killed (SIGKILL) with every row inserted and its indexes being rebuilt: the
    file, once opened again, holds what it held (the same rows and schema, no upgrade), sound,
    in its own journal mode; nothing of the import is half there, and the import run again
    commits. (A ``-journal`` the killed import left, never written into the file, stays beside
    it until the next write: SQLite does not take it for a hot one.)"""
    before, notes = _digest(old_target), _notes(old_target)
    with subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(old_target), str(notes_file)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "importing"
        child.send_signal(signal.SIGKILL)
    assert child.returncode == -signal.SIGKILL

    assert _digest(old_target) == before
    with closing(sqlite3.connect(old_target)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    report = transfer.import_(old_target, notes_file, mode="merge")
    assert report.inserted == {"memory_notes": NOTES}
    assert _notes(old_target) == notes + NOTES
    assert not old_target.with_name(old_target.name + "-journal").exists()
