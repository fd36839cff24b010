"""Whether sqlite-vec loaded is told per connection, on the connection (philont.db.vectors):
a table keyed by ``id()`` took a new connection for an old, freed one at the same address,
and a Store then reported the Python engine with no reason (a CI failure of
test_semantic_recall)."""

from __future__ import annotations

import gc
from pathlib import Path

from philont.store import Store


def test_every_store_says_which_engine_and_why(tmp_path: Path) -> None:
    for i in range(40):  # new connections, often at a freed one's address
        with Store.open(tmp_path / f"m{i}.sqlite") as store, store.begin(write=False) as mem:
            status = mem.embeddings.status()
        assert status.engine in ("python", "sqlite-vec")
        assert (status.engine_note is None) == (status.engine == "sqlite-vec"), (i, status)
        gc.collect()
