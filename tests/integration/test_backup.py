"""Online backups, rotation and restore on real files, including under a concurrent writer."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack, closing
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from philont import filewrite, migrate, tools
from philont import settings as philont_settings
from philont.backup import (
    KEEPING,
    PRE_RESTORE_LABEL,
    RESTORE_COPY,
    VERIFYING,
    BackupVerificationError,
    backup,
    is_rotating,
    list_backups,
    restore,
    verify,
)
from philont.errors import (
    DatabaseBusyError,
    DatabasePathError,
    FilePathError,
    InvalidDatabaseError,
    InvalidInputError,
    NotADatabaseError,
    PhilontError,
    StorageError,
    UnknownSchemaVersionError,
)
from philont.filewrite import COMPANIONS
from philont.migrate.env import PRE_UPGRADE_LABEL
from philont.store import Store
from tests.support import (
    file_permissions_apply,
    held_by_another_process,
    in_another_pid_namespace,
)

CopyFixture = Callable[[str], Path]
AT = datetime(2026, 6, 14, 4, 0, 0, tzinfo=UTC)

WRITER = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA busy_timeout = 5000")
conn.execute("PRAGMA journal_mode = WAL")
i = 0
while not os.path.exists(sys.argv[2]):  # until told to stop
    conn.execute("BEGIN IMMEDIATE")
    for _ in range(5):
        i += 1
        conn.execute(
            "INSERT INTO memory_raw_messages (session_id, role, content, timestamp)"
            " VALUES ('global', 'user', ?, ?)",
            (f"concurrent message number {i} about zebras", 1781409600000 + i),
        )
    conn.execute("COMMIT")
conn.close()
"""


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


@pytest.fixture
def live(tmp_path: Path) -> Path:
    """A new memory database at head (no pre-upgrade backup: it starts empty)."""
    path = tmp_path / "memory" / "memory.sqlite"
    migrate.upgrade(path)
    return path


@pytest.fixture
def populated(copy_fixture: CopyFixture, tmp_path: Path) -> Path:
    """The v31 fixture at head, alone in its own directory."""
    path = tmp_path / "home" / "memory.sqlite"
    path.parent.mkdir()
    path.write_bytes(copy_fixture("v31").read_bytes())
    path.chmod(0o600)
    migrate.upgrade(path)
    for p in (path.parent / "backups").glob("*"):
        p.unlink()
    return path


def _assert_sound(path: Path) -> None:
    with closing(sqlite3.connect(str(path))) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        names = [
            r[0]
            for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%USING fts5(%'"
            )
        ]
        assert "memory_raw_messages_fts" in names
        for name in names:
            conn.execute(f"INSERT INTO {name}({name}, rank) VALUES ('integrity-check', 1)")


def _on_disk(path: Path) -> dict[str, tuple[str, int] | None]:
    """What a refused operation must leave as it was: every file beside the database (its
    ``-wal`` and ``-shm`` included) and the backups, by content and modification time."""
    return {
        str(p.relative_to(path.parent)): None if p.is_dir() else (_sha(p), p.stat().st_mtime_ns)
        for p in sorted(path.parent.rglob("*"))
    }


def _message_ids(path: Path) -> list[int]:
    with closing(sqlite3.connect(str(path))) as conn:
        return [r[0] for r in conn.execute("SELECT id FROM memory_raw_messages ORDER BY id")]


def _add_message(path: Path, content: str) -> None:
    with closing(sqlite3.connect(str(path))) as conn, conn:
        conn.execute(
            "INSERT INTO memory_raw_messages (session_id, role, content, timestamp) "
            "VALUES ('global', 'user', ?, 1)",
            (content,),
        )


# --- taking backups --------------------------------------------------------------------------


def test_a_backup_is_named_by_its_utc_second_and_is_private(live: Path) -> None:
    taken = backup(live, at=AT)

    assert taken == live.parent / "backups" / "memory-20260614T040000.sqlite"
    assert _mode(taken) == 0o600
    assert _mode(taken.parent) == 0o700
    _assert_sound(taken)


def test_a_second_backup_in_the_same_second_gets_a_numbered_name(live: Path) -> None:
    first = backup(live, at=AT)
    second = backup(live, at=AT)
    third = backup(live, at=AT, keep=1)

    assert first.name == "memory-20260614T040000.sqlite"
    assert second.name == "memory-20260614T040000-2.sqlite"
    assert third.name == "memory-20260614T040000-3.sqlite"
    assert third.exists() and not first.exists() and not second.exists()


def test_a_local_time_is_named_in_utc(live: Path) -> None:
    plus_two = datetime(2026, 6, 14, 6, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert backup(live, at=plus_two).name == "memory-20260614T040000.sqlite"


def test_rotation_keeps_the_newest_backups(live: Path) -> None:
    paths = [backup(live, at=AT + timedelta(hours=i), keep=3) for i in range(5)]

    assert sorted((live.parent / "backups").glob("memory-*.sqlite")) == paths[2:]
    listed = list_backups(live)
    assert [b.path for b in listed] == paths[:1:-1]
    assert [b.taken_at for b in listed] == [AT + timedelta(hours=i) for i in (4, 3, 2)]
    assert all(b.size == b.path.stat().st_size > 0 for b in listed)


def test_rotation_counts_every_memory_backup_like_philont(live: Path) -> None:
    backups = live.parent / "backups"
    backups.mkdir(exist_ok=True)
    stray = backups / "memory-20200101T000000.sqlite"
    stray.write_bytes(b"")
    other = backups / "notes.txt"
    other.write_text("kept")

    backup(live, at=AT, keep=1)

    assert not stray.exists()
    assert other.exists()


def _tiny_database(path: Path) -> Path:
    with closing(sqlite3.connect(str(path))) as conn, conn:
        conn.execute("CREATE TABLE t (x)")
        conn.execute("INSERT INTO t VALUES (?)", (path.name,))
    return path


# Database file names, some beginning like another's backups (``a`` and ``a-b``, ``a-<TAG>``)
# or holding what a glob or a regular expression reads (``[``, ``*``, ``.``).
_DB_NAMES = st.text(
    st.sampled_from(["a", "b", "m", "-", "2", "0", "T", ".", "[", "*", " ", "é"]),
    min_size=1,
    max_size=18,
).map(lambda stem: stem + ".sqlite")


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    names=st.tuples(_DB_NAMES, _DB_NAMES).filter(lambda n: n[0] != n[1]),
    second=st.integers(0, 3),
)
@example(names=("a.sqlite", "b.sqlite"), second=0)
@example(names=("memory.sqlite", "memory-20260614T040000.sqlite"), second=0)
@example(names=("a.sqlite", "a-20260614T040000-pre.sqlite"), second=1)
@example(names=("a-b.sqlite", "a.sqlite"), second=0)
def test_databases_sharing_a_folder_keep_and_list_only_their_own_backups(
    tmp_path_factory: pytest.TempPathFactory, names: tuple[str, str], second: int
) -> None:
    """Two databases in one folder share ``backups/``: rotating one never deletes the other's
    backups, nor lists them as its own (before, every ``memory-*`` file was every database's,
    so ``backup(a, keep=1)`` deleted ``b``'s backups)."""
    folder = tmp_path_factory.mktemp("shared")
    a, b = (_tiny_database(folder / name) for name in names)
    theirs = [backup(b, at=AT + timedelta(seconds=i)) for i in range(2)]
    theirs.append(migrate.backup_file(b, at=AT, label=PRE_UPGRADE_LABEL))

    ours = [backup(a, at=AT + timedelta(seconds=second + i), keep=1) for i in range(3)]

    assert all(p.exists() for p in theirs), sorted(p.name for p in folder.rglob("*"))
    assert [p.exists() for p in ours] == [False, False, True]
    assert [x.path for x in list_backups(a)] == ours[2:]
    assert {x.path for x in list_backups(b)} == set(theirs)
    assert not any(is_rotating(p, a) for p in theirs)


@pytest.mark.parametrize("keep", [0, -1])
def test_keeping_fewer_than_one_backup_is_refused(live: Path, keep: int) -> None:
    with pytest.raises(InvalidInputError, match=r"^keep: must be at least 1") as raised:
        backup(live, keep=keep)
    assert raised.value.details["argument"] == "keep"  # named, as every argument's refusal
    assert list_backups(live) == []


