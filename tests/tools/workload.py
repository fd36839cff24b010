"""A mixed workload of tool calls whose outcomes do not depend on the order they run in: writes
to keys of their own, reads of facts stored before it, searches, refused calls. Run in
sequence and concurrently, it must leave the same rows and give the same outcomes."""

from __future__ import annotations

import json
from typing import Any

from philont.store import Store
from philont.tools import ToolResult

Call = tuple[str, dict[str, Any]]
SEEDED = 8


def seed() -> list[Call]:
    """The facts the workload reads (stored before it runs)."""
    return [
        ("store_fact", {"namespace": "seed", "key": f"k{i}", "value": i}) for i in range(SEEDED)
    ]


def workload(n: int) -> list[Call]:
    """``n`` calls: a fifth each writes, reads one fact, lists, searches, or is refused."""
    calls: list[Call] = []
    for i in range(n):
        kind = i % 5
        if kind == 0:
            calls.append(("store_fact", {"namespace": "conc", "key": f"k{i}", "value": i}))
        elif kind == 1:
            calls.append(("get_fact", {"namespace": "seed", "key": f"k{i % SEEDED}"}))
        elif kind == 2:
            calls.append(("list_facts", {"namespace": "seed"}))
        elif kind == 3:
            calls.append(("search_notes", {"query": f"note {i}"}))
        else:
            calls.append(("store_fact", {"namespace": "conc", "key": f"bad key {i}", "value": 1}))
    return calls


def outcome(result: ToolResult) -> tuple[bool, str | None]:
    return result.ok, result.error_code


def final_state(store: Store) -> tuple[list[tuple[str, str, str]], list[tuple[str, bool, str]]]:
    """The facts and the action log (without ids and times), sorted: what the calls left."""
    with store.begin(write=False) as mem:
        facts = sorted(
            (f.namespace, f.key, json.dumps(f.value)) for f in mem.facts.list("*", limit=10_000)
        )
        logged = sorted(
            (a.tool_name, a.success, json.dumps(a.params, sort_keys=True))
            for a in mem.actions.query(limit=10_000)
        )
    return facts, logged
