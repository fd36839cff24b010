"""The Store: built once, units of work with every service, refused reuse, threads, tool targets."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from sqlalchemy import Connection, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from philont import tools
from philont.db.models import Note
from philont.errors import (
    DatabaseGoneError,
    InvalidInputError,
    StoreClosedError,
    UnitOfWorkError,
)
from philont.memory import Memory
from philont.services.access import AccessLog
from philont.services.actions import ActionLog
from philont.services.calendar import CalendarService
from philont.services.facts import FactService
from philont.services.notes import NoteService
from philont.services.prefix import MemoryPrefix
from philont.services.recall import RecallTrigger
from philont.services.reflector import ReflectorService
from philont.services.retriever import TimelineRetriever
from philont.services.schedules import ScheduleService
from philont.services.search import SearchService
from philont.services.skills import SkillService
from philont.services.timeline import TimelineService
from philont.store import Store, close_shared, shared
from tests.support import write_lock_is_free

BOTH_BACKENDS = True


@pytest.fixture
def target(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Path | URL:
    if backend == "postgres":  # this run's layout; a fresh agent is the default ($PHILONT_AGENT)
        request.getfixturevalue("pg_test_agent")
        url: URL = request.getfixturevalue("pg_layout").url
        return url
    return tmp_path / "memory.sqlite"


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    with Store.open(target) as s:
        yield s


# --- every service hangs off the unit of work -----------------------------------------------

SERVICES: list[tuple[str, type[Any], str]] = [
    # (attribute, class, a call that touches the database)
    ("facts", FactService, "mem.facts.list(None)"),
    ("notes", NoteService, "mem.notes.list()"),
    ("timeline", TimelineService, "mem.timeline.count()"),
    ("actions", ActionLog, "mem.actions.query()"),
    ("skills", SkillService, "mem.skills.list()"),
    ("reflector", ReflectorService, "mem.reflector.run()"),
    ("search", SearchService, "mem.search.messages('Berlin')"),
    ("retriever", TimelineRetriever, "mem.retriever.retrieve('Berlin')"),
    ("prefix", MemoryPrefix, "mem.prefix.build()"),
    ("recall_trigger", RecallTrigger, "mem.recall_trigger.recall('remember when we talked')"),
    ("calendar", CalendarService, "mem.calendar.count()"),
    ("schedules", ScheduleService, "mem.schedules.list()"),
    ("access", AccessLog, "mem.access.count_for('fact', 'x')"),
]


@pytest.mark.parametrize(("attribute", "cls", "call"), SERVICES, ids=[s[0] for s in SERVICES])
def test_every_service_is_an_attribute_of_a_unit_of_work(
    store: Store, attribute: str, cls: type[Any], call: str
) -> None:
    with store.begin() as mem:
        service = getattr(mem, attribute)
        assert isinstance(service, cls)
        assert getattr(mem, attribute) is service  # one per unit of work
        eval(call, {"mem": mem})  # it works inside the transaction
    with pytest.raises(UnitOfWorkError, match="has ended"):
        eval(call, {"mem": mem})


def test_services_of_one_unit_of_work_share_its_transaction(store: Store) -> None:
    with store.begin() as mem:
        mem.facts.store("user.home", "city", "Berlin")
        assert mem.prefix.build().text.count("user.home.city") == 1
        mem.timeline.append("We moved to Berlin last spring.")
        assert [h.content for h in mem.search.messages("Berlin")] == [
            "We moved to Berlin last spring."
        ]


# --- a unit of work is used once -------------------------------------------------------------


def test_an_ended_unit_of_work_refuses_to_be_entered_again(store: Store) -> None:
    mem = store.begin()
    with mem:
        mem.facts.store("user", "name", "Lena")
    with pytest.raises(UnitOfWorkError, match="already used"), mem:
        pass  # pragma: no cover - never entered
    with store.begin() as again:
        assert again.facts.get("user", "name") is not None


def test_a_unit_of_work_not_yet_begun_refuses_its_services(store: Store) -> None:
    mem = store.begin()
    with pytest.raises(UnitOfWorkError, match="has not begun"):
        mem.facts.get("user", "name")
    with pytest.raises(UnitOfWorkError, match="has not begun"):
        _ = mem.session


_WRITER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
conn.execute("INSERT INTO memory_notes (id, content, importance, created_at)"
             " VALUES ('from-another-process', 'x', 0.5, 0)")
conn.execute("COMMIT")
print("wrote")
"""


