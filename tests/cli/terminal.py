"""Running ``philont`` as a person does, on a terminal of its own (a pseudo-terminal: progress
goes to stderr only when it is a terminal), and pressing Ctrl-C (SIGINT) at a chosen moment."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class Run:
    """What a command in a pseudo-terminal wrote (escape sequences removed) and its exit."""

    output: str
    status: int


def run_in_terminal(
    args: list[str],
    interrupt_when: Callable[[str], bool] | None,
    env: dict[str, str] | None = None,
) -> Run:
    """Run ``philont ARGS`` with stdout and stderr on a pseudo-terminal; send SIGINT (what
    Ctrl-C sends) once ``interrupt_when(output so far)`` is true."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: the command, on the terminal
        os.chdir(REPO)
        os.execve(
            sys.executable, [sys.executable, "-m", "philont", *args], {**os.environ, **(env or {})}
        )
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


def said(run: Run) -> list[str]:
    """What the command wrote besides its progress display (bars, and the ``...`` of rows a
    terminal has no room for): its lines, a traceback, a driver's warning."""
    return [
        line for line in re.split(r"[\r\n]+", run.output) if line.strip(" .") and "━" not in line
    ]
