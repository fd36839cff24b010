"""A database file or directory this process may not use, by its permission bits: every way in
(the Store, an upgrade, a status look, a tool call) refuses it with a typed error naming why, and
leaves it as it was. Run with the permission bits enforced, root included
(:func:`tests.support.file_permissions_apply`): CI runs as root, which may read and write
anything, so these cases were never run there before."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from philont import Store, migrate, tools
from philont.errors import DatabasePathError, DatabaseReadOnlyError, PhilontError
from tests.support import file_permissions_apply


def _open(path: Path) -> object:
    Store.open(path).close()
    return None


def _tool(path: Path) -> object:
    result = tools.call("store_fact", {"namespace": "user", "key": "k", "value": 1}, db=path)
    if not result.ok:  # the tool's typed refusal, raised as the others are
        raise PhilontError(f"{result.error_code}: {result.error}")
    return result


ENTRIES: dict[str, Callable[[Path], object]] = {
    "Store.open": _open,
    "migrate.upgrade": migrate.upgrade,
    "migrate.status": migrate.status,
    "tool call": _tool,
}


def _place(kind: str, tool_db: Path) -> tuple[Path, Path]:
    """(the database path given, what to chmod) for a place of ``kind``."""
    if kind == "unreadable file":
        return tool_db, tool_db
    if kind == "readable, not writable by its owner":  # write bits for the group only
        return tool_db, tool_db
    locked = tool_db.parent / "locked"
    locked.mkdir()
    (locked / "memory.sqlite").write_bytes(tool_db.read_bytes())
    return locked / "memory.sqlite", locked


MODES = {
    "unreadable file": 0o000,
    "readable, not writable by its owner": 0o464,
    "directory not to be entered": 0o000,
}
# What each entry says: the error, and words of its reason.
EXPECTED: dict[str, tuple[type[PhilontError], str]] = {
    "unreadable file": (DatabasePathError, "may not read it"),
    "readable, not writable by its owner": (DatabaseReadOnlyError, "may not write it"),
    "directory not to be entered": (DatabasePathError, "Permission denied"),
}


@pytest.mark.parametrize("entry", ENTRIES, ids=str)
@pytest.mark.parametrize("kind", MODES, ids=str)
def test_a_database_this_process_may_not_use_is_refused_by_name_and_left_alone(
    kind: str, entry: str, tool_db: Path
) -> None:
    path, locked = _place(kind, tool_db)
    before = path.read_bytes()
    locked.chmod(MODES[kind])
    try:
        with file_permissions_apply():
            error, reason = EXPECTED[kind]
            if kind == "readable, not writable by its owner" and entry == "migrate.status":
                assert migrate.status(path).at_head  # looking needs no write
                return
            with pytest.raises(PhilontError) as raised:
                ENTRIES[entry](path)
    finally:
        locked.chmod(0o700 if locked.is_dir() else 0o600)
    assert reason in str(raised.value), raised.value
    if entry != "tool call":
        assert type(raised.value) is error, raised.value
        assert str(path) in str(raised.value)
    else:
        assert raised.value.message.startswith(f"{error.code}: "), raised.value
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no -wal, -shm, journal
