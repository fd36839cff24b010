"""A read-only Store (``Store.open(path, read_only=True)``) on a file this process may not
write: every read works and answers what a writable Store answers (without refreshing access
times), every write is refused with ``DatabaseReadOnlyError`` saying the Store was opened
read-only, and the files are left as they were. The CLI's reading commands fall back to it.
Before, any Store on such a file was refused, and so was every command. Run with the
permission bits enforced, root included (:func:`tests.support.file_permissions_apply`)."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import select, text
from typer.testing import CliRunner

from philont import Store, tools
from philont import store as store_module
from philont.aio import AsyncStore
from philont.cli import app
from philont.db.models import Note
from philont.db.schema import metadata
from philont.errors import (
    DatabasePathError,
    DatabaseReadOnlyError,
    InvalidDatabaseError,
    PhilontError,
    SchemaOutOfDateError,
)
from philont.memory import Memory
from philont.tools.registry import REGISTRY
from tests import service_calls
from tests.support import file_permissions_apply

NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)


def _clock() -> datetime:
    return NOW


runner = CliRunner()


def _note_id(mem: Memory) -> str:
    return mem.notes.list()[0].id


READS: dict[str, Callable[[Memory], object]] = {
    "facts.get": lambda mem: mem.facts.get("user", "city"),
    "facts.list": lambda mem: mem.facts.list("user"),
    "notes.get": lambda mem: mem.notes.get(_note_id(mem)),
    "notes.list": lambda mem: mem.notes.list(),
    "skills.get": lambda mem: mem.skills.get("brew-tea"),
    "search.notes": lambda mem: mem.search.notes("cats"),
    "search.messages": lambda mem: mem.search.messages("Lisbon"),
    "timeline.messages": lambda mem: mem.timeline.messages("s1"),
    "retriever.retrieve": lambda mem: mem.retriever.retrieve("Lisbon"),
    "prefix.build": lambda mem: mem.prefix.build(),
    "recall_trigger.recall": lambda mem: mem.recall_trigger.recall("remember Lisbon?"),
    "access.count_for": lambda mem: mem.access.count_for("fact", "x"),
}

WRITES: dict[str, Callable[[Memory], object]] = {
    "facts.store": lambda mem: mem.facts.store("user", "new", "value"),
    "facts.forget": lambda mem: mem.facts.forget(mem.facts.list("user")[0].id),
    "notes.add": lambda mem: mem.notes.add("another note"),
    "notes.forget": lambda mem: mem.notes.forget(_note_id(mem)),
    "timeline.append": lambda mem: mem.timeline.append("hello", session_id="s1"),
    "timeline.start_session": lambda mem: mem.timeline.start_session(),
    "access.record": lambda mem: mem.access.record("fact", "x"),
}


def _fill(path: Path) -> None:
    with Store.open(path, clock=_clock) as store, store.begin() as mem:
        mem.facts.store("user", "city", "Lisbon")
        note = mem.notes.add("the user has two cats")
        mem.notes.get(note.id)  # last accessed NOW, as a writable Store's get would say
        mem.timeline.start_session("s1")
        mem.timeline.append("I moved to Lisbon last year", session_id="s1")
        mem.skills.create("brew-tea", "Brew tea", "tea", "boil water, steep three minutes")
    with Store.open(path, clock=_clock) as store:  # closed: no shared Store keeps the file
        seeded = tools.call(
            "schedule_reminder", {**CALLS["schedule_reminder"], "name": "seeded"}, db=store
        )
    assert seeded.ok, seeded


@pytest.fixture
def files(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(a read-only database file, a writable copy of it)."""
    path = tmp_path / "ro" / "memory.sqlite"
    path.parent.mkdir()
    _fill(path)
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(path, copy)
    path.chmod(0o444)
    yield path, copy
    path.chmod(0o600)


