"""Many agents in one PostgreSQL database: what one agent costs at 1 agent and at N agents.

One run on the given server (``--url``, a role that may create schemas), two fresh schemas:

1. each is migrated once and gets the probe agent with ``--messages`` messages (plus a few
   facts and notes) through the public API;
2. the second is filled to ``--agents`` agents with ``--messages`` messages each (COPY, the same
   text generator, so the agents share their vocabulary: every word's posting list spans all of
   them), then VACUUM ANALYZE; ``pg_class`` rows and the catalogs' size before and after;
3. ROUNDS rounds alternate between the two (the machine's other work disturbs both alike), each
   measuring: creating an agent through the API (median of CREATE_SAMPLES), warm recall
   (``retriever.retrieve``, p95 and p50 over the queries), cold first query (a new Store: open,
   first unit of work, one search; median), one agent's export (median);
4. a whole-database ``pg_dump -Fc`` with the server's default settings.

Ratios are (median over rounds at N agents) / (median over rounds at 1 agent). Targets:
creation <= 1.2x and <= 20 ms, recall p95 <= 1.2x, cold first query <= 1.2x, export <= 1.2x,
catalogs flat, the dump succeeds.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import TextGen, machine_line, median, percentile, table
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url

from philont import agents, migrate, transfer
from philont.db.engine import create_engine
from philont.store import Store

PROBE = "probe"
CREATE_SAMPLES = 21
ROUNDS = 5
QUERIES = 40
COLD_SAMPLES = 9
EXPORT_SAMPLES = 7
FILL_BATCH = 250  # agents per COPY


def _ms(fn: Callable[[], object]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def _admin(url: URL, sql: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(sql))
    finally:
        engine.dispose()


def _catalogs(store: Store, schema: str) -> tuple[int, int]:
    """``pg_class`` rows of the layout's schema (its tables, partitions, indexes, sequences,
    TOAST) and the bytes of every relation in ``pg_catalog`` but ``pg_statistic`` (ANALYZE's
    histograms: bounded by ``default_statistics_target``, refilled by every ANALYZE). Other
    schemas made meanwhile (tests sharing the server) show in the bytes, not in the rows."""
    with store.engine.connect() as conn:
        rows = int(
            conn.execute(
                text(
                    "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = :s OR (n.nspname = 'pg_toast' AND c.oid IN (SELECT"
                    " reltoastrelid FROM pg_class t JOIN pg_namespace tn ON tn.oid ="
                    " t.relnamespace WHERE tn.nspname = :s))"
                ),
                {"s": schema},
            ).scalar_one()
        )
        size = int(
            conn.execute(
                text(
                    "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c"
                    " JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = 'pg_catalog' AND c.relkind = 'r'"
                    " AND c.relname != 'pg_statistic'"
                )
            ).scalar_one()
        )
    return rows, size


def _create_timed(store: Store, prefix: str) -> float:
    """Creating an agent through the API: the median of CREATE_SAMPLES creations."""
    names = [f"{prefix}_{i}" for i in range(CREATE_SAMPLES)]
    return median([_ms(lambda name=name: agents.create(store, name)) for name in names])


def _quiet(store: Store, timeout_s: float = 120) -> None:
    """Wait until no autovacuum worker runs (after a bulk load it may for a while)."""
    deadline = time.monotonic() + timeout_s
    with store.engine.connect() as conn:
        while time.monotonic() < deadline:
            busy = conn.execute(
                text(
                    "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'"
                )
            ).scalar_one()
            conn.rollback()
            if not busy:
                return
            time.sleep(1)


def _probe_texts(gen: TextGen, n: int) -> list[str]:
    return [gen.message("user" if i % 2 == 0 else "assistant") for i in range(n)]


def _fill_probe(store: Store, texts: list[str]) -> None:
    from philont.schemas.timeline import MessageIn  # the API's own input type

    with store.begin(agent=PROBE) as mem:
        mem.timeline.append_many(
            [
                MessageIn(content=t, role="user" if i % 2 == 0 else "assistant")
                for i, t in enumerate(texts)
            ]
        )
        for i in range(10):
            mem.facts.store("user.profile", f"k{i}", f"value {i}")
            mem.notes.add(f"note {i}: {texts[i]}")


def _queries(texts: list[str], rng: random.Random) -> list[str]:
    out = []
    for _ in range(QUERIES):
        words = [w for w in rng.choice(texts).split() if w.isalpha() and len(w) > 3]
        out.append(" ".join(rng.sample(words, min(3, len(words)))) or "camping")
    return out


def _round(url: URL, store: Store, queries: list[str], prefix: str) -> dict[str, float]:
    """One round of every measurement on one database, in ms: creating an agent (median),
    warm recall p95 and p50 (``retriever.retrieve``), cold first query (a new Store: open,
    first unit of work, one search; median), one agent's export (median)."""
    create = _create_timed(store, prefix)
    warm = []
    for q in queries:
        with store.begin(agent=PROBE, write=False) as mem:
            warm.append(_ms(lambda mem=mem, q=q: mem.retriever.retrieve(q)))
    cold = []
    for q in queries[:COLD_SAMPLES]:

        def first_query(q: str = q) -> None:
            with Store.open(url) as fresh, fresh.begin(agent=PROBE, write=False) as mem:
                mem.search.messages(q)

        cold.append(_ms(first_query))
    exports = [
        _ms(lambda: transfer.export(url, io.StringIO(), agent=PROBE)) for _ in range(EXPORT_SAMPLES)
    ]
    return {
        "create": create,
        "recall_p95": percentile(warm, 95),
        "recall_p50": median(warm),
        "cold": median(cold),
        "export": median(exports),
    }


