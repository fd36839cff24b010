"""Migration benchmark: adopting a Philont v2-shaped database with many messages.

Usage (from the repository root)::

    .venv/bin/python scripts/bench_migrate.py                      # 100k messages
    .venv/bin/python scripts/bench_migrate.py --messages 1000000   # the 1M target (minutes)
    .venv/bin/python scripts/bench_migrate.py --messages 100k 1M   # both, one table
    .venv/bin/python scripts/bench_migrate.py --fixture PATH --no-write

The v2 database is a copy of the original's hand-built v2 fixture
(``../shared/fixtures/philont/v2.sqlite``, or ``--fixture``) with N generated messages (and
their sessions) bulk-inserted into ``memory_raw_messages`` with raw sqlite3; it is built once
and cached under the temp dir. Each run copies it and times ``philont.migrate.upgrade(path,
on_step=...)`` -- backup, adoption as v002, every revision to head, including the FTS5 trigram
and word-index builds over all messages -- in a fresh spawned process, with a rich progress bar
on stderr; its peak RSS is that process's VmHWM. Alternating with it, a raw sqlite3 baseline
runs on another copy only the statements whose work grows with the messages (the trigram
``'rebuild'``, the session/time index, the word-index fill): the ratio shows how much of the
upgrade is SQLite's own index building.

Target: <= 60 s for 1M messages.
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sqlite3
import sys
from collections.abc import Sequence
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import _bench_common as bc

TARGET_S = 60.0
TARGET_MESSAGES = 1_000_000
DEFAULT_FIXTURE = Path(__file__).resolve().parents[2] / "shared/fixtures/philont/v2.sqlite"


def v2_db(fixture: Path, n: int) -> Path:
    """The cached v2-shaped database: the fixture plus n generated messages."""
    digest = hashlib.sha256(fixture.read_bytes()).hexdigest()[:10]
    path = bc.CACHE / f"v2-{n}-d{bc.DATA_VERSION}-{digest}.sqlite"
    if path.exists():
        return path
    bc.CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    bc.remove_db(partial)
    shutil.copyfile(fixture, partial)
    partial.chmod(0o600)
    print(f"  building a v2 database with {n:,} more messages (once; cached) ...", flush=True)
    t0 = bc.now_ns()
    sessions, rows = bc.timeline(n, seed=31)
    with closing(sqlite3.connect(str(partial), isolation_level=None)) as conn:
        conn.execute("PRAGMA synchronous = OFF")
        conn.execute("BEGIN")
        bc.insert_sessions(conn, sessions)
        bc.insert_messages(conn, rows)
        conn.execute("COMMIT")
    partial.replace(path)
    print(
        f"  built in {(bc.now_ns() - t0) / 1e9:.0f} s ({bc.db_size_mb(path):.0f} MB)",
        flush=True,
    )
    return path


def migrate_child(path_text: str, show_progress: bool) -> dict[str, Any]:
    """Time ``upgrade`` on the file, with a progress bar; per-revision times; peak RSS."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    from philont import migrate

    path = Path(path_text)
    revisions = [rev for rev, _doc in migrate.history()]
    total = len(revisions) - (revisions.index("v002") + 1 if "v002" in revisions else 0)
    rss_start = bc.current_rss_mib()
    steps: list[tuple[str, int]] = []
    with Progress(
        TextColumn("adopting v2 database"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[rev]}"),
        console=Console(stderr=True),
        transient=True,
        disable=not show_progress,
    ) as progress:
        task = progress.add_task("upgrade", total=total, rev="")

        def on_step(rev: str) -> None:
            steps.append((rev, bc.now_ns()))
            progress.update(task, advance=1, rev=rev)

        t0 = bc.now_ns()
        report = migrate.upgrade(path, on_step=on_step)
        t1 = bc.now_ns()
    durations = []
    prev = t0
    for rev, at in steps:
        durations.append((rev, (at - prev) / 1e9))
        prev = at
    durations.append(
        ("after the last revision (bootstrap rows, foreign-key check, commit)", (t1 - prev) / 1e9)
    )
    return {
        "seconds": (t1 - t0) / 1e9,
        "steps": durations,
        "applied": len(report.applied),
        "stamped": report.stamped,
        "backup_mb": report.backup.stat().st_size / 1e6 if report.backup else 0.0,
        "rss_start": rss_start,
        "rss_peak": bc.peak_rss_mib(),
    }


