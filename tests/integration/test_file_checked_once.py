"""Opening a database looks at its file once (``check_file``: is it a directory, readable,
writable, an SQLite file, which opens it). ``Store.open`` and ``AsyncStore.open`` looked at it
in their schema check, again in the status read it makes, and again when they made the engine;
an upgrade looked at it in its own check and again for its engine. Measured on main: 3 calls
for a file at head, 3 for a new file, 5 for one upgraded; now 1, 1 and 2. Counted through every
module's ``check_file``, the real one underneath."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import philont.aio
import philont.migrate.env
import philont.store
from philont import migrate
from philont.aio import AsyncStore
from philont.db import engine
from philont.store import Store


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """The paths ``check_file`` is called with, whichever module calls it."""
    seen: list[Path] = []
    real = engine.check_file

    def counted(path: Path, **kwargs: Any) -> bool:
        seen.append(path)
        return real(path, **kwargs)

    assert philont.aio and philont.migrate.env and philont.store  # imported, so patched too
    for module in list(sys.modules.values()):
        name = getattr(module, "__name__", "")
        if name.startswith("philont") and getattr(module, "check_file", None) is real:
            monkeypatch.setattr(module, "check_file", counted)
    yield seen


def _open(path: Path, how: str) -> None:
    if how == "Store.open":
        Store.open(path).close()
        return

    async def run() -> None:
        store = await AsyncStore.open(path)
        await store.close()

    asyncio.run(run())


OPENERS = ["Store.open", "AsyncStore.open"]


@pytest.mark.parametrize("how", OPENERS)
def test_a_database_at_head_is_looked_at_once(how: str, tmp_path: Path, checks: list[Path]) -> None:
    path = tmp_path / "memory.sqlite"
    migrate.upgrade(path, backup=False)
    checks.clear()
    _open(path, how)
    assert checks == [path]


@pytest.mark.parametrize("how", OPENERS)
def test_a_new_database_is_looked_at_once(how: str, tmp_path: Path, checks: list[Path]) -> None:
    path = tmp_path / "memory.sqlite"
    _open(path, how)
    assert checks == [path]
    assert migrate.status(path).at_head


@pytest.mark.parametrize("how", OPENERS)
def test_an_upgrade_looks_at_the_file_before_it_and_once_itself(
    how: str, copy_fixture: Any, checks: list[Path]
) -> None:
    """The Store's look (is it at head?) and the upgrade's own (which ``alembic upgrade``
    makes too), no third for the engine."""
    old = copy_fixture("v31")
    _open(old, how)
    assert checks == [old, old]
    assert migrate.status(old).at_head