@pytest.mark.parametrize("misuse", ["enter again", "service after the end", "session after"])
def test_misusing_an_ended_unit_of_work_leaves_no_lock(tmp_path: Path, misuse: str) -> None:
    path = tmp_path / "memory.sqlite"
    store = Store.open(path)
    mem = store.begin()
    with mem:
        facts = mem.facts
        facts.store("user", "name", "Lena")
    with pytest.raises(UnitOfWorkError):
        if misuse == "enter again":
            mem.__enter__()
        elif misuse == "service after the end":
            facts.get("user", "name")
        else:
            mem.session.execute(text("SELECT 1"))
    # Another process writes at once (no busy wait): nothing holds the write lock.
    done = subprocess.run(
        [sys.executable, "-c", _WRITER, str(path)], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "wrote"
    store.close()


def test_a_closed_store_begins_nothing(target: Path | URL) -> None:
    store = Store.open(target)
    store.close()
    store.close()  # twice is harmless
    with pytest.raises(StoreClosedError):
        store.begin()


def test_a_view_of_a_closed_store_begins_nothing(target: Path | URL) -> None:
    # A view (store.for_agent, shared(url, agent=...)) served on after its Store's close()
    # released the engine, opening connections that nobody would release.
    store = Store.open(target)
    view = store.for_agent(store._agent(None) or "alice")
    with view.begin() as mem:
        mem.notes.add("before the close")
    store.close()
    assert view.closed and "closed" in repr(view)
    with pytest.raises(StoreClosedError):
        view.begin()
    result = tools.call("store_fact", {"namespace": "u", "key": "k", "value": 1}, db=view)
    assert result.error_code == "store_closed"
    assert store.engine.pool.checkedin() == 0


@pytest.mark.parametrize("change", ["deleted", "replaced"])
def test_a_store_whose_file_went_away_writes_nothing_to_the_old_one(
    tmp_path: Path, change: str
) -> None:
    # Its pooled connections held the old file open: every write "succeeded" into a file
    # nothing reads any more (and a new connection made an empty database at the path).
    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store:
        assert tools.call("store_fact", {"namespace": "u", "key": "k", "value": 1}, db=store).ok
        if change == "replaced":
            Store.open(tmp_path / "other.sqlite").close()
        for leftover in tmp_path.glob("memory.sqlite*"):
            leftover.unlink()
        if change == "replaced":
            os.replace(tmp_path / "other.sqlite", path)
        before = sorted((p.name, p.stat().st_size) for p in tmp_path.rglob("*"))
        with pytest.raises(DatabaseGoneError, match=f"was {change}"), store.begin():
            pass
        result = tools.call("store_fact", {"namespace": "u", "key": "k", "value": 2}, db=store)
        assert result.error_code == "database_gone"
        assert sorted((p.name, p.stat().st_size) for p in tmp_path.rglob("*")) == before


def test_rollback_undoes_the_unit_of_work_so_far_and_goes_on(store: Store) -> None:
    with store.begin() as mem:
        mem.notes.add("to be undone")
        mem.rollback()
        mem.notes.add("kept")
    with store.begin() as mem:
        assert [n.content for n in mem.notes.list()] == ["kept"]


# --- joining the caller's transaction --------------------------------------------------------


def test_a_joined_unit_of_work_lives_and_dies_with_the_callers_transaction(store: Store) -> None:
    with Session(store.engine) as session:
        session.begin()
        with store.join(session) as mem:
            mem.facts.store("user", "name", "Lena")
        with store.join(session) as mem:  # still the caller's open transaction
            assert mem.facts.get("user", "name") is not None
        session.rollback()
    with store.begin() as mem:
        assert mem.facts.get("user", "name") is None
    with Session(store.engine) as session, session.begin(), store.join(session) as mem:
        mem.facts.store("user", "name", "Lena")
    with store.begin() as mem:
        assert mem.facts.get("user", "name") is not None


def test_a_joined_unit_of_work_cannot_roll_the_callers_transaction_back(store: Store) -> None:
    with (
        Session(store.engine) as session,
        session.begin(),
        store.join(session) as mem,
        pytest.raises(UnitOfWorkError, match="caller"),
    ):
        mem.rollback()


# --- lean reads: named rows ----------------------------------------------------------------


class _Pair(NamedTuple):
    namespace: str
    key: str


def test_lean_reads_name_their_rows_and_refuse_a_statement_of_another_shape(
    store: Store,
) -> None:
    with store.begin() as mem:
        mem.facts.store("user", "name", "Lena")
        mem.facts.store("user", "city", "Berlin")
        raw = mem.raw()
        sql = "SELECT namespace, key{} FROM memory_facts{} ORDER BY key"
        rows = raw.named(_Pair, sql.format("", raw.where("namespace = 'user'")))
        assert rows == [("user", "city"), ("user", "name")]
        assert [type(r) for r in rows] == [_Pair, _Pair]
        assert [r.key for r in rows] == ["city", "name"]
        assert raw.named(_Pair, sql.format("", raw.where("namespace = 'none'"))) == []
        with pytest.raises(TypeError, match="_Pair has 2 fields; the statement selects 3"):
            raw.named(_Pair, sql.format(", value_json", raw.where()))


# --- one Store, many threads -----------------------------------------------------------------

THREADS = 8
ROUNDS = 15


def test_a_store_shared_by_eight_threads_loses_nothing(store: Store) -> None:
    errors: list[BaseException] = []
    with store.begin() as mem:
        mem.timeline.start_session("threads")

    def work(n: int) -> None:
        try:
            for i in range(ROUNDS):
                with store.begin() as mem:
                    mem.timeline.append(f"thread {n} message {i}", session_id="threads")
                    mem.facts.store("threads", f"t{n}", i)
                with store.begin(write=False) as mem:  # a reader: lists, never writes
                    got = {f.key: f.value for f in mem.facts.list("threads")}
                    assert got[f"t{n}"] == i
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    with store.begin(write=False) as mem:
        contents = {m.content for m in mem.timeline.messages("threads", limit=1_000)}
        assert contents == {
            f"thread {n} message {i}" for n in range(THREADS) for i in range(ROUNDS)
        }
        for n in range(THREADS):
            history = mem.facts.history("threads", f"t{n}")
            assert [h.value for h in history] == list(reversed(range(ROUNDS)))


# --- what tools.call accepts as its database -------------------------------------------------


def _call(db: Any) -> tools.ToolResult:
    return tools.call("store_fact", {"namespace": "user", "key": "city", "value": "Berlin"}, db=db)


def _stored(store: Store) -> bool:
    with store.begin(write=False) as mem:
        return mem.facts.get("user", "city", include_expired=True) is not None


def test_a_tool_call_runs_on_a_store(store: Store) -> None:
    assert _call(store).ok
    assert _stored(store)


def test_a_tool_call_joins_an_active_unit_of_work(store: Store) -> None:
    with pytest.raises(RuntimeError), store.begin() as mem:
        assert _call(mem).ok
        assert mem.facts.get("user", "city") is not None
        raise RuntimeError("the host's turn failed")
    assert not _stored(store)  # rolled back with the host's unit of work


@pytest.mark.parametrize("kind", ["str", "Path", "URL", "None ($MEMORY_DB_PATH)"])
def test_a_tool_call_runs_on_a_path_or_url_through_the_process_wide_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    path = tmp_path / "memory.sqlite"
    db: Any = {
        "str": str(path),
        "Path": path,
        "URL": URL.create("sqlite+pysqlite", database=str(path)),
        "None ($MEMORY_DB_PATH)": None,
    }[kind]
    monkeypatch.setenv("MEMORY_DB_PATH", str(path))
    try:
        assert _call(db).ok
        assert _call(db).ok
        assert shared(path) is shared(str(path))  # one Store for the path, built once
        assert _stored(shared(path))
    finally:
        close_shared()


@pytest.mark.parametrize(
    "change", ["file replaced", "symlink repointed", "working directory", "$MEMORY_DB_PATH"]
)
def test_a_call_on_a_path_follows_the_file_the_path_names_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    """The process-wide Store of a target is cached by the target as given; whatever makes the
    same words name another file sends the next call to that file."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = tmp_path / "a" / "memory.sqlite", tmp_path / "b" / "memory.sqlite"
    link = tmp_path / "link.sqlite"
    db: Any = {
        "file replaced": str(first),
        "symlink repointed": str(link),
        "working directory": "memory.sqlite",
        "$MEMORY_DB_PATH": None,
    }[change]
    link.symlink_to(first)
    monkeypatch.chdir(first.parent)
    monkeypatch.setenv("MEMORY_DB_PATH", str(first))
    try:
        assert _call(db).ok
        if change == "file replaced":
            for leftover in first.parent.glob("memory.sqlite*"):
                leftover.unlink()
            second = first
        elif change == "symlink repointed":
            link.unlink()
            link.symlink_to(second)
        elif change == "working directory":
            monkeypatch.chdir(second.parent)
        else:
            monkeypatch.setenv("MEMORY_DB_PATH", str(second))
        assert _call(db).ok
        with Store.open(second, upgrade=False) as now:
            assert _stored(now)
    finally:
        close_shared()


@pytest.mark.parametrize(
    "db",
    [42, 3.5, object(), b"memory.sqlite", ["memory.sqlite"], "session", "new", "ended"],
    ids=["int", "float", "object", "bytes", "list", "Session", "unit not begun", "unit ended"],
)
def test_anything_else_is_an_invalid_database_and_creates_no_file(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    before = set(os.listdir(tmp_path))
    session = None
    if db == "session":
        session = db = Session(store.engine)
    elif db == "new":
        db = store.begin()
    elif db == "ended":
        with store.begin() as db:
            pass
    result = _call(db)
    assert not result.ok
    assert result.error_code == "invalid_database"
    assert set(os.listdir(tmp_path)) == before
    if session is not None:
        session.close()
    assert not _stored(store)


def test_memory_open_uses_the_process_wide_store(tmp_path: Path) -> None:
    path = tmp_path / "memory.sqlite"
    try:
        with Memory.open(path) as mem:
            mem.notes.add("one-off script")
            assert mem.store is shared(path)
        with Memory.open(path) as mem:
            assert [n.content for n in mem.notes.list()] == ["one-off script"]
    finally:
        close_shared()


def test_a_unit_of_work_joins_a_hosts_connection_and_its_transaction(store: Store) -> None:
    with store.engine.connect() as connection:
        outer = connection.begin()
        with store.join(connection) as mem:
            mem.facts.store("user", "name", "Lena")
            assert tools.call("get_fact", {"namespace": "user", "key": "name"}, db=mem).ok
        with store.join(connection) as mem:  # the host's transaction still holds it
            assert mem.facts.get("user", "name") is not None
        with pytest.raises(RuntimeError), store.join(connection) as mem:
            mem.facts.store("user", "name", "Max")
            raise RuntimeError("only this unit of work fails")
        with store.join(connection) as mem:  # its SAVEPOINT was rolled back, the rest kept
            got = mem.facts.get("user", "name")
            assert got is not None and got.value == "Lena"
        outer.rollback()
    with store.begin() as mem:
        assert mem.facts.get("user", "name") is None


def test_a_joined_connection_in_no_transaction_is_the_hosts_to_commit_or_roll_back(
    store: Store,
) -> None:
    # SQLAlchemy's "commit as you go": a Connection begins its transaction with its first
    # statement, and the host ends it. Joined before any statement, the unit of work committed
    # on the host's connection itself, so the host's rollback kept philont's writes.
    for ending in ("rollback", "commit"):
        with store.engine.connect() as connection:
            with store.join(connection) as mem:
                mem.facts.store("user", ending, "written")
                assert tools.call("get_fact", {"namespace": "user", "key": ending}, db=mem).ok
            assert connection.in_transaction()
            getattr(connection, ending)()
    with store.begin() as mem:
        assert mem.facts.get("user", "rollback") is None
        assert mem.facts.get("user", "commit") is not None


@pytest.mark.parametrize("host", ["session", "connection"])
def test_an_exception_in_a_joined_block_undoes_that_block_and_the_host_goes_on(
    store: Store, host: str
) -> None:
    # The same on a host Session as on a host Connection (the Session kept the block's writes,
    # and a host that caught the exception and committed committed them).
    with store.engine.connect() as connection:
        outer = connection.begin()
        bind: Session | Connection = Session(bind=connection) if host == "session" else connection
        with store.join(bind) as mem:
            mem.facts.store("user", "name", "Lena")
        with pytest.raises(RuntimeError), store.join(bind) as mem:
            mem.facts.store("user", "name", "Max")
            mem.notes.add("written by the failed block")
            raise RuntimeError("only this unit of work fails")
        with store.join(bind) as mem:
            got = mem.facts.get("user", "name")
            assert got is not None and got.value == "Lena"
            assert mem.notes.count() == 0
        if isinstance(bind, Session):
            bind.commit()
        outer.commit()
    with store.begin() as mem:
        got = mem.facts.get("user", "name")
        assert got is not None and got.value == "Lena" and mem.notes.count() == 0


def test_a_deferred_unit_of_work_takes_the_write_lock_only_when_it_writes_and_commits_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "memory.sqlite"
    with Store.open(path) as store:
        with store.begin(write=False) as mem:
            mem.notes.list()
            free_while_reading = write_lock_is_free(path)
            mem.notes.add("written in a write=False unit")
            free_after_writing = write_lock_is_free(path)
        with store.begin(write=True) as mem:
            mem.notes.list()
            free_in_a_writing_unit = write_lock_is_free(path)
        with store.begin(write=False) as mem:
            kept = [n.content for n in mem.notes.list()]
    assert (free_while_reading, free_after_writing, free_in_a_writing_unit) == (True, False, False)
    assert kept == ["written in a write=False unit"]


AT_2030 = datetime(2030, 1, 1, 10, tzinfo=UTC)
NUL_WRITES: dict[str, Any] = {
    "notes.add": lambda m: m.notes.add("nul\x00inside", importance=0.5),
    "timeline.append": lambda m: m.timeline.append("nul\x00inside"),
    "skills.create": lambda m: m.skills.create("nul-skill", "does\x00things", ["do"], "1. do"),
    "calendar.create": lambda m: m.calendar.create("nul\x00title", AT_2030, timezone="UTC"),
}


@pytest.mark.postgres
@pytest.mark.parametrize("write", sorted(NUL_WRITES))
def test_a_host_engine_refuses_nul_text_as_philonts_own_does(
    pg_layout: Any, pg_agent_name: Any, write: str
) -> None:
    """PostgreSQL text cannot hold U+0000: over the host's own engine (Store.from_engine) a
    service refuses it by name, as over philont's, instead of a raw driver DataError."""
    from sqlalchemy import create_engine as host_create_engine

    from philont.errors import InvalidInputError

    agent = pg_agent_name()
    host_engine = host_create_engine(pg_layout.url)
    try:
        for store in (Store.from_engine(host_engine, agent=agent), Store.open(pg_layout.url)):
            with store:
                with pytest.raises(InvalidInputError, match="NUL"), store.begin(agent=agent) as m:
                    NUL_WRITES[write](m)
                with store.begin(agent=agent) as mem:
                    assert mem.notes.list() == [] and mem.skills.list() == []
    finally:
        host_engine.dispose()


@pytest.mark.parametrize("kind", ["Session", "Connection"])
def test_join_refuses_a_transaction_on_another_database(tmp_path: Path, kind: str) -> None:
    """A Session or Connection of another database: the services wrote into that database,
    with this Store's caches. Another engine on the same file is the same database."""
    from philont.db.engine import create_engine
    from philont.errors import InvalidDatabaseError

    mine, theirs = tmp_path / "mine.sqlite", tmp_path / "theirs.sqlite"
    with Store.open(mine) as store, Store.open(theirs):
        for path, refused in ((theirs, True), (mine, False)):
            engine = create_engine(path)  # the host's own engine
            try:
                with engine.connect() as conn, conn.begin():
                    bind: Session | Connection = Session(conn) if kind == "Session" else conn
                    if refused:
                        with pytest.raises(InvalidDatabaseError, match=r"theirs\.sqlite"):
                            store.join(bind)
                        continue
                    with store.join(bind) as mem:
                        mem.facts.store("user", "city", "Berlin")
            finally:
                engine.dispose()
        with store.begin() as mem:
            assert mem.facts.get("user", "city") is not None
    with Store.open(theirs) as other, other.begin() as mem:
        assert mem.facts.get("user", "city") is None


def _closed(store: Store, stack: ExitStack) -> Connection:
    conn = store.engine.connect()
    conn.close()
    return conn


def _invalidated(store: Store, stack: ExitStack) -> Connection:
    conn = stack.enter_context(store.engine.connect())
    conn.begin()
    conn.invalidate()
    return conn


def _failed_flush(store: Store, stack: ExitStack) -> Session:
    from philont.db.models import Meta

    session = stack.enter_context(Session(store.engine))
    session.add(Meta(key="h111", value=None))
    with pytest.raises(DBAPIError):  # NOT NULL (PostgreSQL: no agent set, first)
        session.flush()
    return session


def _aborted(store: Store, stack: ExitStack) -> Session | Connection:
    conn = stack.enter_context(store.engine.connect())
    conn.begin()
    with pytest.raises(DBAPIError):
        conn.exec_driver_sql("SELECT * FROM no_such_table")
    return conn


@pytest.mark.parametrize("host", [_closed, _invalidated, _failed_flush, _aborted])
def test_a_host_transaction_that_cannot_be_joined_is_refused_by_name(
    store: Store, host: Callable[[Store, ExitStack], Session | Connection]
) -> None:
    """A closed Connection, or a transaction that failed and was not rolled back (a failed
    flush, an invalidated connection, a PostgreSQL statement that aborted it): store.join
    raised SQLAlchemy's own error (ResourceClosedError, PendingRollbackError, InternalError),
    which a host catching philont's errors did not catch. It is refused by name, nothing
    written; SQLite goes on after a failed statement, so that one joins there."""
    with ExitStack() as stack:
        bind = host(store, stack)
        if host is _aborted and store.backend.name == "sqlite":
            with store.join(bind) as mem:
                mem.notes.add("joined")
            return
        refused_by_name = pytest.raises(InvalidInputError, match=r"^bind: .* cannot be joined")
        with refused_by_name as refused, store.join(bind) as mem:
            mem.notes.add("never written")
        assert refused.value.details["argument"] == "bind"
    with store.begin() as mem:
        assert mem.notes.count() == 0


def test_join_refuses_a_session_whose_statements_without_a_model_go_elsewhere(
    tmp_path: Path, store: Store
) -> None:
    """A Session with binds per model (a host with its own database beside the memory): the
    check asked only where philont's models go, and the services' statements without one
    (lean reads, appends, locks) ran on the Session's default bind: another database (a
    StorageError for a missing table) or none (SQLAlchemy's UnboundExecutionError). The
    connection the Session holds on the Store's database joins, in its transaction."""
    from philont.db.base import Base
    from philont.db.engine import create_engine
    from philont.errors import InvalidDatabaseError

    elsewhere = create_engine(tmp_path / "app.sqlite")
    try:
        for session, refused in (
            (Session(binds={Base: store.engine}), "no bind for statements without a model"),
            (Session(elsewhere, binds={Base: store.engine}), r"is on .*app\.sqlite"),
        ):
            with session, pytest.raises(InvalidDatabaseError, match=refused):
                store.join(session)
        for ending in ("rollback", "commit"):
            with Session(elsewhere, binds={Base: store.engine}) as session:
                held = session.connection(bind_arguments={"bind": store.engine})
                with store.join(held) as mem:
                    mem.facts.store("user", ending, "written")
                    mem.timeline.append("a message of the " + ending)
                getattr(session, ending)()
        with store.begin() as mem:
            assert mem.facts.get("user", "rollback") is None
            assert mem.facts.get("user", "commit") is not None
            assert mem.timeline.count() == 1
    finally:
        elsewhere.dispose()


@pytest.mark.parametrize("agent", ["", "Alice", "-a", "a b", "x" * 64, "a;b", 7, "a\n", "a\x00b"])
def test_a_bad_agent_name_is_refused_on_every_backend(store: Store, agent: Any) -> None:
    # "a\n" passed: the name's pattern ended in ``$``, which matches before a final newline
    # On SQLite the agent is not used, but a name PostgreSQL would refuse is refused here too
    # (it was ignored: code that worked on a file failed when moved to a server)
    # (a name that is no text is refused as such by name: ``agent: must be text ...``)
    # Refused as every argument is, by name: ``agent: 'a b' is no agent name ...`` and
    # details["argument"] (it said "agent name 'a b' must be ..." with no details)
    refused = r"^agent: (must be text|.* is no agent name: 1-63 characters)"
    for attempt in (
        lambda: Store(store.engine, agent=agent),
        lambda: store.begin(agent=agent),
        lambda: store.for_agent(agent),
    ):
        with pytest.raises(InvalidInputError, match=refused) as raised:
            attempt()
        assert raised.value.details["argument"] == "agent"


@pytest.mark.parametrize("agent", ["", "Alice", "a b", "x" * 64])
def test_the_agent_functions_refuse_a_bad_name_naming_their_argument(
    store: Store, agent: str, request: pytest.FixtureRequest
) -> None:
    """``philont.agents``' names are refused by the argument that holds them, before anything
    is asked of the database (on SQLite too, where these functions serve no agent)."""
    from philont import agents

    pg = store.backend.name == "postgresql"
    good = request.getfixturevalue("pg_agent_name")() if pg else "alice"
    calls: dict[str, Any] = {
        "name": [
            lambda: agents.create(store, agent),
            lambda: agents.require(store, agent),
            lambda: agents.delete(store, agent),
        ],
        "old": [lambda: agents.rename(store, agent, good)],
        "new": [lambda: agents.rename(store, good, agent)],
    }
    for argument, attempts in calls.items():
        for attempt in attempts:
            with pytest.raises(InvalidInputError, match=f"^{argument}: .* is no agent name"):
                attempt()
    if pg:
        assert agents.list_agents(store, prefix=good) == []
    else:  # a good name, but an SQLite file holds one agent: the store is what is refused
        with pytest.raises(InvalidInputError, match=r"^store: agents live in a PostgreSQL"):
            agents.count(store)


@pytest.mark.parametrize("ending", ["commit", "rollback"])
@pytest.mark.parametrize("kind", ["Session", "Connection"])
def test_a_host_ending_its_transaction_inside_a_joined_block_is_told_so(
    store: Store, kind: str, ending: str
) -> None:
    """The host's commit() or rollback() inside ``with store.join(...)`` ended the block's
    SAVEPOINT with it: its end raised SQLAlchemy's untyped ResourceClosedError (a Session) or
    InvalidRequestError (a Connection)."""
    with ExitStack() as stack:
        bind: Session | Connection = stack.enter_context(
            Session(store.engine) if kind == "Session" else store.engine.connect()
        )
        bind.begin()
        told = pytest.raises(UnitOfWorkError, match=f"the {kind} ended its transaction")
        with told, store.join(bind) as mem:
            mem.notes.add("before the host's end")
            getattr(bind, ending)()
    with store.begin(write=False) as mem:
        assert mem.notes.count() == (1 if ending == "commit" else 0)


def test_ctrl_c_in_a_joined_block_its_host_ended_stays_ctrl_c(store: Store) -> None:
    """The block's end after the host's: Ctrl-C (any BaseException) in the block is not
    replaced by the UnitOfWorkError saying the host ended the transaction."""
    with Session(store.engine) as bind:
        bind.begin()
        with pytest.raises(KeyboardInterrupt), store.join(bind):
            bind.commit()
            raise KeyboardInterrupt


@pytest.mark.parametrize("then", ["write", "read", "raw", "nothing"])
@pytest.mark.parametrize("ending", ["commit", "rollback", "close"])
@pytest.mark.parametrize("read_only", [False, True])
def test_a_unit_of_its_own_is_refused_once_its_block_ended_the_transaction(
    store: Store, ending: str, then: str, read_only: bool, recwarn: pytest.WarningsRecorder
) -> None:
    """``mem.session.commit()``, ``rollback()`` or ``close()`` inside ``with store.begin()``:
    every later call in the block and its end raise UnitOfWorkError, and nothing after the
    end is written. Before, they raised SQLAlchemy's untyped InvalidRequestError
    ("Autobegin is disabled")."""
    calls: dict[str, Callable[[Memory], object]] = {
        "write": lambda mem: mem.notes.add("after the end"),
        "read": lambda mem: mem.notes.count(),
        "raw": lambda mem: mem.raw(),
    }
    told = "the unit of work's transaction was ended inside its block"
    with pytest.raises(UnitOfWorkError, match=told), store.begin(write=not read_only) as mem:
        if not read_only:
            mem.notes.add("before the end")
        getattr(mem.session, ending)()
        if then in calls:
            with pytest.raises(UnitOfWorkError, match=told):
                calls[then](mem)
            calls[then](mem)  # the block goes on: still refused, and its end says so too
    assert not [w for w in recwarn if issubclass(w.category, Warning)]
    with store.begin(write=False) as mem:  # what the block's own end did, and nothing after
        assert mem.notes.count() == int(ending == "commit" and not read_only)
    with store.begin() as mem:  # the Store goes on
        mem.notes.add("next")


@pytest.mark.parametrize("then", ["write", "read", "raw", "nothing"])
@pytest.mark.parametrize("ending", ["commit", "rollback", "close"])
def test_a_unit_of_its_own_whose_ended_transaction_was_begun_again_is_refused(
    store: Store, ending: str, then: str
) -> None:
    """The block ends its transaction through a reference to the Session it kept and begins
    another (``s.commit(); s.begin()``): the unit is still ended, every later call and its
    end say so, and nothing after the end is written. Before, the unit went on in the new
    transaction: on SQLite it committed what the block wrote after its end (the unit split
    in two), on PostgreSQL (no agent served) a write failed as a generic StorageError."""
    calls: dict[str, Callable[[Memory], object]] = {
        "write": lambda mem: mem.notes.add("after the end"),
        "read": lambda mem: mem.notes.count(),
        "raw": lambda mem: mem.raw(),
    }
    told = "the unit of work's transaction was ended inside its block"
    with pytest.raises(UnitOfWorkError, match=told), store.begin() as mem:
        mem.notes.add("before the end")
        session = mem.session
        getattr(session, ending)()
        session.begin()
        if then in calls:
            with pytest.raises(UnitOfWorkError, match=told):
                calls[then](mem)
        session.add(
            Note(id="n-after", content="after", created_at=datetime(2026, 1, 1, tzinfo=UTC))
        )
    with store.begin(write=False) as mem:  # what the end did, and nothing after it
        assert mem.notes.count() == int(ending == "commit")


@pytest.mark.parametrize("again", [False, True])
@pytest.mark.parametrize("ending", ["commit", "rollback", "close"])
def test_mem_rollback_goes_on_after_the_block_ended_the_transaction(
    store: Store, ending: str, again: bool
) -> None:
    """``mem.rollback()`` after ``mem.session.rollback()`` (what SQLAlchemy's error after a
    failed flush advises), ``commit()`` or ``close()``, or after the block began another
    transaction on the Session it kept: the unit goes on in a transaction of its own, serving
    its agent, and its end commits what it wrote after."""
    with store.begin() as mem:
        mem.notes.add("before the end")
        kept = mem.session
        getattr(kept, ending)()
        if again:
            kept.begin()
            kept.execute(text("SELECT 1"))
        mem.rollback()
        mem.notes.add("after mem.rollback()")
    with store.begin(write=False) as mem:
        contents = sorted(n.content for n in mem.notes.list())
    assert contents == sorted(["after mem.rollback()"] + ["before the end"] * (ending == "commit"))


@pytest.mark.parametrize("then", ["write", "read", "raw"])
@pytest.mark.parametrize(
    "ending", ["commit", "rollback", "close", "savepoint commit", "savepoint rollback"]
)
@pytest.mark.parametrize("kind", ["Session", "Connection"])
def test_a_joined_unit_is_refused_once_its_host_ended_the_transaction(
    store: Store, kind: str, ending: str, then: str, recwarn: pytest.WarningsRecorder
) -> None:
    """After the host's commit(), rollback() or close() inside ``with store.join(...)`` (or
    its end of a SAVEPOINT of its own the block is inside), a service call in the block is
    refused as the block's end is. Before, on SQLite it wrote into the transaction the host
    began next (or straight into the host's transaction), which the host then committed
    although the block failed; on PostgreSQL a write failed as a generic StorageError (no
    agent served), and the block's end warned "nested transaction already deassociated"
    (the host's SAVEPOINT: SQLAlchemy's untyped ResourceClosedError)."""
    calls: dict[str, Callable[[Memory], object]] = {
        "write": lambda mem: mem.notes.add("after the host's end"),
        "read": lambda mem: mem.notes.count(),
        "raw": lambda mem: mem.raw(),
    }
    with ExitStack() as stack:
        bind: Session | Connection = stack.enter_context(
            Session(store.engine) if kind == "Session" else store.engine.connect()
        )
        bind.begin()
        ended: Any = bind.begin_nested() if ending.startswith("savepoint") else bind
        told = f"the {kind} ended its transaction"
        with pytest.raises(UnitOfWorkError, match=told), store.join(bind) as mem:
            with warnings.catch_warnings():  # the host's own: SQLAlchemy's "already
                warnings.simplefilter("ignore")  # deassociated", a SAVEPOINT of ours inside
                getattr(ended, ending.split()[-1])()
            with pytest.raises(UnitOfWorkError, match=told):
                calls[then](mem)
            calls[then](mem)  # the block goes on: still refused, and its end says so too
        if ending != "close":
            # nothing began in the host's name; a SAVEPOINT's end leaves its transaction
            assert bind.in_transaction() is ending.startswith("savepoint")
            bind.commit()
    assert not [w for w in recwarn if issubclass(w.category, Warning)]
    with store.begin(write=False) as mem:
        assert mem.notes.count() == 0