# The statements of the upgrade whose work grows with the number of messages (v006's trigram
# index over the existing messages, v033's session/time index and word-index fill): the raw
# sqlite3 baseline runs just these, on a copy of the same v2 file, with the same PRAGMAs.
RAW_SESSION_TIME_INDEX = (
    "CREATE INDEX idx_philont_raw_messages_session_time ON memory_raw_messages"
    " (session_id, timestamp)"
)
RAW_TRIGRAM_REBUILD = (
    "INSERT INTO memory_raw_messages_fts(memory_raw_messages_fts) VALUES('rebuild')"
)
RAW_WORDS_FILL = (
    "INSERT INTO philont_raw_messages_words_fts(rowid, content, tail)"
    " SELECT rowid, content, substr(content, -2) FROM memory_raw_messages"
)


def _bulk_load(table: str, statement: str) -> list[str]:
    """``statement`` inside the statements of ``migration_ops.fts5_bulk_load(table)``."""
    from philont.migration_ops import fts5_bulk_statements

    before, after = fts5_bulk_statements(table)
    return [*before, statement, *after]


def raw_child(path_text: str) -> dict[str, Any]:
    """The message-sized work of the upgrade in plain sqlite3, in one transaction."""
    from philont.db.fts import RAW_MESSAGES_FTS, RAW_MESSAGES_WORDS_FTS

    conn = bc.connect_raw(path_text)
    rss_start = bc.current_rss_mib()
    parts: list[tuple[str, float]] = []
    t0 = bc.now_ns()
    conn.execute("BEGIN")
    for label, statements in (
        (
            "trigram index (v006)",
            [RAW_MESSAGES_FTS.create, *_bulk_load("memory_raw_messages_fts", RAW_TRIGRAM_REBUILD)],
        ),
        ("session/time index (v033)", [RAW_SESSION_TIME_INDEX]),
        (
            "word index (v033)",
            [
                RAW_MESSAGES_WORDS_FTS.create,
                *_bulk_load("philont_raw_messages_words_fts", RAW_WORDS_FILL),
            ],
        ),
    ):
        t = bc.now_ns()
        for sql in statements:
            conn.execute(sql)
        parts.append((label, (bc.now_ns() - t) / 1e9))
    t = bc.now_ns()
    conn.execute("COMMIT")
    parts.append(("commit", (bc.now_ns() - t) / 1e9))
    seconds = (bc.now_ns() - t0) / 1e9
    conn.close()
    return {
        "seconds": seconds,
        "parts": parts,
        "rss_start": rss_start,
        "rss_peak": bc.peak_rss_mib(),
    }


def check_result(path: Path, n_expected: int) -> str:
    """A sanity check of the upgraded file: counts and both indexes answering."""
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
        n = conn.execute("SELECT count(*) FROM memory_raw_messages").fetchone()[0]
        words = conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM philont_raw_messages_words_fts"
            " WHERE philont_raw_messages_words_fts MATCH 'apartment' LIMIT 1000)"
        ).fetchone()[0]
        trigram = conn.execute(
            "SELECT count(*) FROM (SELECT rowid FROM memory_raw_messages_fts"
            " WHERE memory_raw_messages_fts MATCH '\"apartment\"' LIMIT 1000)"
        ).fetchone()[0]
        version = conn.execute(
            "SELECT value FROM memory_meta WHERE key = 'schema_version'"
        ).fetchone()
    ok = n >= n_expected and words > 0 and trigram > 0
    state = "ok" if ok else "FAILED"
    return (
        f"{state}: {n:,} messages, word index and trigram index both answer"
        f" ({words} / {trigram} hits for 'apartment', capped at 1000),"
        f" schema_version {version[0] if version else None}"
    )


