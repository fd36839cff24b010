"""A Store opened before a fork goes on working in the parent and in every child
(:mod:`philont.db.fork`): each child opens connections of its own instead of using the copies
of the parent's pooled ones. Before, on PostgreSQL parent and children shared sockets and
failed with "the connection is lost"; on SQLite they used connections carried across
``fork()``, which SQLite forbids."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from sqlalchemy.engine import URL

from philont.store import Store

BOTH_BACKENDS = True
UNITS = 25


def _connection_id(store: Store) -> int:
    with store.begin() as mem:
        return id(mem.session.connection().connection.dbapi_connection)


def _work(store: Store, tag: str) -> None:
    for i in range(UNITS):
        store.run(lambda mem, i=i: mem.facts.store(tag, f"k{i}", i))
        assert store.run(lambda mem, i=i: mem.facts.get(tag, f"k{i}").value, write=False) == i


def _child(store: Store, tag: str, parents: int) -> None:
    # exit codes: 0 done, 3 reused the parent's connection, 1 anything raised
    if _connection_id(store) == parents:
        raise SystemExit(3)
    _work(store, tag)


def test_a_store_opened_before_a_fork_works_in_parent_and_children(target: Path | URL) -> None:
    with Store.open(target) as store:
        parents = _connection_id(store)  # the pool now holds a connection of the parent's
        fork = multiprocessing.get_context("fork")
        children = [
            fork.Process(target=_child, args=(store, f"child{n}", parents)) for n in range(2)
        ]
        for child in children:
            child.start()
        _work(store, "parent")
        for child in children:
            child.join(60)
        assert [child.exitcode for child in children] == [0, 0]
        assert _connection_id(store) == parents  # the parent's own pool is untouched
        with store.begin(write=False) as mem:
            for tag in ("parent", "child0", "child1"):
                assert sorted(f.value for f in mem.facts.list(tag, limit=100)) == list(range(UNITS))
