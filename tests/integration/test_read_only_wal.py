"""A WAL-mode database in a directory that is not writable (a read-only mount, another user's
folder): SQLite reads a WAL file through its ``-shm`` file and cannot create one there. A
file whose ``-wal`` holds nothing is read as it is; one whose ``-wal`` holds changes, and
every Store (which writes), is refused with ``database_read_only`` naming the reason. Before,
every command called such a file damaged (``database_corrupt``: "unable to open database
file") and advised restoring a backup."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner

from philont import backup, migrate, tools
from philont.cli import app
from philont.cli.inspect import READ_ONLY_FTS, layer_counts
from philont.errors import DatabasePathError, DatabaseReadOnlyError
from philont.store import Store

runner = CliRunner()


@contextmanager
def _read_only(directory: Path, mount_point: Path) -> Iterator[Path]:
    """``directory`` as a directory this process cannot write: its mode for a user, a
    read-only bind mount for root (whom modes do not stop)."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield directory
        finally:
            directory.chmod(0o755)
        return
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "--bind", "-o", "ro", str(directory), str(mount_point)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"root, and no read-only bind mount here: {done.stderr!r}")
    try:
        if os.access(mount_point, os.W_OK):  # an old mount(8) bound it writable
            subprocess.run(["mount", "-o", "remount,bind,ro", str(mount_point)], check=True)
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def _store_fact(path: Path, key: str) -> None:
    with Store.open(path) as store, store.begin() as mem:
        mem.facts.store("user", key, "value")


@pytest.fixture
def files(tmp_path: Path) -> Iterator[dict[str, Path]]:
    """In one read-only directory: ``clean`` (WAL mode, closed: no -wal, no -shm),
    ``pending`` (a -wal with a commit in it, no -shm: its writer was killed and the -shm
    lost) and ``both`` (-wal and -shm, as a killed writer leaves them)."""
    source = tmp_path / "source"
    source.mkdir()
    live = tmp_path / "live.sqlite"
    _store_fact(live, "first")
    shutil.copyfile(live, source / "clean.sqlite")
    with Store.open(live) as store:
        with store.begin() as mem:
            mem.facts.store("user", "second", "in the WAL only")
        for name in ("pending", "both"):  # copied while the Store has the file open
            for suffix in ("", "-wal", "-shm"):
                shutil.copyfile(f"{live}{suffix}", source / f"{name}.sqlite{suffix}")
    (source / "pending.sqlite-shm").unlink()
    assert (source / "pending.sqlite-wal").stat().st_size > 0
    for name in ("clean", "pending", "both"):  # the header says WAL mode
        assert (source / f"{name}.sqlite").read_bytes()[18:20] == b"\x02\x02"
    with _read_only(source, tmp_path / "mounted") as directory:
        yield {p.stem: p for p in directory.glob("*.sqlite")}


def _listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_a_closed_wal_file_is_read_as_it_is(files: dict[str, Path]) -> None:
    path = files["clean"]
    listing = _listing(path.parent)

    status = migrate.status(path)
    counts = layer_counts(path)
    result = runner.invoke(app, ["stats", "--json", "--db", str(path)])

    assert status.at_head
    assert counts["facts"] == 1
    assert result.exit_code == 0, result.output
    assert set(json.loads(result.stdout)["fts"].values()) == {READ_ONLY_FTS}
    assert _listing(path.parent) == listing


def test_a_wal_holding_changes_is_refused_never_read_without_them(
    files: dict[str, Path],
) -> None:
    """Read without its -shm (``immutable``), the file would lack the commit its -wal holds:
    a stale answer. Refused instead, by name, as read-only, never as damaged."""
    path = files["pending"]
    with pytest.raises(DatabaseReadOnlyError, match=r"pending\.sqlite-shm"):
        migrate.status(path)
    with pytest.raises(DatabaseReadOnlyError):
        layer_counts(path)
    for args in (["db", "current"], ["stats"], ["facts", "list"], ["export", "-"]):
        result = runner.invoke(app, [*args, "--db", str(path)])
        assert result.exit_code == 1, (args, result.output)
        assert "error (database_read_only)" in result.output, (args, result.output)


@pytest.mark.parametrize("name", ["clean", "pending"])
def test_a_store_on_it_is_refused_as_read_only(files: dict[str, Path], name: str) -> None:
    path = files[name]
    with (
        pytest.raises(DatabaseReadOnlyError, match=r"not writable|read-only file system"),
        Store.open(path, upgrade=False) as store,
        store.begin(write=False) as mem,
    ):
        mem.facts.list("user")
    called = tools.call("list_facts", {"namespace": "user"}, db=path)
    assert called.error_code == "database_read_only"


@pytest.mark.parametrize("name", ["clean", "both"])
def test_a_read_only_store_and_the_reading_commands_read_it(
    files: dict[str, Path], name: str
) -> None:
    """``Store.open(read_only=True)`` reads it (``clean`` as it is, ``immutable``; ``both``
    through its -shm, with what its -wal holds) and refuses writes; the reading commands use
    one by themselves. Nothing in the directory changes."""
    path = files[name]
    listing = {p.name: p.read_bytes() for p in path.parent.iterdir()}
    keys = ["first"] if name == "clean" else ["first", "second"]
    with Store.open(path, read_only=True) as store:
        with store.begin() as mem:
            assert sorted(f.key for f in mem.facts.list("user")) == keys
            assert mem.facts.get("user", "first") is not None
        with pytest.raises(DatabaseReadOnlyError, match="opened read-only"), store.begin() as mem:
            mem.facts.store("user", "third", "refused")
    for args in (["facts", "list"], ["facts", "get", "user", "first"], ["prefix"]):
        result = runner.invoke(app, [*args, "--db", str(path)])
        assert result.exit_code == 0, (args, result.output)
        assert "first" in result.output, (args, result.output)
    assert {p.name: p.read_bytes() for p in path.parent.iterdir()} == listing


def test_with_its_shm_it_is_read_with_what_the_wal_holds(files: dict[str, Path]) -> None:
    path = files["both"]
    assert migrate.status(path).at_head
    assert layer_counts(path)["facts"] == 2


@pytest.mark.parametrize("name", ["clean", "both", "new"])
def test_a_restore_into_it_names_the_database_and_changes_nothing(
    files: dict[str, Path], tmp_path: Path, name: str
) -> None:
    """The copy a restore writes beside the database cannot be made there: the refusal names
    the database (it named the hidden temporary file, or the failed clean-up of it hid the
    reason), and the directory is as it was."""
    target = next(iter(files.values())).parent / f"{name}.sqlite"
    source = tmp_path / "backup.sqlite"
    _store_fact(source, "from_the_backup")
    listing = _listing(target.parent)
    with pytest.raises(DatabasePathError) as caught:
        backup.restore(source, target)
    assert caught.value.path == str(target)
    assert "cannot write the backup's copy beside it" in caught.value.reason
    assert _listing(target.parent) == listing
