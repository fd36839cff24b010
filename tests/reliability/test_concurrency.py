"""Several processes writing messages, facts and skill outcomes while others read: no lock error
reaches a caller, every acknowledged write is there, and no counter update is lost."""

from __future__ import annotations

import sqlite3
import time
from collections import Counter
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from philont.db.engine import create_engine
from philont.store import Store
from tests.reliability.helpers import (
    complete_lines,
    errors_of,
    integrity_problems,
    start_worker,
    stop,
)
from tests.reliability.workers import SHARED_FACT_KEYS

SKILLS = ("rotate-logs", "renew-certificate", "restart-service")


@dataclass
class Tally:
    """What the workers acknowledged."""

    messages: set[int] = field(default_factory=set)
    facts: int = 0
    actions: int = 0
    outcomes: Counter[tuple[str, int]] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)
    ops: int = 0
    reads: int = 0
    duplicate_messages: int = 0

    def add(self, line: str) -> None:
        kind, _, rest = line.partition(" ")
        if kind == "message":
            message_id = int(rest)
            if message_id in self.messages:
                self.duplicate_messages += 1
            self.messages.add(message_id)
        elif kind == "fact":
            self.facts += 1
        elif kind == "action":
            self.actions += 1
        elif kind == "outcome":
            name, success = rest.split()
            self.outcomes[(name, int(success))] += 1
        elif kind == "done":
            self.ops += int(rest)
        elif kind == "reads":
            self.reads += int(rest.split()[0])
        elif kind == "error":
            self.errors.append(rest)


def _counts(path: Path) -> dict[str, int]:
    with closing(sqlite3.connect(str(path))) as conn:
        return {
            t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
            for t in ("memory_raw_messages", "memory_facts", "memory_actions")
        }


def _seed_skills(path: Path) -> None:
    engine = create_engine(path)
    try:
        with Store(engine).begin() as mem:
            for name in SKILLS:
                mem.skills.create(
                    name=name,
                    description=f"how to {name.replace('-', ' ')}",
                    trigger_keywords=name.split("-"),
                    action_template="1. do it",
                )
    finally:
        engine.dispose()


def _run(db: Path, tmp_path: Path, *, writers: int, readers: int, seconds: float) -> Tally:
    _seed_skills(db)
    before = _counts(db)
    go = tmp_path / "go"
    procs = []
    try:
        for w in range(writers):
            out = tmp_path / f"writer{w}.out"
            procs.append(
                (start_worker("writer", db, seconds, w, ",".join(SKILLS), go, output=out), out)
            )
        for r in range(readers):
            out = tmp_path / f"reader{r}.out"
            procs.append((start_worker("reader", db, seconds, go, output=out), out))
        deadline = time.monotonic() + 120
        while not all("ready" in complete_lines(out) for _, out in procs):
            assert time.monotonic() < deadline, "workers did not start within 120 s"
            for proc, out in procs:
                if not proc.is_alive():
                    pytest.fail(f"{out.stem} exited early ({proc.exitcode}): {errors_of(out)}")
            time.sleep(0.01)
        go.touch()
        for proc, out in procs:
            proc.join(timeout=seconds + 120)
            assert proc.exitcode == 0, f"{out.stem} exited with {proc.exitcode}: {errors_of(out)}"
    finally:
        for proc, _ in procs:
            stop(proc)

    tally = Tally()
    for _, out in procs:
        for line in complete_lines(out):
            tally.add(line)
    assert tally.errors == []
    assert tally.duplicate_messages == 0
    assert tally.reads > 0 and tally.ops > 0

    after = _counts(db)
    assert after["memory_raw_messages"] - before["memory_raw_messages"] == len(tally.messages)
    assert after["memory_facts"] - before["memory_facts"] == tally.facts
    assert after["memory_actions"] - before["memory_actions"] == tally.actions
    with closing(sqlite3.connect(str(db))) as conn:
        stored = {r[0] for r in conn.execute("SELECT id FROM memory_raw_messages")}
        assert tally.messages <= stored
        for name in SKILLS:
            successes, failures = conn.execute(
                "SELECT success_count, failure_count FROM memory_skills WHERE name = ?", (name,)
            ).fetchone()
            assert (successes, failures) == (
                tally.outcomes[(name, 1)],
                tally.outcomes[(name, 0)],
            ), name
        # interleaved supersedes never leave two current versions of one key
        current = conn.execute(
            "SELECT key, count(*) FROM memory_facts WHERE namespace = 'shared'"
            " AND superseded_by IS NULL AND forgotten_at IS NULL GROUP BY key"
        ).fetchall()
        assert all(n == 1 for _, n in current), current
        assert len(current) <= SHARED_FACT_KEYS
    assert integrity_problems(db) == []
    return tally


def _summary(tally: Tally, writers: int, readers: int, seconds: float) -> str:
    return (
        f"concurrency: {writers} writers + {readers} readers for {seconds} s: {tally.ops} write "
        f"ops, {len(tally.messages)} messages, {tally.facts} facts, "
        f"{sum(tally.outcomes.values())} skill outcomes, {tally.reads} reads acknowledged"
    )


def test_four_writers_and_two_readers_lose_nothing_and_see_no_lock_errors(
    tool_db: Path, tmp_path: Path
) -> None:
    tally = _run(tool_db, tmp_path, writers=4, readers=2, seconds=2.0)
    print(_summary(tally, 4, 2, 2.0))
    assert len(tally.messages) > 0 and tally.facts > 0 and tally.outcomes


@pytest.mark.reliability
def test_six_writers_and_two_readers_for_ten_seconds_keep_exact_counts(
    tool_db: Path, tmp_path: Path
) -> None:
    tally = _run(tool_db, tmp_path, writers=6, readers=2, seconds=10.0)
    print(_summary(tally, 6, 2, 10.0))
    assert len(tally.messages) > 0 and tally.facts > 0 and tally.outcomes
