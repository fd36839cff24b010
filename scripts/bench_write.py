"""Write benchmark: appending to the timeline through TimelineService vs raw sqlite3.

Usage (from the repository root)::

    .venv/bin/python scripts/bench_write.py            # N = 10k and 100k
    .venv/bin/python scripts/bench_write.py --full     # also N = 1M (takes several minutes)
    .venv/bin/python scripts/bench_write.py --sizes 50k --singles 2000 --no-write

For each N, on databases built by ``philont.migrate.upgrade`` (same schema, same FTS triggers)
with the PRAGMAs of ``philont.db.engine`` on both sides:

* bulk import: N messages in ONE transaction, through ``TimelineService.append_many`` in
  batches of ``--batch`` vs ``executemany`` of the same INSERT in the same batches. Only the
  calls and the commit are timed (building the inputs is not). Each repetition runs in a fresh
  spawned process (its peak RSS is reported); philont and raw alternate.
* single appends onto the N-message databases: ``--singles`` messages, each in its own
  unit of work (``with store.begin() as mem: mem.timeline.append(...)`` vs
  ``BEGIN; INSERT; COMMIT``), interleaved message by message; a third side, the *floor*, runs
  the raw INSERT inside a plain Session unit of work (what SQLAlchemy costs before any
  service code runs).

Targets (issue #13): single append <= 1.25x the floor (median) and p95 <= 1 ms at 1M
messages; bulk >= 0.7x raw throughput. The ratio to raw sqlite3 is reported for information
(its earlier <= 1.5x target was withdrawn: the Session floor alone costs more than that).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _bench_common as bc

FLOOR_TARGET = 1.25
"""Single append's median against the Session floor's."""
P95_TARGET_US = 1000.0
"""Single append's p95 (the issue asks it at 1M messages; shown at every size)."""
BULK_TARGET = 0.7
DEFAULT_SIZES = (10_000, 100_000)
FULL_SIZE = 1_000_000
REPEATS = {10_000: 5, 100_000: 3}  # bulk repetitions per side; 1 for larger sizes


def _chunks(
    rows: Iterator[tuple[str, str, str, int]], size: int
) -> Iterator[list[tuple[str, str, str, int]]]:
    chunk: list[tuple[str, str, str, int]] = []
    for row in rows:
        chunk.append(row)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def _values_page_size() -> int:
    """Rows per multi-row INSERT that SQLAlchemy's insertmanyvalues uses for SQLite."""
    from sqlalchemy.dialects.sqlite import pysqlite

    return int(pysqlite.dialect().insertmanyvalues_page_size)


def _values_sql(rows: int) -> str:
    """The statement TimelineService.append_many makes SQLAlchemy emit (one page of rows)."""
    head = bc.INSERT_MESSAGE.split(" VALUES ")[0]
    return f"{head} VALUES {', '.join(['(?, ?, ?, ?)'] * rows)} RETURNING id"


# --- child processes -------------------------------------------------------------------------


def bulk_child(kind: str, n: int, batch: int, path_text: str) -> dict[str, Any]:
    """Import n generated messages into a fresh database at ``path_text``; time it."""
    from philont.db.engine import create_engine
    from philont.db.types import from_epoch_ms
    from philont.schemas.timeline import MessageIn
    from philont.store import Store

    path = bc.new_db(Path(path_text))
    sessions, rows = bc.timeline(n)
    raw = bc.connect_raw(path)
    raw.execute("BEGIN")
    bc.insert_sessions(raw, sessions)  # sessions exist before the import (not timed)
    raw.execute("COMMIT")
    rss_before = bc.current_rss_mib()
    chunk_ns: list[int] = []
    if kind in ("raw", "raw-values"):
        page = _values_page_size()
        t0 = bc.now_ns()
        raw.execute("BEGIN")
        begin_ns = bc.now_ns() - t0
        for chunk in _chunks(rows, batch):
            if kind == "raw":
                t0 = bc.now_ns()
                raw.executemany(bc.INSERT_MESSAGE, chunk)
                chunk_ns.append(bc.now_ns() - t0)
                continue
            pages = [
                (_values_sql(len(p)), [v for row in p for v in row])
                for p in (chunk[i : i + page] for i in range(0, len(chunk), page))
            ]
            t0 = bc.now_ns()
            for sql, params in pages:
                cur = raw.execute(sql, params)
                cur.fetchall()
                cur.close()
            chunk_ns.append(bc.now_ns() - t0)
        t0 = bc.now_ns()
        raw.execute("COMMIT")
        end_ns = bc.now_ns() - t0
        raw.close()
    else:
        raw.close()
        engine = create_engine(path)
        store = Store(engine)
        with store.begin() as mem:
            t0 = bc.now_ns()
            service = mem.timeline
            mem.session.connection()  # the unit of work's BEGIN, timed as on the raw side
            begin_ns = bc.now_ns() - t0
            for chunk in _chunks(rows, batch):
                messages = [
                    MessageIn(content=c, role=r, session_id=s, at=from_epoch_ms(ts))
                    for s, r, c, ts in chunk
                ]
                t0 = bc.now_ns()
                service.append_many(messages)
                chunk_ns.append(bc.now_ns() - t0)
            t0 = bc.now_ns()
        end_ns = bc.now_ns() - t0  # the commit, when the block ends
        engine.dispose()
    total_ns = begin_ns + sum(chunk_ns) + end_ns
    return {
        "kind": kind,
        "n": n,
        "seconds": total_ns / 1e9,
        "per_msg_us": total_ns / 1e3 / n,
        "rate": n / (total_ns / 1e9),
        "chunk_ms": [c / 1e6 for c in chunk_ns],
        "rss_before": rss_before,
        "rss_peak": bc.peak_rss_mib(),
        "db_mb": bc.db_size_mb(path),
    }


