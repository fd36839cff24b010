"""The ``philont`` command line (typer): ``app`` holds every command, ``main`` runs it.

``main`` watches for Ctrl-C before it imports anything heavy: interrupted while it starts (its
imports take a moment), the command line says so in one line and exits 130, as a command
interrupted later does (:mod:`philont.interrupts`)."""

from __future__ import annotations

import signal
import sys
from typing import TYPE_CHECKING, Any

from philont import interrupts

if TYPE_CHECKING:
    from philont.cli.root import app

__all__ = ["app", "main"]

EXIT_INTERRUPTED = 130  # philont.cli.common.EXIT_INTERRUPTED, without importing it


def main() -> None:
    """Run the command line: Ctrl-C stops a command with one line and exit 130, except once
    its work is permanent (:mod:`philont.interrupts`); after the command, it changes nothing."""
    with interrupts.watch() as state:
        try:
            from philont.cli.root import app

            interrupts.check()  # one whose KeyboardInterrupt an import lost (importlib drops it)
            app()
        except KeyboardInterrupt:  # while starting: the commands catch their own
            sys.stderr.write("interrupted\n")
            raise SystemExit(EXIT_INTERRUPTED) from None
        finally:
            state.past = True  # the command is over: its outcome stands
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # ... also while Python shuts down


def __getattr__(name: str) -> Any:
    if name == "app":
        from philont.cli.root import app

        return app
    raise AttributeError(f"module 'philont.cli' has no attribute {name!r}")
