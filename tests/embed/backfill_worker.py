"""A backfill in its own process, stopped mid-batch to be killed there (tests/embed).

Once ``stop_after`` embeddings are committed, the next batch's embedding says ``mid-batch`` and
waits (for the kill): its batch embedded in part, not committed. A kill timed by the parent
instead came too late when a loaded machine ran the parent late: the backfill had finished."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from philont.embed import HashEmbedder, backfill
from philont.store import Store


class SlowEmbedder(HashEmbedder):
    stopping = False

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.stopping:
            print("mid-batch", flush=True)
            sys.stdin.read()  # until killed
        time.sleep(0.15)
        return super().embed(texts)


def main() -> None:
    target, batch, stop_after = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    embedder = SlowEmbedder(64)
    with Store.open(target) as store:

        def committed(done: int, total: int) -> None:
            print(f"committed {done} of {total}", flush=True)
            embedder.stopping = done >= stop_after

        backfill(store, embedder, batch_size=batch, progress=committed)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
