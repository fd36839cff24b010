"""The ``philont`` command line (typer): ``app`` holds every command, ``main`` runs it.

``main`` watches for Ctrl-C before it imports anything heavy: interrupted while it starts (its
imports take a moment), the command line says so in one line and exits 130, as a command
interrupted later does (:mod:`philont.interrupts`)."""

from __future__ import annotations

import os
import signal
import sys
from typing import TYPE_CHECKING

from philont import interrupts, lazy

if TYPE_CHECKING:
    from philont.cli.root import app

__all__ = ["app", "main"]

EXIT_INTERRUPTED = 130  # philont.cli.common.EXIT_INTERRUPTED, without importing it


def main() -> None:
    """Run the command line: Ctrl-C stops a command with one line and exit 130, except once
    its work is permanent (:mod:`philont.interrupts`); after the command, it changes nothing."""
    with interrupts.watch() as state:
        _watching()
        try:
            from philont.cli.root import app

            interrupts.check()  # one whose KeyboardInterrupt an import lost (importlib drops it)
            app()
        except Exception as exc:  # while starting (the commands catch their own): a Ctrl-C
            if not interrupts.caused(exc):  # that an import's class machinery wrapped
                raise
            sys.stderr.write("interrupted\n")
            raise SystemExit(EXIT_INTERRUPTED) from None
        except KeyboardInterrupt:
            sys.stderr.write("interrupted\n")
            raise SystemExit(EXIT_INTERRUPTED) from None
        finally:
            state.past = True  # the command is over: its outcome stands
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # ... also while Python shuts down
            _forget_caught_interrupts()


def _watching() -> None:
    """Tests only: with ``$PHILONT_TEST_HOLD`` set to ``starting=FILE``, create FILE once Ctrl-C
    is watched (philont.cli.common.HOLD_ENV holds a command inside a later phase)."""
    wanted, _, marker = os.environ.get("PHILONT_TEST_HOLD", "").partition("=")
    if wanted == "starting" and marker:
        os.close(os.open(marker, os.O_CREAT | os.O_WRONLY, 0o600))


def _forget_caught_interrupts() -> None:
    """CPython (3.11) remembers a ``KeyboardInterrupt`` raised inside code that ``exec()`` runs
    from a string (dataclasses and namedtuple make their methods so, on import) as unhandled,
    even when it was caught, and then ends the process by SIGINT whatever exit code the program
    chose (130 here, or 0). Each such run clears the mark first: one more clears it."""
    exec("", {})


__getattr__ = lazy.exports(__name__, {"app": "philont.cli.root"})
