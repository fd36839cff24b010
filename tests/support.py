"""Helpers the suites share: units of work joined to a test's own Session, and the lists
of every service method and every command."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
