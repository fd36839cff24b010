"""``philont.backup`` is behind the typed edge of every public entry point
(:func:`philont.db.retry.typed_errors`, as ``transfer.import_`` and ``export``): a database
error its steps do not type themselves leaves ``backup``, ``restore`` and ``verify`` as
philont's, raised from it, and the live file is left as it was. A restore's safety copy of the
live file failing with an SQLite error its copy does not map (a read of the live file, not a
full disk) escaped ``restore`` as the bare ``sqlite3`` error.

The failure is a real SQLite error of each kind (made by SQLite, not written by hand), raised
where the restore takes its safety copy: a real read failure there needs a disk that fails."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from philont import migrate
from philont.backup import PRE_RESTORE_LABEL, backup, restore
from philont.errors import DatabaseBusyError, PhilontError


def _raised(path: str, *statements: str) -> sqlite3.Error:
    """The error SQLite raises for the last of ``statements`` on ``path``, the others run
    first (``BEGIN EXCLUSIVE`` on a connection of its own, held meanwhile)."""
    with (
        closing(sqlite3.connect(path, isolation_level=None)) as holder,
        closing(sqlite3.connect(path, isolation_level=None, timeout=0)) as conn,
    ):
        for statement in statements[:-1]:
            (holder if statement == "BEGIN EXCLUSIVE" else conn).execute(statement)
        try:
            conn.execute(statements[-1])
        except sqlite3.Error as exc:
            return exc
    raise AssertionError(f"SQLite ran {statements[-1]!r}")


def _not_a_database(tmp_path: Path) -> sqlite3.Error:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"not a database at all" * 100)
    return _raised(str(garbage), "PRAGMA schema_version")


def _locked(tmp_path: Path) -> sqlite3.Error:
    path = str(tmp_path / "locked.sqlite")
    return _raised(path, "CREATE TABLE t (x)", "BEGIN EXCLUSIVE", "INSERT INTO t VALUES (1)")


def _refused_row(tmp_path: Path) -> sqlite3.Error:
    row = "INSERT INTO t VALUES ('secret-1')"
    return _raised(str(tmp_path / "rows.sqlite"), "CREATE TABLE t (x UNIQUE)", row, row)


ERRORS: dict[str, Callable[[Path], sqlite3.Error]] = {
    "not_a_database": _not_a_database,
    "locked": _locked,
    "refused_row": _refused_row,
}


@pytest.mark.parametrize("kind", list(ERRORS))
def test_a_database_error_in_a_restore_leaves_it_typed(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    live = tmp_path / "home" / "memory.sqlite"
    migrate.upgrade(live)
    taken = backup(live)
    before = live.read_bytes()
    error = ERRORS[kind](tmp_path)
    copy = migrate.backup_file

    def failing(path: Path, **kwargs: object) -> Path:
        if kwargs.get("label") == PRE_RESTORE_LABEL:
            raise error
        return copy(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(migrate, "backup_file", failing)
    with pytest.raises(Exception) as caught:  # any error: its type is the test
        restore(taken, live)
    typed = caught.value
    assert isinstance(typed, PhilontError), repr(typed)
    assert typed.__cause__ is error
    assert "secret-1" not in f"{typed} {typed.details}"
    if kind == "locked":
        assert isinstance(typed, DatabaseBusyError), repr(typed)
    assert str(live) in str(typed)  # names the database
    assert live.read_bytes() == before  # left as it was
