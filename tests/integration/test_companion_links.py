"""A ``-wal`` or ``-shm`` beside the database that is a link, to a file of ours, to a
directory, to nothing, or a hard link of another file: a writable open made a read-only one
of ours writable with ``os.stat``/``os.chmod``, which follow links, so a ``-shm`` linked to
a private key (mode 0400) made the key readable by everyone (0644); and SQLite writes its
pages and locks into a hard-linked one, overwriting the other file. Now such a companion is
refused by name, before SQLite opens anything, and no file it names is changed."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from philont import Store
from philont.errors import DatabasePathError, PhilontError
from tests.support import file_permissions_apply

COMPANIONS = ("-wal", "-shm")
KEY = b"-----BEGIN PRIVATE KEY-----\n"


def _to_file(target: Path, companion: Path) -> None:
    os.symlink(target / "key.pem", companion)


def _dangling(target: Path, companion: Path) -> None:
    os.symlink(target / "missing", companion)


def _to_directory(target: Path, companion: Path) -> None:
    os.symlink(target / "private", companion)


def _hard(target: Path, companion: Path) -> None:
    os.link(target / "key.pem", companion)


LINKS: dict[str, Callable[[Path, Path], None]] = {
    "symlink to a file": _to_file,
    "dangling symlink": _dangling,
    "symlink to a directory": _to_directory,
    "hard link": _hard,
}
REFUSAL = {
    "symlink to a file": "is a symbolic link",
    "dangling symlink": "is a symbolic link",
    "symlink to a directory": "is a symbolic link",
    "hard link": "is a hard link",
}


@pytest.fixture
def database(tmp_path: Path) -> Iterator[Path]:
    """A WAL database (mode 0644) with no -wal or -shm beside it, and beside it files of
    ours a link may name: a private key (0400) and a private directory (0500)."""
    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Porto")
    path.chmod(0o644)
    for suffix in COMPANIONS:
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    key = tmp_path / "key.pem"
    key.write_bytes(KEY)
    key.chmod(0o400)
    (tmp_path / "private").mkdir(mode=0o500)
    yield path
    (tmp_path / "private").chmod(0o700)


def _others(path: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every file beside ``path`` but the database and its companions: its permission bits
    and bytes (None: a directory)."""
    mine = {path.name, *(f"{path.name}{suffix}" for suffix in COMPANIONS)}
    found = {}
    for entry in path.parent.iterdir():
        if entry.name in mine:
            continue
        st = entry.lstat()
        data = entry.read_bytes() if stat.S_ISREG(st.st_mode) else None
        found[entry.name] = (stat.S_IMODE(st.st_mode), data)
    return found


def _read(path: Path, *, read_only: bool) -> None:
    with Store.open(path, read_only=read_only) as store, store.begin() as mem:
        mem.facts.get("user", "city")


@pytest.mark.parametrize("read_only", [False, True], ids=["writable", "read-only"])
@pytest.mark.parametrize("suffix", COMPANIONS)
@pytest.mark.parametrize("link", LINKS)
def test_a_linked_companion_is_refused_by_name_and_what_it_names_is_unchanged(
    database: Path, link: str, suffix: str, read_only: bool
) -> None:
    companion = Path(f"{database}{suffix}")
    LINKS[link](database.parent, companion)
    before = _others(database)
    with file_permissions_apply(), pytest.raises(DatabasePathError) as refused:
        _read(database, read_only=read_only)
    assert _others(database) == before
    assert f"the {suffix} file beside it ({companion}) {REFUSAL[link]}" in refused.value.message
    assert "while no program has the database open" in refused.value.message
    assert os.path.lexists(companion)  # named, never removed for the user


@pytest.mark.parametrize("suffix", COMPANIONS)
@pytest.mark.parametrize("link", LINKS)
def test_a_link_made_while_a_store_is_open_is_never_followed(
    database: Path, link: str, suffix: str
) -> None:
    # Checked at the open, the companions are looked at again when the writing engine makes
    # a connection: a link planted since is left to SQLite, its target unchanged.
    companion = Path(f"{database}{suffix}")
    with file_permissions_apply(), Store.open(database) as store:
        with store.begin() as mem:
            mem.facts.store("user", "city", "Lisbon")
        store.write_engine.dispose()  # the last connection goes: SQLite removes its -wal, -shm
        store.engine.dispose()
        assert not os.path.lexists(companion)
        LINKS[link](database.parent, companion)
        before = _others(database)
        try:
            with store.begin() as mem:
                mem.facts.store("user", "city", "Faro")
        except PhilontError:
            pass  # SQLite's refusal, typed; what the link names is what matters
        assert _others(database) == before


