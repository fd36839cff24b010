"""Tool-call benchmark: a model tool through a Store or a path vs the same service call.

Usage (from the repository root)::

    .venv/bin/python scripts/bench_tools.py                 # 100k messages, 300 calls per side
    .venv/bin/python scripts/bench_tools.py --messages 10k --calls 100 --no-mcp

On one SQLite file with ``--messages`` timeline messages and realistic facts, skills and notes
(the benchmarks' shared generator), for get_fact, store_fact and recall_sessions, interleaved
call by call:

* ``service``: the service call inside an open unit of work (``mem.facts.get`` ... on one
  ``with store.begin() as mem:`` kept open for the whole run) — the issue's baseline;
* ``service+uow``: the same call in a unit of work of its own (begin, call, commit);
* ``floor``: that, plus the action-log row every tool call writes (``mem.actions.record``):
  the least a tool call can cost while each call is its own transaction and leaves its row;
* ``tool/store``: ``tools.call(name, args, db=store)`` (validation, a unit of work, the action
  log row, commit);
* ``tool/path``: ``tools.call(name, args, db=path)`` (the process-wide Store of that path).

Reported: median and p95 per call in us and the ratios to ``service``. The MCP server's
per-call overhead over ``tools.call`` (stdio round trip with the SDK's client, same calls) is
reported when the ``mcp`` extra is installed, split into the server's side (a bare client that
writes a JSON line and reads one) and the SDK client's. Target: tool call <= 1.5x the service call.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _bench_common as bc

TARGET = 1.5


def build(path: Path, n: int) -> None:
    """A database at head with ``n`` messages and the shared facts/skills/notes."""
    bc.new_db(path)
    sessions, rows = bc.timeline(n)
    raw = bc.connect_raw(path)
    raw.execute("BEGIN")
    bc.insert_sessions(raw, sessions)
    bc.insert_messages(raw, rows)
    bc.seed_knowledge(raw)
    raw.execute("COMMIT")
    raw.close()
    bc.finish_db(path)


CALLS: dict[str, dict[str, Any]] = {
    "get_fact": {"namespace": "user.home", "key": "city"},
    "store_fact": {"namespace": "bench", "key": "counter", "value": 0},
    "recall_sessions": {"query": "what did we decide about the apartment deposit?", "limit": 5},
}


def _service(mem: Any, name: str, args: dict[str, Any]) -> Any:
    """The service call a tool makes for ``args`` (what the handler does, minus the text)."""
    if name == "get_fact":
        return mem.facts.get(args["namespace"], args["key"])
    if name == "store_fact":
        return mem.facts.store(args["namespace"], args["key"], args["value"])
    hits = mem.search.messages(args["query"], limit=args["limit"])
    return mem.timeline.overviews([h.session_id for h in hits])


BATCH = 25
"""Sides alternate batch by batch: the open unit of work holds SQLite's write lock, so the other
sides can only run between its batches."""


def measure(path: Path, calls: int, warmup: int) -> dict[str, dict[str, list[float]]]:
    from philont import tools
    from philont.store import Store, shared

    store = Store.open(path)
    shared(path)  # open the process-wide Store now, as a long-lived host would have
    with store.begin() as mem:
        mem.facts.store("user.home", "city", "Berlin")
    times: dict[str, dict[str, list[float]]] = {
        name: {"service": [], "service+uow": [], "floor": [], "tool/store": [], "tool/path": []}
        for name in CALLS
    }
    done = 0
    rounds = 0
    while done < warmup + calls:
        sides: list[tuple[str, Callable[[str, dict[str, Any]], Any]]] = [
            ("service+uow", lambda n, a: _own_uow(store, n, a)),
            ("floor", lambda n, a: _own_uow(store, n, a, log=True)),
            ("tool/store", lambda n, a: _tool(tools, n, a, store)),
            ("tool/path", lambda n, a: _tool(tools, n, a, str(path))),
        ]
        k = rounds % (len(sides) + 1)
        order = ["service", *[s for s, _f in sides]]
        order = order[k:] + order[:k]
        for side in order:
            if side == "service":
                with store.begin() as mem:
                    mem.session.connection()  # BEGIN outside the timed calls
                    _batch(times, side, done, warmup, lambda n, a, m=mem: _service(m, n, a))
            else:
                fn = dict(sides)[side]
                _batch(times, side, done, warmup, fn)
        done += BATCH
        rounds += 1
    store.close()
    return times


def _batch(
    times: dict[str, dict[str, list[float]]],
    side: str,
    start: int,
    warmup: int,
    fn: Callable[[str, dict[str, Any]], Any],
) -> None:
    for i in range(start, start + BATCH):
        for name, args in CALLS.items():
            args = {**args, "value": i} if name == "store_fact" else args
            t0 = time.perf_counter_ns()
            fn(name, args)
            elapsed = (time.perf_counter_ns() - t0) / 1e3
            if i >= warmup:
                times[name][side].append(elapsed)


def _own_uow(store: Any, name: str, args: dict[str, Any], *, log: bool = False) -> None:
    with store.begin() as mem:
        _service(mem, name, args)
        if log:
            mem.actions.record(name, params=args, success=True, result="(the tool's text)")


def _tool(tools: Any, name: str, args: dict[str, Any], db: Any) -> None:
    result = tools.call(name, args, db=db)
    if not result.ok:
        raise RuntimeError(f"{name} failed: {result.text}")


def measure_mcp(path: Path, calls: int) -> dict[str, float]:
    """Median per-call time through the MCP server (stdio) with the SDK's client and with a
    bare line client (a JSON line written, a line read: the server's side of the round trip
    plus the pipes), and through ``tools.call`` on a path, same calls, in us."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    from philont import tools

    command = [sys.executable, "-m", "philont", "mcp", "--db", str(path)]

    async def run() -> list[float]:
        params = StdioServerParameters(command=command[0], args=command[1:])
        out: list[float] = []
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for i in range(calls + 10):
                t0 = time.perf_counter_ns()
                await s.call_tool("get_fact", CALLS["get_fact"])
                if i >= 10:
                    out.append((time.perf_counter_ns() - t0) / 1e3)
        return out

    over_mcp = anyio.run(run)
    over_lines = _line_client(command, calls)
    direct = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        tools.call("get_fact", CALLS["get_fact"], db=str(path))
        direct.append((time.perf_counter_ns() - t0) / 1e3)
    return {
        "mcp_us": bc.median(over_mcp),
        "line_us": bc.median(over_lines),
        "call_us": bc.median(direct),
    }


