"""Ctrl-C (SIGINT) in each phase of each long command (``philont.cli.common.PHASES``), on a
terminal as a person runs it: inside the work, the command ends with one line and exit 130 and
leaves the target as it was (an import's rows rolled back, an export's file unwritten, an
upgrade's revisions undone); once the work is permanent (``done``), the Ctrl-C comes too late
and the command reports what it did, exit 0. The command is held inside the phase by a test
hook (``$PHILONT_TEST_HOLD``) until the signal has been sent: never a signal that comes after
the phase has ended, as a stalled test process once sent."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from philont import transfer
from philont.cli.common import HOLD_ENV, PHASES
from philont.schemas.timeline import MessageIn
from philont.settings import AGENT_ENV
from philont.store import Store
from tests.cli.terminal import REPO, run_in_terminal, said
from tests.pg_support import Layout

MESSAGES = 2_500  # more than one progress step (every 1,000 rows) in every phase
NOTHING_IMPORTED = "interrupted: nothing imported; the database is as it was"


@pytest.fixture(scope="module")
def export_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("export")
    source = base / "memory.sqlite"
    with Store.open(source) as store, store.begin() as mem:
        mem.timeline.append_many([MessageIn(content=f"message {i}") for i in range(MESSAGES)])
    out = base / "export.jsonl"
    transfer.export(source, out)
    return out


@dataclass
class Target:
    """A database that holds memory already: its ``--db`` (and agent) and a digest of it."""

    args: list[str]
    digest: Callable[[], str]


def _sqlite_digest(path: Path) -> Callable[[], str]:
    def digest() -> str:
        with closing(sqlite3.connect(str(path))) as conn:
            return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()

    return digest


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "sqlite":
        path = tmp_path / "target.sqlite"
        with Store.open(path) as store, store.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            mem.notes.add("the rent is warm")
        return Target(["--db", str(path)], _sqlite_digest(path))
    layout: Layout = request.getfixturevalue("pg_layout")
    agent = layout.new_agent()
    with Store.open(layout.url, agent=agent, upgrade=False) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")

    def pg_digest() -> str:
        buf = io.StringIO()
        transfer.export(layout.url, buf, agent=agent)
        lines = buf.getvalue().splitlines()
        header = json.loads(lines[0])
        header.pop("exported_at")
        return hashlib.sha256(json.dumps([header, lines[1:]]).encode()).hexdigest()

    url = layout.url.render_as_string(hide_password=False)
    return Target(["--agent", agent, "--db", url], pg_digest)


@pytest.fixture(autouse=True)
def _no_agent_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AGENT_ENV, raising=False)


@dataclass
class Case:
    """A command to interrupt, what it must say and exit with, and a check of what it left."""

    args: list[str]
    said: Callable[[list[str]], bool]
    status: int
    left_alone: Callable[[], bool]


def _importing(phase: str, target: Target, export_file: Path, tmp_path: Path) -> Case:
    agent = target.args[:2] if target.args[0] == "--agent" else []
    args = [*agent, "import", str(export_file), "--merge", *target.args[len(agent) :]]
    before = target.digest()
    if phase == "done":
        return Case(
            args,
            lambda lines: (
                len(lines) == 1 and re.fullmatch(r"imported \d+ of \d+ rows: .*", lines[0])
            ),
            0,
            lambda: target.digest() != before,  # the rows are in, as the line says
        )
    return Case(
        args, lambda lines: lines == [NOTHING_IMPORTED], 130, lambda: target.digest() == before
    )


def _exporting(phase: str, target: Target, export_file: Path, tmp_path: Path) -> Case:
    source = tmp_path / "source.sqlite"
    transfer.import_(source, export_file)
    out = tmp_path / "out.jsonl"
    written = lambda: sorted(p.name for p in tmp_path.iterdir() if "out" in p.name)  # noqa: E731
    args = ["export", str(out), "--db", str(source)]
    rows, tables = MESSAGES + 3, len(transfer.export_tables())  # 3 bootstrap rows
    if phase == "done":
        return Case(
            args,
            lambda lines: "".join(lines) == f"exported {rows} rows from {tables} tables to {out}",
            0,
            lambda: written() == ["out.jsonl"],
        )
    return Case(
        args,
        lambda lines: lines == [f"interrupted: {out} was not written"],
        130,
        lambda: written() == [],
    )


def _upgrade(phase: str, target: Target, export_file: Path, tmp_path: Path) -> Case:
    path = tmp_path / "new.sqlite"

    def no_tables() -> bool:
        if not path.exists():
            return True
        with closing(sqlite3.connect(str(path))) as conn:
            return conn.execute("SELECT count(*) FROM sqlite_master").fetchone() == (0,)

    return Case(
        ["db", "upgrade", "--db", str(path)], lambda lines: lines == ["interrupted"], 130, no_tables
    )


def _embed(phase: str, target: Target, export_file: Path, tmp_path: Path) -> Case:
    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store, store.begin() as mem:
        mem.timeline.append_many([MessageIn(content=f"message {i}") for i in range(50)])
    args = ["embed", "--embedder", "hash", "--batch-size", "10", "--db", str(path)]
    return Case(args, lambda lines: lines == ["interrupted"], 130, lambda: True)


CASES = {"importing": _importing, "exporting": _exporting, "upgrade": _upgrade, "embed": _embed}
ONE_BACKEND = {
    "importing:indexing",
    "exporting:rows",
    "exporting:done",
    "upgrade:revisions",
    "embed:batches",
}
"""SQLite only: PostgreSQL has no index rebuild, and these commands do the same on either."""


@pytest.mark.parametrize("phase", PHASES)
def test_ctrl_c_in_each_phase_of_each_long_command(
    phase: str, target: Target, export_file: Path, tmp_path: Path
) -> None:
    if phase in ONE_BACKEND and target.args[0] == "--agent":
        pytest.skip("SQLite only")
    command, _, step = phase.partition(":")
    case = CASES[command](step, target, export_file, tmp_path)
    marker = tmp_path / "held"

    run = run_in_terminal(case.args, lambda _: marker.exists(), env={HOLD_ENV: f"{phase}={marker}"})

    assert run.status == case.status, run.output[-2000:]
    assert case.said(said(run)), said(run)
    assert case.left_alone()


# --- Ctrl-C while the command line starts --------------------------------------------------


@pytest.fixture(scope="module")
def a_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("start") / "memory.sqlite"
    with Store.open(path) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    return path


@pytest.mark.parametrize("command", [["--help"], ["stats", "--db"]], ids=" ".join)
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(after=st.floats(min_value=0.0, max_value=0.5))
def test_ctrl_c_while_the_command_line_starts_is_one_line_and_130(
    command: list[str], after: float, a_database: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """From the moment ``philont.cli.main`` watches Ctrl-C (before it imports the commands),
    at any delay. Before that moment SIGINT meets Python's own start and ``import philont``
    (about 25 ms here: a traceback of those imports, or death by the signal), which no code of
    philont's can watch."""
    args = [*command, str(a_database)] if command[-1] == "--db" else command
    watching = tmp_path_factory.mktemp("start") / "watching"
    child = subprocess.Popen(
        [sys.executable, "-m", "philont", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, HOLD_ENV: f"starting={watching}"},
    )
    while not watching.exists() and child.poll() is None:
        time.sleep(0.001)
    time.sleep(after)
    child.send_signal(signal.SIGINT)
    output, errors = child.communicate(timeout=60)

    assert "Traceback" not in errors
    if child.returncode == 0:  # it had finished its work: the Ctrl-C changed nothing
        assert errors == "" and output
    else:
        assert (child.returncode, errors) == (130, "interrupted\n")
