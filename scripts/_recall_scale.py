"""Retrieval latency at scale for the recall benchmark: synthetic histories vs raw SQL."""

from __future__ import annotations

import json
import random
import re
import sqlite3
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, cast

from _bench_common import pseudo_words
from _recall_data import DEV_DATA, _create, database, load_locomo
from sqlalchemy import Engine

from philont.db.engine import create_engine
from philont.store import Store

SCALE_DATA = DEV_DATA / "conv-26.json"
"""Whose words and questions the synthetic history borrows (kept fixed, so figures compare)."""


# --- latency at scale ------------------------------------------------------------------------


def pct(sorted_values: Sequence[float], percent: float) -> float:
    """The nearest-rank percentile of already sorted values (0.0 for none)."""
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(percent / 100 * (len(sorted_values) - 1))))
    return sorted_values[index]


_SEED = 7


def _word_distribution(rng: random.Random) -> tuple[list[str], list[float], list[str]]:
    """Words with weights: English as LoCoMo uses it (when the file is there) for the frequent
    part, and a long Zipf tail of pseudo-words (names, rare terms); plus query sentences."""
    counts: dict[str, int] = {}
    questions: list[str] = []
    if SCALE_DATA.exists():
        for conv in load_locomo(SCALE_DATA):
            questions += [q.text for q in conv.questions]
            for _i, _s, _r, text, _at in conv.messages:
                for w in re.findall(r"[a-z']+", text.lower()):
                    counts[w] = counts.get(w, 0) + 1
    tail = pseudo_words(rng, 50_000)
    words = list(counts) + tail
    total = sum(counts.values()) or 1
    # Real words carry 80% of the mass (their own proportions), the tail 20% (Zipf).
    harmonic = sum(1.0 / (i + 1) for i in range(len(tail)))
    weights = [0.8 * c / total for c in counts.values()]
    weights += [0.2 / ((i + 1) * harmonic) for i in range(len(tail))]
    if not questions:
        for _ in range(150):
            picked = rng.choices(tail[20:3000], k=rng.randint(2, 4))
            questions.append("What did we say about the " + " and ".join(picked) + "?")
    return words, weights, questions


def build_scale_db(path: Path, n_messages: int) -> list[str]:
    """Fill ``path`` (already created) with n synthetic messages; return the query sentences."""
    rng = random.Random(_SEED)
    words, weights, questions = _word_distribution(rng)
    cjk = [chr(c) for c in range(0x4E00, 0x4E00 + 2500)]
    t0 = 1_704_067_200_000  # 2024-01-01T00:00Z
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = OFF")
    sql = (
        "INSERT INTO memory_raw_messages(session_id, role, content, timestamp) VALUES (?, ?, ?, ?)"
    )
    batch: list[tuple[Any, ...]] = []
    for i in range(n_messages):
        if i % 10 == 9:
            text = "".join(rng.choice(cjk) for _ in range(rng.randint(8, 40))) + "。"
        else:
            text = " ".join(rng.choices(words, weights=weights, k=rng.randint(5, 40))) + "."
        role = "system" if i % 97 == 0 else ("user" if i % 2 == 0 else "assistant")
        batch.append(("global", role, text.capitalize(), t0 + i * 60_000))
        if len(batch) >= 20_000:
            conn.executemany(sql, batch)
            conn.commit()
            batch.clear()
    if batch:
        conn.executemany(sql, batch)
        conn.commit()
    conn.execute("PRAGMA optimize")
    conn.close()
    queries = questions[:200]
    queries += [
        "上次说的" + "".join(rng.choice(cjk) for _ in range(2)) + "是什么？" for _ in range(20)
    ]
    return queries


