"""A backfill in its own process, slow enough to be killed mid-run (tests/embed)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence

from philont.embed import HashEmbedder, backfill
from philont.store import Store


class SlowEmbedder(HashEmbedder):
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(0.15)
        return super().embed(texts)


def main() -> None:
    target, batch = sys.argv[1], int(sys.argv[2])
    with Store.open(target) as store:

        def committed(done: int, total: int) -> None:
            print(f"committed {done} of {total}", flush=True)

        backfill(store, SlowEmbedder(64), batch_size=batch, progress=committed)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
