"""A SIGINT whose ``KeyboardInterrupt`` Python has to drop (raised inside a weakref callback or
a finalizer: an import's, as the command line starts) is remembered by the watch and said as
``interrupted`` in one line; Python's own report of it (``Exception ignored in: ...`` and a
traceback on stderr) made the command line's Ctrl-C test fail now and then. Run in a child:
pytest keeps such reports for itself."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from philont import interrupts

CHILD = """
import gc, os, signal, sys
from philont import interrupts

class Raises:
    def __init__(self, exc):
        self.exc = exc
    def __del__(self):
        if isinstance(self.exc, KeyboardInterrupt):  # as a SIGINT's handler raises it
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(1000):
                pass
        raise self.exc

def drop(exc):
    Raises(exc)
    gc.collect()

exc = {exc}
if {watched}:
    with interrupts.watch():
        drop(exc)
else:
    drop(exc)
"""


def _stderr(exc: str, *, watched: bool) -> str:
    code = CHILD.format(exc=exc, watched=watched)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stderr


def test_a_dropped_interrupt_is_not_reported_inside_a_watch() -> None:
    assert _stderr("KeyboardInterrupt()", watched=True) == ""


@pytest.mark.parametrize(
    ("exc", "watched"), [("ValueError('kept')", True), ("KeyboardInterrupt()", False)]
)
def test_any_other_dropped_exception_is_reported_as_python_does(exc: str, watched: bool) -> None:
    err = _stderr(exc, watched=watched)
    assert "Exception ignored in" in err and exc.partition("(")[0] in err, err


COMMAND = """
import gc, os, signal, sys
from philont import memory

entered = memory.Memory.__enter__

class Interrupts:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, inside the finalizer: Python drops it
            pass

def {where}(self, *args):
    Interrupts()
    gc.collect()
    return {original}(self, *args)

{patch}
sys.argv = ["philont", *{args!r}]
from philont.cli import main
main()
"""


def _facts(db: str) -> list[tuple[object, ...]]:
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT * FROM memory_facts").fetchall()


@pytest.mark.parametrize("when", ["entering", "committing"])
@pytest.mark.parametrize(
    "args",
    [["search", "Berlin"], ["facts", "get", "user.home", "city"], ["timeline"], ["prefix"]],
    ids=" ".join,
)
def test_a_ctrl_c_python_dropped_during_a_command_is_interrupted_and_writes_nothing(
    tmp_path: object, args: list[str], when: str
) -> None:
    """A command whose Ctrl-C Python dropped (raised inside a finalizer while the command
    worked) says ``interrupted`` and exits 130, and commits nothing (``facts get`` refreshes
    the fact's access time otherwise); it went on to the end, exit 0, before."""
    from pathlib import Path

    from philont import Memory

    db = str(Path(str(tmp_path)) / "m.sqlite")
    with Memory.open(db) as mem:
        mem.facts.store("user.home", "city", "Berlin")
        mem.timeline.append("We moved to Berlin")
    before = _facts(db)
    if when == "entering":  # the unit of work's start: the interrupt is lost before any work
        where, original, patch = "enter", "entered", "memory.Memory.__enter__ = enter"
    else:  # its end: the work is done, not yet committed
        where, original = "leave", "memory.Memory.__exit__.__wrapped__"
        patch = (
            "import functools\nleft = memory.Memory.__exit__\n"
            "memory.Memory.__exit__ = functools.wraps(left)(lambda self, *a: leave(self, *a))\n"
            "memory.Memory.__exit__.__wrapped__ = left"
        )
    code = COMMAND.format(where=where, original=original, patch=patch, args=[*args, "--db", db])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (130, "interrupted\n"), (done.stdout, done.stderr)
    assert _facts(db) == before


WRAPPED = """
import os, signal, sys
import philont.cli.root

def app():  # a class made as Ctrl-C comes: __set_name__ runs the handler (an import's class)
    class Interrupts:
        def __set_name__(self, owner, name):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(100_000):
                pass

    class Made:
        field = Interrupts()

philont.cli.root.app = app
sys.argv = ["philont", "stats"]
from philont.cli import main
main()
"""


def test_a_ctrl_c_the_interpreter_wrapped_while_starting_is_one_line_and_130() -> None:
    # Python turns an exception raised in __set_name__ into RuntimeError("Error calling
    # __set_name__ ..."), its cause the KeyboardInterrupt: a Ctrl-C while pydantic made a
    # class as the command line started printed that traceback, exit 1 (CI, test_ctrl_c).
    done = subprocess.run([sys.executable, "-c", WRAPPED], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (130, "interrupted\n"), done.stderr[-2000:]


def _chain(kinds: list[str], link: str) -> BaseException:
    """An exception whose causes (or contexts) are ``kinds``, outermost first."""
    made = {"ki": KeyboardInterrupt, "rt": RuntimeError, "os": OSError, "v": ValueError}
    inner: BaseException | None = None
    for kind in reversed(kinds):
        exc = made[kind]()
        if inner is not None:
            setattr(exc, "__cause__" if link == "cause" else "__context__", inner)
        inner = exc
    assert inner is not None
    return inner


@given(
    kinds=st.lists(st.sampled_from(["ki", "rt", "os", "v"]), min_size=1, max_size=5),
    link=st.sampled_from(["cause", "context"]),
    loop=st.booleans(),
)
def test_an_error_is_a_ctrl_c_when_a_keyboard_interrupt_is_in_its_chain(
    kinds: list[str], link: str, loop: bool
) -> None:
    exc = _chain(kinds, link)
    if loop:  # a chain that comes back to itself ends
        last = exc
        while (last.__cause__ or last.__context__) is not None:
            last = last.__cause__ or last.__context__  # type: ignore[assignment]
        last.__context__ = exc
    assert interrupts.caused(exc) == ("ki" in kinds)


def test_a_command_whose_error_a_ctrl_c_caused_is_interrupted_not_a_traceback() -> None:
    import typer
    from typer.testing import CliRunner

    from philont.cli.common import Commands, interrupted

    app = typer.Typer(cls=Commands)

    @app.command()
    def wrapped() -> None:
        raise RuntimeError("Error calling __set_name__") from KeyboardInterrupt()

    @app.command()
    def bug() -> None:
        raise RuntimeError("a bug")

    @app.command()
    def said() -> None:  # a command that reports its own Ctrl-C: said once
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt:
            raise interrupted("nothing written") from None

    result = CliRunner().invoke(app, ["wrapped"])
    assert (result.exit_code, result.output.strip()) == (130, "interrupted")
    result = CliRunner().invoke(app, ["said"])
    assert (result.exit_code, result.output.strip()) == (130, "interrupted: nothing written")
    result = CliRunner().invoke(app, ["bug"])
    assert isinstance(result.exception, RuntimeError)  # a bug keeps its traceback


IGNORED = """
import os, signal, time
from philont import interrupts
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a job a script started with `&` has it
with interrupts.watch():
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.2)
    print("went on", interrupts.held())
print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)
"""


def test_a_ctrl_c_the_process_ignores_stays_ignored_inside_a_watch() -> None:
    """The watch replaced an ignored SIGINT with its own handler: a command started in the
    background was stopped by a Ctrl-C meant for the foreground one."""
    done = subprocess.run([sys.executable, "-c", IGNORED], capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "went on False\nTrue\n"), done.stderr