def _files(path: Path) -> dict[str, tuple[bytes, int]]:
    """The database and its -wal and -shm: their bytes and modification times."""
    found = (Path(f"{path}{suffix}") for suffix in ("", "-wal", "-shm"))
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in found if p.exists()}


@pytest.mark.parametrize("read", READS, ids=str)
def test_a_read_only_store_reads_what_a_writable_one_does(
    files: tuple[Path, Path], read: str
) -> None:
    path, copy = files
    with Store.open(copy, clock=_clock) as store, store.begin() as mem:
        expected = READS[read](mem)
    before = _files(path)["memory.sqlite"]
    with file_permissions_apply():
        with pytest.raises(DatabaseReadOnlyError):
            Store.open(path)
        with Store.open(path, read_only=True, clock=_clock) as store:
            assert store.read_only
            with store.begin() as mem:  # write=True too: a read-only Store only reads
                got = READS[read](mem)
    assert got == expected
    assert _files(path)["memory.sqlite"] == before


def test_its_connections_serve_any_thread_and_close_from_any(
    files: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    """Reads in worker threads, the Store closed in the main one (as the MCP server does):
    the pool closes their connections with no error. They were bound to the thread that made
    them: closing one logged ``Exception closing connection`` with a traceback."""
    path, _ = files
    with Store.open(path, read_only=True) as store, ThreadPoolExecutor(4) as pool:
        cities = list(
            pool.map(lambda _: store.run(lambda mem: mem.facts.get("user", "city")), range(8))
        )
    assert all(city is not None for city in cities)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.parametrize("write", WRITES, ids=str)
@pytest.mark.parametrize("begin_write", [True, False], ids=["write", "deferred"])
def test_every_write_is_refused_as_read_only_and_changes_no_file(
    files: tuple[Path, Path], write: str, begin_write: bool
) -> None:
    path, _ = files
    with file_permissions_apply(), Store.open(path, read_only=True) as store:
        with store.begin() as mem:  # a read first: what SQLite keeps beside it, if any
            mem.facts.list("user")
        before = _files(path)
        with (
            pytest.raises(DatabaseReadOnlyError, match="opened read-only"),
            store.begin(write=begin_write) as mem,
        ):
            WRITES[write](mem)
        assert _files(path) == before
        with store.begin() as mem:
            assert [f.key for f in mem.facts.list("user")] == ["city"]
    assert _files(path) == before


def _caught(write: Callable[[Memory], object], then_read: bool) -> Callable[[Memory], None]:
    """``write`` with its refusal caught by the host, and the block going on (a read)."""

    def work(mem: Memory) -> None:
        with pytest.raises(DatabaseReadOnlyError):
            write(mem)
        if then_read:
            mem.facts.list("user")

    return work


@pytest.mark.parametrize("write", [*WRITES, "orm flush"], ids=str)
@pytest.mark.parametrize("then_read", [False, True], ids=["ends", "reads-then-ends"])
def test_a_refused_write_caught_in_the_block_ends_it_typed(
    files: tuple[Path, Path], write: str, then_read: bool
) -> None:
    # A refused ORM flush rolls the transaction back: the block that caught the refusal and
    # ended normally (or read on) raised SQLAlchemy's untyped PendingRollbackError, sync and
    # async alike. Now it is DatabaseReadOnlyError again; a refused write that rolled nothing
    # back (a lean one) leaves the block to end normally, having written nothing.
    path, _ = files
    work = _caught(_flushed_note if write == "orm flush" else WRITES[write], then_read)

    async def main() -> None:
        astore = await AsyncStore.open(path, read_only=True)
        try:
            await astore.run(work)
        finally:
            await astore.close()

    def sync() -> None:
        with Store.open(path, read_only=True) as store, store.begin() as mem:
            work(mem)

    before = _files(path)["memory.sqlite"]
    for run in (sync, lambda: asyncio.run(main())):
        try:
            with file_permissions_apply():
                run()
        except DatabaseReadOnlyError as err:
            assert err.message.startswith(f"cannot write to '{path}': the Store was opened")
            assert "nothing of it was written" in err.message
        else:
            assert write not in ("orm flush", "facts.store"), "a rolled-back flush must say so"
        assert _files(path)["memory.sqlite"] == before


def _pending_note(mem: Memory) -> None:
    mem.session.add(Note(id="pending", content="flushed at commit", created_at=NOW))


def _flushed_note(mem: Memory) -> None:
    _pending_note(mem)
    mem.session.flush()


LOW_WRITES: dict[str, Callable[[Memory], object]] = {
    "orm flush at commit": _pending_note,
    "orm flush": _flushed_note,
    "core statement": lambda mem: mem.session.execute(text("DELETE FROM memory_notes")),
    "lean insert (Raw)": lambda mem: mem.timeline.append("hello", session_id="s1"),
    "lean statement (Raw)": lambda mem: mem.raw().run("DELETE FROM memory_notes"),
    "DB-API execute": lambda mem: mem.raw().connection.execute("DELETE FROM memory_notes"),
    "DB-API executemany": lambda mem: mem.raw().connection.executemany(
        "DELETE FROM memory_notes WHERE id = ?", [("a",), ("b",)]
    ),
    "DB-API cursor": lambda mem: mem.raw().connection.cursor().execute("DELETE FROM memory_facts"),
    "DB-API executescript": lambda mem: mem.raw().connection.executescript(
        "DELETE FROM memory_notes;"
    ),
    "DB-API cursor executescript": lambda mem: (
        mem.raw().connection.cursor().executescript("DELETE FROM memory_notes;")
    ),
}
"""A write by every path there is to SQLite: the ORM (a flush, and one at commit), Core, the
lean writes of ``Memory.raw()``, and a host's own statements on its DB-API connection."""


@pytest.mark.parametrize("write", LOW_WRITES, ids=str)
def test_a_write_by_any_path_is_refused_where_it_happens_with_one_message(
    files: tuple[Path, Path], write: str
) -> None:
    # Typed at the statement, whatever runs it: a lean write or a host's DB-API statement was
    # an untyped sqlite3/SQLAlchemy error inside the block (typed only as the block ended), so
    # a host catching DatabaseReadOnlyError at the call never saw it.
    path, _ = files
    inside: list[BaseException] = []
    with file_permissions_apply(), Store.open(path, read_only=True) as store:
        before = _files(path)
        with pytest.raises(DatabaseReadOnlyError) as err, store.begin() as mem:
            try:
                LOW_WRITES[write](mem)
            except BaseException as exc:
                inside.append(exc)
                raise
        assert _files(path) == before
    expected = f"cannot write to '{path}': the Store was opened read-only"
    assert err.value.message.startswith(expected), err.value.message
    assert err.value.code == "database_read_only"
    if write == "orm flush at commit":
        assert inside == []  # it ended the block, at commit
    else:
        assert inside == [err.value], inside


CALLS: dict[str, dict[str, object]] = {
    "store_fact": {"namespace": "user", "key": "k", "value": 1},
    "get_fact": {"namespace": "user", "key": "city"},
    "list_facts": {"namespace": "user"},
    "use_skill": {"name": "brew-tea"},
    "search_notes": {"query": "cats"},
    "search_skills": {"query": "tea"},
    "recall_sessions": {"query": "Lisbon"},
    "create_calendar_event": {
        "title": "Dentist",
        "starts_at": "2031-06-01T09:00:00",
        "ends_at": "2031-06-01T10:00:00",
        "timezone": "Europe/Berlin",
    },
    "list_upcoming": {"window_days": 7},
    "schedule_reminder": {
        "name": "water",
        "message": "water the plants",
        "cron": "*/30 2 * * *",
        "timezone": "Europe/Berlin",
    },
    "cancel_schedule": {"name": "seeded"},
}
"""Good arguments of every model tool (each succeeds on a writable copy)."""


def test_every_tool_is_called_here() -> None:
    assert set(CALLS) == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY), ids=str)
