"""`philont import` and `philont export` on a terminal, as a person runs them: a long import
shows its progress from the start (the check of the whole file, the rows of each table, the
search indexes), and Ctrl-C at any moment leaves the target as it was, with one line saying so
and exit 130; an interrupted export leaves no file. Each runs in a pseudo-terminal of its own
(progress goes to stderr only when it is a terminal)."""

from __future__ import annotations

import hashlib
import io
import json
import os
import pty
import re
import select
import signal
import sqlite3
import sys
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pytest

from philont import transfer
from philont.schemas.timeline import MessageIn
from philont.settings import AGENT_ENV
from philont.store import Store
from tests.pg_support import Layout

REPO = Path(__file__).resolve().parents[2]
MESSAGES = 30_000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class Run:
    """What a command in a pseudo-terminal wrote (escape sequences removed) and its exit."""

    output: str
    status: int


def _run_in_terminal(args: list[str], interrupt_when: Callable[[str], bool] | None) -> Run:
    """Run ``philont ARGS`` with stdout and stderr on a pseudo-terminal; send SIGINT (what
    Ctrl-C sends) once ``interrupt_when(output so far)`` is true."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, on the terminal
        os.chdir(REPO)
        os.execv(sys.executable, [sys.executable, "-m", "philont", *args])
    seen, sent, deadline = b"", False, time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.05)
            if ready:
                try:
                    chunk = os.read(fd, 1 << 16)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            text = _ANSI.sub("", seen.decode(errors="replace"))
            if not sent and interrupt_when is not None and interrupt_when(text):
                os.kill(pid, signal.SIGINT)
                sent = True
        else:
            os.kill(pid, signal.SIGKILL)
    finally:
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert interrupt_when is None or sent, "the moment to interrupt never came"
    return Run(_ANSI.sub("", seen.decode(errors="replace")), os.waitstatus_to_exitcode(status))


def _said(run: Run) -> list[str]:
    """What the command wrote besides its progress bars (a traceback, a driver's warning)."""
    return [line for line in re.split(r"[\r\n]+", run.output) if line.strip() and "━" not in line]


def _counts(text: str, label: str) -> list[tuple[float, float]]:
    """Every ``<label> ... done/total`` the progress display showed."""
    found = re.findall(re.escape(label) + r"[^\n\r]*?([\d.]+)/([\d.]+)", text)
    return [(float(a), float(b)) for a, b in found]


def _mid(label: str) -> Callable[[str], bool]:
    """True once the display shows ``label`` part-way (neither at 0 nor at its end)."""
    return lambda text: any(0 < done < total for done, total in _counts(text, label))


@pytest.fixture(scope="module")
def big_export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An export of MESSAGES messages: long enough to interrupt at any step."""
    base = tmp_path_factory.mktemp("big")
    source = base / "memory.sqlite"
    with Store.open(source) as store:
        for start in range(0, MESSAGES, 10_000):
            with store.begin() as mem:
                mem.timeline.append_many(
                    [
                        MessageIn(content=f"message {i} about the flat in Berlin")
                        for i in range(start, start + 10_000)
                    ]
                )
    out = base / "big.jsonl"
    transfer.export(source, out)
    return out


@dataclass
class Target:
    """A database that holds memory already: its ``--db`` (and agent) and a digest of it."""

    args: list[str]
    digest: Callable[[], str]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Target:
    if request.param == "sqlite":
        path = tmp_path / "target.sqlite"
        with Store.open(path) as store, store.begin() as mem:
            mem.facts.store("user", "city", "Berlin")
            mem.notes.add("the rent is warm")

        def digest() -> str:
            with closing(sqlite3.connect(str(path))) as conn:
                return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()

        return Target(["--db", str(path)], digest)
    layout: Layout = request.getfixturevalue("pg_layout")
    agent = layout.new_agent()
    with Store.open(layout.url, agent=agent, upgrade=False) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    url = layout.url.render_as_string(hide_password=False)

    def pg_digest() -> str:
        buf = io.StringIO()
        transfer.export(layout.url, buf, agent=agent)
        lines = buf.getvalue().splitlines()
        header = json.loads(lines[0])
        header.pop("exported_at")
        return hashlib.sha256(json.dumps([header, lines[1:]]).encode()).hexdigest()

    return Target(["--agent", agent, "--db", url], pg_digest)


def _import(big_export: Path, target: Target) -> list[str]:
    agent = target.args[:2] if target.args[0] == "--agent" else []
    return [*agent, "import", str(big_export), "--merge", *target.args[len(agent) :]]


@pytest.fixture(autouse=True)
def _no_agent_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(AGENT_ENV, raising=False)


INTERRUPTIONS = {
    "while checking the file": _mid("checking the file"),
    "while importing rows": _mid("importing memory_raw_messages"),
}


@pytest.mark.parametrize("moment", INTERRUPTIONS)
def test_ctrl_c_during_an_import_leaves_the_target_as_it_was(
    moment: str, big_export: Path, target: Target
) -> None:
    before = target.digest()

    run = _run_in_terminal(_import(big_export, target), INTERRUPTIONS[moment])

    assert run.status == 130, run.output[-2000:]
    assert _said(run) == ["interrupted: nothing imported; the database is as it was"]
    assert target.digest() == before


def test_a_long_import_shows_each_step_as_it_goes(big_export: Path, tmp_path: Path) -> None:
    target = tmp_path / "new.sqlite"

    run = _run_in_terminal(["import", str(big_export), "--db", str(target)], None)

    assert run.status == 0, run.output[-2000:]
    checking = _counts(run.output, "checking the file")
    rows = _counts(run.output, "importing memory_raw_messages")
    assert any(0 < done < total for done, total in checking), checking  # seen part-way
    assert any(0 < done < total for done, total in rows), rows
    assert (MESSAGES, MESSAGES) in rows
    assert _counts(run.output, "rebuilding search indexes")
    assert run.output.index("checking the file") < run.output.index("importing")
    assert f"imported {MESSAGES} rows" in run.output


def test_ctrl_c_during_an_export_leaves_no_file(big_export: Path, tmp_path: Path) -> None:
    source = tmp_path / "source.sqlite"
    transfer.import_(source, big_export)
    out = tmp_path / "out.jsonl"

    run = _run_in_terminal(
        ["export", str(out), "--db", str(source)], _mid("exporting memory_raw_messages")
    )

    assert run.status == 130, run.output[-2000:]
    assert _said(run) == [f"interrupted: {out} was not written"]
    assert sorted(p.name for p in tmp_path.iterdir() if "out" in p.name) == []
