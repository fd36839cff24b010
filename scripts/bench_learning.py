"""Learning-loop benchmark: the idle consolidator over 10k messages with the scripted model.

Usage (from the repository root)::

    .venv/bin/python scripts/bench_learning.py              # 10k messages, batches of 1,000
    .venv/bin/python scripts/bench_learning.py --messages 50k --batch 500

A synthetic history (``_bench_common.timeline``, with one tool call per ten messages) is
consolidated from the start (``backlog``) by ``philont.learning.Consolidator`` with a scripted
model whose answers depend only on the prompt (two facts, a note and a skill per batch, plus a
skill re-proposed every time and a hostile name). Reported:

* time per batch excluding the model (the model's calls are timed and subtracted), and per
  message; the raw sqlite3 floor of the same batch on a copy of the database (read the batch,
  insert as many rows as philont wrote, move the cursor, in one transaction);
* rows written per table;
* that running again writes nothing new: a second consolidator finds nothing to do, and
  re-learning the first batch's window with the same answers leaves every table's content
  (hash of all rows) unchanged.

``--tool-calls N`` measures instead reading one batch whose span holds N tool calls (an agent
in a loop) and six messages: every call (as before), and the newest a batch reads without a
judge (200) and with one (``max_window_messages``, 5,000); time and peak Python memory
(tracemalloc, in a run of its own), each in turn in one process. ``--host-window N``: a host's
window (``Learner.window``) of one session of N messages of 204k characters, read whole (as
before) and to what the prompts show, measured alike.
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import sqlite3
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from contextlib import closing
from datetime import timedelta
from pathlib import Path
from typing import Any, TypeVar

import _bench_common as bc

from philont.db.types import from_epoch_ms
from philont.learning import Consolidator, ConsolidatorConfig, Learner, LearningConfig
from philont.learning.late import Seen, load_batch
from philont.learning.prompts import SHOWN_CALLS
from philont.learning.window import Window, load_after, load_session
from philont.llm import Completion, ScriptedModel, task_of
from philont.memory import Memory
from philont.store import Store

T = TypeVar("T")

TABLES = (
    "memory_facts",
    "memory_notes",
    "memory_skills",
    "philont_learning_batches",
    "philont_cases",
    "philont_judge_verdicts",
    "memory_actions",
    "memory_access_log",
)


class TimedModel:
    """The scripted model, with the time spent in it (to subtract from each batch)."""

    def __init__(self) -> None:
        self.inner = ScriptedModel(self._answer)
        self.seconds = 0.0
        self.calls = 0

    @staticmethod
    def _answer(prompt: str) -> str:
        lines = [line for line in prompt.splitlines() if line.startswith("[20")]
        tag = hashlib.sha1((lines[-1] if lines else prompt).encode()).hexdigest()[:10]
        task = task_of(prompt)
        if task == "extract":
            return json.dumps(
                [
                    {"action": "store_fact", "namespace": "bench.topics", "key": f"t{tag}",
                     "value": {"seen": lines[-1][:40] if lines else ""}},
                    {"action": "store_fact", "namespace": "user.preferences", "key": "tone",
                     "value": "concise"},
                    {"action": "store_note", "content": f"batch {tag} talked about work"},
                ]
            )  # fmt: skip
        if task == "reflect":
            skill = {  # distinct words per batch: no near-duplicate merging
                "name": f"topic-{tag}", "kind": "positive", "description": "d",
                "when_to_use": f"{tag[:5]} {tag[5:]}", "trigger_keywords": [tag],
                "action_template": "1. do it\n2. check it",
            }  # fmt: skip
            common = dict(skill, name="bench-common-skill", when_to_use="always",
                          trigger_keywords=["common"])  # fmt: skip
            hostile = dict(skill, name="x'; DROP TABLE memory_skills; --")
            return json.dumps([skill, common, hostile])
        return "The user and the assistant talked about their work; nothing is open."

    def complete(self, prompt: str) -> Completion:
        start = time.perf_counter()
        try:
            return self.inner.complete(prompt)
        finally:
            self.seconds += time.perf_counter() - start
            self.calls += 1


def build(path: Path, n: int) -> None:
    sessions, stream = bc.timeline(n)
    rows = list(stream)
    with closing(bc.connect_raw(path)) as conn:
        conn.execute("BEGIN")
        bc.insert_sessions(conn, sessions)
        bc.insert_messages(conn, iter(rows))
        conn.executemany(
            "INSERT INTO memory_actions (session_id, tool_name, params_json, result, success,"
            " timestamp) VALUES (?, 'shell', '{}', 'ok', ?, ?)",
            [(sid, int(i % 7 != 0), ts + 1) for i, (sid, _r, _c, ts) in enumerate(rows[::10])],
        )
        conn.execute("COMMIT")
    bc.finish_db(path)


def table_state(path: Path) -> dict[str, tuple[int, str]]:
    """Rows and a content hash per table."""
    state = {}
    with closing(sqlite3.connect(str(path))) as conn:
        for table in TABLES:
            rows = conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()
            state[table] = (len(rows), hashlib.sha256(repr(rows).encode()).hexdigest()[:12])
    return state


def raw_floor(path: Path, after: int, until: int, written: int) -> float:
    """The raw sqlite3 floor of one batch: read it, insert ``written`` rows, move a cursor."""
    with closing(bc.connect_raw(path)) as conn:
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("SELECT max(timestamp) FROM memory_raw_messages").fetchone()
        conn.execute(
            "SELECT timestamp FROM memory_raw_messages WHERE timestamp > ? ORDER BY timestamp"
            " LIMIT 1001",
            (after,),
        ).fetchall()
        for table in ("memory_raw_messages", "memory_actions"):
            conn.execute(
                f"SELECT * FROM {table} WHERE timestamp > ? AND timestamp <= ?", (after, until)
            ).fetchall()
        conn.executemany(
            "INSERT INTO memory_notes (id, content, importance, created_at) VALUES (?, ?, 0.5, ?)",
            [(f"raw-{after}-{i}", "x", until) for i in range(written)],
        )
        conn.execute(
            "INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('bench_cursor', ?)", (until,)
        )
        conn.execute("COMMIT")
        return time.perf_counter() - start


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = bc.scratch_dir("philont-bench-learning-")
    db, raw = work / "memory.sqlite", work / "raw.sqlite"
    bc.new_db(db)
    build(db, args.messages)
    bc.copy_db(db, raw)
    before = table_state(db)
    now = from_epoch_ms(bc.HISTORY_END_MS) + timedelta(days=1)
    model = TimedModel()
    store = Store.open(db, upgrade=False)
    schedule = ConsolidatorConfig(backlog=True, batch_size=args.batch, max_batches_per_tick=1)
    worker = Consolidator.for_store(store, model, clock=lambda: now, schedule=schedule)
    batches = []
    first_until = 0
    while True:
        model_before = model.seconds
        start = time.perf_counter()
        report = worker.run_once()
        wall = time.perf_counter() - start
        if report.status.value != "consolidated":
            break
        written = sum(
            w.outcome == "stored" for w in (report.extraction.writes if report.extraction else [])
        ) + (report.reflection.created if report.reflection else 0)
        floor = raw_floor(raw, report.after_ts or 0, report.until_ts or 0, written + 1)
        batches.append((report.messages, wall - (model.seconds - model_before), floor))
        first_until = first_until or report.until_ts or 0
    after = table_state(db)
    again = [r.status.value for r in Consolidator.for_store(
        store, TimedModel(), clock=lambda: now, schedule=schedule).tick()]  # fmt: skip
    with store.begin(clock=lambda: now) as mem:  # the first batch again, same answers
        window = load_after(mem.session, -1, first_until)
        Learner(mem, TimedModel(), config=LearningConfig()).learn(window)
    relearned = table_state(db)
    store.close()
    return {
        "batches": batches,
        "before": before,
        "after": after,
        "again": again,
        "unchanged": relearned == after,
        "changed": [t for t in TABLES if relearned[t] != after[t]],
        "model_calls": model.calls,
        "model_seconds": model.seconds,
    }


def _scratch_db(
    name: str,
    session: str,
    messages: list[tuple[str, str, int]],
    more: Callable[[sqlite3.Connection], object],
) -> Path:
    """A fresh database holding ``messages`` (role, content, epoch ms) of ``session`` and what
    ``more`` writes, in one transaction."""
    db = bc.scratch_dir(f"philont-bench-learning-{name}-") / "memory.sqlite"
    bc.new_db(db)
    with closing(bc.connect_raw(db)) as conn:
        conn.execute("BEGIN")
        more(conn)
        conn.executemany(
            "INSERT INTO memory_raw_messages (session_id, role, content, timestamp)"
            " VALUES (?, ?, ?, ?)",
            [(session, *m) for m in messages],
        )
        conn.execute("COMMIT")
    bc.finish_db(db)
    return db


def _best_and_peak(store: Store, read: Callable[[Memory], T]) -> tuple[T, str, str]:
    """What ``read`` returns in a read unit of work, its best time of three (untraced; ms) and
    the peak memory it traces (MB) in a fourth run."""
    took = []
    for _ in range(3):
        with store.begin(write=False) as mem:
            began = time.perf_counter()
            read(mem)
            took.append(time.perf_counter() - began)
    with store.begin(write=False) as mem:
        tracemalloc.start()
        result = read(mem)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return result, bc.fmt_num(min(took) * 1000, 0), bc.fmt_num(peak / 1e6, 1)


def _load(mem: Memory, *, until: int, cap: int | None) -> tuple[Window, Seen]:
    return load_batch(mem.session, -1, until, Seen(), max_calls=cap)


def tool_calls(n: int) -> int:
    """Read one batch of six messages and ``n`` tool calls, reading every call or the newest."""
    start = bc.HISTORY_END_MS
    db = _scratch_db(
        "calls",
        "global",
        [("user" if i % 2 == 0 else "assistant", f"message {i}", start + i) for i in range(6)],
        lambda conn: conn.executemany(
            "INSERT INTO memory_actions (session_id, tool_name, params_json, result, success,"
            " timestamp) VALUES ('global', 'fetch', ?, ?, 1, ?)",
            [(json.dumps({"url": f"https://example.com/{i}"}), "r" * 200, start + 2 + i % 3000)
             for i in range(n)],
        ),
    )  # fmt: skip
    until = start + 3_002
    rows = []
    with Store.open(db, upgrade=False) as store:
        for label, cap in (
            ("every call (as before)", None),
            ("no judge (newest 200)", SHOWN_CALLS),
            ("a judge (newest 5,000)", LearningConfig().max_window_messages),
        ):
            read = functools.partial(_load, until=until, cap=cap)
            (window, _seen), ms, mb = _best_and_peak(store, read)
            rows.append([label, len(window.calls), window.left.count, ms, mb])
    print(f"\none batch: 6 messages, {n:,} tool calls (best of 3; peak traced)")
    print(bc.table(["read", "calls read", "left out", "ms", "peak MB"], rows))
    return 0


def host_window(n: int, chars: int = 204_000) -> int:
    """A host's window (``Learner.window``) of one session of ``n`` messages of ``chars``
    characters each: read whole (as before) and read to what the prompts show."""
    start = bc.HISTORY_END_MS
    db = _scratch_db(
        "window",
        "s1",
        [("user", f"{i} " + "w" * chars, start + i) for i in range(n)],
        lambda conn: conn.execute(
            "INSERT INTO memory_raw_sessions (id, started_at) VALUES ('s1', ?)", (start,)
        ),
    )
    rows = []
    model = TimedModel()
    with Store.open(db, upgrade=False) as store:
        for label, read in (
            ("whole (as before)", lambda mem: load_session(mem.session, "s1", limit=5_000)),
            ("to what prompts show", lambda mem: Learner(mem, model).window(session_id="s1")),
        ):
            window, ms, mb = _best_and_peak(store, read)
            read_chars = sum(len(t.content) for t in window.turns)
            rows.append([label, len(window.turns), f"{read_chars:,}", ms, mb])
    print(f"\na host's window: {n:,} messages of {chars:,} characters (best of 3; peak traced)")
    print(bc.table(["read", "messages", "characters read", "ms", "peak MB"], rows))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=bc.parse_count, default=10_000)
    parser.add_argument("--batch", type=int, default=1_000, help="messages per batch")
    parser.add_argument("--tool-calls", type=bc.parse_count, help="one batch of N tool calls")
    parser.add_argument(
        "--host-window", type=bc.parse_count, help="a Learner window of N messages of 204k chars"
    )
    args = parser.parse_args(argv)
    print(bc.machine_line())
    if args.tool_calls is not None:
        return tool_calls(args.tool_calls)
    if args.host_window is not None:
        return host_window(args.host_window)
    result = run(args)
    times = [t for _n, t, _f in result["batches"]]
    floors = [f for _n, _t, f in result["batches"]]
    messages = sum(n for n, _t, _f in result["batches"])
    model_ms = result["model_seconds"] * 1000
    print(f"\n{len(times)} batches, {messages} messages, {result['model_calls']} model calls "
          f"({model_ms:.0f} ms in the scripted model, not counted)")  # fmt: skip
    print(bc.table(
        ["", "median", "max", "total"],
        [
            ["philont per batch (ms)", bc.fmt_num(bc.median(times) * 1000, 1),
             bc.fmt_num(max(times) * 1000, 1), bc.fmt_num(sum(times) * 1000, 0)],
            ["raw sqlite3 floor (ms)", bc.fmt_num(bc.median(floors) * 1000, 1),
             bc.fmt_num(max(floors) * 1000, 1), bc.fmt_num(sum(floors) * 1000, 0)],
            ["ratio", bc.fmt_num(bc.median(times) / bc.median(floors), 1), "", ""],
            ["per message (µs)", bc.fmt_num(sum(times) / messages * 1e6, 0), "", ""],
        ],
    ))  # fmt: skip
    rows = [
        [t, result["before"][t][0], result["after"][t][0] - result["before"][t][0]] for t in TABLES
    ]
    print("\nrows written\n" + bc.table(["table", "before", "written"], rows))
    print(f"\nrunning again: {result['again']} — every table unchanged after re-learning the "
          f"first window: {bc.yes_no(result['unchanged'])} {result['changed'] or ''}")  # fmt: skip
    return 0 if result["unchanged"] and all(s != "consolidated" for s in result["again"]) else 1


if __name__ == "__main__":
    sys.exit(main())