def _setup(server: URL, schema: str, texts: list[str]) -> tuple[URL, Store]:
    """A fresh schema at head holding the probe agent and its messages."""
    url = server.update_query_dict({"options": f"-csearch_path={schema},public"})
    _admin(server, f'DROP SCHEMA IF EXISTS "{schema}" CASCADE; CREATE SCHEMA "{schema}"')
    migrate.upgrade(url)
    store = Store.open(url)
    agents.create(store, PROBE)
    _fill_probe(store, texts)
    _admin(url, "ANALYZE")
    return url, store


def _copy_messages(driver: Any, ids: list[int], pool: list[str], n_messages: int) -> None:
    """``n_messages`` messages for each agent of ``ids``, numbered 1.. per agent (COPY)."""
    with driver.cursor().copy(
        "COPY memory_raw_messages (agent_id, id, session_id, role, content, timestamp) FROM STDIN"
    ) as copy:
        for agent_id in ids:
            base = (agent_id * 7919) % len(pool)
            for m in range(1, n_messages + 1):
                role = "user" if m % 2 else "assistant"
                content = pool[(base + m) % len(pool)]
                copy.write_row(
                    (agent_id, m, "global", role, content, 1_700_000_000_000 + m * 60_000)
                )


def _fill(url: URL, n_agents: int, n_messages: int, gen: TextGen) -> float:
    """Agents #... up to ``n_agents`` with ``n_messages`` each, in bulk (COPY); seconds."""
    pool = [gen.message("user") for _ in range(20_000)]
    engine = create_engine(url)
    started = time.perf_counter()
    try:
        with engine.connect() as conn:
            driver: Any = conn.connection.driver_connection
            conn.rollback()
            have = int(driver.execute("SELECT count(*) FROM philont_agents").fetchone()[0])
            driver.commit()
            todo = n_agents - have
            done = 0
            while done < todo:
                k = min(FILL_BATCH, todo - done)
                with driver.transaction():
                    ids = [
                        r[0]
                        for r in driver.execute(
                            "INSERT INTO philont_agents (name, created_at) SELECT 'fill' || g, 0"
                            " FROM generate_series(%s::int, %s::int) AS g RETURNING id",
                            (have + done, have + done + k - 1),
                        ).fetchall()
                    ]
                    driver.execute(
                        "INSERT INTO memory_raw_sessions (agent_id, id, started_at)"
                        " SELECT a, 'global', 0 FROM unnest(%s::bigint[]) AS a",
                        (ids,),
                    )
                    driver.execute(
                        "INSERT INTO memory_meta (agent_id, key, value)"
                        " SELECT a, 'schema_version', '31' FROM unnest(%s::bigint[]) AS a",
                        (ids,),
                    )
                    driver.execute(
                        "INSERT INTO philont_agent_ids (agent_id, name, last_value)"
                        " SELECT a, 'memory_raw_messages', %s FROM unnest(%s::bigint[]) AS a",
                        (n_messages, ids),
                    )
                    _copy_messages(driver, ids, pool, n_messages)
                done += k
                print(f"  filled {have + done}/{n_agents} agents", file=sys.stderr, flush=True)
            driver.autocommit = True
            driver.execute("VACUUM ANALYZE")
    finally:
        engine.dispose()
    return time.perf_counter() - started


