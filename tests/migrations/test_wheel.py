"""The migration scripts ship inside the wheel: upgrade works from an installed package, from
code and from the alembic command line (the shipped alembic.ini, or a host's own one pointing at
``philont:_alembic``)."""

from __future__ import annotations

import configparser
import sqlite3
import subprocess
import sys
import zipfile
from contextlib import closing
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _alembic(site: Path, cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """The alembic command line, with the extracted wheel first on the path."""
    code = (
        f"import sys; sys.path.insert(0, {str(site)!r}); "
        "from alembic.config import main; "
        f"main(argv={list(argv)!r})"
    )
    return subprocess.run(
        [sys.executable, "-I", "-c", code], cwd=cwd, capture_output=True, text=True, check=False
    )


def _revision(db: Path) -> str:
    with closing(sqlite3.connect(str(db))) as conn:
        return str(conn.execute("SELECT version_num FROM philont_alembic_version").fetchone()[0])


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
        assert "philont/_alembic/alembic.ini" in names
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

    head = proc.stdout.strip()

    # The shipped alembic.ini: its script_location is the folder it sits in.
    ini = site / "philont" / "_alembic" / "alembic.ini"
    parser = configparser.ConfigParser(interpolation=None)
    parser.read(ini)
    assert parser["alembic"]["script_location"] == "%(here)s"
    cli_db = tmp_path / "cli" / "memory.sqlite"
    done = _alembic(site, tmp_path, "-c", str(ini), "-x", f"url={cli_db}", "upgrade", "head")
    assert done.returncode == 0, done.stderr
    assert _revision(cli_db) == head

    # A host's own alembic.ini naming the package resource.
    host_ini = tmp_path / "host.ini"
    host_ini.write_text("[alembic]\nscript_location = philont:_alembic\n", encoding="utf-8")
    host_db = tmp_path / "host" / "memory.sqlite"
    done = _alembic(site, tmp_path, "-c", str(host_ini), "-x", f"url={host_db}", "upgrade", "head")
    assert done.returncode == 0, done.stderr
    assert _revision(host_db) == head
