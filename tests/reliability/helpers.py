"""Helpers of the reliability tests: integrity checks and child processes running workers.py."""

from __future__ import annotations

import multiprocessing
import sqlite3
import time
from contextlib import closing
from multiprocessing.process import BaseProcess
from pathlib import Path

from philont.backup import fts5_tables
from tests.reliability import workers

# Children come from a fork server that imported philont once (a fresh interpreter, not a fork
# of pytest): starting one costs milliseconds instead of the ~1 s of importing philont anew.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["philont.memory", "philont.tools", "tests.reliability.workers"])


def integrity_problems(path: Path) -> list[str]:
    """Everything ``PRAGMA integrity_check`` and every FTS5 ``integrity-check`` report."""
    problems: list[str] = []
    with closing(sqlite3.connect(str(path), isolation_level=None)) as conn:
        conn.execute("PRAGMA busy_timeout = 5000")
        rows = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
        if rows != ["ok"]:
            problems.extend(f"integrity_check: {r}" for r in rows)
        conn.execute("BEGIN")
        try:
            for name in fts5_tables(conn):
                try:
                    conn.execute(
                        f'INSERT INTO "{name}"("{name}", rank) VALUES (\'integrity-check\', 1)'
                    )
                except sqlite3.DatabaseError as exc:
                    problems.append(f"{name}: {exc}")
        finally:
            conn.execute("ROLLBACK")
    return problems


def start_worker(role: str, *args: object, output: Path) -> BaseProcess:
    """Run ``workers.run(role, output, *args)`` in a child process; its lines go to ``output``."""
    proc = _CONTEXT.Process(
        target=workers.run, args=(role, str(output), *map(str, args)), daemon=True
    )
    proc.start()
    return proc


def errors_of(output: Path) -> str:
    """The end of what a worker wrote to its ``.err`` file (tracebacks)."""
    err = output.with_suffix(".err")
    return err.read_text(errors="replace")[-2000:] if err.exists() else ""


def complete_lines(output: Path) -> list[str]:
    """The lines a worker finished writing (a line cut off by a kill does not count)."""
    if not output.exists():
        return []
    text = output.read_text("utf-8", errors="replace")
    return text.split("\n")[:-1]  # after the last newline: empty, or a partial line


def wait_for_line(output: Path, prefix: str, proc: BaseProcess, timeout: float) -> None:
    """Block until the worker wrote a line starting with ``prefix`` (or fail clearly)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(line.startswith(prefix) for line in complete_lines(output)):
            return
        if not proc.is_alive():
            raise AssertionError(
                f"worker exited ({proc.exitcode}) before writing {prefix!r}: {errors_of(output)}"
            )
        time.sleep(0.005)
    raise AssertionError(f"worker wrote no {prefix!r} line within {timeout} s")


def stop(proc: BaseProcess) -> None:
    """Kill a worker that is still running and reap it."""
    if proc.is_alive():
        proc.kill()
    proc.join(timeout=30)