def _pg_dump(url: URL) -> tuple[bool, float, str]:
    bins = sorted(Path("/usr/lib/postgresql").glob("*/bin/pg_dump"))
    binary = str(bins[-1]) if bins else "pg_dump"
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        done = subprocess.run(
            [binary, "-h", str(url.host), "-p", str(url.port or 5432), "-U", str(url.username),
             "-Fc", "-f", str(Path(tmp) / "all.dump"), str(url.database)],
            env={**os.environ, "PGPASSWORD": str(url.password or "")},
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        return done.returncode == 0, time.perf_counter() - t, done.stderr.strip()[-300:]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="postgresql+psycopg://... (a superuser)")
    parser.add_argument("--agents", type=int, default=10_000)
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--schema", default="bench_pg_agents", help="prefix; dropped, recreated")
    args = parser.parse_args(argv)
    server = make_url(args.url)
    print(machine_line())
    gen, rng = TextGen(5), random.Random(5)
    texts = _probe_texts(gen, args.messages)
    queries = _queries(texts, rng)
    one_url, one = _setup(server, f"{args.schema}_one", texts)
    many_url, many = _setup(server, f"{args.schema}_many", texts)
    catalogs_before = _catalogs(many, f"{args.schema}_many")
    print(f"filling to {args.agents} agents x {args.messages} messages...", file=sys.stderr)
    fill_s = _fill(many_url, args.agents, args.messages, gen)
    _quiet(many)
    catalogs_after = _catalogs(many, f"{args.schema}_many")
    for store in (one, many):  # warm each pool, its caches and plans
        for q in queries[:5]:
            with store.begin(agent=PROBE, write=False) as mem:
                mem.retriever.retrieve(q)
    # Alternate the two databases round by round: the machine's other work disturbs both alike.
    at_one, at_many = [], []
    for r in range(ROUNDS):
        at_one.append(_round(one_url, one, queries, f"one{r}"))
        at_many.append(_round(many_url, many, queries, f"many{r}"))
    n_one, n_many = agents.count(one), agents.count(many)
    dumped, dump_s, dump_err = _pg_dump(server)
    one.close()
    many.close()
    _report(at_one, at_many, (n_one, n_many), (catalogs_before, catalogs_after))
    print(f"fill: {fill_s:.0f} s for {args.agents} agents x {args.messages} messages (COPY)")
    verdict = "ok" if dumped else "FAILED"
    print(f"whole-database pg_dump -Fc, server defaults: {verdict} in {dump_s:.1f} s")
    if not dumped:
        print(dump_err)
    ratio = {k: median([m[k] for m in at_many]) / median([o[k] for o in at_one]) for k in at_one[0]}
    ok = (
        all(ratio[k] <= 1.2 for k in ("create", "recall_p95", "cold", "export"))
        and median([m["create"] for m in at_many]) <= 20
        and catalogs_after[0] == catalogs_before[0]
        and catalogs_after[1] <= 1.05 * catalogs_before[1]
        and dumped
    )
    print("targets met" if ok else "targets NOT all met")
    return 0 if ok else 1


def _report(
    at_one: list[dict[str, float]],
    at_many: list[dict[str, float]],
    counts: tuple[int, int],
    catalogs: tuple[tuple[int, int], tuple[int, int]],
) -> None:
    labels = {
        "create": ("create an agent (median)", "<= 1.2x, <= 20 ms"),
        "recall_p95": ("warm recall p95", "<= 1.2x"),
        "recall_p50": ("warm recall p50", ""),
        "cold": ("cold first query (median)", "<= 1.2x"),
        "export": ("export one agent (median)", "<= 1.2x"),
    }
    rows = []
    for key, (label, target) in labels.items():
        a = median([r[key] for r in at_one])
        b = median([r[key] for r in at_many])
        rows.append((label, f"{a:.2f}", f"{b:.2f}", f"{b / a:.2f}x", target))
    (rows_before, size_before), (rows_after, size_after) = catalogs
    rows.append(("pg_class rows of the layout", str(rows_before), str(rows_after),
                 f"{rows_after / rows_before:.2f}x", "flat"))  # fmt: skip
    growth = f"{size_after / size_before:.2f}x"
    rows.append(("catalog size, KiB (no pg_statistic)", f"{size_before / 1024:.0f}",
                 f"{size_after / 1024:.0f}", growth, "flat"))  # fmt: skip
    heads = [
        "what (ms unless said), median of rounds",
        f"1 agent (+{counts[0] - 1} created in rounds)",
        f"{counts[1]} agents",
    ]
    print(table([*heads, "ratio", "target"], rows))


if __name__ == "__main__":
    raise SystemExit(main())
