"""How long philont waits on a busy SQLite file (philont.db.retry.RetryPolicy): a lock another
connection holds all along is waited for once, one busy timeout, by every way a unit of work is
retried (``Store.run``, ``tools.call``, ``AsyncStore``, the command line), and given up with
``database_busy`` naming the wait, not retried five times; a busy SQLite returns at once (a
deferred transaction that read and then writes while another connection writes) is still
retried, and succeeds."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy.exc import OperationalError
from typer.testing import CliRunner

from philont import settings, tools
from philont.aio import AsyncStore
from philont.cli import app
from philont.db.retry import RetryPolicy, mark_busy
from philont.errors import DatabaseBusyError, PhilontError
from philont.memory import Memory
from philont.store import Store
from philont.tools.dispatch import ToolResult

TIMEOUT_MS = 500
TIMEOUT_S = TIMEOUT_MS / 1000
WITHIN_S = 10 * TIMEOUT_S
"""A locked file fails after one busy timeout (and a retry begun at once): how many attempts
were made is read from the error ("gave up after 1 attempt"; retrying every busy five times
took 5 x the busy timeout and the backoffs, about 2.9 s here). A bound of 1.5 s said so by
the clock, and the command line's 0.9 s on an idle machine left it 0.6 s of a loaded one's."""

FACT = {"namespace": "user", "key": "k", "value": "v"}


@pytest.fixture
def holder(tool_db: Path) -> Iterator[sqlite3.Connection]:
    """Another connection, holding the write lock for the whole test."""
    conn = sqlite3.connect(str(tool_db), isolation_level=None, check_same_thread=False)
    conn.execute("BEGIN IMMEDIATE")
    yield conn
    conn.execute("ROLLBACK")
    conn.close()


def _messages(path: Path) -> list[str]:
    with sqlite3.connect(str(path)) as conn:
        return [r[0] for r in conn.execute("SELECT content FROM memory_raw_messages")]


def _write(mem: Memory) -> None:
    mem.timeline.append("never written")


def _read_then_write(mem: Memory) -> None:
    mem.timeline.count()  # the read snapshot starts: the write below cannot wait for the lock
    mem.timeline.append("never written")


def _store_run(path: Path, write: bool) -> Callable[[], str]:
    def call() -> str:
        with Store.open(path, busy_timeout_ms=TIMEOUT_MS) as store:
            store.run(_write if write else _read_then_write, write=write)
        return "ran"

    return call


def _tool(path: Path, name: str, arguments: dict[str, object]) -> Callable[[], str]:
    def call() -> str:
        with Store.open(path, busy_timeout_ms=TIMEOUT_MS) as store:
            result: ToolResult = tools.call(name, arguments, db=store)
        if result.ok:
            return "ran"
        assert result.error_code == "database_busy", result.text
        raise DatabaseBusyError(result.error or "")

    return call


def _async(path: Path, how: str) -> Callable[[], str]:
    async def run() -> str:
        store = await AsyncStore.open(path, busy_timeout_ms=TIMEOUT_MS)
        try:
            if how == "call":
                result = await store.call("store_fact", FACT)
                assert result.error_code == "database_busy", result.text
                raise DatabaseBusyError(result.error or "")
            await store.run(_read_then_write, write=False)
        finally:
            await store.close()
        return "ran"

    return lambda: asyncio.run(run())


def _cli(path: Path) -> Callable[[], str]:
    def call() -> str:
        result = CliRunner().invoke(app, ["facts", "list", "--db", str(path)])
        assert result.exit_code != 0, result.output
        assert "locked" in result.output, result.output
        raise DatabaseBusyError(result.output)

    return call


CALLERS: dict[str, Callable[[Path], Callable[[], str]]] = {
    "Store.run(write=True)": lambda p: _store_run(p, write=True),
    "Store.run(write=False), read then write": lambda p: _store_run(p, write=False),
    "tools.call, a tool that writes": lambda p: _tool(p, "store_fact", FACT),
    "tools.call, a tool that only reads": lambda p: _tool(p, "list_facts", {}),
    "AsyncStore.run, read then write": lambda p: _async(p, "run"),
    "AsyncStore.call": lambda p: _async(p, "call"),
    "the command line (facts list)": _cli,
}


@pytest.mark.parametrize("caller", list(CALLERS))
def test_a_file_locked_all_along_is_waited_for_one_busy_timeout_then_database_busy(
    caller: str, tool_db: Path, holder: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(settings, "BUSY_TIMEOUT_MS", TIMEOUT_MS)  # the command line's Store
    before = _messages(tool_db)
    started = time.monotonic()
    with pytest.raises(DatabaseBusyError) as raised:
        CALLERS[caller](tool_db)()
    elapsed = time.monotonic() - started
    assert TIMEOUT_S * 0.9 <= elapsed < WITHIN_S, f"{caller}: failed after {elapsed:.2f} s"
    assert "its whole busy timeout (0.5 s)" in raised.value.message
    assert "gave up after 1 attempt" in raised.value.message or (
        "gave up after 2 attempts" in raised.value.message  # a read's retry begun at once
    )
    assert _messages(tool_db) == before


def test_the_give_up_names_the_wait_in_its_details(
    tool_db: Path, holder: sqlite3.Connection
) -> None:
    with (
        Store.open(tool_db, busy_timeout_ms=TIMEOUT_MS) as store,
        pytest.raises(DatabaseBusyError) as raised,
    ):
        store.run(_write)
    details = raised.value.details
    assert details["attempts"] == 1
    assert details["busy_timeout_s"] == TIMEOUT_S
    assert TIMEOUT_S * 0.9 <= float(details["waited_s"]) < WITHIN_S
    assert isinstance(raised.value.__cause__, DatabaseBusyError)
    assert isinstance(raised.value.__cause__.__cause__, OperationalError)


def test_a_busy_returned_at_once_is_retried_and_the_retry_waits_its_turn(tool_db: Path) -> None:
    # The unit reads, then another connection takes the write lock (for 0.3 s, well within the
    # busy timeout): the unit's write is refused at once (plain SQLITE_BUSY, SQLite does not
    # wait to upgrade a read transaction), and the retry begins IMMEDIATE and waits.
    other = sqlite3.connect(str(tool_db), isolation_level=None, check_same_thread=False)
    calls = 0

    def unit(mem: Memory) -> int:
        nonlocal calls
        calls += 1
        mem.timeline.count()
        if calls == 1:
            other.execute("BEGIN IMMEDIATE")
            threading.Timer(0.3, other.execute, ("COMMIT",)).start()
        return mem.timeline.append("late writer").id

    try:
        with Store.open(tool_db, busy_timeout_ms=2_000) as store:
            assert store.run(unit, write=False) > 0
    finally:
        time.sleep(0.35)
        other.close()
    assert calls == 2
    assert _messages(tool_db).count("late writer") == 1


# --- the policy's rule, on generated failures -------------------------------------------------


def _busy(code: int, timeout_s: float | None, waited_s: float | None) -> OperationalError:
    err = sqlite3.OperationalError("database is locked")
    err.sqlite_errorcode = code
    if timeout_s is not None:
        mark_busy(err, timeout_s=timeout_s, waited_s=waited_s)
    return OperationalError("BEGIN IMMEDIATE", (), err)


@given(
    code=st.sampled_from([5, 517, 6]),
    timeout_s=st.none() | st.floats(0, 30),
    share=st.none() | st.floats(0, 2),
    attempt_s=st.floats(0, 40),
    attempt=st.integers(1, 6),
)
def test_a_busy_is_retried_exactly_when_sqlite_did_not_wait_out_its_timeout(
    code: int, timeout_s: float | None, share: float | None, attempt_s: float, attempt: int
) -> None:
    waited_s = None if share is None or timeout_s is None else share * timeout_s
    exc = _busy(code, timeout_s, waited_s)
    policy = RetryPolicy(attempts=5, base_delay=0)
    verdict = policy.decide(exc, attempt=attempt, attempt_s=attempt_s, total_s=attempt_s)
    timeout = settings.BUSY_TIMEOUT_MS / 1000 if timeout_s is None else timeout_s
    waited = attempt_s if waited_s is None else waited_s
    waited_out = code != 517 and waited >= 0.9 * timeout
    if waited_out or attempt >= 5:
        assert isinstance(verdict, DatabaseBusyError)
        assert ("its whole busy timeout" in verdict.message) is waited_out
    else:
        assert isinstance(verdict, float)


def test_an_error_no_retry_can_cure_is_left_to_propagate() -> None:
    verdict = RetryPolicy().decide(ValueError("x"), attempt=1, attempt_s=9, total_s=9)
    assert verdict is None
    assert not isinstance(verdict, PhilontError)
