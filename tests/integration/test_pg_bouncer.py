"""Behind a real PgBouncer in transaction pooling mode (started by the test set-up on
127.0.0.1): one Store serves many agents over a few server connections, the agent travels with
each transaction (never with a connection), and no agent ever sees another's memory."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable

import pytest

from philont import tools
from philont.store import Store
from tests.pg_support import Bouncer, Layout

pytestmark = pytest.mark.postgres

AGENTS = 12
ROUNDS = 8  # more than psycopg's auto-prepare threshold (5): no server-side prepared statement
THREADS = 6


def test_one_pool_behind_pgbouncer_serves_every_agent_one_transaction_at_a_time(
    bouncer: Bouncer, pg_layout: Layout, pg_agent_name: Callable[[], str]
) -> None:
    names = [pg_agent_name() for _ in range(AGENTS)]
    backends: dict[int, set[str]] = defaultdict(set)
    errors: list[BaseException] = []
    lock = threading.Lock()
    with Store.open(bouncer.url(pg_layout.app_url)) as store:  # the application role

        def work(worker: int) -> None:
            try:
                for round_ in range(ROUNDS):
                    for name in names[worker::THREADS]:
                        with store.begin(agent=name) as mem:
                            mem.notes.add(f"{name} note {round_}")
                            pid = mem.raw().rows("SELECT pg_backend_pid()")[0][0]
                            mine = mem.notes.list(limit=100)
                        with lock:
                            backends[int(pid)].add(name)
                        assert len(mine) == round_ + 1
                        assert {n.content.split()[0] for n in mine} == {name}
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(THREADS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=300)
        assert errors == []
        assert len(backends) <= 4  # PgBouncer's pool: 4 server connections for 12 agents
        assert any(len(served) > 1 for served in backends.values())  # shared across agents
        for name in names:  # the eleven tools too, through the same pool
            stored = tools.call(
                "store_fact",
                {"namespace": "user", "key": "who", "value": name},
                db=store.for_agent(name),
            )
            assert stored.ok, stored.text
        for name in names:
            got = tools.call(
                "get_fact", {"namespace": "user", "key": "who"}, db=store.for_agent(name)
            )
            assert got.ok and name in got.text and got.data["value"] == name