def test_a_reading_tool_works_and_a_writing_one_is_refused(
    files: tuple[Path, Path], name: str
) -> None:
    path, copy = files
    with Store.open(copy, clock=_clock) as store:  # one time for both: texts compared
        writable = tools.call(name, CALLS[name], db=store)
    assert writable.ok, writable
    before = _files(path)["memory.sqlite"]
    with file_permissions_apply(), Store.open(path, read_only=True, clock=_clock) as store:
        called = tools.call(name, CALLS[name], db=store)
    if REGISTRY[name].writes:
        assert called.error_code == "database_read_only", called
        assert "opened read-only" in (called.error or ""), called
    else:
        assert called.ok, called
        assert called.text == writable.text
    assert _files(path)["memory.sqlite"] == before


@pytest.mark.parametrize(
    "args",
    [
        ["facts", "list"],
        ["facts", "get", "user", "city"],
        ["notes", "list"],
        ["skills", "list"],
        ["skills", "show", "brew-tea"],
        ["notes", "search", "cats"],
        ["timeline", "--session", "s1"],
        ["search", "Lisbon"],
        ["prefix"],
        ["recall", "remember Lisbon?"],
        ["calendar", "list"],
    ],
    ids=" ".join,
)
def test_the_reading_commands_read_a_read_only_file(
    files: tuple[Path, Path], args: list[str]
) -> None:
    path, _ = files
    before = _files(path)["memory.sqlite"]
    with file_permissions_apply():
        result = runner.invoke(app, [*args, "--db", str(path)])
    assert result.exit_code == 0, result.output
    assert _files(path)["memory.sqlite"] == before


