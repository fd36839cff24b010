"""Child processes of the reliability tests; each writes one line per acknowledged write.

The tests start :func:`run` in a child process (``python workers.py ROLE OUTPUT ARGS...`` does
the same by hand). A line is written and flushed to the kernel only after the unit of work it
reports has committed, so every complete line is a write the database promised to keep, even
when the child is then killed.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from philont import tools
from philont.db.engine import create_engine
from philont.db.retry import run_with_retry
from philont.schemas.timeline import MessageIn
from philont.services.search import SearchService
from philont.store import Store

SHARED_FACT_KEYS = 5
READER_PAUSE_S = 0.01
"""Readers pause between reads: on two cores, two readers searching flat out would starve the
writers of CPU (a writer descheduled while it holds the lock stalls every other writer)."""
WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india"]


_output: list[TextIO] = []


def say(*parts: object) -> None:
    out = _output[0] if _output else sys.stdout
    out.write(" ".join(map(str, parts)) + "\n")
    out.flush()


def crash(db: str) -> None:
    """Append messages forever (one, or a batch of up to 8, per transaction); ack each id."""
    engine = create_engine(db)
    rng = random.Random()
    pid = os.getpid()
    n = 0
    while True:
        n += 1
        batch = 1 if n % 2 else rng.randint(2, 8)
        tags = [f"zqcrash{pid}n{n}x{i}" for i in range(batch)]
        filler = " ".join(rng.choices(WORDS, k=rng.randint(1, 400)))
        with Store(engine).begin() as mem:
            records = mem.timeline.append_many(
                [MessageIn(content=f"{tag} {filler}", role="user") for tag in tags]
            )
        for record, tag in zip(records, tags, strict=True):
            say("ack", record.id, tag)


def _wait_for(go: Path) -> None:
    say("ready")
    deadline = time.monotonic() + 120
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("no go signal")
        time.sleep(0.005)


def writer(db: str, seconds: str, worker: str, skills: str, go: str) -> None:
    """Write messages, facts (also through the tool dispatcher) and skill outcomes."""
    engine = create_engine(db)
    names = skills.split(",")
    rng = random.Random(int(worker))
    _wait_for(Path(go))
    end = time.monotonic() + float(seconds)
    kinds = ("message", "batch", "fact", "outcome", "tool_fact")
    ops = 0
    # Every kind of write at least once, however slow the machine; then random until the end.
    while ops < len(kinds) or time.monotonic() < end:
        ops += 1
        op = kinds[ops - 1] if ops <= len(kinds) else rng.choice(kinds)
        try:
            if op in ("message", "batch"):
                size = 1 if op == "message" else rng.randint(2, 4)
                texts = [
                    f"concurrency worker{worker} op{ops} " + " ".join(rng.choices(WORDS, k=12))
                    for _ in range(size)
                ]

                def append(texts: list[str] = texts) -> list[int]:
                    with Store(engine).begin() as mem:
                        mem.timeline.count()  # a read first: the lock upgrade must not fail
                        return [
                            r.id
                            for r in mem.timeline.append_many(
                                [MessageIn(content=t, role="user") for t in texts]
                            )
                        ]

                for message_id in run_with_retry(append):
                    say("message", message_id)
            elif op == "fact":
                key = f"k{rng.randrange(SHARED_FACT_KEYS)}"
                value = {"worker": int(worker), "op": ops}

                def store(key: str = key, value: dict[str, int] = value) -> str:
                    with Store(engine).begin() as mem:
                        return mem.facts.store("shared", key, value).id

                say("fact", run_with_retry(store))
            elif op == "outcome":
                name = rng.choice(names)
                success = rng.random() < 0.7

                def outcome(name: str = name, success: bool = success) -> None:
                    with Store(engine).begin() as mem:
                        mem.skills.record_outcome(name, success=success)

                run_with_retry(outcome)
                say("outcome", name, int(success))
            else:
                key = f"k{rng.randrange(SHARED_FACT_KEYS)}"
                args = {"namespace": "shared", "key": key, "value": f"tool {worker}/{ops}"}
                result = tools.call("store_fact", args, db=Store(engine))
                if result.ok:
                    say("fact", "tool")
                    say("action", "tool")
                else:
                    say("error", "tool", result.error_code, json.dumps(result.error))
        except Exception as exc:  # reported to the parent, which fails the test
            say("error", type(exc).__name__, json.dumps(str(exc)[:300]))
    say("done", ops)


def reader(db: str, seconds: str, go: str) -> None:
    """Read counts, facts and search results; counts must never go backwards."""
    engine = create_engine(db)
    _wait_for(Path(go))
    end = time.monotonic() + float(seconds)
    reads, last = 0, -1
    while time.monotonic() < end:
        try:
            with Store(engine).begin(write=False) as mem:
                count = mem.timeline.count()
                SearchService(mem).messages("concurrency bravo", limit=5)
                mem.facts.list(namespace="shared")
                mem.skills.list()
            if count < last:
                say("error", "non-monotonic", json.dumps(f"{count} after {last}"))
            last = count
            reads += 1
            time.sleep(READER_PAUSE_S)
        except Exception as exc:
            say("error", type(exc).__name__, json.dumps(str(exc)[:300]))
    say("reads", reads, last)


ROLES: dict[str, Callable[..., None]] = {"crash": crash, "writer": writer, "reader": reader}


def run(role: str, output: str, *args: str) -> None:
    """Run ``role`` with ``args``, its lines going to ``output`` and tracebacks to
    ``output`` with the suffix ``.err``."""
    out_path = Path(output)
    with (
        out_path.open("a", encoding="utf-8") as out,
        out_path.with_suffix(".err").open("a", encoding="utf-8") as err,
    ):
        _output[:] = [out]
        try:
            ROLES[role](*args)
        except BaseException:
            traceback.print_exc(file=err)
            err.flush()
            raise


if __name__ == "__main__":
    run(*sys.argv[1:])
