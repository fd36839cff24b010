"""Ctrl-C (SIGINT) and the point of no return of a command.

The command line (:func:`philont.cli.main`) runs under :func:`watch`: SIGINT raises
``KeyboardInterrupt`` as usual, and the work unwinds (a transaction rolls back, a file being
written is removed), so the command can say that nothing changed. Once the work is made
permanent (an import's COMMIT, an export's file renamed into place) unwinding would be a lie:
the change stays, the message would deny it. Such a step runs in :func:`point_of_no_return`:
from its start to the end of the watch, SIGINT is held instead of raised; the step and the
command finish and report what they did (the Ctrl-C came too late to stop anything). When the
step itself fails, nothing became permanent and SIGINT raises again. A SIGINT whose
``KeyboardInterrupt`` Python dropped (raised inside a weakref callback) is raised again by
:func:`check`: at each progress step of a long command, before the point of no return, before
a unit of work commits, and when a command ends (it then says ``interrupted``, exit 130).

Without a watch (a host application using philont as a library) both are no-ops: the host's
own SIGINT handling is left alone. Signals are the main thread's; elsewhere nothing changes.
"""

from __future__ import annotations

import functools
import signal
import sys
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

__all__ = ["Watch", "caused", "check", "held", "point_of_no_return", "watch"]


class Watch:
    """The state of one watched run: ``interrupted`` once a SIGINT raised, ``past`` once its
    work became permanent, ``held`` once a SIGINT came after that. (A plain class: this module
    is imported before the command line's other imports, to watch them.)"""

    def __init__(self) -> None:
        self.interrupted = False
        self.past = False
        self.held = False


_current: Watch | None = None


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    current = _current
    if current is not None and current.past:
        current.held = True
        return
    if current is not None:
        current.interrupted = True  # remembered: the exception may be lost (see check)
    raise KeyboardInterrupt


def check() -> None:
    """Raise ``KeyboardInterrupt`` again if a SIGINT came before the point of no return and the
    work goes on: the exception raised for it was lost. Python drops an exception raised in a
    weakref callback or a finalizer (``Exception ignored in: ...``) and goes on, and the
    signal's handler runs wherever the interpreter happens to be, such a callback included."""
    current = _current
    if current is not None and current.interrupted and not current.past and _main_thread():
        raise KeyboardInterrupt  # (another thread's work, an MCP call's, ends as it would)


def caused(exc: BaseException) -> bool:
    """Whether ``exc`` is a ``KeyboardInterrupt`` or an error made of one on its way up: the
    interpreter turns an exception raised in ``__set_name__`` (a SIGINT's, while a class of
    an import is made) into ``RuntimeError`` with it as the cause, and an error raised while
    unwinding from one has it as its context. Either is a Ctrl-C, never a bug to show."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, KeyboardInterrupt):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def watch() -> Iterator[Watch]:
    """SIGINT raises ``KeyboardInterrupt`` in the block until a :func:`point_of_no_return`;
    after it, it is held. The previous handler is back when the block ends. A SIGINT the
    process ignores stays ignored, as Python leaves it: a command a script started in the
    background (``&``) used to stop on a Ctrl-C meant for the foreground command."""
    global _current
    state = Watch()
    if not _main_thread() or signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        yield state
        return
    previous, before = signal.signal(signal.SIGINT, _on_sigint), _current
    hook = sys.unraisablehook
    quiet = functools.partial(_quiet_lost_interrupt, hook)
    sys.unraisablehook = quiet
    _current = state
    try:
        yield state
    finally:
        _current = before
        if sys.unraisablehook is quiet:
            sys.unraisablehook = hook
        if signal.getsignal(signal.SIGINT) is _on_sigint:  # not replaced meanwhile (ignored)
            signal.signal(signal.SIGINT, previous)


def _quiet_lost_interrupt(hook: Any, unraisable: Any) -> None:
    """Python's report of an exception it had to drop (``Exception ignored in: ...`` and a
    traceback on stderr), but not of the ``KeyboardInterrupt`` a SIGINT raised inside a weakref
    callback or a finalizer (an import's, as the command line starts): that one is remembered
    (:func:`check` raises it again) and the command says ``interrupted``, in one line."""
    current = _current
    if isinstance(unraisable.exc_value, KeyboardInterrupt) and current and current.interrupted:
        return
    hook(unraisable)


@contextmanager
def point_of_no_return() -> Iterator[None]:
    """Around the step that makes the work permanent (a COMMIT, a rename into place): a SIGINT
    from here to the end of the watch is held, so the step is never cut off and what follows it
    never reports it undone. If the step raises, nothing became permanent: SIGINT raises again
    (one held meanwhile is dropped: the step's own error is what the command reports)."""
    current = _current
    if current is None or not _main_thread():
        yield
        return
    check()  # an interrupt that was lost on the way: never commit past it
    current.past = True
    try:
        yield
    except BaseException:
        current.past = current.held = False
        raise


def held() -> bool:
    """Whether the watched run got a SIGINT it holds (it came past the point of no return)."""
    return _current is not None and _current.held