@pytest.mark.parametrize("fixture", ["empty", "v31", "v2"], ids=str)
def test_a_database_not_at_head_is_refused_naming_the_upgrade(
    tmp_path: Path, copy_fixture: Callable[[str], Path], fixture: str
) -> None:
    if fixture == "empty":
        path = tmp_path / "empty.sqlite"
        path.touch()
    else:
        path = copy_fixture(fixture)
    path.chmod(0o444)
    listing = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with file_permissions_apply(), pytest.raises(SchemaOutOfDateError, match="philont db upgrade"):
        Store.open(path, read_only=True)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == listing


def test_it_reads_what_a_writer_commits_meanwhile(files: tuple[Path, Path]) -> None:
    path, _ = files
    path.chmod(0o644)
    with Store.open(path, read_only=True) as reader, Store.open(path) as writer:
        with reader.begin() as mem:
            assert mem.facts.get("user", "later") is None
        with writer.begin() as mem:
            mem.facts.store("user", "later", "committed")
        with reader.begin() as mem:
            fact = mem.facts.get("user", "later")
        assert fact is not None and fact.value == "committed"


def test_a_missing_file_is_refused_never_created(tmp_path: Path) -> None:
    with pytest.raises(DatabasePathError, match="no such file"):
        Store.open(tmp_path / "missing.sqlite", read_only=True)
    assert os.listdir(tmp_path) == []


# --- what a read-only open leaves beside the file ---------------------------------------------


def _companions(path: Path) -> dict[str, int]:
    """The modes of the -wal and -shm beside ``path``."""
    found = {suffix: Path(f"{path}{suffix}") for suffix in ("-wal", "-shm")}
    return {suffix: p.stat().st_mode & 0o777 for suffix, p in found.items() if p.exists()}


def _write_through(how: str, path: Path) -> None:
    if how == "Store.open":
        with Store.open(path) as store, store.begin() as mem:
            mem.facts.store("user", "city", "Porto")
    elif how == "AsyncStore.open":

        async def main() -> None:
            astore = await AsyncStore.open(path)
            try:
                await astore.run(lambda mem: mem.facts.store("user", "city", "Porto"))
            finally:
                await astore.close()

        asyncio.run(main())
    else:
        result = tools.call(
            "store_fact", {"namespace": "user", "key": "city", "value": "Porto"}, db=path
        )
        store_module.close_shared()
        if not result.ok:
            raise DatabaseReadOnlyError(str(path), result.error or "")


