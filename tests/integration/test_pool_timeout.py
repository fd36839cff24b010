"""When every connection of a Store's pool stays in use for the pool's whole timeout, a unit
of work fails with the typed :class:`~philont.errors.PoolTimeoutError` (a
``DatabaseBusyError``, code ``database_busy``), at once and not retried, and nothing is
written. Before, SQLAlchemy's own ``TimeoutError`` reached the caller (and a tool call's error)
untyped."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import URL
from structlog.testing import capture_logs

from philont import tools
from philont.errors import DatabaseBusyError, PoolTimeoutError
from philont.store import Store

BOTH_BACKENDS = True
TIMEOUT_S = 0.3


@pytest.fixture
def store(target: Path | URL) -> Iterator[Store]:
    with Store.open(target) as opened:
        with opened.begin() as mem:
            mem.facts.store("n", "k", 1)
        yield opened


def _hold_every_connection(store: Store, release: threading.Event) -> list[threading.Thread]:
    pool = store.engine.pool
    pool._timeout = TIMEOUT_S  # type: ignore[attr-defined]  # SQLAlchemy's default is 30 s
    held = threading.Barrier(pool.size() + pool._max_overflow + 1)  # type: ignore[attr-defined]

    def hold() -> None:
        with store.begin(write=False) as mem:
            mem.session.connection()  # checked out until the block ends
            held.wait()
            release.wait()

    holders = [threading.Thread(target=hold) for _ in range(held.parties - 1)]
    for holder in holders:
        holder.start()
    held.wait()
    return holders


def test_a_unit_of_work_with_no_connection_left_fails_typed_at_once(store: Store) -> None:
    release = threading.Event()
    holders = _hold_every_connection(store, release)
    try:
        started = time.monotonic()
        with (
            capture_logs() as logs,
            pytest.raises(PoolTimeoutError, match="every connection of the Store's pool") as got,
        ):
            store.run(lambda mem: mem.facts.store("n", "k", 2))
        elapsed = time.monotonic() - started
        result = tools.call("store_fact", {"namespace": "n", "key": "k", "value": 3}, db=store)
    finally:
        release.set()
        for holder in holders:
            holder.join()
    assert isinstance(got.value, DatabaseBusyError) and got.value.code == "database_busy"
    # not run again (its retries were told apart by time: within 0.8 s of a loaded machine's)
    assert [entry for entry in logs if entry["event"] == "db.retry"] == []
    assert elapsed < 10 * TIMEOUT_S, f"waited {elapsed:.2f} s: not the pool's timeout"
    assert not result.ok and result.error_code == "database_busy"
    assert result.error is not None and "every connection of the Store's pool" in result.error
    with store.begin(write=False) as mem:
        assert mem.facts.get("n", "k").value == 1  # nothing written
