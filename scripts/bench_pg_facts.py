"""A fact's ``get`` on PostgreSQL against an append: time and round trips per call.

One run on the given server (``--url``, default ``$PHILONT_TEST_PG_URL``; a role that may
create schemas), in a fresh schema dropped at the end: one agent with ``--facts`` facts in one
namespace, then ROUNDS rounds, each measuring ``--calls`` calls of: ``facts.get`` in a unit of
work of its own, ``facts.get`` inside one open unit of work, ``timeline.append`` in a unit of
work of its own. Medians and p95 over every call of every round, and the statements each sends
to the server (counted on the driver's cursors: philont's lean SQL bypasses SQLAlchemy's
events). ``--compare-froms`` adds the rounds with the agent filter's FROM look-up done afresh
for every SELECT (as before it was kept per statement shape), alternating with the others.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _bench_common import load_average, machine_line, median, percentile, table
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from philont import migrate
from philont.db import agents as registry
from philont.store import Store

ROUNDS = 6


@contextmanager
def counted_statements() -> Iterator[list[str]]:
    """Every statement psycopg sends meanwhile (its cursors' ``execute``)."""
    import psycopg

    sent: list[str] = []
    execute = psycopg.Cursor.execute

    def counting(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query).split("\n")[0][:90])
        return execute(cursor, query, *args, **kwargs)

    psycopg.Cursor.execute = counting  # type: ignore[method-assign]
    try:
        yield sent
    finally:
        psycopg.Cursor.execute = execute  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default=os.environ.get("PHILONT_TEST_PG_URL"))
    parser.add_argument("--facts", type=int, default=3000)
    parser.add_argument("--calls", type=int, default=60)
    parser.add_argument("--compare-froms", action="store_true")
    args = parser.parse_args()
    if not args.url:
        parser.error("--url (or $PHILONT_TEST_PG_URL) is required")
    schema = f"bench_facts_{uuid.uuid4().hex[:8]}"
    admin = create_engine(args.url)
    with admin.begin() as conn:
        conn.execute(text(f"CREATE SCHEMA {schema}"))
    url = make_url(args.url).update_query_dict({"options": f"-csearch_path={schema},public"})
    print(machine_line(), "| load", load_average())
    try:
        migrate.upgrade(url)
        with Store.open(url, agent="probe") as store:
            run(store, args)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()


def run(store: Store, args: argparse.Namespace) -> None:
    n = args.facts
    with store.begin(agent="probe") as mem:
        for i in range(n):
            mem.facts.store("user.profile", f"k{i}", f"value {i}")
    with store.engine.begin() as conn:
        conn.execute(text("ANALYZE"))

    def get_own(i: int) -> None:
        with store.begin(agent="probe") as mem:
            mem.facts.get("user.profile", f"k{i % n}")

    def append_own(i: int) -> None:
        with store.begin(agent="probe") as mem:
            mem.timeline.append(f"message {i}", role="user")

    cached = registry._scoped_froms

    def afresh(statement: Any) -> list[Any]:
        registry._FROMS.clear()
        return cached(statement)

    modes = [("", cached)] + ([(" (FROM afresh)", afresh)] if args.compare_froms else [])
    times: dict[str, list[float]] = {}
    sent: dict[str, int] = {}
    for _ in range(ROUNDS):
        for suffix, froms in modes:
            registry._scoped_froms = froms  # type: ignore[assignment]
            try:
                measure(times, sent, "get, own unit" + suffix, get_own, args.calls)
                with store.begin(agent="probe") as mem:

                    def get_inside(i: int, mem: Any = mem) -> None:
                        mem.facts.get("user.profile", f"k{i % n}")

                    measure(times, sent, "get, open unit" + suffix, get_inside, args.calls)
            finally:
                registry._scoped_froms = cached
        measure(times, sent, "append, own unit", append_own, args.calls)
    rows = [
        (what, f"{median(v) * 1000:.2f}", f"{percentile(v, 95) * 1000:.2f}", sent[what], len(v))
        for what, v in times.items()
    ]
    print(table(["call", "median ms", "p95 ms", "statements", "calls"], rows))


def measure(
    times: dict[str, list[float]],
    sent: dict[str, int],
    what: str,
    call: Callable[[int], None],
    calls: int,
) -> None:
    with counted_statements() as statements:
        call(0)
    sent[what] = len(statements)
    for i in range(calls):
        began = time.perf_counter()
        call(i)
        times.setdefault(what, []).append(time.perf_counter() - began)


if __name__ == "__main__":
    main()