@contextmanager
def scale_database(n_messages: int, keep: Path | None) -> Iterator[tuple[Engine, list[str]]]:
    """A database of n synthetic messages: a temporary one, or ``keep`` (built once, reused)."""
    if keep is not None and keep.exists():
        engine = create_engine(keep)
        queries = json.loads(keep.with_suffix(".queries.json").read_text(encoding="utf-8"))
        try:
            yield engine, queries
        finally:
            engine.dispose()
        return
    if keep is not None:  # built in place: nothing of it lives in a shared temporary folder
        engine = _create(keep, None)
        t = time.perf_counter()
        queries = build_scale_db(keep, n_messages)
        print(f"  built in {time.perf_counter() - t:.1f} s ({keep.stat().st_size / 1e6:.0f} MB)")
        keep.with_suffix(".queries.json").write_text(json.dumps(queries), encoding="utf-8")
        try:
            yield engine, queries
        finally:
            engine.dispose()
        return
    with database() as (engine, path):
        t = time.perf_counter()
        queries = build_scale_db(path, n_messages)
        print(f"  built in {time.perf_counter() - t:.1f} s ({path.stat().st_size / 1e6:.0f} MB)")
        yield engine, queries


REPEATS = 3
"""Each timing is the best of this many runs: the machine is shared, the code is not noisy."""


def _best_of(fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def _replay(conn: sqlite3.Connection, statements: list[str]) -> None:
    for sql in statements:
        conn.execute(sql).fetchall()


def scale(n_messages: int, keep: Path | None) -> None:
    print(f"\nTimelineRetriever.retrieve at {n_messages:,} synthetic messages")
    with scale_database(n_messages, keep) as (engine, queries):
        path = engine.url.database
        assert path is not None
        ours_s: list[float] = []
        raw_s: list[float] = []
        session_s: list[float] = []
        per_call: list[int] = []
        raw = sqlite3.connect(path, isolation_level=None)
        raw.execute("BEGIN")
        with Store(engine).begin(write=False) as mem:
            count = mem.raw().rows("SELECT count(*) FROM memory_raw_messages")[0][0]
            print(f"  {count:,} messages in the database")
            retriever = mem.retriever
            dbapi = mem.session.connection().connection.dbapi_connection
            driver = cast(sqlite3.Connection, dbapi)
            for q in queries[:10]:  # warm-up
                retriever.retrieve(q)
            for q in queries:
                # SQLite reports each statement with its bound values filled in; nested ones
                # (FTS5's own, prefixed "--") run inside the outer ones and are left out.
                traced: list[str] = []
                driver.set_trace_callback(traced.append)
                retriever.retrieve(q)
                driver.set_trace_callback(None)
                replay = [sql for sql in traced if not sql.startswith("--")]
                per_call.append(len(replay))
                # Interleaved, so that both sides meet the same machine load.
                ours_s.append(_best_of(partial(retriever.retrieve, q)))
                raw_s.append(_best_of(partial(_replay, raw, replay)))
                # The worst case of a restriction: the one session holding every message.
                session_s.append(_best_of(partial(retriever.retrieve, q, session_ids=["global"])))
        raw.execute("ROLLBACK")
        raw.close()
    ours_sorted, raw_sorted, session_sorted = sorted(ours_s), sorted(raw_s), sorted(session_s)
    print(f"  {len(queries)} queries (LoCoMo questions and 2-character Chinese words)")
    print(f"  statements per retrieve: {statistics.fmean(per_call):.1f}; best of {REPEATS} runs")
    for label, percent in (("p50", 50), ("p95", 95)):
        o, r = pct(ours_sorted, percent) * 1000, pct(raw_sorted, percent) * 1000
        print(
            f"  {label}: retrieve {o:.2f} ms, the same SQL via raw sqlite3 {r:.2f} ms,"
            f" ratio {o / r:.2f}"
        )
    ratios = sorted(o / r for o, r in zip(ours_s, raw_s, strict=True))
    print(f"  per-query ratio: p50 {pct(ratios, 50):.2f}, p95 {pct(ratios, 95):.2f}")
    print(
        f"  restricted to session global (all messages): p50"
        f" {pct(session_sorted, 50) * 1000:.2f} ms, p95 {pct(session_sorted, 95) * 1000:.2f} ms"
    )


# --- main ------------------------------------------------------------------------------------
