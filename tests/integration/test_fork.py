"""A Store opened before a fork goes on working in the parent and in every child
(:mod:`philont.db.fork`): each child opens connections of its own instead of using the copies
of the parent's pooled ones. Before, on PostgreSQL parent and children shared sockets and
failed with "the connection is lost"; on SQLite they used connections carried across
``fork()``, which SQLite forbids."""

from __future__ import annotations

import multiprocessing
import re
import threading
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont.db import fork as fork_module
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


def _locks() -> dict[str, fork_module.Lock]:
    """Every thread lock philont holds, by name: the module-level ones, and one of each kind
    objects make (a write gate's, a checkpointer's)."""
    from philont import agents, store
    from philont.db import checkpoint, stored_values, write_gate
    from philont.embed import search as embed_search
    from philont.migrate import scripts
    from philont.services.search import postgres

    return {
        "store.shared": store._SHARED_LOCK,
        "alembic scripts": scripts._ALEMBIC_LOCK,
        "agents": agents._LOCK,
        "search.postgres": postgres._LOCK,
        "embed states": embed_search._STATES_LOCK,
        "stored values": stored_values._reported_lock,
        "write gate registry": write_gate._REGISTRY,
        "write gate": write_gate.WriteGate()._mutex,
        "checkpointer": checkpoint.Checkpointer(Path("/nonexistent"))._lock,
    }


def _acquire_in_child(lock: fork_module.Lock) -> None:
    # exit codes: 0 acquired, 4 still held (the parent's other thread holds it)
    if not lock.acquire(timeout=5):
        raise SystemExit(4)
    lock.release()


@pytest.mark.parametrize("name", sorted(_locks()))
def test_a_lock_another_thread_holds_at_a_fork_is_free_in_the_child(name: str) -> None:
    lock = _locks()[name]
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with lock:
            held.set()
            done.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        child = multiprocessing.get_context("fork").Process(target=_acquire_in_child, args=(lock,))
        child.start()
        child.join(30)
        assert child.exitcode == 0
    finally:
        done.set()
        holder.join()


def test_a_child_forked_during_another_threads_schema_check_opens_a_store(
    tmp_path: Path,
) -> None:
    from philont.migrate import scripts

    held, done = threading.Event(), threading.Event()

    def checking() -> None:  # as a thread checking a schema holds the scripts' lock
        with scripts._ALEMBIC_LOCK:
            held.set()
            done.wait(30)

    def child() -> None:
        with Store.open(tmp_path / "child.sqlite") as store:
            store.run(lambda mem: mem.facts.store("user", "k", 1))

    holder = threading.Thread(target=checking)
    holder.start()
    try:
        assert held.wait(10)
        process = multiprocessing.get_context("fork").Process(target=child)
        process.start()
        process.join(30)
        assert process.exitcode == 0  # before: hung on the lock, killed by the join's timeout
    finally:
        done.set()
        holder.join()


def test_no_thread_lock_of_philont_is_a_plain_one() -> None:
    """A new lock must be a :class:`philont.db.fork.Lock` (or the gate's reset)."""
    root = Path(fork_module.__file__).parents[1]
    plain = re.compile(r"threading\.R?Lock\(")
    found = [
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.name != "fork.py" and plain.search(path.read_text())
    ]
    assert found == []