def test_a_read_only_companion_of_ours_is_still_made_writable(database: Path) -> None:
    # What the companions are looked at for: chmod 444, a read-only open (SQLite makes the
    # -wal and -shm read-only), chmod 644; a writable open gives them the file's mode.
    database.chmod(0o444)
    with file_permissions_apply():
        _read(database, read_only=True)
        database.chmod(0o644)
        with Store.open(database) as store, store.begin() as mem:
            mem.facts.store("user", "city", "Lisbon")
    for suffix in COMPANIONS:
        companion = Path(f"{database}{suffix}")
        if companion.exists():
            assert stat.S_IMODE(companion.stat().st_mode) == 0o644


@pytest.mark.parametrize("suffix", COMPANIONS)
@pytest.mark.parametrize("link", LINKS)
def test_a_linked_companion_beside_a_file_not_made_yet_is_refused_and_nothing_is_made(
    tmp_path: Path, link: str, suffix: str
) -> None:
    """The companions were looked at only beside a file that exists: a link left beside a
    database not made yet was used by SQLite (a hard-linked one written into)."""
    database = tmp_path / "memory.sqlite"
    (tmp_path / "key.pem").write_bytes(KEY)
    (tmp_path / "key.pem").chmod(0o400)
    (tmp_path / "private").mkdir(mode=0o500)
    companion = Path(f"{database}{suffix}")
    LINKS[link](tmp_path, companion)
    before = _others(database)
    with file_permissions_apply(), pytest.raises(DatabasePathError) as refused:
        _read(database, read_only=False)
    assert f"the {suffix} file beside it ({companion}) {REFUSAL[link]}" in refused.value.message
    assert _others(database) == before
    assert not database.exists()
    (tmp_path / "private").chmod(0o700)


def _empty_companion(database: Path, suffix: str, mode: int, owner: int | None = None) -> Path:
    companion = Path(f"{database}{suffix}")
    companion.write_bytes(b"")
    if owner is not None:
        os.chown(companion, owner, owner)
    companion.chmod(mode)
    return companion


@pytest.mark.parametrize("mode", [0o000, 0o200, 0o400])
@pytest.mark.parametrize("suffix", COMPANIONS)
def test_a_companion_of_ours_this_process_may_not_use_gets_the_files_mode(
    database: Path, suffix: str, mode: int
) -> None:
    """A companion of ours of mode 000 (or one its owner may not read, or write) was skipped:
    it was opened to be changed, which mode 000 refuses; SQLite then could not use it. As a
    read-only one it is given the database's mode (logged) and the database is written."""
    companion = _empty_companion(database, suffix, mode)
    with (
        file_permissions_apply(),
        capture_logs() as logs,
        Store.open(database) as store,
        store.begin() as mem,
    ):
        mem.facts.store("user", "city", "Lisbon")
    with Store.open(database) as store, store.begin() as mem:
        got = mem.facts.get("user", "city")
        assert got is not None and got.value == "Lisbon"
    made = [e for e in logs if e["event"] == "store.companion_made_writable"]
    assert [e["file"] for e in made] == [str(companion)]
    if companion.exists():
        assert stat.S_IMODE(companion.stat().st_mode) == 0o644


@pytest.mark.skipif(os.geteuid() != 0, reason="makes a file of another user (root's chown)")
@pytest.mark.parametrize("suffix", COMPANIONS)
def test_another_users_companion_this_process_may_not_read_is_refused_by_name(
    database: Path, suffix: str
) -> None:
    """Another user's companion of mode 000: its -wal was left to SQLite (which could not
    open it), its -shm refused as read-only. It is refused by name, and left as it is."""
    companion = _empty_companion(database, suffix, 0o000, owner=65534)
    with file_permissions_apply(), pytest.raises(DatabasePathError) as refused:
        _read(database, read_only=False)
    message = refused.value.message
    assert f"the {suffix} file beside it ({companion}) is another user's, mode 0o0" in message
    assert "may not read" in message
    found = companion.stat()
    assert (found.st_uid, stat.S_IMODE(found.st_mode)) == (65534, 0)
