"""Every benchmark script runs, at its smallest size, to the end.

Speed targets live in ``scripts/bench_*.py``, which no test ran: ``bench_context.py`` stopped
with "statement capture incomplete" (FTS5's own statements, read again after another
connection committed, were taken for the library reaching SQLite some other way) and nobody
knew until a benchmark was wanted. Each script here runs as a user runs it, in a process of
its own with its caches in a temporary directory, and must exit 0, print its comparison with
raw SQL, and leave docs/benchmarks.md as it was (``--no-write`` where a script rewrites it).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import pg_support

REPO = Path(__file__).resolve().parents[2]
DEV = REPO.parent / "shared" / "data" / "locomo-dev"
FIXTURES = Path(os.environ.get("PHILONT_FIXTURES", REPO.parent / "shared" / "fixtures" / "philont"))

SQLITE_RUNS = {
    "bench_context": ["--sizes", "1000", "--queries", "3", "--rounds", "1",
                      "--profile-turns", "0", "--no-write"],
    "bench_write": ["--sizes", "1000", "--singles", "20", "--warmup", "2", "--repeat", "1",
                    "--no-profile", "--no-write"],
    "bench_migrate": ["--messages", "1000", "--repeat", "1", "--no-progress", "--no-write",
                      "--fixture", str(FIXTURES / "v2.sqlite")],
    "bench_tools": ["--messages", "1000", "--calls", "10", "--warmup", "2", "--no-mcp"],
    "bench_learning": ["--messages", "200", "--batch", "50"],
    "bench_recall": ["--data", str(DEV / "conv-26.json"), "--scale", "1000"],
}  # fmt: skip
SAID = {  # what each prints when it compares (raw SQL, or the original's or ours)
    "bench_context": "raw p50 ms",
    "bench_write": "executemany",
    "bench_migrate": "peak RSS MiB",
    "bench_tools": "floor",
    "bench_learning": "every table unchanged after re-learning the first window: yes",
    "bench_recall": "the same SQL via raw sqlite3",
    "bench_pg_facts": "get, open unit",
    "bench_pg_agents": "targets met",
}


def _run(name: str, args: list[str], tmp_path: Path) -> str:
    doc = REPO / "docs" / "benchmarks.md"
    before = doc.read_bytes()
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / f"{name}.py"), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert SAID[name] in output, output[-3000:]
    assert doc.read_bytes() == before, f"{name} rewrote docs/benchmarks.md"
    return output


@pytest.mark.parametrize("name", sorted(SQLITE_RUNS))
def test_a_sqlite_benchmark_runs_to_the_end(name: str, tmp_path: Path) -> None:
    needs = {"bench_recall": DEV, "bench_migrate": FIXTURES / "v2.sqlite"}.get(name)
    if needs is not None and not needs.exists():
        pytest.skip(f"{name} reads {needs}, which is not there")
    _run(name, SQLITE_RUNS[name], tmp_path)


@pytest.mark.postgres
@pytest.mark.parametrize("name", ["bench_pg_facts", "bench_pg_agents"])
def test_a_postgresql_benchmark_runs_to_the_end(name: str, tmp_path: Path) -> None:
    url = pg_support.server_url()  # a superuser's: the scripts make and drop schemas
    args = {
        "bench_pg_facts": ["--url", url, "--facts", "50", "--calls", "5"],
        "bench_pg_agents": ["--url", url, "--agents", "2", "--messages", "20", "--schema",
                            f"bench_smoke_{os.getpid()}"],
    }[name]  # fmt: skip
    _run(name, args, tmp_path)
