"""An AsyncStore's deferred unit of work (a read that writes an access time) that waits for the
same AsyncStore's writing unit, another task of the same loop, is an ordinary wait between two
connections: database_busy when it waits out the busy timeout (retried when it did not), never
nested_write (the loop is not blocked: the writer goes on)."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path

from philont.aio import AsyncStore
from philont.errors import DatabaseBusyError
from philont.memory import Memory


def test_a_reader_waiting_for_a_writer_of_its_own_loop_is_busy_not_nested(tmp_path: Path) -> None:
    async def main() -> str:
        astore = await AsyncStore.open(tmp_path / "m.db", busy_timeout_ms=200)
        try:
            await astore.run(lambda mem: mem.facts.store("ns", "k", "v"))
            done = threading.Event()

            def writer(mem: Memory) -> None:  # every statement awaits: the loop runs the reader
                until = time.monotonic() + 10
                i = 0
                while not done.is_set() and time.monotonic() < until:
                    mem.facts.store("ns", f"w{i}", "x")
                    i += 1

            task = asyncio.create_task(astore.run(writer))
            await asyncio.sleep(0.1)
            try:
                await astore.run(lambda mem: mem.facts.get("ns", "k"), write=False)
                outcome = "ok"
            except DatabaseBusyError as exc:
                outcome = exc.code
            except Exception as exc:
                outcome = getattr(exc, "code", type(exc).__name__)
            finally:
                done.set()
            await task
            return outcome
        finally:
            await astore.close()

    assert asyncio.run(main()) in ("ok", "database_busy")
