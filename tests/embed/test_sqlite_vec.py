"""The sqlite-vec path, run where it can be: this project's Python cannot load SQLite
extensions, so the test runs the worker under the system's Python (Debian's python3 loads them)
with this environment's packages, and skips where no such interpreter exists."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROBE = "import sqlite3, sqlite_vec; c = sqlite3.connect(':memory:'); c.enable_load_extension(True)"


def _loading_python() -> tuple[str, dict[str, str]] | None:
    """An interpreter of the same version whose sqlite3 loads extensions, with our packages."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), sysconfig.get_paths()["purelib"]]),
    }
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (f"/usr/bin/{version}", shutil.which(version)):
        if not candidate or not Path(candidate).exists():
            continue
        probe = subprocess.run([candidate, "-c", PROBE], env=env, capture_output=True, check=False)
        if probe.returncode == 0:
            return candidate, env
    return None


def test_sqlite_vec_gives_the_same_pool_and_the_same_hits_as_the_python_pass(
    tmp_path: Path,
) -> None:
    found = _loading_python()
    if found is None:
        pytest.skip("no Python here whose sqlite3 loads extensions (with sqlite-vec installed)")
    python, env = found
    proc = subprocess.run(
        [python, "-m", "tests.embed.sqlite_vec_worker", str(tmp_path / "vec.sqlite")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["sqlite-vec_engine"] == "sqlite-vec" and out["python_engine"] == "python"
    # every code strictly nearer than the pool's farthest is in sqlite-vec's pool of 256
    assert all(size == 256 and missed == 0 for size, missed in out["pools"])
    assert out["same_results"] is True
