"""Helpers the suites share: units of work joined to a test's own Session, the lists of
every service method and every command, a refused import's check."""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import inspect
import os
import pkgutil
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy.orm import Session

from philont.clock import Clock, utc_now
from philont.memory import Memory
from philont.services.base import Service
from philont.store import Store


def joined(session: Session, clock: Clock | None = None) -> Memory:
    """An active unit of work inside ``session``'s transaction (the test owns and rolls back
    that transaction), with ``clock``: what a host does with ``store.join(session)``."""
    store = Store(session.get_bind().engine, clock=clock or utc_now)
    mem = store.join(session)
    mem.__enter__()
    return mem


def write_lock_is_free(path: str | Path) -> bool:
    """Whether another connection could take SQLite's write lock right now (no waiting)."""
    probe = sqlite3.connect(path, timeout=0, isolation_level=None)
    try:
        probe.execute("BEGIN IMMEDIATE")
        probe.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        probe.close()


def service_classes() -> list[type[Service]]:
    """Every service class of philont (its modules imported first), base class included."""
    import philont.embed
    import philont.learning
    import philont.services

    for package in (philont.services, philont.learning, philont.embed):
        for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            importlib.import_module(module.name)
    found: list[type[Service]] = []
    pending = [Service]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        found.append(cls)
    return found


def public_methods() -> Iterator[tuple[str, Any]]:
    """``("Class.method", function)`` of every public method of every service."""
    for cls in service_classes():
        for name, fn in vars(cls).items():
            if not name.startswith("_") and inspect.isfunction(fn):
                yield f"{cls.__name__}.{name}", fn


def cli_paths(*, groups: bool = False) -> list[tuple[str, ...]]:
    """The path of every ``philont`` command (``("facts", "list")``), sorted; ``groups``: the
    groups' paths too (the root is ``()``)."""
    import typer.main

    from philont.cli import app

    def walk(group: Any, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
        children = getattr(group, "commands", None)
        if groups or children is None:
            yield prefix
        for name, command in sorted((children or {}).items()):
            yield from walk(command, (*prefix, name))

    return list(walk(typer.main.get_command(app), ()))


def cli_command(path: tuple[str, ...]) -> Any:
    """The click command at ``path``."""
    import typer.main

    from philont.cli import app

    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


_CAP_VERSION_3 = 0x20080522
_DAC_OVERRIDE = (1 << 1) | (1 << 2)  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH


def _capabilities(change: Callable[[int], int]) -> int:
    """Set this thread's effective capabilities to ``change(current)``; the current ones."""
    libc = ctypes.CDLL(None, use_errno=True)
    header = _CapHeader(_CAP_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    current = int(data[0].effective)
    data[0].effective = change(current)
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    return current


@contextlib.contextmanager
def file_permissions_apply() -> Iterator[None]:
    """Run the block with file permission bits enforced, as they are for any user but root.

    Root (CI runs as root) may read and write anything: inside the block this thread drops the
    two capabilities that let it (and threads it starts inherit that), so a file with mode 0 or
    a directory without write permission refuses it too. Root still reaches its own files that
    its owner bits allow (the interpreter under /root), which switching to another user would
    not. Outside Linux or as another user: nothing to do."""
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        yield
        return
    saved = _capabilities(lambda current: current & ~_DAC_OVERRIDE)
    try:
        yield
    finally:
        _capabilities(lambda _: saved)


_HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""

DEAD_PID = 999_999_999
"""A pid no process has here (above Linux's pid_max): what the pid of a process in another
PID namespace (a container sharing the volume) looks like to this one."""


@contextlib.contextmanager
def held_by_another_process(path: Path) -> Iterator[None]:
    """Inside the block another process holds ``path`` under ``flock(LOCK_EX)``, as the writer
    of a temporary file does while it writes it (:class:`philont.filewrite.LockedTemp`)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield
    finally:
        proc.communicate("")


def in_another_pid_namespace(code: str, *args: str) -> None:
    """Run ``code`` (Python, ``sys.argv[1:]`` = ``args``) in a process of a new PID namespace,
    where no process of this one is seen alive (``unshare``; the test is skipped where it
    cannot be made)."""
    import pytest

    unshare = shutil.which("unshare")
    if (
        unshare is None
        or subprocess.run([unshare, "-p", "-f", "true"], capture_output=True).returncode
    ):
        pytest.skip("no new PID namespace can be made here (unshare)")
    subprocess.run(
        [unshare, "-p", "-f", sys.executable, "-c", code, *args],
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )


def is_utf8(data: bytes) -> bool:
    """Whether ``data`` decodes as UTF-8 (strategies of bytes that must not)."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


E = TypeVar("E", bound=BaseException)


def written(file: Path, content: str | bytes) -> Path:
    """``file`` holding ``content`` (text as UTF-8)."""
    if isinstance(content, bytes):
        file.write_bytes(content)
    else:
        file.write_text(content, encoding="utf-8")
    return file


def refused(error: type[E], run: Callable[[], object], state: Callable[[], object]) -> E:
    """What ``run()`` (an import) raised, which must be an ``error``; ``state()`` (of its
    target) after it is as it was before: a refused import changes nothing."""
    before = state()
    with pytest.raises(error) as caught:
        run()
    assert state() == before
    return caught.value


def examples(n: int) -> settings:
    """Hypothesis' settings for ``n`` examples of a test that uses function-scoped fixtures
    (files, databases) and may take long: no deadline, those health checks off."""
    return settings(
        max_examples=n,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