ReadOnlyLeft = pytest.mark.parametrize("left", [("-wal",), ("-shm",), ("-wal", "-shm")], ids=str)


@ReadOnlyLeft
@pytest.mark.parametrize("how", ["Store.open", "AsyncStore.open", "tools.call"])
def test_a_file_made_writable_again_after_a_read_only_open_is_written(
    files: tuple[Path, Path], how: str, left: tuple[str, ...]
) -> None:
    # chmod 444, a read-only Store reads, chmod 644, a writable Store writes: SQLite had made
    # the -wal and -shm beside the file with the file's mode (read-only), and a read-only
    # connection cannot remove them; each new connection then opened them read-only and every
    # write was refused ("SQLite refused the write") though the file was writable, until some
    # connection removed them. Opening a writable Store gives ours the file's mode again.
    path, _ = files
    with file_permissions_apply():
        with Store.open(path, read_only=True) as store, store.begin() as mem:
            assert mem.facts.get("user", "city") is not None
        assert _companions(path) == {"-wal": 0o444, "-shm": 0o444}  # what SQLite leaves
        path.chmod(0o644)
        for suffix in {"-wal", "-shm"} - set(left):
            Path(f"{path}{suffix}").chmod(0o644)
        _write_through(how, path)
        with Store.open(path) as store, store.begin(write=False) as mem:
            city = mem.facts.get("user", "city")
    assert city is not None and city.value == "Porto"
    assert set(_companions(path).values()) <= {0o644}


@ReadOnlyLeft
def test_a_read_only_shm_of_another_user_is_refused_naming_it_and_the_fix(
    files: tuple[Path, Path], left: tuple[str, ...]
) -> None:
    # Not ours to change: a -shm is refused at once, naming it and what to do, where every
    # write was refused as "SQLite refused the write" of a file that is writable. A -wal is
    # SQLite's to replace (it fails the first connection only, whose close removes it).
    if os.geteuid() != 0:
        pytest.skip("making a file another user's takes root")
    path, _ = files
    with Store.open(path, read_only=True) as store, store.begin() as mem:
        mem.facts.get("user", "city")
    path.chmod(0o644)
    for suffix in ("-wal", "-shm"):
        companion = Path(f"{path}{suffix}")
        if suffix in left:
            os.chown(companion, 65534, 65534)
        else:
            companion.chmod(0o644)
    shm = Path(f"{path}-shm")
    before = _files(path)
    with file_permissions_apply():
        if "-shm" not in left:
            _write_through("Store.open", path)
            return
        with pytest.raises(DatabaseReadOnlyError) as refused:
            Store.open(path)
    assert f"the -shm file beside it ({shm}) is read-only" in refused.value.message
    assert "remove it while no program has the database open" in refused.value.message
    assert _files(path) == before and shm.stat().st_uid == 65534