def measure(fixture: Path, n: int, repeats: int, show_progress: bool) -> dict[str, Any]:
    """Build (or reuse) the n-message v2 database and time ``repeats`` upgrades of copies."""
    print(f"\n{bc.human_count(n)} messages added to the v2 fixture", flush=True)
    template = v2_db(fixture, n)
    with closing(sqlite3.connect(f"file:{template}?mode=ro", uri=True)) as conn:
        total = conn.execute("SELECT count(*) FROM memory_raw_messages").fetchone()[0]
    work = bc.scratch_dir("migrate-")
    runs: list[dict[str, Any]] = []
    raws: list[dict[str, Any]] = []
    copy_s: list[float] = []
    check = ""
    try:
        for rep in range(repeats):
            order = ("upgrade", "raw") if rep % 2 == 0 else ("raw", "upgrade")
            for kind in order:
                path = work / f"{kind}{rep}" / "memory.sqlite"
                t0 = bc.now_ns()
                bc.copy_db(template, path)
                copy_s.append((bc.now_ns() - t0) / 1e9)
                if kind == "raw":
                    res = bc.run_isolated(raw_child, str(path))
                    raws.append(res)
                    print(
                        f"  raw sqlite3 index builds {rep + 1}: {res['seconds']:.1f} s,"
                        f" peak RSS {res['rss_peak']:.0f} MiB",
                        flush=True,
                    )
                else:
                    res = bc.run_isolated(migrate_child, str(path), show_progress)
                    runs.append(res)
                    print(
                        f"  upgrade {rep + 1}: {res['seconds']:.1f} s, {res['applied']} revisions,"
                        f" peak RSS {res['rss_peak']:.0f} MiB",
                        flush=True,
                    )
                    check = check_result(path, total)
                shutil.rmtree(path.parent, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"  check: {check}")
    return {
        "n": n,
        "total": total,
        "runs": runs,
        "raws": raws,
        "copy_s": copy_s,
        "check": check,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--messages",
        type=bc.parse_count,
        nargs="+",
        default=[100_000],
        metavar="N",
        help="messages to add (default 100k; 1000000 for the target; several allowed)",
    )
    parser.add_argument("--fixture", type=Path, default=DEFAULT_FIXTURE, help="v2 database")
    parser.add_argument("--repeat", type=int, help="runs per size (default 3 up to 100k, else 1)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-write", action="store_true", help="do not update docs/benchmarks.md")
    args = parser.parse_args(argv)
    if not args.fixture.exists():
        print(f"no v2 fixture at {args.fixture} (use --fixture PATH)", file=sys.stderr)
        return 2
    sizes = sorted(set(args.messages))
    if max(sizes) >= TARGET_MESSAGES:
        print("warning: 1M messages takes several minutes and a few GB of disk", file=sys.stderr)
    load_at_start, started = bc.announce_run()
    results = [
        measure(args.fixture, n, args.repeat or (3 if n <= 100_000 else 1), not args.no_progress)
        for n in sizes
    ]
    rows = []
    for r in results:
        secs = [x["seconds"] for x in r["runs"]]
        med = bc.median(secs)
        per_million = med * 1_000_000 / max(r["total"], 1)
        at_target = r["total"] >= TARGET_MESSAGES
        raw_med = bc.median([x["seconds"] for x in r["raws"]])
        rows.append(
            [
                f"{r['total']:,}",
                str(len(secs)),
                f"{med:.1f}",
                f"{bc.percentile(secs, 95):.1f}",
                f"{raw_med:.1f}",
                f"{med / raw_med:.2f}x",
                f"{r['total'] / med:,.0f}",
                f"{per_million:.0f}",
                f"{max(x['rss_peak'] for x in r['runs']):.0f}",
                f"{r['runs'][0]['rss_start']:.0f}",
                f"{r['runs'][0]['backup_mb']:.0f} MB / {bc.median(r['copy_s']):.1f} s",
                bc.yes_no(med <= TARGET_S)
                if at_target
                else (
                    f"(~{per_million:.0f} s at 1M if linear)"
                    if r["total"] >= 100_000
                    else "(target is at 1M)"
                ),
            ]
        )
    table = bc.table(
        [
            "messages",
            "runs",
            "median s",
            "p95 s",
            "raw index builds median s",
            "ratio",
            "messages/s",
            "s per 1M",
            "peak RSS MiB",
            "RSS at start MiB",
            "backup size / one backup-API copy",
            f"<= {TARGET_S:.0f} s at 1M",
        ],
        rows,
    )
    # per-revision times of the largest size's median run, slowest first
    largest = results[-1]
    median_run = sorted(largest["runs"], key=lambda r: r["seconds"])[len(largest["runs"]) // 2]
    slow = sorted(median_run["steps"], key=lambda s: -s[1])[:6]
    step_rows = [[rev, f"{s:.2f}", f"{100 * s / median_run['seconds']:.0f}%"] for rev, s in slow]
    step_table = bc.table(["step (time up to its on_step)", "s", "share"], step_rows)
    median_raw = sorted(largest["raws"], key=lambda r: r["seconds"])[len(largest["raws"]) // 2]
    raw_rows = [[label, f"{s:.2f}"] for label, s in median_raw["parts"]]
    raw_rows.append(["peak RSS MiB", f"{median_raw['rss_peak']:.0f}"])
    raw_table = bc.table(["raw sqlite3, same statements", "s"], raw_rows)
    print("\n" + table + "\n\n" + step_table + "\n\n" + raw_table)
    elapsed = (datetime.now(UTC) - started).total_seconds()
    if not args.no_write:
        body = [
            "## Migration: adopting a v2-shaped database",
            "",
            bc.run_header(bc.command_line(), load_at_start),
            f"The original's v2 fixture (`{args.fixture.name}`, 20 messages) plus generated"
            " messages and their sessions, bulk-inserted with raw sqlite3 (no FTS: v2 had"
            " none). Timed: `philont.migrate.upgrade(path, on_step=...)` with a rich progress"
            " bar on stderr, in a fresh process per run -- read-only inspection, backup into"
            " `backups/`, adoption as v002, every revision to head in one transaction (the FTS5"
            " trigram index and our word index are built over every message), bootstrap rows"
            " and the foreign-key check. Ratio: upgrade median / raw index builds median. The"
            " backup column gives the size of the pre-upgrade"
            " backup and what one backup-API copy of that file took outside the upgrade.",
            "",
            table,
            "",
            f"Slowest steps at {largest['total']:,} messages (median run; each measured from the"
            " previous `on_step` callback, so the first one includes the inspection, the backup"
            " and the stamp):",
            "",
            step_table,
            "",
            "The raw baseline runs, in plain sqlite3 with the same PRAGMAs and in one"
            " transaction on a copy of the same v2 file, only the statements whose work grows"
            " with the messages (v006's trigram `'rebuild'`, v033's session/time index and"
            " word-index fill, each FTS5 fill with the same 32 MiB `hashsize` buffer as the"
            " revisions), alternating with the upgrade runs; at"
            f" {largest['total']:,} messages (median run):",
            "",
            raw_table,
            "",
            "Result check of the last upgraded file: " + largest["check"] + ".",
            "",
            f"Whole run: {elapsed / 60:.1f} min (building uncached v2 databases included).",
        ]
        bc.update_doc_section("migrate", "\n".join(body))
        print(f"\nupdated {bc.DOC}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
