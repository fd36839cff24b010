"""WAL checkpoints in the background, off the committing caller's path (SQLite files).

SQLite's automatic checkpoint runs inside the commit that crosses its threshold (1,000 pages):
that one caller copies the WAL into the database file and waits for two fsyncs, which is most
of a write's p95. Engines made by :func:`philont.db.engine.create_engine` leave that to a
:class:`Checkpointer` instead: every commit that changed rows wakes one daemon thread that,
after letting commits gather for ``GATHER_S``, runs ``PRAGMA wal_checkpoint(PASSIVE)`` on a
connection of its own (it copies what no reader still needs and never waits for readers or
writers; SQLite releases the GIL while it works). The writers' own automatic checkpoint stays
on at ``SAFETY_PAGES`` (about 40 MB of WAL) in case the thread falls behind or cannot run, or a
commit changed pages but no row (DDL alone). The thread ends after
``IDLE_S`` without commits and at once when the engine is disposed; the next commit starts it
again (in a forked child too). Durability is SQLite's ``synchronous=NORMAL`` in WAL either way.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from urllib.parse import quote

from philont.db import connections, fork
from philont.db.retry import is_busy
from philont.log import get_logger

__all__ = ["GATHER_S", "IDLE_S", "SAFETY_PAGES", "Checkpointer"]

log = get_logger(__name__)

GATHER_S = 0.05
"""Seconds a woken checkpointer waits for more commits before it checkpoints them together."""
IDLE_S = 10.0
"""Seconds without a commit after which the thread ends (and closes its connection)."""
SAFETY_PAGES = 10_000
"""``wal_autocheckpoint`` of the engine's own connections: the inline checkpoint of last resort."""


class Checkpointer:
    """One database file's background checkpoints; :meth:`committed` after every commit that
    changed rows (``philont.db.engine``)."""

    def __init__(self, path: Path) -> None:
        self.path = path.absolute()
        self.runs = 0
        """Checkpoints run so far (``PRAGMA wal_checkpoint`` calls that returned)."""
        self._wake = threading.Event()
        self._lock = fork.Lock()
        self._in_sqlite = fork.Lock(forks_wait=True)
        """Held while the thread is inside SQLite (connect, checkpoint, close): a fork waits."""
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()

    def committed(self) -> None:
        """A transaction committed: wake the thread (start it if it is not running: never
        started, ended when idle or disposed, or left behind in the parent of a fork)."""
        thread = self._thread
        if thread is None or not thread.is_alive():
            self._start()
        if not self._wake.is_set():
            self._wake.set()

    def _start(self) -> None:
        with self._lock:
            if self._halt.is_set() or (self._thread is not None and self._thread.is_alive()):
                return
            self._thread = threading.Thread(
                target=self._run, name=f"philont-checkpoint:{self.path.name}", daemon=True
            )
            self._thread.start()

    def stop(self) -> None:
        """End the thread now and close its connection (the engine is disposed); a later
        commit starts a new one."""
        with self._lock:
            self._halt.set()
            self._wake.set()  # out of an idle wait; the halt ends it before any checkpoint
            thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                thread.join()
            self._halt.clear()

    def _run(self) -> None:
        try:
            # mode=rw: a file deleted or moved meanwhile is an error, never a new empty file
            uri = f"file:{quote(str(self.path))}?mode=rw"
            with self._in_sqlite:
                conn = connections.connect(uri, uri=True, timeout=0)
            try:
                while self._wake.wait(IDLE_S) and not self._halt.wait(GATHER_S):
                    self._wake.clear()
                    with self._in_sqlite:
                        self._checkpoint(conn)
            finally:
                with self._in_sqlite:
                    conn.close()
        except sqlite3.Error as exc:  # the writers' SAFETY_PAGES checkpoint still bounds the WAL
            if not self.path.exists():  # deleted or moved: every writer says so (database_gone)
                log.debug("checkpoint.file_gone", path=str(self.path), error=str(exc))
                return
            log.warning("checkpoint.failed", path=str(self.path), error=str(exc))

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """One PASSIVE checkpoint. A lock another connection holds (one that keeps the file
        exclusively, an upgrade before the switch to WAL, a checkpoint of its own) is normal:
        the next commit tries again."""
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except sqlite3.OperationalError as exc:
            if not is_busy(exc):
                raise
            log.debug("checkpoint.busy", path=str(self.path), error=str(exc))
            return
        self.runs += 1