def singles_child(
    orm_path: str, raw_path: str, floor_path: str, count: int, warmup: int
) -> dict[str, Any]:
    """``count`` single appends on each of three databases, in rotating order; times in us.

    Besides philont and raw sqlite3, the *floor*: the same unit of work as philont's (``with
    Session() as s, s.begin():``) running the raw INSERT on the session's DB-API connection,
    i.e. what any service under the caller-owns-the-transaction rule costs at the least.
    """
    from sqlalchemy.orm import sessionmaker

    from philont.db.engine import create_engine
    from philont.store import Store

    engine = create_engine(orm_path)
    store = Store(engine)
    floor_engine = create_engine(floor_path)
    floor_factory = sessionmaker(bind=floor_engine, expire_on_commit=False)
    raw = bc.connect_raw(raw_path)
    gen = bc.TextGen(99)

    def orm(role: str, content: str) -> None:
        with store.begin() as mem:
            mem.timeline.append(content, role=role, session_id="global")

    def plain(role: str, content: str) -> None:
        raw.execute("BEGIN")
        raw.execute(bc.INSERT_MESSAGE, ("global", role, content, int(time.time() * 1000)))
        raw.execute("COMMIT")

    def floor(role: str, content: str) -> None:
        with floor_factory() as session, session.begin():
            conn = session.connection().connection.driver_connection
            conn.execute(bc.INSERT_MESSAGE, ("global", role, content, int(time.time() * 1000)))

    sides = [(orm, "ours_us"), (plain, "raw_us"), (floor, "floor_us")]
    out: dict[str, Any] = {key: [] for _fn, key in sides}
    for i in range(warmup + count):
        role = "user" if i % 2 == 0 else "assistant"
        content = gen.message(role)
        k = i % len(sides)
        for fn, key in sides[k:] + sides[:k]:
            t0 = bc.now_ns()
            fn(role, content)
            elapsed = bc.now_ns() - t0
            if i >= warmup:
                out[key].append(elapsed / 1e3)
    raw.close()
    engine.dispose()
    floor_engine.dispose()
    out["rss_peak"] = bc.peak_rss_mib()
    return out


def profile_child(path_text: str, singles: int, batch: int) -> dict[str, Any]:
    """Where the time of philont's single and bulk appends goes (cProfile, own time)."""
    from philont.db.engine import create_engine
    from philont.db.types import from_epoch_ms
    from philont.schemas.timeline import MessageIn
    from philont.store import Store

    path = bc.new_db(Path(path_text))
    sessions, rows = bc.timeline(batch)
    raw = bc.connect_raw(path)
    bc.insert_sessions(raw, sessions)
    raw.close()
    engine = create_engine(path)
    store = Store(engine)
    gen = bc.TextGen(5)
    contents = [gen.message("user") for _ in range(singles)]

    def single() -> None:
        for c in contents:
            with store.begin() as mem:
                mem.timeline.append(c, role="user", session_id="global")

    messages = [
        MessageIn(content=c, role=r, session_id=s, at=from_epoch_ms(ts)) for s, r, c, ts in rows
    ]

    def bulk() -> None:
        with store.begin() as mem:
            mem.timeline.append_many(messages)

    single()  # warm-up (statement caches, pages)
    out = {"single": bc.profile_summary(single), "bulk": bc.profile_summary(bulk)}
    engine.dispose()
    return out


# --- driver ----------------------------------------------------------------------------------


KINDS = ("philont", "raw", "raw-values")