def _line_client(command: list[str], calls: int) -> list[float]:
    """get_fact round trips of a client that writes one JSON line and reads one line back."""
    import json
    import subprocess

    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    assert process.stdin is not None and process.stdout is not None
    stdin, stdout = process.stdin, process.stdout

    def rpc(i: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
        stdin.write(json.dumps(request).encode() + b"\n")
        answer: dict[str, Any] = json.loads(stdout.readline())
        return answer

    client = {"name": "bench", "version": "1"}
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
    rpc(0, "initialize", hello)
    stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    out: list[float] = []
    for i in range(1, calls + 11):
        t0 = time.perf_counter_ns()
        answer = rpc(i, "tools/call", {"name": "get_fact", "arguments": CALLS["get_fact"]})
        if i > 10:
            out.append((time.perf_counter_ns() - t0) / 1e3)
        if answer.get("result", {}).get("isError") is not False:
            raise RuntimeError(f"get_fact over MCP failed: {answer}")
    stdin.close()
    process.wait()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", default="100k", help="timeline size (e.g. 10k, 100k)")
    parser.add_argument("--calls", type=int, default=300, help="measured calls per side")
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--no-mcp", action="store_true", help="skip the MCP measurement")
    args = parser.parse_args()
    n = bc.parse_count(args.messages)
    work = bc.scratch_dir("bench-tools")
    path = work / "memory.sqlite"
    print(bc.machine_line())
    print(f"building {n:,} messages ...", flush=True)
    build(path, n)
    times = measure(path, args.calls, args.warmup)
    rows = []
    for name, sides in times.items():
        base = bc.median(sides["service"])
        base_p95 = bc.percentile(sides["service"], 95)
        for side, values in sides.items():
            med, p95 = bc.median(values), bc.percentile(values, 95)
            rows.append(
                [
                    name,
                    side,
                    bc.fmt_num(med, 0),
                    bc.fmt_num(p95, 0),
                    bc.fmt_num(med / base) + "x",
                    bc.fmt_num(p95 / base_p95) + "x",
                ]
            )
        tool = bc.median(sides["tool/store"]) / base
        path_ratio = bc.median(sides["tool/path"]) / base
        floor = bc.median(sides["floor"]) / base
        print(
            f"{name}: tool/store {tool:.2f}x, tool/path {path_ratio:.2f}x the service call "
            f"(target <= {TARGET}x: {bc.yes_no(max(tool, path_ratio) <= TARGET)}); "
            f"the floor (own unit of work + action-log row) {floor:.2f}x"
        )
    print(bc.table(["tool", "side", "p50 us", "p95 us", "p50 ratio", "p95 ratio"], rows))
    if not args.no_mcp:
        try:
            mcp = measure_mcp(path, min(args.calls, 200))
        except ModuleNotFoundError:
            print("MCP: the mcp extra is not installed; skipped")
        else:
            print(
                f"MCP get_fact over stdio: {mcp['mcp_us']:.0f} us per call with the SDK's "
                f"client, {mcp['line_us']:.0f} us with a bare line client, vs tools.call "
                f"{mcp['call_us']:.0f} us: overhead {mcp['mcp_us'] - mcp['call_us']:.0f} us "
                f"(server side and pipes {mcp['line_us'] - mcp['call_us']:.0f} us, "
                f"the SDK's client {mcp['mcp_us'] - mcp['line_us']:.0f} us)"
            )
    bc.remove_db(path)


if __name__ == "__main__":
    main()
