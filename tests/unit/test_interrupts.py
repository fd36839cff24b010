"""A SIGINT whose ``KeyboardInterrupt`` Python has to drop (raised inside a weakref callback or
a finalizer: an import's, as the command line starts) is remembered by the watch and said as
``interrupted`` in one line; Python's own report of it (``Exception ignored in: ...`` and a
traceback on stderr) made the command line's Ctrl-C test fail now and then. Run in a child:
pytest keeps such reports for itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHILD = """
import gc, sys
from philont import interrupts

class Raises:
    def __init__(self, exc):
        self.exc = exc
    def __del__(self):
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