@pytest.mark.parametrize("suffix", ["-wal", "-shm"])
@pytest.mark.parametrize("owner", ["ours", "another user's"])
def test_an_unreadable_companion_is_refused_by_name_and_left_as_it_is(
    files: tuple[Path, Path], suffix: str, owner: str
) -> None:
    """A -wal or -shm of mode 000 beside the file (ours or another user's) is refused by a
    read-only Store naming it and the fix, as a writable one refuses another user's; it said
    "SQLite cannot open it or the files beside it (unable to open database file)"."""
    if owner != "ours" and os.geteuid() != 0:
        pytest.skip("making a file another user's takes root")
    path, _ = files
    for each in ("-wal", "-shm"):
        Path(f"{path}{each}").write_bytes(b"")
    companion = Path(f"{path}{suffix}")
    companion.chmod(0)
    if owner != "ours":
        os.chown(companion, 65534, 65534)
    before = path.read_bytes(), companion.stat()
    try:
        with file_permissions_apply(), pytest.raises(DatabasePathError) as refused:
            Store.open(path, read_only=True)
        assert (
            f"the {suffix} file beside it ({companion}) is "
            f"{'this' if owner == 'ours' else 'another'} user's, mode 0o0, which this process "
            "may not read: make it readable and writable by this user"
        ) in refused.value.message
        assert "remove it" in refused.value.message
        after = companion.stat()  # left as it was: a read-only open changes no file
        assert path.read_bytes() == before[0]
        assert (after.st_mode, after.st_uid, after.st_mtime_ns) == (
            before[1].st_mode,
            before[1].st_uid,
            before[1].st_mtime_ns,
        )
    finally:
        os.chown(companion, os.geteuid(), os.getegid())
        companion.chmod(0o600)


def test_postgresql_is_refused_by_name() -> None:
    with pytest.raises(InvalidDatabaseError, match="SQLite files only"):
        Store.open("postgresql+psycopg://nobody@127.0.0.1:1/none", read_only=True)


# --- every service method: a read answers as on a writable Store, a write is refused ---------

REFRESHED_TABLE = "memory_access_log"
REFRESHED_COLUMN = "last_accessed_at"
"""What a read refreshes on a writable Store (:meth:`AccessLog.refresh`): nothing else."""
LOGS_ACCESS = {"AccessLog.record"}
"""Writes what a read refreshes, as their purpose: a host's own access-log row is refused."""


def _content(mem: Memory) -> list[tuple[str, list[str]]]:
    """Every row of every table, but what a read refreshes."""
    return [
        (
            table.name,
            sorted(
                repr(tuple(row))
                for row in mem.session.execute(
                    select(*(c for c in table.c if c.name != REFRESHED_COLUMN))
                )
            ),
        )
        for table in metadata.sorted_tables
        if table.name != REFRESHED_TABLE
    ]


class _Undo(Exception):
    """Ends a writable unit of work whose call was answered: every call starts alike."""


@dataclass
class _Answer:
    value: object = None
    error: PhilontError | None = None
    wrote: bool = False


