"""The migration scripts ship inside the wheel: upgrade works from an installed package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_upgrade_runs_from_a_built_wheel_without_the_checkout(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(REPO),
        ],
        check=True,
        capture_output=True,
    )
    wheel = next(wheels.glob("philont-*.whl"))
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert "philont/_alembic/env.py" in names
        assert "philont/_alembic/versions/v031_reasoning_mode.py" in names or any(
            n.startswith("philont/_alembic/versions/v031_") for n in names
        )
        zf.extractall(site)
    db = tmp_path / "w" / "memory.sqlite"
    code = (
        "import sys, philont.migrate as m; "
        "assert 'site' in m.__file__, m.__file__; "
        f"r = m.upgrade({str(db)!r}); print(r.to_revision)"
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(site)!r}); {code}"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().startswith("v0")