def _wait_for(condition: Callable[[], bool], failure: str) -> None:
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.02)


def test_a_backup_taken_while_another_process_writes_restores_to_a_consistent_database(
    live: Path,
) -> None:
    stop = live.parent.parent / "stop-writing"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(live), str(stop)])
    try:
        _wait_for(lambda: bool(_message_ids(live)), "the writer never wrote")
        taken = []
        for _ in range(3):
            taken.append(backup(live))
            time.sleep(0.4)
        # it wrote on after the last backup (it wrote for 2 s: a loaded machine slowed the
        # backups past its end, and the first one held all it wrote)
        last = len(_message_ids(taken[-1]))
        _wait_for(lambda: len(_message_ids(live)) > last, "the writer stopped writing")
        stop.touch()
        assert writer.wait(timeout=30) == 0
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()

    for path in taken:
        _assert_sound(path)
    final = _message_ids(live)
    assert len(_message_ids(taken[0])) < len(final)  # taken while the writer was writing
    report = restore(taken[-1], live)

    ids = _message_ids(live)
    assert ids == list(range(1, len(ids) + 1))
    assert 0 < len(ids) <= len(final)
    assert len(ids) % 5 == 0  # whole transactions only
    _assert_sound(live)
    with closing(sqlite3.connect(str(live))) as conn:
        hits = conn.execute(
            "SELECT rowid FROM memory_raw_messages_fts WHERE memory_raw_messages_fts MATCH ?",
            (f'"number {ids[-1]} about"',),
        ).fetchall()
    assert (ids[-1],) in hits
    assert report.safety_backup is not None
    assert _message_ids(report.safety_backup) == final


# --- restoring -------------------------------------------------------------------------------


def test_restore_brings_back_the_backup_and_keeps_the_current_file_first(
    populated: Path,
) -> None:
    taken = backup(populated, at=AT)
    before = _message_ids(populated)
    _add_message(populated, "written after the backup")

    report = restore(taken, populated)

    assert _message_ids(populated) == before
    assert report.restored_from == taken
    assert report.revision == migrate.head_revision()
    assert report.schema_version == "31"
    assert report.safety_backup is not None and not report.previous_was_corrupt
    assert report.safety_backup.name.endswith("-pre-restore.sqlite")
    assert _message_ids(report.safety_backup) == [*before, before[-1] + 1]
    assert _mode(populated) == 0o600
    assert not Path(f"{populated}-wal").exists()
    _assert_sound(populated)


def test_restoring_onto_a_missing_file_takes_no_safety_backup(
    populated: Path, tmp_path: Path
) -> None:
    taken = backup(populated, at=AT)
    target = tmp_path / "elsewhere" / "memory.sqlite"

    report = restore(taken, target)

    assert report.safety_backup is None
    assert _message_ids(target) == _message_ids(populated)


def test_the_byte_copy_of_a_damaged_file_is_never_readable_by_others(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy was made with the process's umask (0644 under 022) and set to 0600 only once
    all of it was written: for that moment another user could read the damaged memory. Each
    copy's mode is looked at as soon as its bytes are in it, before anything else runs."""
    taken = backup(populated, at=AT)
    populated.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8192)
    Path(f"{populated}-wal").write_bytes(b"wal")
    modes: list[int] = []

    def watched(copy: Callable[..., Any]) -> Callable[..., Any]:
        def run(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
            done = copy(src, dst, *args, **kwargs)
            named = getattr(dst, "fileno", None)
            modes.append((os.fstat(named()) if named else os.stat(dst)).st_mode & 0o777)
            return done

        return run

    monkeypatch.setattr(shutil, "copyfile", watched(shutil.copyfile))
    monkeypatch.setattr(shutil, "copyfileobj", watched(shutil.copyfileobj))
    old = os.umask(0o022)
    try:
        report = restore(taken, populated)
    finally:
        os.umask(old)
    assert report.previous_was_corrupt and len(modes) >= 2
    assert set(modes) == {0o600}, [oct(m) for m in modes]


def test_restore_over_a_corrupt_live_file_quarantines_it(populated: Path) -> None:
    """The byte copy keeps what SQLite kept beside the damaged file, which the restore then
    removes: its -wal, and a -journal too (that one was removed, never copied)."""
    taken = backup(populated, at=AT)
    populated.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8192)
    beside = {suffix: f"what the damaged file's {suffix} held".encode() for suffix in COMPANIONS}
    for suffix, held in beside.items():
        Path(f"{populated}{suffix}").write_bytes(held)

    report = restore(taken, populated)

    assert report.previous_was_corrupt
    assert report.safety_backup is not None
    assert report.safety_backup.name.startswith("memory.sqlite.corrupt-")
    for suffix, held in beside.items():
        assert Path(f"{report.safety_backup}{suffix}").read_bytes() == held
    _assert_sound(populated)


def _corrupt_copy(src: Path, dst: Path) -> Path:
    data = bytearray(src.read_bytes())
    for offset in range(4096 * 2, len(data) - 4096, 4096 * 5):
        data[offset + 100 : offset + 1100] = os.urandom(1000)
    dst.write_bytes(bytes(data))
    return dst


def test_restore_refuses_a_corrupt_backup_and_leaves_the_live_file_alone(
    populated: Path, tmp_path: Path
) -> None:
    taken = backup(populated, at=AT)
    bad = _corrupt_copy(taken, tmp_path / "corrupt.sqlite")
    before = _sha(populated)
    listing = sorted(populated.parent.iterdir())

    with pytest.raises(BackupVerificationError) as caught:
        restore(bad, populated)

    assert caught.value.path == bad  # not the hidden copy beside the database, gone by now
    assert str(bad) in str(caught.value)
    assert _sha(populated) == before
    assert sorted(populated.parent.iterdir()) == listing


def test_restore_refuses_a_file_that_is_not_a_database(populated: Path, tmp_path: Path) -> None:
    junk = tmp_path / "junk.sqlite"
    junk.write_text("this is not a database\n" * 100)
    before = _sha(populated)

    with pytest.raises(NotADatabaseError):
        restore(junk, populated)

    assert _sha(populated) == before


def test_restore_refuses_a_backup_from_an_unknown_schema(populated: Path, tmp_path: Path) -> None:
    taken = backup(populated, at=AT)
    future = tmp_path / "future.sqlite"
    future.write_bytes(taken.read_bytes())
    with closing(sqlite3.connect(str(future))) as conn, conn:
        conn.execute("UPDATE philont_alembic_version SET version_num = 'v999'")
    before = _sha(populated)

    with pytest.raises(UnknownSchemaVersionError):
        restore(future, populated)

    assert _sha(populated) == before


def test_a_philont_backup_of_an_older_schema_can_be_restored(
    copy_fixture: CopyFixture, live: Path
) -> None:
    report = restore(copy_fixture("v27"), live)

    assert report.revision == "v027"
    assert report.schema_version == "27"
    assert len(_message_ids(live)) == 201


# --- rotation never touches a safety copy ----------------------------------------------------

SAFETY_LABELS = (PRE_RESTORE_LABEL, PRE_UPGRADE_LABEL)


def _backup_names(live: Path) -> set[str]:
    return {p.name for p in (live.parent / "backups").glob("*")}


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    taken=st.lists(
        st.tuples(st.sampled_from(("", *SAFETY_LABELS)), st.integers(0, 5)),
        max_size=8,
    ),
    keep=st.integers(1, 4),
)
def test_rotation_counts_and_deletes_only_ordinary_backups(
    live: Path, taken: list[tuple[str, int]], keep: int
) -> None:
    """Whatever mix of ordinary backups and safety copies (made before a restore or an
    upgrade, same second or not) is in backups/, ``keep=N`` leaves every safety copy and
    exactly the newest N ordinary backups (the one just taken among them)."""
    for p in (live.parent / "backups").glob("*"):
        p.unlink()
    ordinary: list[tuple[int, int, Path]] = []  # (hours, order taken, file)
    safety: set[str] = set()
    for i, (label, hours) in enumerate(taken):
        at = AT + timedelta(hours=hours)
        if label:
            safety.add(migrate.backup_file(live, at=at, label=label).name)
        else:
            ordinary.append((hours, i, backup(live, at=at)))
    newest = backup(live, at=AT + timedelta(hours=6), keep=keep)

    newest_first = [newest, *(p for _h, _i, p in sorted(ordinary, reverse=True))]
    assert safety <= _backup_names(live)
    assert _backup_names(live) - safety == {p.name for p in newest_first[:keep]}