def run_size(n: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    repeats = args.repeat or REPEATS.get(n, 1)
    label = bc.human_count(n)
    print(f"\nN = {label}: bulk import x{repeats} per side, then {args.singles} single appends")
    bulk: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
    paths = {k: work / f"{k}-{n}.sqlite" for k in KINDS}
    for rep in range(repeats):
        order = KINDS[rep % len(KINDS) :] + KINDS[: rep % len(KINDS)]
        for kind in order:
            bc.remove_db(paths[kind])
            res = bc.run_isolated(bulk_child, kind, n, args.batch, str(paths[kind]))
            bulk[kind].append(res)
            print(
                f"  bulk {kind:<10} rep {rep + 1}: {res['seconds']:7.2f} s "
                f"({res['rate']:>9,.0f} msg/s, peak RSS {res['rss_peak']:.0f} MiB)",
                flush=True,
            )
    # Single appends go onto three identical copies of one N-message database.
    for kind in ("philont", "raw-values"):
        bc.remove_db(paths[kind])
        bc.copy_db(paths["raw"], paths[kind])
    singles = bc.run_isolated(
        singles_child,
        str(paths["philont"]),
        str(paths["raw"]),
        str(paths["raw-values"]),
        args.singles,
        args.warmup,
    )
    s = singles
    print(
        f"  single appends: philont median {bc.median(s['ours_us']):.0f} us,"
        f" raw median {bc.median(s['raw_us']):.0f} us,"
        f" floor median {bc.median(s['floor_us']):.0f} us",
        flush=True,
    )
    result = {"n": n, "bulk": bulk, "singles": singles, "db_mb": bulk["raw"][-1]["db_mb"]}
    for p in paths.values():
        bc.remove_db(p)
    return result


def _bulk_row(
    label: str, ours: list[dict[str, Any]], base: list[dict[str, Any]], what: str, target: bool
) -> list[str]:
    o_us = [b["per_msg_us"] for b in ours]
    w_us = [b["per_msg_us"] for b in base]
    thr = bc.median([b["rate"] for b in ours]) / bc.median([b["rate"] for b in base])
    return [
        label,
        f"bulk import vs {what} (us/msg, reps={len(ours)})",
        f"{bc.median(o_us):.1f}",
        f"{bc.percentile(o_us, 95):.1f}",
        f"{bc.median(w_us):.1f}",
        f"{bc.percentile(w_us, 95):.1f}",
        f"{thr:.2f}x throughput",
        f">= {BULK_TARGET}x" if target else "(information)",
        bc.yes_no(thr >= BULK_TARGET) if target else "-",
    ]


def summarise(results: Sequence[dict[str, Any]]) -> tuple[list[list[str]], list[list[str]]]:
    rows: list[list[str]] = []
    rss_rows: list[list[str]] = []
    for r in results:
        label = bc.human_count(r["n"])
        s = r["singles"]
        o_med, o_p95 = bc.median(s["ours_us"]), bc.percentile(s["ours_us"], 95)
        w_med, w_p95 = bc.median(s["raw_us"]), bc.percentile(s["raw_us"], 95)
        f_med, f_p95 = bc.median(s["floor_us"]), bc.percentile(s["floor_us"], 95)
        n = len(s["ours_us"])
        rows += [
            [
                label,
                f"single append vs the floor (TimelineService's own cost, n={n})",
                f"{o_med:.0f}",
                f"{o_p95:.0f}",
                f"{f_med:.0f}",
                f"{f_p95:.0f}",
                f"{o_med / f_med:.2f}x time",
                f"<= {FLOOR_TARGET}x",
                bc.yes_no(o_med / f_med <= FLOOR_TARGET),
            ],
            [
                label,
                "single append p95 (us)",
                f"{o_med:.0f}",
                f"{o_p95:.0f}",
                "",
                "",
                "",
                f"p95 <= {P95_TARGET_US:.0f} us",
                bc.yes_no(o_p95 <= P95_TARGET_US),
            ],
            [
                label,
                "single append vs raw",
                f"{o_med:.0f}",
                f"{o_p95:.0f}",
                f"{w_med:.0f}",
                f"{w_p95:.0f}",
                f"{o_med / w_med:.2f}x time",
                "(information)",
                "-",
            ],
            [
                label,
                "floor (Session unit of work + raw INSERT) vs raw",
                f"{f_med:.0f}",
                f"{f_p95:.0f}",
                f"{w_med:.0f}",
                f"{w_p95:.0f}",
                f"{f_med / w_med:.2f}x time",
                "(information)",
                "-",
            ],
        ]
        b = r["bulk"]
        rows.append(_bulk_row(label, b["philont"], b["raw"], "executemany", True))
        rows.append(_bulk_row(label, b["philont"], b["raw-values"], "multi-row VALUES", False))
        rates = [f"{bc.median([x['rate'] for x in b[k]]):,.0f}" for k in KINDS]
        rss_rows.append(
            [
                label,
                " / ".join(rates),
                " / ".join(f"{max(x['rss_peak'] for x in b[k]):.0f}" for k in KINDS),
                f"{s['rss_peak']:.0f}",
                f"{r['db_mb']:.0f}",
            ]
        )
    return rows, rss_rows


HEADERS = [
    "N",
    "operation (A vs B)",
    "A median",
    "A p95",
    "B median",
    "B p95",
    "ratio",
    "target",
    "met",
]
RSS_HEADERS = [
    "N",
    "bulk msg/s: philont / executemany / VALUES",
    "bulk peak RSS MiB: philont / executemany / VALUES",
    "singles peak RSS MiB (all three sides)",
    "db size MB",
]


def _profile_text(profile: dict[str, Any], singles: int, batch: int) -> str:
    parts = []
    for key, title in (
        ("single", f"{singles} single appends (each its own transaction)"),
        ("bulk", f"append_many of {batch:,} messages"),
    ):
        shares, lines = profile[key]
        parts.append(f"{title}, share of own time:")
        parts.append("  " + ", ".join(f"{k} {v:.0f}%" for k, v in shares.items()))
        parts.extend(("  " if line.endswith(":") else "    ") + line for line in lines)
    return "\n".join(parts)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--sizes", type=bc.parse_count, nargs="+", metavar="N", help="default: 10k 100k"
    )
    parser.add_argument("--full", action="store_true", help="add N = 1M (takes several minutes)")
    parser.add_argument("--batch", type=int, default=10_000, help="messages per append_many")
    parser.add_argument("--singles", type=int, default=3000, help="single appends per side")
    parser.add_argument("--warmup", type=int, default=100, help="untimed single appends first")
    parser.add_argument("--repeat", type=int, help="bulk repetitions per side (default 5/3/1)")
    parser.add_argument("--no-profile", action="store_true", help="skip the cProfile breakdown")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    sizes = list(args.sizes or DEFAULT_SIZES)
    if args.full and FULL_SIZE not in sizes:
        sizes.append(FULL_SIZE)
    if max(sizes) >= FULL_SIZE:
        print("warning: 1M messages takes several minutes and a few GB of disk", file=sys.stderr)
    load_at_start, started = bc.announce_run()
    work = bc.scratch_dir("write-")
    try:
        results = [run_size(n, args, work) for n in sizes]
        profile = None
        if not args.no_profile:
            print("\nprofiling philont's appends (cProfile) ...")
            profile = bc.run_isolated(profile_child, str(work / "profile.sqlite"), 1000, args.batch)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    rows, rss_rows = summarise(results)
    text_table = bc.table(HEADERS, rows)
    rss_table = bc.table(RSS_HEADERS, rss_rows)
    print("\n" + text_table + "\n\n" + rss_table)
    prof_text = _profile_text(profile, 1000, args.batch) if profile else ""
    if prof_text:
        print("\n" + prof_text)
    elapsed = (datetime.now(UTC) - started).total_seconds()
    if not args.no_write:
        body = [
            "## Writing: TimelineService vs raw sqlite3",
            "",
            bc.run_header(bc.command_line(), load_at_start),
            "Single append: one message per unit of work (`with store.begin() as mem:"
            " mem.timeline.append(...)` vs `BEGIN; INSERT; COMMIT` on a plain sqlite3"
            f" connection), {args.singles} per side after {args.warmup} warm-up, interleaved"
            " message by message in rotating order, onto identical copies of an N-message"
            " database. A third side measures the floor of the transaction-per-message pattern:"
            " a plain `with Session() as s, s.begin():` unit of work running the raw INSERT on"
            " the session's DB-API connection, with no service code at all. The floor's ratio to"
            " raw is what SQLAlchemy's Session costs before any service runs; philont's ratio to"
            " the floor is TimelineService's own share."
            " Bulk import: N messages in one transaction"
            f" (`append_many` in batches of {args.batch:,} vs `executemany` of the same"
            " batches; building the inputs is not timed), each repetition in a fresh process."
            " A second raw baseline sends the statements philont actually emits: SQLAlchemy's"
            " insertmanyvalues turns `append_many` into multi-row `INSERT ... VALUES (...),"
            f" ... RETURNING id` of {_values_page_size()} rows; the ratio against it isolates"
            " Python/ORM overhead. Times in microseconds per message; medians and p95 over the"
            " appends (single) or the repetitions (bulk).",
            "",
            text_table,
            "",
            "Peak RSS (VmHWM of each measuring process, Python and imports included):",
            "",
            rss_table,
            "",
            f"Whole run: {elapsed / 60:.1f} min.",
        ]
        body += bc.profile_block(
            prof_text,
            "cProfile own time; it inflates Python code more"
            " than C, so read the shares as an upper bound for the Python side",
        )
        bc.update_doc_section("write", "\n".join(body))
        print(f"\nupdated {bc.DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
