"""The agents of a PostgreSQL database, through its Store: create, list, count, rename, delete.

An agent is a row in the registry (``philont_agents``), never DDL: creating the ten-thousandth
costs what creating the first does. Units of work create their agent on first use
(``store.begin(agent="alice")``); these functions are for operators (``philont agents ...``).
On SQLite (one file, one agent) they raise :class:`~philont.errors.InvalidInputError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from philont.arguments import checked
from philont.db import agents as registry
from philont.db import fork, nesting
from philont.db.agents import Agent
from philont.db.retry import run_with_retry
from philont.errors import InvalidInputError
from philont.store import Store

__all__ = [
    "Agent",
    "agent_id",
    "count",
    "create",
    "delete",
    "forget",
    "list_agents",
    "rename",
    "require",
    "set_agent",
]

T = TypeVar("T")

_LOCK = fork.Lock()
CACHE_SIZE = 100_000
"""Agent ids a Store remembers (name -> id); past this the cache starts afresh."""


def _postgres(store: Store) -> None:
    if store.backend.name != "postgresql":
        raise InvalidInputError.of(
            "store", "agents live in a PostgreSQL database; an SQLite file holds one agent"
        )


def agent_id(store: Store, name: str) -> int:
    """The registry id of ``name``, the agent created when missing (cached per Store)."""
    cached = store._agent_ids.get(name)
    if cached is not None:
        return cached
    _postgres(store)
    with store.engine.connect() as conn, conn.begin():
        agent, _created = registry.create(conn, name)
    with _LOCK:
        if len(store._agent_ids) >= CACHE_SIZE:
            store._agent_ids.clear()
        store._agent_ids[name] = agent.id
    return agent.id


def forget(store: Store, name: str) -> None:
    """Drop the id cached for ``name`` (it no longer names that agent: renamed or deleted)."""
    with _LOCK:
        store._agent_ids.pop(name, None)


@checked
def require(store: Store, name: str) -> Agent:
    """The agent named ``name``; :class:`~philont.errors.AgentNotFoundError` when there is
    none (nothing is created)."""
    registry.check_name(name, "name")
    _postgres(store)
    with store.engine.connect() as conn:
        return registry.require(conn, name)


@checked
def create(store: Store, name: str) -> tuple[Agent, bool]:
    """The agent named ``name`` and whether this call created it."""
    registry.check_name(name, "name")
    _postgres(store)
    with store.engine.connect() as conn, conn.begin():
        return registry.create(conn, name)


@checked
def list_agents(store: Store, *, prefix: str = "", limit: int | None = None) -> list[Agent]:
    """Agents in name order (code points), optionally those whose name starts with ``prefix``."""
    _postgres(store)
    with store.engine.connect() as conn:
        return registry.list_agents(conn, prefix=prefix, limit=limit)


@checked
def count(store: Store) -> int:
    _postgres(store)
    with store.engine.connect() as conn:
        return registry.count(conn)


@checked
def rename(store: Store, old: str, new: str) -> Agent:
    """Rename an agent (one UPDATE of its registry row; its rows stay where they are), holding
    its lock alone (philont.db.agents.rename)."""
    registry.check_name(old, "old")
    registry.check_name(new, "new")
    _postgres(store)
    agent = _in_transaction(store, lambda conn: registry.rename(conn, old, new))
    store._agent_ids.pop(old, None)
    return agent


@checked
def delete(store: Store, name: str) -> dict[str, int]:
    """Delete every row of the agent ``name`` and its registry row, in one transaction;
    returns the rows deleted per table."""
    registry.check_name(name, "name")
    _postgres(store)
    deleted = _in_transaction(store, lambda conn: registry.delete(conn, name))
    store._agent_ids.pop(name, None)
    return deleted


@checked
def set_agent(bind: Connection | Session, name: str) -> Agent:
    """Make the current transaction of ``bind`` (a host's SQLAlchemy Connection or Session on a
    PostgreSQL database of philont's) the agent ``name``'s, for a host that runs its own SQL
    on philont's tables: it sets ``philont.agent_id`` (``SET LOCAL``: row-level security, the
    ``agent_id`` DEFAULT) and takes the agent's lock, shared, in one statement, as philont's
    own units of work do; both hold until that transaction ends. A transaction that sets
    ``philont.agent_id`` itself takes no lock: a write of it can deadlock with an import or a
    delete of the agent. During those it waits for them first, holding nothing of the agent.
    :class:`~philont.errors.AgentNotFoundError` when no agent has the name (nothing is
    created: :func:`create`), also when a delete it waited for removed it."""
    registry.check_name(name, "name")
    conn = bind.connection() if isinstance(bind, Session) else bind
    if conn.dialect.name != "postgresql":
        raise InvalidInputError.of("bind", "agents live in a PostgreSQL database")
    while True:  # again when a rename or delete it waited for changed what the name means
        agent = registry.require(conn, name)
        if registry.set_local(conn, agent.id, name=name):
            return agent


def _in_transaction(store: Store, work: Callable[[Connection], T]) -> T:
    """``work(conn)`` in a transaction of its own, run again when it conflicted with a
    concurrent one: a deadlock with the agent's writers (philont.db.retry.run_with_retry)."""

    def once() -> T:
        with store.engine.connect() as conn, conn.begin(), nesting.watched(conn):
            return work(conn)

    return run_with_retry(once)