def _call(mem: Memory, case: str, kwargs: dict[str, object]) -> object:
    cls, fn = service_calls.METHODS[case]
    return getattr(service_calls.ACCESS[cls](mem), fn.__name__)(**kwargs)


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database with the rows the good arguments of every service method name."""
    path = tmp_path_factory.mktemp("seeded") / "memory.sqlite"
    with Store.open(path, clock=lambda: service_calls.NOW) as store:
        with store.begin() as mem:
            service_calls.seed(mem)
            mem.notes.get("n1")  # access times as the NOW every read sets them to
        service_calls.seeds(store)
    return path


def _database(path: Path) -> dict[str, tuple[bytes, int]]:
    """The database file and its -wal: bytes and modification times (readers of a WAL-mode
    file write their marks into -shm)."""
    found = (Path(f"{path}{suffix}") for suffix in ("", "-wal"))
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in found if p.exists()}


@pytest.mark.parametrize("case", sorted(service_calls.METHODS))
def test_every_service_method_reads_as_on_a_writable_store_or_is_refused(
    seeded: Path, tmp_path: Path, case: str
) -> None:
    # What a method does on a writable copy decides what it must do on the read-only file: a
    # call that changed nothing but what a read refreshes (access times, access-log rows) is
    # a read, and answers alike (a read path that refreshed on its own was refused there);
    # one that changed anything else is refused as read-only. The file is never changed.
    copy, path = tmp_path / "copy.sqlite", tmp_path / "ro.sqlite"
    shutil.copyfile(seeded, copy)
    shutil.copyfile(seeded, path)
    path.chmod(0o444)
    clock = lambda: service_calls.NOW  # noqa: E731
    with Store.open(copy, clock=clock) as store:
        kwargs = service_calls.good_call(case, service_calls.seeds(store))
        expected = _Answer()
        try:
            with store.begin() as mem:
                before = _content(mem)
                try:
                    expected.value = _call(mem, case, kwargs)
                except PhilontError as exc:
                    expected.error = exc
                expected.wrote = case in LOGS_ACCESS or _content(mem) != before
                raise _Undo
        except _Undo:
            pass
    with file_permissions_apply(), Store.open(path, read_only=True, clock=clock) as store:
        with store.begin() as mem:  # what SQLite keeps beside a WAL-mode file, if anything
            mem.facts.list("user")
        files = _database(path)
        got = _Answer()
        try:
            with store.begin() as mem:
                got.value = _call(mem, case, kwargs)
        except PhilontError as exc:
            got.error = exc
    if expected.wrote:
        assert isinstance(got.error, DatabaseReadOnlyError), (expected, got)
        assert "opened read-only" in got.error.message
    elif expected.error is not None:
        assert type(got.error) is type(expected.error), (expected, got)
    else:
        assert got.error is None, got
        assert got.value == expected.value
    assert _database(path) == files


# --- export only reads ------------------------------------------------------------------------


MODES = pytest.mark.parametrize("mode", [0o644, 0o444], ids=["writable", "read-only"])
"""A file this process may write, and one it may not."""


def _with_mode(path: Path, mode: int) -> tuple[bytes, int]:
    """Give ``path`` the permission bits ``mode`` and read it once (SQLite makes the -wal and
    -shm of a WAL-mode file beside it, if it can); its bytes and modification time then."""
    path.chmod(mode)
    with Store.open(path, read_only=True) as store, store.begin() as mem:
        mem.facts.list("user")
    return _files(path)["memory.sqlite"]


@MODES
def test_export_reads_a_file_it_may_not_write_and_changes_no_byte(
    files: tuple[Path, Path], tmp_path: Path, mode: int
) -> None:
    # An export only reads: it refused a file this process may not write (it opened a writing
    # connection, which also switched a file's journal mode to WAL).
    path, copy = files
    before = _with_mode(path, mode)
    out = tmp_path / "export.jsonl"
    with file_permissions_apply():
        result = runner.invoke(app, ["export", str(out), "--db", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert _files(path)["memory.sqlite"] == before
    expected = tmp_path / "expected.jsonl"
    assert runner.invoke(app, ["export", str(expected), "--db", str(copy)]).exit_code == 0
    lines, wanted = out.read_text().splitlines(), expected.read_text().splitlines()
    assert lines[1:] == wanted[1:]  # the header differs only in exported_at
    assert len(lines) > 5


# --- the other ways in: shared(), Memory.open, tools.call(db=path) ----------------------------

PG_URL = "postgresql+psycopg://nobody@127.0.0.1:1/none"

OPENINGS: dict[str, Callable[[Path | str], object]] = {
    "shared": lambda db: store_module.shared(db, read_only=True).run(
        lambda mem: mem.facts.get("user", "city"), write=False
    ),
    "Memory.open": lambda db: _read_in(Memory.open(db, read_only=True)),
    "tools.call": lambda db: _ok(tools.call("get_fact", CALLS["get_fact"], db=db, read_only=True)),
}
"""A read through each way in that takes ``read_only``."""


def _read_in(unit: Memory) -> object:
    with unit as mem:
        return mem.facts.get("user", "city")


def _ok(result: tools.ToolResult) -> object:
    if not result.ok:
        raise AssertionError(result)
    return result.text


@pytest.fixture
def no_shared() -> Iterator[None]:
    store_module.close_shared()
    yield
    store_module.close_shared()


@MODES
@pytest.mark.parametrize("way", OPENINGS, ids=str)
def test_each_way_in_reads_read_only_and_changes_no_byte(
    files: tuple[Path, Path], no_shared: None, way: str, mode: int
) -> None:
    path, _ = files
    before = _with_mode(path, mode)
    with file_permissions_apply():
        got = OPENINGS[way](path)
        assert got == OPENINGS[way](str(path))  # the same Store again, by its name as text
        store_module.close_shared()
    assert got is not None
    assert _files(path)["memory.sqlite"] == before


def test_a_read_only_shared_store_is_its_own_and_refuses_writes(
    files: tuple[Path, Path], no_shared: None
) -> None:
    path, _ = files
    path.chmod(0o644)
    reader = store_module.shared(path, read_only=True)
    writer = store_module.shared(path)
    assert reader.read_only and not writer.read_only
    assert store_module.shared(path, read_only=True) is reader
    before = _files(path)["memory.sqlite"]
    with (
        pytest.raises(DatabaseReadOnlyError, match="opened read-only"),
        Memory.open(path, read_only=True) as mem,
    ):
        mem.notes.add("refused")
    refused = tools.call("store_fact", CALLS["store_fact"], db=path, read_only=True)
    assert refused.error_code == "database_read_only", refused
    assert _files(path)["memory.sqlite"] == before
    written = tools.call("store_fact", CALLS["store_fact"], db=path)
    assert written.ok, written


def test_read_only_with_a_writable_store_given_is_refused(files: tuple[Path, Path]) -> None:
    _, copy = files
    with Store.open(copy) as store:
        called = tools.call("get_fact", CALLS["get_fact"], db=store, read_only=True)
        assert called.error_code == "invalid_database", called
        with store.begin() as mem:
            joined = tools.call("get_fact", CALLS["get_fact"], db=mem, read_only=True)
        assert joined.error_code == "invalid_database", joined
    with Store.open(copy, read_only=True) as store:
        assert tools.call("get_fact", CALLS["get_fact"], db=store, read_only=True).ok


@pytest.mark.usefixtures("no_shared")
def test_postgresql_is_refused_by_every_way_in() -> None:
    for opening in (
        lambda: store_module.shared(PG_URL, read_only=True),
        lambda: Memory.open(PG_URL, read_only=True),
    ):
        with pytest.raises(InvalidDatabaseError, match="SQLite files only"):
            opening()
    called = tools.call("get_fact", CALLS["get_fact"], db=PG_URL, read_only=True)
    assert called.error_code == "invalid_database", called
    assert "SQLite files only" in (called.error or "")


# --- AsyncStore.open(read_only=True) ----------------------------------------------------------


@MODES
def test_an_async_store_opens_read_only(files: tuple[Path, Path], mode: int) -> None:
    path, _ = files
    before = _with_mode(path, mode)

    async def main() -> tuple[object, object, tools.ToolResult, tools.ToolResult]:
        store = await AsyncStore.open(path, read_only=True)
        try:
            fact = await store.run(lambda mem: mem.facts.get("user", "city"))
            with pytest.raises(DatabaseReadOnlyError, match="opened read-only") as refused:
                await store.run(lambda mem: mem.timeline.append("hello", session_id="s1"))
            read = await store.call("get_fact", CALLS["get_fact"])
            write = await store.call("store_fact", CALLS["store_fact"])
            return fact, refused.value, read, write
        finally:
            await store.close()

    with file_permissions_apply():
        fact, refused, read, write = asyncio.run(main())
    assert getattr(fact, "value", None) == "Lisbon"
    assert refused.message.startswith(f"cannot write to '{path}': the Store was opened")
    assert read.ok, read
    assert write.error_code == "database_read_only", write
    assert _files(path)["memory.sqlite"] == before


def test_an_async_store_refuses_postgresql_and_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidDatabaseError, match="SQLite files only"):
        asyncio.run(AsyncStore.open(PG_URL, read_only=True))
    with pytest.raises(DatabasePathError, match="no such file"):
        asyncio.run(AsyncStore.open(tmp_path / "missing.sqlite", read_only=True))
    assert os.listdir(tmp_path) == []
