"""Context benchmark: one full turn of context building vs the same SQL through raw sqlite3.

Usage (from the repository root)::

    .venv/bin/python scripts/bench_context.py            # 10k and 100k messages
    .venv/bin/python scripts/bench_context.py --full     # also 1M (seeding takes many minutes)
    .venv/bin/python scripts/bench_context.py --sizes 50k --queries 100 --no-write

A turn is what a host does before calling the model: in one unit of work,
``mem.retriever.retrieve(user_message)`` (recency window + keyword recall) and
``mem.prefix.build()`` (facts ranked by decay, skills, lessons, notes) in one read unit of work
of a long-lived Store (``with store.begin(write=False) as mem:``).

Databases (built by ``philont.migrate.upgrade``, then seeded with raw ``executemany``: messages
in English and some Chinese over sessions and a year, ~300 facts, ~50 skills, ~200 notes) are
cached under the temp dir, keyed by size and schema. Each size is measured in a fresh spawned
process (its peak RSS is reported). A warm-up turn per query captures every statement the turn
issues, with its parameters: ``before_cursor_execute`` sees the ones that go through SQLAlchemy,
a sqlite3 connection/cursor subclass sees them all (the search hot path talks to the DB-API
connection directly), and SQLite's trace callback checks that none was missed. The raw
baseline replays exactly those statements (fetching every row, and the commit) on a plain
sqlite3 connection with the same PRAGMAs; philont and raw alternate turn by turn, so the ratio
isolates Python/ORM overhead.

Targets: p95 <= 10 ms at 100k messages; <= 2x raw; peak RSS flat in history size.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _bench_common as bc

P95_TARGET_MS = 10.0
P95_TARGET_SIZE = 100_000
RATIO_TARGET = 2.0
RSS_GROWTH_LIMIT = 0.10  # "flat": at most 10% more than at the smallest size
DEFAULT_SIZES = (10_000, 100_000)
FULL_SIZE = 1_000_000

COMMIT = "<commit>"
ROLLBACK = "<rollback>"
PREFIX_MARK = "<prefix>"
_ENDS = ("COMMIT", "ROLLBACK")


# --- seeding ---------------------------------------------------------------------------------


def context_db(n: int) -> Path:
    """The cached database of n messages plus facts, skills and notes (built on first use)."""
    path = bc.CACHE / f"context-{n}-d{bc.DATA_VERSION}-{bc._schema_key()}.sqlite"
    if path.exists():
        return path
    partial = path.with_name(path.name + ".partial")
    bc.remove_db(partial)
    bc.new_db(partial)
    print(f"  seeding {n:,} messages into {path} (once; cached) ...", flush=True)
    t0 = bc.now_ns()
    conn = bc.connect_raw(partial)
    conn.execute("PRAGMA synchronous = OFF")
    sessions, rows = bc.timeline(n)
    conn.execute("BEGIN")
    bc.insert_sessions(conn, sessions)

    def progress(done: int) -> None:
        if done % 100_000 == 0:
            conn.execute("COMMIT")
            conn.execute("BEGIN")
            secs = (bc.now_ns() - t0) / 1e9
            print(f"    {done:>9,} messages, {secs:5.0f} s", flush=True)

    bc.insert_messages(conn, rows, progress=progress)
    bc.seed_knowledge(conn)
    conn.execute("COMMIT")
    conn.execute("PRAGMA optimize")
    conn.close()
    bc.finish_db(partial)
    partial.replace(path)
    secs = (bc.now_ns() - t0) / 1e9
    print(f"  seeded in {secs:.0f} s ({bc.db_size_mb(path):.0f} MB)", flush=True)
    return path


# --- capturing the statements ----------------------------------------------------------------


@dataclass
class _Recorder:
    active: bool = False
    via_sqlalchemy: bool = False
    statements: list[tuple[str, Any]] = field(default_factory=list)
    sqlalchemy_count: int = 0
    direct_count: int = 0
    traced: int = 0  # what SQLite itself reports running (a check on the capture)

    def trace(self, sql: str) -> None:
        # Statements FTS5 runs inside ours come prefixed with "--", or name the schema as
        # FTS5 does, quoted ('main'.data_version and the config table, read again once another
        # connection committed); COMMIT and ROLLBACK are recorded as connection calls.
        internal = sql.startswith("--") or "'main'." in sql
        if self.active and not internal and sql.strip().upper() not in _ENDS:
            self.traced += 1

    def add(self, sql: str, params: Any) -> None:
        if not self.active:
            return
        self.statements.append((sql, params))
        if sql in (COMMIT, ROLLBACK, PREFIX_MARK):
            return
        if self.via_sqlalchemy:
            self.sqlalchemy_count += 1
        else:
            self.direct_count += 1


_REC = _Recorder()


class _TracingCursor(sqlite3.Cursor):
    def execute(self, sql: str, parameters: Any = (), /) -> _TracingCursor:
        _REC.add(sql, tuple(parameters) if isinstance(parameters, list) else parameters)
        return super().execute(sql, parameters)

    def executemany(self, sql: str, seq: Any, /) -> _TracingCursor:
        raise RuntimeError("a context turn is not expected to call executemany")


class _TracingConnection(sqlite3.Connection):
    def cursor(self, factory: Any = _TracingCursor) -> Any:
        return super().cursor(factory)

    # The C shortcuts (conn.execute) create their cursor without calling cursor(): route them.
    def execute(self, sql: str, parameters: Any = (), /) -> Any:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, seq: Any, /) -> Any:
        return self.cursor().executemany(sql, seq)

    def commit(self) -> None:
        _REC.add(COMMIT, None)
        super().commit()

    def rollback(self) -> None:
        _REC.add(ROLLBACK, None)
        super().rollback()


def _capture_engine(path: Path) -> Any:
    """A philont engine whose connections record every statement (capture runs only)."""
    from sqlalchemy import event

    from philont.db.engine import create_engine

    engine = create_engine(path)

    @event.listens_for(engine, "do_connect")
    def _factory(dialect: Any, conn_rec: Any, cargs: Any, cparams: dict[str, Any]) -> None:
        cparams["factory"] = _TracingConnection

    @event.listens_for(engine, "connect")
    def _trace(dbapi_conn: sqlite3.Connection, conn_rec: Any) -> None:
        dbapi_conn.set_trace_callback(_REC.trace)

    @event.listens_for(engine, "before_cursor_execute")
    def _before(conn: Any, cursor: Any, statement: str, params: Any, ctx: Any, many: Any) -> None:
        _REC.via_sqlalchemy = True

    @event.listens_for(engine, "after_cursor_execute")
    def _after(conn: Any, cursor: Any, statement: str, params: Any, ctx: Any, many: Any) -> None:
        _REC.via_sqlalchemy = False

    return engine


def _replay(conn: sqlite3.Connection, statements: Sequence[tuple[str, Any]]) -> None:
    _replay_timed(conn, statements)


# --- the measuring process -------------------------------------------------------------------


def _kind(query: str) -> str:
    if query in bc._CHITCHAT:
        return "small talk"
    if any("\u4e00" <= ch <= "\u9fff" for ch in query):
        return "Chinese question"
    return "English question"


def _clock() -> datetime:
    return bc.TURN_NOW


def _turn(store: Any, query: str, marks: list[int] | None = None) -> None:
    """One turn: recency + recall, then the memory prefix, in one (read) unit of work."""
    with store.begin(write=False) as mem:
        if marks is not None:
            marks.append(bc.now_ns())
        mem.retriever.retrieve(query)
        if marks is not None:
            marks.append(bc.now_ns())
        _REC.add(PREFIX_MARK, None)
        mem.prefix.build()
        if marks is not None:
            marks.append(bc.now_ns())


def _replay_timed(conn: sqlite3.Connection, statements: Sequence[tuple[str, Any]]) -> list[int]:
    marks = [bc.now_ns()]
    for sql, params in statements:
        if sql == PREFIX_MARK:
            marks.append(bc.now_ns())
        elif sql == COMMIT:
            conn.commit()
        elif sql == ROLLBACK:
            conn.rollback()
        else:
            cur = conn.cursor()
            cur.execute(sql, params)
            cur.fetchall()
            cur.close()
    marks.append(bc.now_ns())
    return marks


def measure_child(db_text: str, n_queries: int, rounds: int, profile_turns: int) -> dict[str, Any]:
    from philont.db.engine import create_engine
    from philont.store import Store

    path = Path(db_text)
    rss_start = bc.current_rss_mib()
    gen = bc.TextGen(1234)
    queries = [gen.query() for _ in range(n_queries)]

    # 1. capture each turn's statements (this also warms the file's pages)
    capture = _capture_engine(path)
    cfactory = Store(capture, clock=_clock)
    _turn(cfactory, queries[0])  # first connection: PRAGMAs etc. stay out of the capture
    captured: list[list[tuple[str, Any]]] = []
    for q in queries:
        _REC.statements = []
        _REC.active = True
        _turn(cfactory, q)
        _REC.active = False
        captured.append(_REC.statements)
    sa_count, direct_count = _REC.sqlalchemy_count, _REC.direct_count
    capture.dispose()
    if _REC.traced != sa_count + direct_count:
        raise RuntimeError(
            f"statement capture incomplete: SQLite ran {_REC.traced} statements, captured"
            f" {sa_count + direct_count}; the library reaches SQLite some other way"
        )

    # 2. warm both sides, then alternate turn by turn
    engine = create_engine(path)
    factory = Store(engine, clock=_clock)
    raw = bc.connect_raw(path)
    for q, stmts in zip(queries, captured, strict=True):
        _turn(factory, q)
        _replay(raw, stmts)
    ours: list[list[int]] = []
    theirs: list[list[int]] = []

    def run_ours(q: str) -> None:
        marks: list[int] = [bc.now_ns()]
        _turn(factory, q, marks)
        marks.append(bc.now_ns())
        ours.append(marks)

    for r in range(rounds):
        for i, (q, stmts) in enumerate(zip(queries, captured, strict=True)):
            if (i + r) % 2 == 0:
                run_ours(q)
                theirs.append(_replay_timed(raw, stmts))
            else:
                theirs.append(_replay_timed(raw, stmts))
                run_ours(q)
    rss_peak = bc.peak_rss_mib()

    prof: tuple[dict[str, float], list[str]] | None = None
    if profile_turns:

        def many_turns() -> None:
            for k in range(profile_turns):
                _turn(factory, queries[k % len(queries)])

        prof = bc.profile_summary(many_turns)
    raw.close()
    engine.dispose()
    count = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    n_messages = count.execute("SELECT count(*) FROM memory_raw_messages").fetchone()[0]
    count.close()
    n_stmts = [sum(1 for s, _p in c if s not in (COMMIT, ROLLBACK, PREFIX_MARK)) for c in captured]
    return {
        "n_messages": n_messages,
        # ours marks: start, session open, retrieve done, prefix done, end
        "ours_ms": [(m[4] - m[0]) / 1e6 for m in ours],
        "ours_retrieve_ms": [(m[2] - m[1]) / 1e6 for m in ours],
        "ours_prefix_ms": [(m[3] - m[2]) / 1e6 for m in ours],
        # raw marks: start, prefix mark, end
        "raw_ms": [(m[-1] - m[0]) / 1e6 for m in theirs],
        "raw_retrieve_ms": [(m[1] - m[0]) / 1e6 for m in theirs],
        "raw_prefix_ms": [(m[-1] - m[1]) / 1e6 for m in theirs],
        "statements": bc.median(n_stmts),
        "via_sqlalchemy": sa_count / len(queries),
        "direct": direct_count / len(queries),
        "rss_start": rss_start,
        "rss_peak": rss_peak,
        "profile": prof,
        "kinds": [_kind(q) for _r in range(rounds) for q in queries],
    }


# --- driver ----------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sizes", type=bc.parse_count, nargs="+", metavar="N", help="default: 10k 100k"
    )
    parser.add_argument("--full", action="store_true", help="add 1M messages (takes many minutes)")
    parser.add_argument("--queries", type=int, default=200, help="distinct turns per size")
    parser.add_argument("--rounds", type=int, default=2, help="timed passes over the turns")
    parser.add_argument(
        "--profile-turns", type=int, default=200, help="cProfile this many turns (0: skip)"
    )
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    sizes = sorted(set(args.sizes or DEFAULT_SIZES))
    if args.full and FULL_SIZE not in sizes:
        sizes.append(FULL_SIZE)
    if max(sizes) >= FULL_SIZE:
        print("warning: 1M messages: seeding takes many minutes the first time", file=sys.stderr)
    load_at_start, started = bc.announce_run()
    results: dict[int, dict[str, Any]] = {}
    for n in sizes:
        print(f"\n{bc.human_count(n)} messages", flush=True)
        db = context_db(n)
        prof_turns = args.profile_turns if n == max(sizes) else 0
        res = bc.run_isolated(measure_child, str(db), args.queries, args.rounds, prof_turns)
        res["db_mb"] = bc.db_size_mb(db)
        results[n] = res
        print(
            f"  philont p50 {bc.median(res['ours_ms']):.2f} ms p95"
            f" {bc.percentile(res['ours_ms'], 95):.2f} ms | raw p50"
            f" {bc.median(res['raw_ms']):.2f} ms p95 {bc.percentile(res['raw_ms'], 95):.2f} ms"
            f" | peak RSS {res['rss_peak']:.0f} MiB",
            flush=True,
        )

    base_rss = results[sizes[0]]["rss_peak"]
    rows = []
    detail = []
    for n in sizes:
        r = results[n]
        o50, o95 = bc.median(r["ours_ms"]), bc.percentile(r["ours_ms"], 95)
        w50, w95 = bc.median(r["raw_ms"]), bc.percentile(r["raw_ms"], 95)
        ratio50, ratio95 = o50 / w50, o95 / w95
        p95_ok = o95 <= P95_TARGET_MS
        growth = (r["rss_peak"] - base_rss) / base_rss
        rows.append(
            [
                bc.human_count(n),
                f"{o50:.2f}",
                f"{o95:.2f}",
                f"{w50:.2f}",
                f"{w95:.2f}",
                f"{ratio50:.2f}x / {ratio95:.2f}x",
                bc.yes_no(ratio50 <= RATIO_TARGET and ratio95 <= RATIO_TARGET),
                bc.yes_no(p95_ok) if n == P95_TARGET_SIZE else f"({'yes' if p95_ok else 'no'})",
                f"{r['rss_peak']:.0f}",
                f"{100 * growth:+.0f}%" if n != sizes[0] else "-",
                bc.yes_no(growth <= RSS_GROWTH_LIMIT) if n != sizes[0] else "-",
            ]
        )
        detail.append(
            [
                bc.human_count(n),
                f"{r['n_messages']:,}",
                f"{bc.median(r['ours_retrieve_ms']):.2f} / {bc.median(r['raw_retrieve_ms']):.2f}",
                f"{bc.median(r['ours_prefix_ms']):.2f} / {bc.median(r['raw_prefix_ms']):.2f}",
                f"{r['statements']:.0f} ({r['via_sqlalchemy']:.1f} via SQLAlchemy,"
                f" {r['direct']:.1f} direct)",
                f"{r['rss_start']:.0f}",
                f"{r['db_mb']:.0f}",
            ]
        )
    table = bc.table(
        [
            "messages",
            "philont p50 ms",
            "philont p95 ms",
            "raw p50 ms",
            "raw p95 ms",
            "ratio p50 / p95",
            "<= 2x raw",
            f"p95 <= {P95_TARGET_MS:.0f} ms",
            "peak RSS MiB",
            "RSS vs smallest",
            "RSS flat (<= +10%)",
        ],
        rows,
    )
    detail_table = bc.table(
        [
            "messages",
            "rows",
            "retrieve p50 ms philont / raw",
            "prefix p50 ms philont / raw",
            "statements per turn",
            "RSS at start MiB",
            "db MB",
        ],
        detail,
    )
    kind_rows = []
    for n in sizes:
        r = results[n]
        for kind in sorted(set(r["kinds"])):
            idx = [i for i, k in enumerate(r["kinds"]) if k == kind]
            ours = [r["ours_ms"][i] for i in idx]
            raw = [r["raw_ms"][i] for i in idx]
            retr = [r["ours_retrieve_ms"][i] for i in idx]
            raw_retr = [r["raw_retrieve_ms"][i] for i in idx]
            kind_rows.append(
                [
                    bc.human_count(n),
                    kind,
                    str(len(idx)),
                    f"{bc.median(ours):.2f} / {bc.percentile(ours, 95):.2f}",
                    f"{bc.median(raw):.2f} / {bc.percentile(raw, 95):.2f}",
                    f"{bc.median(retr):.2f} / {bc.percentile(retr, 95):.2f}",
                    f"{bc.median(raw_retr):.2f} / {bc.percentile(raw_retr, 95):.2f}",
                ]
            )
    kind_table = bc.table(
        [
            "messages",
            "user message",
            "turns",
            "turn p50 / p95 ms philont",
            "turn p50 / p95 ms raw",
            "retrieve p50 / p95 ms philont",
            "retrieve p50 / p95 ms raw",
        ],
        kind_rows,
    )
    print("\n" + table + "\n\n" + detail_table + "\n\n" + kind_table)
    prof = results[max(sizes)]["profile"]
    prof_text = ""
    if prof:
        shares, lines = prof
        prof_text = (
            f"{args.profile_turns} turns at {bc.human_count(max(sizes))} messages, share of own"
            " time:\n  "
            + ", ".join(f"{k} {v:.0f}%" for k, v in shares.items())
            + "\n"
            + "\n".join(("  " if line.endswith(":") else "    ") + line for line in lines)
        )
        print("\n" + prof_text)
    elapsed = (datetime.now(UTC) - started).total_seconds()
    if not args.no_write:
        body = [
            "## Context building: one turn vs the same SQL through raw sqlite3",
            "",
            bc.run_header(bc.command_line(), load_at_start),
            "A turn: `mem.retriever.retrieve(user_message)` (recency window and"
            " keyword recall, defaults) and `mem.prefix.build()` in one unit of work"
            f" (`with store.begin(write=False) as mem`). {args.queries} distinct user messages"
            " (English questions naming topics and rare terms, Chinese questions, small talk),"
            f" {args.rounds} timed passes after a warm-up pass, philont and raw alternating turn"
            " by turn. Raw: the statements the warm-up turn issued (captured with their"
            " parameters) replayed on a plain sqlite3 connection with the same PRAGMAs, commit"
            " included. The database holds the messages over a year of sessions plus ~300"
            " facts, ~50 skills and ~200 notes.",
            "",
            table,
            "",
            detail_table,
            "",
            "By kind of user message (recall only runs keyword search; its cost depends on"
            " the words):",
            "",
            kind_table,
            "",
            "Peak RSS is the VmHWM of the measuring process (Python, imports and both"
            " connections included); flat means at most +10% over the smallest size.",
            "",
            f"Whole run: {elapsed / 60:.1f} min (seeding of uncached databases included).",
        ]
        body += bc.profile_block(
            prof_text,
            "cProfile own time; it inflates Python code more"
            " than C, so read the Python shares as an upper bound",
        )
        bc.update_doc_section("context", "\n".join(body))
        print(f"\nupdated {bc.DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