def test_a_restore_and_an_upgrade_keep_their_safety_copies_through_rotation(
    populated: Path, copy_fixture: CopyFixture
) -> None:
    """The real paths: restore's ``-pre-restore`` copy and upgrade's ``-pre-upgrade`` copy
    outlive ``backup(keep=1)``, taken after them in a later second."""
    taken = backup(populated, at=AT)
    safety = restore(taken, populated).safety_backup
    old = populated.parent / "old.sqlite"
    old.write_bytes(copy_fixture("v31").read_bytes())  # an old file: upgrading copies it first
    old.rename(populated)
    migrate.upgrade(populated)
    upgraded = [p for p in (populated.parent / "backups").glob(f"*{PRE_UPGRADE_LABEL}.sqlite")]

    kept = backup(populated, at=datetime.now(UTC) + timedelta(hours=1), keep=1)

    assert safety is not None and safety.exists() and len(upgraded) == 1 and upgraded[0].exists()
    assert _backup_names(populated) == {kept.name, safety.name, upgraded[0].name}
    assert [b.path for b in list_backups(populated) if is_rotating(b.path, populated)] == [kept]


HOLD = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1])
conn.execute("SELECT count(*) FROM memory_facts").fetchall()  # then idle, the file open
print("open", flush=True)
sys.stdin.read()
"""


def _idle_store(path: Path) -> Callable[[], None]:
    store = Store.open(path)
    with store.begin() as mem:
        mem.facts.store("user", "city", "Berlin")
    return store.close


def _store_mid_read(path: Path) -> Callable[[], None]:
    store = Store.open(path)
    mem = store.begin(write=False).__enter__()
    mem.facts.list("user")
    return lambda: (mem.__exit__(None, None, None), store.close())[-1]


def _holding(script: str, path: Path) -> subprocess.Popen[str]:
    """Another process running ``script`` on ``path``, once it says the file is open."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "open"
    return proc


def _other_process(path: Path) -> Callable[[], None]:
    proc = _holding(HOLD, path)

    def stop() -> None:
        proc.communicate("")

    return stop


LOCK_EXCLUSIVELY = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA locking_mode = EXCLUSIVE")
conn.execute("BEGIN EXCLUSIVE")
conn.execute("COMMIT")  # the lock stays
print("open", flush=True)
sys.stdin.read()
"""


def _exclusive_process(path: Path) -> Callable[[], None]:
    proc = _holding(LOCK_EXCLUSIVELY, path)

    def stop() -> None:
        proc.communicate("")

    return stop


HOLDERS: dict[str, Callable[[Path], Callable[[], None]]] = {
    "an idle Store": _idle_store,
    "a Store reading": _store_mid_read,
    "another process": _other_process,
    "another process, locking_mode EXCLUSIVE": _exclusive_process,
}


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_restore_refuses_a_database_that_is_open_and_changes_nothing(
    populated: Path, monkeypatch: pytest.MonkeyPatch, holder: str
) -> None:
    """Whoever has the live file open would go on using the replaced file: its writes after
    the restore would be lost. The restore refuses."""
    from philont.db import checkpoint

    taken = backup(populated, at=AT)
    _add_message(populated, "written after the backup")
    monkeypatch.setattr(philont_settings, "BUSY_TIMEOUT_MS", 200)
    monkeypatch.setattr(checkpoint, "GATHER_S", 3600.0)  # a Store holding it changes nothing
    before = _message_ids(populated)
    release = HOLDERS[holder](populated)
    try:
        on_disk = _on_disk(populated)
        with pytest.raises(DatabaseBusyError, match="close it before restoring"):
            restore(taken, populated)
        assert _on_disk(populated) == on_disk
    finally:
        release()
    assert _message_ids(populated) == before

    report = restore(taken, populated)  # nobody has it open any more

    assert report.safety_backup is not None
    assert _message_ids(populated) == before[:-1]
    _assert_sound(populated)


def _ends(work: Callable[[], object], never: str) -> BaseException | None:
    """What ``work`` raised (None: it returned), run in a thread given two minutes: far less
    than any busy timeout these tests set, far more than work that does not wait takes."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), never
    return outcome[0]


@pytest.mark.parametrize("holder", sorted(HOLDERS))
def test_restore_refuses_a_database_kept_open_at_once_before_copying_anything(
    populated: Path, monkeypatch: pytest.MonkeyPatch, holder: str
) -> None:
    """A WAL file that another connection has open stays locked for as long as it is open:
    waiting the busy timeout (here an hour) would not end that. The refusal comes at once,
    before the backup is copied or verified (a large one would take long for nothing)."""
    import philont.backup as backup_module

    taken = backup(populated, at=AT)
    monkeypatch.setattr(philont_settings, "BUSY_TIMEOUT_MS", 3_600_000)
    copied: list[Path] = []
    real_copy = backup_module._copy_beside
    monkeypatch.setattr(
        backup_module, "_copy_beside", lambda s, fd, p: (copied.append(s), real_copy(s, fd, p))
    )
    release = HOLDERS[holder](populated)
    try:  # far below the busy timeout: only a refusal that did not wait ends
        outcome = _ends(lambda: restore(taken, populated), "restore waited for an open file")
    finally:
        release()
    assert isinstance(outcome, DatabaseBusyError)
    assert copied == []


