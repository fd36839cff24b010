"""Run under a Python whose sqlite3 loads extensions (tests/embed/test_sqlite_vec.py): the same
searches with sqlite-vec doing the coarse pass and with the portable Python pass."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from philont.db.queries import vectors as q
from philont.embed import HashEmbedder, backfill, checked_vectors, codec
from philont.embed.search import POOL, state
from philont.services.search.scoring import Filter
from philont.store import Store
from tests.embed.helpers import QUERIES, fill


def main() -> None:
    db = Path(sys.argv[1])
    emb = HashEmbedder(64)
    with Store.open(db) as store, store.begin() as mem:
        fill(mem, messages=900)
    out: dict[str, object] = {}
    with Store.open(db) as store:
        backfill(store, emb)
    results = {}
    for mode in ("sqlite-vec", "python"):
        with Store.open(db, embedder=emb) as store:
            engine = state(store).engine
            if mode == "python":
                engine._reason = "turned off by the test"  # type: ignore[attr-defined]
            with store.begin(write=False) as mem:
                status = mem.embeddings.status()
                out[f"{mode}_engine"] = status.engine
                results[mode] = [
                    [(h.id, round(h.score, 9)) for h in mem.search.messages(t, limit=10)]
                    + [
                        (h.id, round(h.score, 9))
                        for h in mem.search.messages(t, session_ids=["s2"])
                    ]
                    for t in QUERIES
                ]
                if mode == "sqlite-vec":
                    pools = []
                    raw = mem.raw()
                    codes = codec.Codes(codec.code_bytes(64))
                    codes.extend(q.codes_after(raw, 0))
                    for t in QUERIES:
                        qcode = codec.code(checked_vectors(emb, [t])[0])
                        inside = engine.nearest_messages(raw, [], qcode, Filter(), POOL)
                        dist = dict(zip(codes.keys, codes.distances(qcode), strict=True))
                        cut = max(dist[i] for i in inside)
                        closer = {i for i, d in dist.items() if d < cut}
                        pools.append([len(inside), len(closer - set(inside))])
                    out["pools"] = pools
    out["same_results"] = results["sqlite-vec"] == results["python"]
    print(json.dumps(out))


if __name__ == "__main__":
    main()
