"""philont never makes this process drop SQLite's locks on a database it has open.

POSIX drops every lock a process holds on a file when the process closes any descriptor of it.
A process whose Store lost its lock on the database file looks, to another process closing its
last connection, like no process at all: that one checkpoints and deletes the WAL, and this
process's later commits go to an unlinked file (sqlite.org/howtocorrupt.html, 2.2). So every
operation that looks at a database file does it through SQLite, whatever else has it open.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from philont import migrate, tools
from philont.backup import backup, verify
from philont.cli.inspect import layer_counts
from philont.db.engine import check_file, create_engine, file_kind
from philont.migrate.checks import is_wal
from philont.store import Store, close_shared

PROBE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=0)
conn.execute("PRAGMA locking_mode = EXCLUSIVE")
try:
    conn.execute("BEGIN EXCLUSIVE")
except sqlite3.OperationalError:
    print("held")
else:
    print("free")
"""


def _held_elsewhere(path: Path) -> bool:
    """Whether a connection (of this process) still holds the file, as another process sees."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, check=True
    )
    return out.stdout.strip() == "held"


def _engine_dispose(path: Path) -> None:
    create_engine(path).dispose()


OPERATIONS: dict[str, Callable[[Path], object]] = {
    "Store.open again": lambda p: Store.open(p).close(),
    "create_engine": _engine_dispose,
    "check_file": lambda p: check_file(p, create=False),
    "file_kind": file_kind,
    "is_wal": is_wal,
    "migrate.status": migrate.status,
    "migrate.check": migrate.check,
    "migrate.upgrade at head": migrate.upgrade,
    "backup": backup,
    "verify": verify,
    "layer_counts": layer_counts,
    "tools.call(db=path)": lambda p: tools.call("list_facts", {"namespace": "user"}, db=p),
}


@pytest.mark.parametrize("operation", sorted(OPERATIONS))
def test_looking_at_an_open_database_keeps_this_process_lock(
    tmp_path: Path, operation: str
) -> None:
    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store:
        with store.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
        assert _held_elsewhere(path)  # the Store's idle connection holds the file

        OPERATIONS[operation](path)

        assert _held_elsewhere(path), f"{operation} dropped the Store's lock"
        # and so another process's last close leaves the WAL the Store writes to alone
        close = "import sqlite3, sys; sqlite3.connect(sys.argv[1]).close()"
        subprocess.run([sys.executable, "-c", close, str(path)], check=True)
        assert os.path.exists(f"{path}-wal")
        with store.begin() as mem:
            mem.facts.store("user", "pet", "cat")
    close_shared()
    with Store.open(path) as again, again.begin() as mem:
        assert mem.facts.get("user", "pet") is not None


def test_looking_at_a_wal_file_nobody_has_open_leaves_nothing_beside_it(tmp_path: Path) -> None:
    """A backup in backups/ is a WAL-mode file nobody has open: checking it must not leave
    ``-wal``/``-shm`` files beside it."""
    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    close_shared()
    taken = backup(path)
    before = sorted(p.name for p in taken.parent.iterdir())

    assert file_kind(taken) == "sqlite"
    check_file(taken, create=False)

    assert sorted(p.name for p in taken.parent.iterdir()) == before