def test_restore_takes_a_locked_database_for_busy_never_for_damaged(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection holding the file locked (locking_mode EXCLUSIVE) made it unreadable to
    the health check, which took it for damaged: the restore then kept a '.corrupt' byte copy,
    deleted the -wal of the file the other process had open and replaced it under it."""
    taken = backup(populated, at=AT)
    _add_message(populated, "written after the backup")
    before = _message_ids(populated)
    monkeypatch.setattr(philont_settings, "BUSY_TIMEOUT_MS", 200)
    proc = _locked_by_another_process(populated)
    try:
        listing = sorted(p.name for p in populated.parent.rglob("*"))
        with pytest.raises(DatabaseBusyError, match="close it before restoring"):
            restore(taken, populated)
        assert sorted(p.name for p in populated.parent.rglob("*")) == listing
    finally:
        proc.communicate("")
    assert _message_ids(populated) == before
    assert not list(populated.parent.glob("*.corrupt-*"))


def _locked_by_another_process(path: Path) -> subprocess.Popen[str]:
    return _holding(LOCK_EXCLUSIVELY, path)


def test_a_backup_of_a_file_kept_locked_gives_up_after_the_busy_timeout(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Python's online backup tried again for as long as the file was locked: forever, when
    another connection keeps it locked (``philont backup`` hung, and so did an upgrade's
    pre-upgrade copy). It gives up after the busy timeout: database_busy, no file left."""
    monkeypatch.setattr(philont_settings, "BUSY_TIMEOUT_MS", 200)
    backups = philont_settings.backup_dir_for(populated)
    before = sorted(backups.iterdir())
    proc = _locked_by_another_process(populated)
    try:
        outcome = _ends(lambda: backup(populated), "the backup never gave up")
    finally:
        proc.communicate("")
    assert isinstance(outcome, DatabaseBusyError)
    assert sorted(backups.iterdir()) == before


BACKUP_UNTIL_INTERRUPTED = """
import signal, sys
# Ctrl-C raises, as in a foreground shell: a test run started in the background (`make test &`)
# has SIGINT ignored, its children inherit that and Python keeps it (the test waited 2 minutes)
signal.signal(signal.SIGINT, signal.default_int_handler)
try:
    from philont import settings
    from philont.backup import backup
    settings.BUSY_TIMEOUT_MS = 3_600_000
    backup(sys.argv[1])
except KeyboardInterrupt:
    sys.exit(130)
"""


def test_ctrl_c_ends_a_backup_waiting_for_a_locked_file(populated: Path) -> None:
    """The wait for a locked file is Python code: Ctrl-C ends it (it ran no Python code, so
    SIGINT was never acted on) and leaves no file among the backups."""
    backups = philont_settings.backup_dir_for(populated)
    holder = _locked_by_another_process(populated)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", BACKUP_UNTIL_INTERRUPTED, str(populated)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        try:
            for _ in range(600):  # the partial copy exists: the backup is under way
                if list(backups.glob(".memory-*partial*")) or proc.poll() is not None:
                    break
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(120) == 130
        finally:
            proc.kill()
            proc.wait()
    finally:
        holder.communicate("")
    assert list(backups.iterdir()) == []


def test_restore_refuses_the_database_itself(populated: Path) -> None:
    """Restoring the live file onto itself restores nothing (and reading it while it is
    locked would drop the lock): refused by name, the file unchanged."""
    before = _sha(populated)
    link = populated.parent / "another-name.sqlite"
    os.link(populated, link)
    for source in (populated, link):
        with pytest.raises(InvalidInputError, match="the database itself"):
            restore(source, populated)
    assert _sha(populated) == before


def _replace_then(path: Path, monkeypatch: pytest.MonkeyPatch, then: Callable[[], None]) -> None:
    """Make the restore's rename into ``path`` call ``then`` (after it when it is a signal,
    instead of it when it raises)."""
    import philont.backup as backup_module

    real = os.replace

    def replace(src: object, dst: object) -> None:
        if Path(str(dst)) == path:
            then()
        real(src, dst)  # type: ignore[arg-type]

    monkeypatch.setattr(backup_module.os, "replace", replace)


def test_ctrl_c_before_the_rename_leaves_the_database_and_no_safety_copy(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted before the new file is in place, nothing was restored: the database is as
    it was and no '-pre-restore' copy claims a restore replaced it."""
    taken = backup(populated, at=AT)
    _add_message(populated, "written after the backup")
    before = _message_ids(populated)
    listing = sorted(p.name for p in populated.parent.rglob("*"))

    def interrupted() -> None:
        raise KeyboardInterrupt

    _replace_then(populated, monkeypatch, interrupted)
    with pytest.raises(KeyboardInterrupt):
        restore(taken, populated)
    assert sorted(p.name for p in populated.parent.rglob("*")) == listing
    assert _message_ids(populated) == before


def test_ctrl_c_once_the_file_is_in_place_is_too_late_to_undo_the_restore(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SIGINT that arrives with the rename (under the command line's watch) is held: the
    restore finishes and reports what it did, instead of 'interrupted' over a replaced file."""
    from philont import interrupts

    taken = backup(populated, at=AT)
    _add_message(populated, "written after the backup")
    before = _message_ids(populated)
    _replace_then(populated, monkeypatch, lambda: os.kill(os.getpid(), signal.SIGINT))
    with interrupts.watch():
        try:
            report = restore(taken, populated)
        except KeyboardInterrupt:
            pytest.fail("interrupted after the file was replaced: reported as not restored")
        assert interrupts.held()
    assert report.safety_backup is not None and report.safety_backup.exists()
    assert _message_ids(populated) == before[:-1]


@pytest.mark.parametrize("damaged", [False, True])
def test_ctrl_c_right_after_the_rename_keeps_the_safety_copy_outside_the_command_line(
    populated: Path, monkeypatch: pytest.MonkeyPatch, damaged: bool
) -> None:
    """Used as a library (no watch holds SIGINT), a KeyboardInterrupt that came as the rename
    returned, before the restore had noted it, was taken for one before it: the safety copy,
    the only copy of what the file held, was removed, and the file not made 0600. Whether
    the copy is in place is told by the file: the safety copy stays, the file is settled."""
    taken = backup(populated, at=AT)
    _add_message(populated, "written after the backup")
    before = _message_ids(populated)
    if damaged:
        populated.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8192)
    old_bytes = populated.read_bytes()

    def interrupted_after_the_rename(src: object, dst: object) -> None:
        os.rename(src, dst)  # type: ignore[arg-type]
        if Path(str(dst)) == populated:
            raise KeyboardInterrupt

    import philont.backup as backup_module

    monkeypatch.setattr(backup_module.os, "replace", interrupted_after_the_rename)
    strict = 0o277 if os.geteuid() == 0 else 0o077  # 0400: a copy only root can write
    umask = os.umask(strict)
    try:
        with pytest.raises(KeyboardInterrupt):
            restore(taken, populated)
    finally:
        os.umask(umask)
    if damaged:
        kept = list(populated.parent.glob("*.corrupt-*"))
        assert len(kept) == 1 and kept[0].read_bytes() == old_bytes
    else:
        kept = list(philont_settings.backup_dir_for(populated).glob("*-pre-restore.sqlite"))
        assert len(kept) == 1 and _message_ids(kept[0]) == before
    assert _message_ids(populated) == before[:-1]
    assert _mode(populated) == 0o600


def _steps(events: list[tuple[str, int, int]]) -> list[str]:
    """The steps in the order they began; each reported in order and ended (done == total)."""
    order: list[str] = []
    for step, done, total in events:
        if step not in order:
            order.append(step)
        assert 0 <= done <= total
    for step in order:
        mine = [(d, t) for s, d, t in events if s == step]
        assert [d for d, _ in mine] == sorted(d for d, _ in mine)
        assert mine[-1][0] == mine[-1][1]
    return order


def test_a_backup_and_a_restore_report_their_steps_as_they_go(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large database took a while in silence: each step now reports as it goes (the
    restore's copy by the byte, verification by check), for the command's progress bars."""
    import philont.backup as backup_module

    monkeypatch.setattr(backup_module, "COPY_CHUNK", 16 * 1024)
    events: list[tuple[str, int, int]] = []
    taken = backup(populated, at=AT, progress=lambda *e: events.append(e))
    assert _steps(events) == [backup_module.COPYING, backup_module.VERIFYING]
    with closing(sqlite3.connect(taken)) as conn:
        fts = len(backup_module.fts5_tables(conn))
    assert events[-1] == (backup_module.VERIFYING, 1 + fts, 1 + fts)

    events.clear()
    restore(taken, populated, progress=lambda *e: events.append(e))
    assert _steps(events) == [
        backup_module.COPYING,
        backup_module.VERIFYING,
        backup_module.KEEPING,
    ]
    copied = [e for e in events if e[0] == backup_module.COPYING]
    assert copied[-1][1] == taken.stat().st_size
    assert len(copied) > taken.stat().st_size // (16 * 1024)


def test_a_backup_copied_with_its_wal_is_restored_with_what_the_wal_holds(
    populated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy of a database in WAL mode taken with its -wal (``cp`` of a running one): what the
    -wal holds was silently missing from the restored file (the restore copied the main file
    alone). The -wal is copied beside it and folded in; the backup's own files are left as
    they were."""
    from philont.db import checkpoint

    monkeypatch.setattr(checkpoint, "GATHER_S", 3600.0)  # the writes stay in the -wal alone
    other = tmp_path / "elsewhere" / "memory.sqlite"
    other.parent.mkdir()
    with Store.open(other) as store:
        with store.begin() as mem:
            for i in range(5):
                mem.facts.store("user", f"k{i}", i)
        copy = tmp_path / "copied.sqlite"
        for suffix in ("", "-wal"):
            Path(f"{copy}{suffix}").write_bytes(Path(f"{other}{suffix}").read_bytes())
        with store.begin(write=False) as mem:
            expected = sorted(f.key for f in mem.facts.list("user"))
    assert Path(f"{copy}-wal").stat().st_size > 0
    kept = {p.name: _sha(p) for p in tmp_path.glob("copied.sqlite*")}

    restore(copy, populated)

    with Store.open(populated) as store, store.begin(write=False) as mem:
        assert sorted(f.key for f in mem.facts.list("user")) == expected
    assert {p.name: _sha(p) for p in tmp_path.glob("copied.sqlite*")} == kept
    _assert_sound(populated)


def test_restore_closes_this_process_shared_stores_of_the_file(populated: Path) -> None:
    taken = backup(populated, at=AT)
    assert tools.call(
        "store_fact", {"namespace": "user", "key": "later", "value": 1}, db=populated
    ).ok

    restore(taken, populated)

    assert not tools.call("get_fact", {"namespace": "user", "key": "later"}, db=populated).ok


@pytest.mark.parametrize("step", ["copy", "verify"])
def test_an_interrupted_backup_leaves_no_file(
    populated: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """Ctrl-C (KeyboardInterrupt) while copying or verifying: nothing half-made or unverified
    stays among the backups (rotation and restore would take it for a good one)."""
    import philont.backup as backup_module
    import philont.migrate.env as env_module

    def interrupted(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt

    if step == "verify":
        monkeypatch.setattr(backup_module, "verify", interrupted)
    else:
        real_connect = sqlite3.connect

        def connect(target: str, *args: object, **kwargs: object) -> sqlite3.Connection:
            if "backups" in str(target):
                raise KeyboardInterrupt
            return real_connect(target, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(env_module.sqlite3, "connect", connect)
    before = set(philont_settings.backup_dir_for(populated).glob("*"))
    with pytest.raises(KeyboardInterrupt):
        backup(populated)
    assert set(philont_settings.backup_dir_for(populated).glob("*")) == before


# --- a refused restore changes nothing on disk -----------------------------------------------

LEAVE_A_WAL = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint = 0")
conn.execute(
    "INSERT INTO memory_raw_messages (session_id, role, content, timestamp)"
    " VALUES ('global', 'user', 'left in the -wal', 1)"
)
os._exit(0)  # as a crash: the -wal keeps the change, nobody folds it in
"""


@pytest.fixture
def left_wal(populated: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A live file whose last process died with changes in its ``-wal`` (nobody has it
    open), and a backup of it taken before them (bigger than the backup: it grew since)."""
    taken = backup(populated, at=AT)
    for n in range(200):
        _add_message(populated, f"grown since the backup {n} " + "x" * 200)
    subprocess.run([sys.executable, "-c", LEAVE_A_WAL, str(populated)], check=True)
    assert Path(f"{populated}-wal").stat().st_size > 0
    keep = tmp_path / "kept.sqlite"
    keep.write_bytes(taken.read_bytes())
    taken.unlink()
    return populated, keep


def _unknown_schema(taken: Path, to: Path) -> Path:
    to.write_bytes(taken.read_bytes())
    with closing(sqlite3.connect(str(to))) as conn, conn:
        conn.execute("UPDATE philont_alembic_version SET version_num = 'v999'")
    return to


def _not_a_database(_taken: Path, to: Path) -> Path:
    to.write_bytes(b"not a database at all\n" * 100)
    return to


BAD_BACKUPS: dict[str, Callable[[Path, Path], Path]] = {
    "corrupt": _corrupt_copy,
    "of an unknown schema": _unknown_schema,
    "not a database": _not_a_database,
    "missing": lambda _taken, to: to,
}


def _refused(live: Path, work: Callable[[], object]) -> BaseException:
    """What ``work`` (a restore onto ``live``) raised, checking it changed nothing on disk."""
    on_disk = _on_disk(live)
    with pytest.raises(BaseException) as caught:
        work()
    assert _on_disk(live) == on_disk, f"{caught.value!r} changed the files"
    return caught.value


@pytest.mark.parametrize("bad", sorted(BAD_BACKUPS))
def test_a_restore_refusing_a_bad_backup_leaves_every_file_as_it_was(
    left_wal: tuple[Path, Path], tmp_path: Path, bad: str
) -> None:
    """The live file's leftover ``-wal`` was folded into it when the refused restore closed
    its connection: same content, but a refusal must change nothing on disk."""
    live, taken = left_wal
    source = BAD_BACKUPS[bad](taken, tmp_path / "bad.sqlite")
    assert isinstance(_refused(live, lambda: restore(source, live)), PhilontError)


def test_a_restore_interrupted_at_any_step_or_out_of_space_leaves_every_file_as_it_was(
    left_wal: tuple[Path, Path], tmp_path: Path
) -> None:
    """Ctrl-C at each step a restore reports (up to the rename), and a file size limit that
    stops the copy of the backup or the safety copy of the live file: nothing changed."""
    from tests.reliability.test_file_size_limit import size_limit

    live, taken = left_wal
    template = tmp_path / "template"
    shutil.copytree(live.parent, template)
    events: list[tuple[str, int, int]] = []
    restore(taken, live, progress=lambda *event: events.append(event))
    assert len(events) > 4

    def fresh() -> None:
        shutil.rmtree(live.parent)
        shutil.copytree(template, live.parent)

    for n, event in enumerate(events):  # each is reported before the rename
        fresh()
        seen: list[object] = []

        def interrupt(*_: object, n: int = n, seen: list[object] = seen) -> None:
            seen.append(_)
            if len(seen) > n:
                raise KeyboardInterrupt

        outcome = _refused(live, lambda: restore(taken, live, progress=interrupt))
        assert isinstance(outcome, KeyboardInterrupt), event
    for limit in (taken.stat().st_size // 2, taken.stat().st_size + 4096):
        fresh()
        with size_limit(limit):
            outcome = _refused(live, lambda: restore(taken, live))
        assert isinstance(outcome, DatabasePathError | FilePathError), limit


GROW_IN_THE_WAL = """
import os, sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA wal_autocheckpoint = 0")
conn.execute("BEGIN")
for n in range(100):
    conn.execute(
        "INSERT INTO memory_raw_messages (session_id, role, content, timestamp)"
        " VALUES ('global', 'user', ?, 1)",
        (f"only in the -wal {n} " + "x" * 4000,),
    )
conn.execute("COMMIT")
os._exit(0)  # as a crash: the -wal keeps the change, nobody folds it in
"""


def test_a_restore_whose_fold_of_the_live_wal_fails_is_refused_for_the_database(
    populated: Path, tmp_path: Path
) -> None:
    """Folding the live file's leftover ``-wal`` into it, the last step before the rename,
    writes the live file: stopped there (a file size limit, as a full disk would), the restore
    raised a bare ``sqlite3.OperationalError``. It is the typed refusal of the database, which
    still holds what it held (its ``-wal`` as it was), with no copy of the restore left."""
    from tests.reliability.test_file_size_limit import size_limit

    taken = backup(populated, at=AT)
    kept = tmp_path / "kept.sqlite"
    kept.write_bytes(taken.read_bytes())
    taken.unlink()
    restored = len(_message_ids(populated))
    subprocess.run([sys.executable, "-c", GROW_IN_THE_WAL, str(populated)], check=True)
    wal = Path(f"{populated}-wal")
    wal_before = _sha(wal)
    listing = sorted(p.name for p in tmp_path.rglob("*") if not p.name.endswith("-shm"))
    limit = populated.stat().st_size  # the fold must grow the file: it cannot
    with ExitStack() as limits, pytest.raises(StorageError) as caught:

        def at_the_fold(step: str, done: int, total: int) -> None:
            if step == KEEPING and done == total:  # the safety copy is written: the fold next
                limits.enter_context(size_limit(limit))

        restore(kept, populated, progress=at_the_fold)
    assert caught.value.details["path"] == str(populated)
    assert str(populated) in str(caught.value)
    assert _sha(wal) == wal_before
    assert sorted(p.name for p in tmp_path.rglob("*") if not p.name.endswith("-shm")) == listing
    assert len(_message_ids(populated)) == restored + 100  # the -wal's too
    restore(kept, populated)  # nothing in the way of the next one
    assert len(_message_ids(populated)) == restored


def test_a_restore_sqlite_cannot_lock_for_a_wal_it_cannot_open_is_refused_for_that(
    populated: Path, tmp_path: Path
) -> None:
    """SQLITE_CANTOPEN while taking the lock (the ``-wal`` beside the database cannot be
    opened): refused naming the database and SQLite's reason, never taken for damage (no
    '.corrupt' copy, no safety copy), nothing changed."""
    taken = backup(populated, at=AT)
    kept = tmp_path / "kept.sqlite"
    kept.write_bytes(taken.read_bytes())
    wal = Path(f"{populated}-wal")
    wal.write_bytes(b"")
    wal.chmod(0)
    on_disk = _on_disk(populated)
    with file_permissions_apply(), pytest.raises(DatabasePathError) as caught:
        restore(kept, populated)
    assert _on_disk(populated) == on_disk
    assert caught.value.path == str(populated)
    assert "SQLite cannot open it or the files beside it" in str(caught.value)


RESTORE_KILLED_MID_COPY = """
import os, signal, sys
from pathlib import Path
import philont.backup as backup_module

def progress(step, done, total):
    if step == backup_module.COPYING and 0 < done < total:  # part of the copy is written
        os.kill(os.getpid(), signal.SIGKILL)

backup_module.COPY_CHUNK = 4096
backup_module.restore(Path(sys.argv[1]), sys.argv[2], progress=progress)
"""


def _copies_beside(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.glob(f".{path.name}.restore-*"))


def test_the_copy_a_restore_killed_mid_way_left_is_removed_by_the_next(
    populated: Path, tmp_path: Path
) -> None:
    """A restore killed while it copied the backup beside the database left that copy (as big
    as the backup, hidden) for ever, one more each time; the next restore removes it, never
    the copy of a restore still running."""
    taken = backup(populated, at=AT)
    kept = tmp_path / "kept.sqlite"
    kept.write_bytes(taken.read_bytes())
    killed = subprocess.run(
        [sys.executable, "-c", RESTORE_KILLED_MID_COPY, str(kept), str(populated)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert killed.returncode == -signal.SIGKILL
    assert len(_copies_beside(populated)) == 1
    # a copy its writer holds stays, with its -wal; one nobody holds goes (they were told
    # apart by "is the pid in its name alive here", and a writer in another PID namespace,
    # a container sharing the volume, looked dead)
    running = populated.parent / f".{populated.name}.restore-{filewrite.temp_id()}.tmp"
    running.write_bytes(b"a copy being written")
    Path(f"{running}-wal").write_bytes(b"and its -wal")
    unheld = populated.parent / f".{populated.name}.restore-{filewrite.temp_id()}.tmp"
    unheld.write_bytes(b"a copy nobody writes")

    with held_by_another_process(running):
        restore(kept, populated)

    assert _copies_beside(populated) == [running.name, f"{running.name}-wal"]


SWEEP_BESIDE = """
import sys
from pathlib import Path
from philont import filewrite
filewrite.temp_beside(Path(sys.argv[1]), sys.argv[2])  # sweeps what it takes for leftovers
"""


def test_a_restore_keeps_its_copy_while_a_process_of_another_pid_namespace_sweeps(
    populated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A restore or an export in another container sharing the volume sweeps leftovers beside
    the database while this restore copies the backup there: this process looked dead to it
    (its pid is none of that namespace's) and its copy was deleted under it."""
    import philont.backup as backup_module

    monkeypatch.setattr(backup_module, "COPY_CHUNK", 4096)
    taken = backup(populated, at=AT)
    kept = tmp_path / "kept.sqlite"
    kept.write_bytes(taken.read_bytes())
    swept: list[int] = []

    def sweep_mid_copy(step: str, done: int, total: int) -> None:
        if step == backup_module.COPYING and 0 < done < total and not swept:
            swept.append(done)
            in_another_pid_namespace(SWEEP_BESIDE, str(populated), RESTORE_COPY)

    report = restore(kept, populated, progress=sweep_mid_copy)

    assert swept and _copies_beside(populated) == []
    assert report.restored_from == kept
    _assert_sound(populated)


def test_a_backup_this_process_may_not_read_is_refused_as_the_backup_it_is(
    populated: Path, tmp_path: Path
) -> None:
    """An unreadable backup file was 'cannot use ... as a memory database: it cannot be
    opened': the database's refusal, for a file that is not the database."""
    taken = backup(populated, at=AT)
    kept = tmp_path / "kept.sqlite"
    kept.write_bytes(taken.read_bytes())
    kept.chmod(0)
    on_disk = _on_disk(populated)
    with file_permissions_apply(), pytest.raises(FilePathError) as caught:
        restore(kept, populated)
    assert caught.value.path == str(kept)
    assert "permission denied" in str(caught.value)
    assert "memory database" not in str(caught.value)
    assert _on_disk(populated) == on_disk


@pytest.mark.parametrize("bad", sorted(BAD_BACKUPS))
def test_a_restore_refused_onto_a_new_directory_leaves_no_directory_behind(
    populated: Path, tmp_path: Path, bad: str
) -> None:
    """Restoring onto a database in a directory that does not exist yet makes it (and the
    ``backups/`` beside the file); a refused restore left them, empty, behind."""
    source = BAD_BACKUPS[bad](backup(populated, at=AT), tmp_path / "bad.sqlite")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(PhilontError):
        restore(source, tmp_path / "new" / "deeper" / "memory.sqlite")
    assert sorted(tmp_path.rglob("*")) == before


def test_a_restore_interrupted_after_its_safety_copy_leaves_no_backups_directory(
    live: Path, tmp_path: Path
) -> None:
    """The first restore of a file makes ``backups/`` for its safety copy: interrupted before
    the rename, it removes the copy and the directory it made for it."""
    taken = backup(live, at=AT)
    source = tmp_path / "kept.sqlite"
    source.write_bytes(taken.read_bytes())
    shutil.rmtree(taken.parent)
    before = sorted(tmp_path.rglob("*"))

    def interrupt(step: str, done: int, total: int) -> None:
        if step == KEEPING and done == total:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        restore(source, live, progress=interrupt)
    assert sorted(tmp_path.rglob("*")) == before


def _stop_at_verifying(step: str, done: int, total: int) -> None:
    if step == VERIFYING:
        raise KeyboardInterrupt


def _interrupted_verifying(path: Path) -> object:
    return backup(path, progress=_stop_at_verifying)


def _busy(path: Path) -> object:
    proc = _locked_by_another_process(path)
    try:
        return backup(path)
    finally:
        proc.communicate("")


FAILED_BACKUPS: dict[str, Callable[[Path], object]] = {
    "interrupted while verifying": _interrupted_verifying,
    "the file kept locked by another process": _busy,
}


@pytest.mark.parametrize("case", sorted(FAILED_BACKUPS))
def test_the_first_backup_of_a_file_leaves_no_backups_directory_when_it_fails(
    live: Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    """The first backup makes ``backups/``: one that fails leaves no file, nor that directory."""
    monkeypatch.setattr(philont_settings, "BUSY_TIMEOUT_MS", 200)
    philont_settings.backup_dir_for(live).rmdir()  # the upgrade made it, empty
    before = _on_disk(live)
    with pytest.raises((KeyboardInterrupt, DatabaseBusyError)):
        FAILED_BACKUPS[case](live)
    assert _on_disk(live) == before


def _in_rollback_mode(path: Path) -> None:
    with closing(sqlite3.connect(str(path), isolation_level=None)) as conn:
        assert conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] == "delete"


def _a_directory_beside(suffix: str) -> Callable[[Path], None]:
    def block(path: Path) -> None:
        Path(f"{path}{suffix}").unlink(missing_ok=True)  # a damaged file's: in its byte copy
        Path(f"{path}{suffix}").mkdir()
        (Path(f"{path}{suffix}") / "kept").write_text("x")

    return block


def _folder_made_read_only(path: Path) -> None:
    path.parent.chmod(0o500)


LAST_STEP_FAILURES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a directory where the -wal was": (_a_directory_beside("-wal"), "cannot remove"),
    "a directory where the -shm was": (_a_directory_beside("-shm"), "cannot remove"),
    # the rename, or the damaged file's -wal before it
    "the folder made read-only": (_folder_made_read_only, "(Permission denied)"),
}


@pytest.mark.parametrize("damaged", [False, True], ids=["sound", "damaged"])
@pytest.mark.parametrize("failure", sorted(LAST_STEP_FAILURES))
def test_a_restore_whose_last_step_fails_refuses_the_database_and_says_what_it_left(
    populated: Path, failure: str, damaged: bool
) -> None:
    """Restore's last step removes the old file's -wal/-shm and renames the copy over it; an
    OSError there (here made to happen just before that step) was raised bare, naming no
    database (``IsADirectoryError``, ``PermissionError``), and the byte copy of a damaged file
    was deleted though its -wal could be gone already. It is the refusal of the database
    saying what the files are left as: a sound file holds every row it held (its safety copy
    goes: nothing was replaced); a damaged one stays, and its byte copy with its -wal too."""
    taken = backup(populated, at=AT)
    _add_message(populated, "written after the backup")
    _in_rollback_mode(populated)  # a -wal/-shm beside it is not SQLite's then
    before = _message_ids(populated)
    if damaged:
        populated.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8192)
        Path(f"{populated}-wal").write_bytes(b"what the damaged file's -wal held")
    old_bytes = populated.read_bytes()
    make_fail, doing = LAST_STEP_FAILURES[failure]

    def fail_at_the_last_step(step: str, done: int, total: int) -> None:
        if step == KEEPING and done == total:
            make_fail(populated)

    try:
        with file_permissions_apply(), pytest.raises(DatabasePathError) as caught:
            restore(taken, populated, progress=fail_at_the_last_step)
    finally:
        populated.parent.chmod(0o700)
    for suffix in ("-wal", "-shm"):  # what the test put there (SQLite will not open beside it)
        if Path(f"{populated}{suffix}").is_dir():
            shutil.rmtree(f"{populated}{suffix}")
    assert caught.value.path == str(populated)
    assert doing in caught.value.reason
    assert "the backup was not put in place" in caught.value.reason
    corrupt = list(populated.parent.glob("*.corrupt-*"))
    safety = list(philont_settings.backup_dir_for(populated).glob(f"*{PRE_RESTORE_LABEL}*"))
    if damaged:
        assert populated.read_bytes() == old_bytes
        assert safety == [] and len(corrupt) == 2  # the byte copy and its -wal
        assert str(min(corrupt)) in caught.value.reason
        assert Path(f"{min(corrupt)}-wal").read_bytes() == b"what the damaged file's -wal held"
    else:
        assert "the database file holds all it held" in caught.value.reason
        assert _message_ids(populated) == before
        assert safety == [] and corrupt == []
    filewrite.temp_beside(populated, RESTORE_COPY)  # a copy a read-only folder kept: swept
    assert not list(populated.parent.glob(".*.tmp"))


def test_a_byte_copy_of_a_damaged_database_that_cannot_be_written_is_refused_and_removed(
    populated: Path,
) -> None:
    """Before replacing a damaged database a restore keeps a byte copy of it
    (``<db>.corrupt-<TAG>``); a write of that copy that failed (here a file size limit:
    ``EFBIG``) was a bare OSError and left the half copy, a file that looks like a whole
    one. It is the refusal of the database, which is left as it was, and no half copy stays."""
    import resource

    taken = backup(populated, at=AT)
    size = taken.stat().st_size
    populated.write_bytes(b"SQLite format 3\x00" + b"\xff" * (4 * size))  # damaged, bigger
    on_disk = _on_disk(populated)
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (2 * size, hard))  # the copy fits, not it
    try:
        with pytest.raises(DatabasePathError) as caught:
            restore(taken, populated)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
    assert caught.value.path == str(populated)
    assert "cannot keep a byte copy of the damaged database" in caught.value.reason
    assert "the database was left as it was" in caught.value.reason
    assert _on_disk(populated) == on_disk


def test_a_restore_onto_a_folder_that_cannot_be_made_is_refused_naming_the_database(
    populated: Path, tmp_path: Path
) -> None:
    """A database in a folder still to be made under one that cannot be written: the mkdir's
    PermissionError was raised bare."""
    taken = backup(populated, at=AT)
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    target = locked / "new" / "memory.sqlite"
    with file_permissions_apply(), pytest.raises(DatabasePathError) as caught:
        restore(taken, target)
    assert caught.value.path == str(target)
    assert "cannot make its folder" in caught.value.reason
    assert list(locked.iterdir()) == []


def test_restore_refuses_at_once_where_the_lock_table_names_the_file_by_its_mounts_device(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a btrfs subvolume ``stat`` gives a file's subvolume device, ``/proc/locks`` the
    file system's (the one ``/proc/self/mountinfo`` gives its mount): the lock of a
    connection in locking_mode EXCLUSIVE was not found, and the restore waited the busy
    timeout (here an hour) instead of refusing at once. Made here by showing this file
    system's device, in both tables, as such a device."""
    import pathlib

    st_dev = populated.stat().st_dev
    major, minor = os.major(st_dev), os.minor(st_dev)
    real_read_text = pathlib.Path.read_text

    def as_on_a_subvolume(self: Path, *args: object, **kwargs: object) -> str:
        text = real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]
        if str(self) == "/proc/locks":
            return text.replace(f" {major:02x}:{minor:02x}:", " 00:2d:")
        if str(self) == "/proc/self/mountinfo":
            return text.replace(f" {major}:{minor} ", " 0:45 ")
        return text

    taken = backup(populated, at=AT)
    monkeypatch.setattr(philont_settings, "BUSY_TIMEOUT_MS", 3_600_000)
    monkeypatch.setattr(pathlib.Path, "read_text", as_on_a_subvolume)
    release = _exclusive_process(populated)
    try:
        on_disk = _on_disk(populated)
        outcome = _ends(lambda: restore(taken, populated), "restore waited for an open file")
        assert _on_disk(populated) == on_disk
    finally:
        release()
    assert isinstance(outcome, DatabaseBusyError)


def test_a_file_and_its_shm_are_judged_from_one_reading_of_the_lock_table(
    populated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whether the lock a restore cannot take is kept by open connections is told from the
    locks on the database and on its -shm together: each was read from its own reading of
    /proc/locks (and of the mounts), a moment apart, the pair judged from two snapshots.
    One reading serves both."""
    import pathlib

    import philont.backup as backup_module

    real_read_text = pathlib.Path.read_text
    read: list[str] = []

    def counted(self: Path, *args: object, **kwargs: object) -> str:
        read.append(str(self))
        return real_read_text(self, *args, **kwargs)  # type: ignore[arg-type]

    release = _other_process(populated)  # a WAL reader kept open: it locks the -shm too
    try:
        monkeypatch.setattr(pathlib.Path, "read_text", counted)
        assert backup_module._kept_open(populated)
    finally:
        release()
    assert read.count("/proc/locks") == 1
    assert read.count("/proc/self/mountinfo") == 1


RESTORE_IN_A_CONTAINER = """
import sys
from pathlib import Path
from philont import locktable, settings
from philont.backup import restore
from philont.errors import DatabaseBusyError
settings.BUSY_TIMEOUT_MS = 300
path = Path(sys.argv[2])
(seen,) = locktable.file_locks(path)
print("sees every process:", locktable.sees_every_process(), "locks seen:", seen.held)
try:
    restore(Path(sys.argv[1]), path)
except DatabaseBusyError:
    print("refused: busy")
"""


@pytest.mark.parametrize("holder", ["another process", "another process, locking_mode EXCLUSIVE"])
def test_a_restore_in_a_container_that_sees_no_lock_still_refuses_a_file_held_outside_it(
    populated: Path, holder: str
) -> None:
    """A container's /proc lists no lock of the host's processes: the table is not whole, and
    seeing no lock there is never taken for 'nobody holds it'. The restore asks a reader
    and, where that cannot tell, waits the busy timeout: refused either way, nothing
    changed."""
    unshare = shutil.which("unshare")
    container = [unshare or "unshare", "-r", "-p", "-f", "-m", "--mount-proc"]
    if unshare is None or subprocess.run([*container, "true"], capture_output=True).returncode:
        pytest.skip("no PID namespace with its own /proc can be made here (unshare)")
    taken = backup(populated, at=AT)
    release = HOLDERS[holder](populated)
    try:
        on_disk = _on_disk(populated)
        ran = subprocess.run(
            [*container, sys.executable, "-c", RESTORE_IN_A_CONTAINER, str(taken), str(populated)],
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert _on_disk(populated) == on_disk
    finally:
        release()
    assert ran.stdout.splitlines() == [
        "sees every process: False locks seen: ()",
        "refused: busy",
    ], ran.stderr


def test_a_restore_whose_fold_of_the_copied_wal_fails_is_refused_for_the_database(
    populated: Path, tmp_path: Path
) -> None:
    """A backup copied with its -wal is folded into the restore's copy beside the database:
    stopped there (a file size limit, as a full disk would), it was a bare sqlite3 error. It
    is the refusal of the database whose disk it is, which is left as it was."""
    from tests.reliability.test_file_size_limit import size_limit

    other = tmp_path / "elsewhere" / "memory.sqlite"
    other.parent.mkdir()
    other.write_bytes(populated.read_bytes())
    subprocess.run([sys.executable, "-c", GROW_IN_THE_WAL, str(other)], check=True)
    assert Path(f"{other}-wal").stat().st_size > 0
    on_disk = _on_disk(populated)
    with ExitStack() as limits, pytest.raises(DatabasePathError) as caught:

        def at_the_fold(step: str, done: int, total: int) -> None:
            if step == VERIFYING and done == total:  # the copy is verified: the fold next
                limits.enter_context(size_limit(other.stat().st_size))

        restore(other, populated, progress=at_the_fold)
    assert caught.value.path == str(populated)
    assert "cannot write the backup's copy beside it" in caught.value.reason
    assert _on_disk(populated) == on_disk


def test_a_file_that_fails_to_be_read_is_refused_by_name_for_a_backup_and_a_restore(
    populated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Telling a file SQLite cannot read from one that is no database reads its header with
    ``open``: an I/O error there (EIO, made here) was a bare OSError. It is file_path naming
    the file read: the database for a backup, the backup for a restore or a verify."""
    import errno
    import pathlib

    taken = backup(populated, at=AT)
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    real_open = pathlib.Path.open

    def failing(self: Path, *args: object, **kwargs: object) -> object:
        if self.name.startswith(("damaged", "memory.sqlite")):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    populated.write_bytes(damaged.read_bytes())
    monkeypatch.setattr(pathlib.Path, "open", failing)
    with pytest.raises(DatabasePathError) as refused:
        backup(populated)
    with pytest.raises(FilePathError) as unread:
        restore(damaged, tmp_path / "elsewhere.sqlite")
    with pytest.raises(FilePathError) as unverified:
        verify(damaged)
    assert refused.value.path == str(populated)
    assert unread.value.path == unverified.value.path == str(damaged)
    for caught in (refused, unread, unverified):
        assert "cannot read it (Input/output error)" in str(caught.value)
    assert taken.exists()


def test_a_restore_that_fails_to_read_its_copy_never_names_the_hidden_copy(
    populated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The copy a restore verifies is a hidden file beside the database, removed by the time
    the refusal is read: a damaged backup's copy, whose header was then read with ``open``,
    failing there (an I/O error), was refused as that file. The copy is read through SQLite
    alone: the refusal names the backup; the database is left as it was."""
    import errno
    import pathlib

    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4096)
    real_open = pathlib.Path.open

    def failing(self: Path, *args: object, **kwargs: object) -> object:
        if RESTORE_COPY in self.name:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
        return real_open(self, *args, **kwargs)  # type: ignore[call-overload]

    on_disk = _on_disk(populated)
    monkeypatch.setattr(pathlib.Path, "open", failing)
    with pytest.raises(PhilontError) as caught:
        restore(damaged, populated)
    assert isinstance(caught.value, BackupVerificationError)
    assert caught.value.path == damaged
    assert RESTORE_COPY not in str(caught.value)
    assert _on_disk(populated) == on_disk


@pytest.mark.parametrize("when", ["looked at", "copied"])
def test_a_restore_that_cannot_stat_the_backups_wal_names_the_wal(
    populated: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """The -wal beside a backup is read with it: a failure to stat it (an I/O error; gone
    between being found and being copied) named the backup itself, or the database. It is
    the refusal of the -wal, and the database is left as it was."""
    import errno
    import pathlib

    import philont.backup as backup_module

    other = tmp_path / "elsewhere" / "memory.sqlite"
    other.parent.mkdir()
    other.write_bytes(populated.read_bytes())
    subprocess.run([sys.executable, "-c", GROW_IN_THE_WAL, str(other)], check=True)
    wal = Path(f"{other}-wal")
    if when == "looked at":
        real_stat = pathlib.Path.stat

        def stat(self: Path, **kwargs: bool) -> os.stat_result:
            if self == wal:
                raise OSError(errno.EIO, os.strerror(errno.EIO), str(self))
            return real_stat(self, **kwargs)

        monkeypatch.setattr(pathlib.Path, "stat", stat)
    else:
        real_with_wal = backup_module._with_wal

        def then_gone(source: Path, tmp: Path) -> list[tuple[Path, Path]]:
            copies = real_with_wal(source, tmp)
            wal.unlink()  # checkpointed away by a writer of the backup, say
            return copies

        monkeypatch.setattr(backup_module, "_with_wal", then_gone)
    on_disk = _on_disk(populated)
    with pytest.raises(FilePathError) as caught:
        restore(other, populated)
    assert caught.value.path == str(wal)
    assert "cannot read it" in caught.value.reason
    assert _on_disk(populated) == on_disk


@pytest.mark.parametrize("failure", [OSError(5, "Input/output error"), KeyboardInterrupt()])
def test_a_failure_after_the_copy_is_in_place_keeps_the_safety_copy(
    populated: Path, monkeypatch: pytest.MonkeyPatch, failure: BaseException
) -> None:
    """Once the copy is renamed over the database, the safety copy is the only copy of what
    the file held: a failure after it (the copy's descriptor closing with EIO, Ctrl-C outside
    the command line's watch) removed it. Now it stays; an error of that clean-up is logged and
    the restore reported done, an interrupt still raised. Either way the file in place is made
    0600 and its rename durable: an interrupt skipped both, and under a strict umask (the copy
    made 0400) the restored database stayed 0400."""
    import philont.backup as backup_module

    taken = backup(populated, at=AT)
    _add_message(populated, "written after the backup")
    before = _message_ids(populated)
    real = filewrite.LockedTemp.close
    real_fsync = backup_module._fsync
    synced: list[Path] = []

    def fsync(path: Path, *, directory: bool = False) -> None:
        real_fsync(path, directory=directory)
        if directory:
            synced.append(path)

    monkeypatch.setattr(backup_module, "_fsync", fsync)

    def close(self: filewrite.LockedTemp) -> None:
        renamed = self.fd >= 0 and RESTORE_COPY in self.path.name and not self.path.exists()
        real(self)
        if renamed:
            raise failure

    monkeypatch.setattr(filewrite.LockedTemp, "close", close)
    strict = 0o277 if os.geteuid() == 0 else 0o077  # 0400: a copy only root can write
    umask = os.umask(strict)
    try:
        if isinstance(failure, KeyboardInterrupt):
            with pytest.raises(KeyboardInterrupt):
                restore(taken, populated)
            found = philont_settings.backup_dir_for(populated).glob("*-pre-restore.sqlite")
            safety = list(found)
            assert len(safety) == 1
        else:
            report = restore(taken, populated)
            assert report.safety_backup is not None
            safety = [report.safety_backup]
    finally:
        os.umask(umask)
    assert _mode(populated) == 0o600
    assert synced == [populated.parent]
    assert _message_ids(safety[0]) == before
    assert _message_ids(populated) == before[:-1]
    _assert_sound(populated)


PG_URL = "postgresql+psycopg://user:secret@127.0.0.1:1/db"  # never connected to


@pytest.mark.parametrize("call", ["backup", "list_backups", "restore"])
def test_a_postgresql_url_is_refused_as_a_database_backups_do_not_take(
    call: str, tmp_path: Path
) -> None:
    # it was a storage_error, which says the database failed
    copy = tmp_path / "b.sqlite"
    copy.write_bytes(b"")
    calls: dict[str, Callable[[], object]] = {
        "backup": lambda: backup(PG_URL),
        "list_backups": lambda: list_backups(PG_URL),
        "restore": lambda: restore(copy, PG_URL),
    }
    with pytest.raises(InvalidDatabaseError, match="SQLite files; on PostgreSQL use"):
        calls[call]()
