"""A writer killed with SIGKILL at random moments loses nothing it acknowledged and never
corrupts the file or its full-text indexes."""

from __future__ import annotations

import random
import signal
import sqlite3
import time
from contextlib import closing
from pathlib import Path

import pytest

from philont.db.engine import create_engine
from philont.services.search import SearchService
from philont.store import Store
from tests.reliability.helpers import (
    complete_lines,
    integrity_problems,
    start_worker,
    stop,
    wait_for_line,
)

LIGHT_TRIALS = 5
HEAVY_TRIALS = 25
MAX_DELAY_S = 0.5


def _acks(output: Path) -> dict[int, str]:
    acks: dict[int, str] = {}
    for line in complete_lines(output):
        parts = line.split()
        if len(parts) == 3 and parts[0] == "ack":
            acks[int(parts[1])] = parts[2]
    return acks


def _kill_at_random_moments(db: Path, tmp_path: Path, trials: int) -> dict[str, float]:
    rng = random.Random(20260614)
    acknowledged: dict[int, str] = {}
    started = time.monotonic()
    for trial in range(trials):
        output = tmp_path / f"crash{trial}.out"
        proc = start_worker("crash", db, output=output)
        try:
            wait_for_line(output, "ack", proc, timeout=60)
            time.sleep(rng.uniform(0, MAX_DELAY_S))
            proc.kill()  # SIGKILL: no cleanup, no atexit, no rollback
            proc.join(timeout=30)
            assert proc.exitcode == -signal.SIGKILL
        finally:
            stop(proc)
        acks = _acks(output)
        assert acks, "the writer acknowledged nothing before it was killed"
        acknowledged.update(acks)

        assert integrity_problems(db) == [], f"trial {trial}"
        with closing(sqlite3.connect(str(db))) as conn:
            stored = dict(
                conn.execute(
                    "SELECT id, substr(content, 1, instr(content, ' ') - 1)"
                    " FROM memory_raw_messages WHERE content LIKE 'zqcrash%'"
                ).fetchall()
            )
        lost = {i: tag for i, tag in acknowledged.items() if stored.get(i) != tag}
        assert lost == {}, f"trial {trial}: acknowledged messages missing or changed"

        # the full-text index agrees with the table: the last acknowledged message is found
        last_id = max(acks)
        engine = create_engine(db)
        try:
            with Store(engine).begin(write=False) as mem:
                hits = SearchService(mem).messages(acks[last_id], limit=5)
            assert last_id in [h.id for h in hits], f"trial {trial}"
        finally:
            engine.dispose()
    return {"trials": trials, "acknowledged": len(acknowledged), "s": time.monotonic() - started}


def test_a_writer_killed_at_random_moments_keeps_every_acknowledged_message(
    tool_db: Path, tmp_path: Path
) -> None:
    stats = _kill_at_random_moments(tool_db, tmp_path, LIGHT_TRIALS)
    assert stats["acknowledged"] >= LIGHT_TRIALS


@pytest.mark.reliability
def test_twenty_five_kills_in_a_row_keep_every_acknowledged_message_and_a_sound_file(
    tool_db: Path, tmp_path: Path
) -> None:
    stats = _kill_at_random_moments(tool_db, tmp_path, HEAVY_TRIALS)
    print(f"crash safety: {stats}")
    assert stats["acknowledged"] >= HEAVY_TRIALS
