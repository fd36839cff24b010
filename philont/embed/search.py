"""Semantic search at query time: nearest stored vectors per channel, fused with keyword scores.

State kept per Store (never in the database): the vector engine of its backend, a cache of the
message codes per agent (refreshed incrementally: only codes above the last one read; on
PostgreSQL one Store serves many agents, so the cache is keyed by the unit of work's agent and
keeps the most recently used ones), the vectors of recent queries and the fusion weights.
Search never embeds stored items; it embeds the query (once per text, cached) and reports, per
channel, which evidence answered and how many items are not embedded yet (keyword search still
covers them).
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from philont.db import fork
from philont.db.queries import vectors as q
from philont.db.vectors import VectorEngine
from philont.embed import codec
from philont.embed.base import Embedder, checked_vectors, similarity_floor
from philont.embed.fusion import FusionWeights, fuse
from philont.errors import EmbedderError, EmbedderMismatchError
from philont.log import get_logger
from philont.services.search.scoring import Filter, Kind, best

if TYPE_CHECKING:
    from philont.db.backend import Raw
    from philont.memory import Memory
    from philont.store import Store

__all__ = ["ChannelReport", "StoreVectors", "check_embedder", "fuse_channel", "state"]

log = get_logger(__name__)

POOL = 256
"""The coarse pass keeps this many nearest codes (at least 4x what is wanted) for exact
rescoring; a channel with no more vectors than this is searched exactly."""

VECTOR_CANDIDATES = 30
"""Each channel contributes at most this many (or the number wanted, if larger) vector
candidates to fusion."""

QUERY_CACHE = 256
AGENT_CACHES = 32
"""Agents whose message codes one Store keeps in memory (least recently used go first)."""


@dataclass(frozen=True)
class ChannelReport:
    """What answered one search: ``answered`` lists the evidence that found candidates
    (``keyword``, ``vector``); ``unembedded`` counts items without a vector yet (found by
    keyword only); ``note`` says why the vector channel did not answer, when it did not."""

    channel: str
    answered: tuple[str, ...]
    unembedded: int = 0
    note: str | None = None


class _Codes:
    """The message codes of one index generation, read incrementally."""

    def __init__(self, generation: int, width: int) -> None:
        self.generation = generation
        self.high = 0
        self.codes = codec.Codes(width)


class StoreVectors:
    """The vector search state of one Store (see the module docstring)."""

    def __init__(self, engine: VectorEngine) -> None:
        self.engine = engine
        self.weights = FusionWeights()
        self._lock = fork.Lock()
        self._codes: OrderedDict[int | None, _Codes] = OrderedDict()  # by agent (None: SQLite)
        self._queries: OrderedDict[tuple[str, str], list[float]] = OrderedDict()

    def query_vector(self, embedder: Embedder, text: str) -> list[float]:
        key = (embedder.model_id, text)
        with self._lock:
            hit = self._queries.get(key)
            if hit is not None:
                self._queries.move_to_end(key)
                return hit
        vector = checked_vectors(embedder, [text])[0]
        with self._lock:
            self._queries[key] = vector
            while len(self._queries) > QUERY_CACHE:
                self._queries.popitem(last=False)
        return vector

    def nearest_codes(self, raw: Raw, rec: q.IndexRow, query_code: bytes, n: int) -> list[int]:
        """The ``n`` message ids nearest by code, from the cache (brought up to date first)."""
        with self._lock:
            cache = self._codes.get(raw.agent)
            if cache is None or cache.generation != rec.generation:
                cache = _Codes(rec.generation, codec.code_bytes(rec.dimension))
            self._codes[raw.agent] = cache
            self._codes.move_to_end(raw.agent)
            while len(self._codes) > AGENT_CACHES:
                self._codes.popitem(last=False)
            rows = q.codes_after(raw, cache.high)
            if rows:
                cache.codes.extend(rows)
                cache.high = rows[-1][0]
            return list(cache.codes.nearest(query_code, n))

    def forget(self, agent: int | None) -> None:
        """Drop ``agent``'s cached codes (its index was started over)."""
        with self._lock:
            self._codes.pop(agent, None)


_STATES: weakref.WeakKeyDictionary[Store, StoreVectors] = weakref.WeakKeyDictionary()
_STATES_LOCK = fork.Lock()


def state(store: Store) -> StoreVectors:
    """The vector search state of ``store`` (made on first use), the Store's it is a view of
    (``store.for_agent``, ``shared(agent=...)``): a view's own state re-embedded every query
    and re-read every code, and had the default fusion weights."""
    store = store._origin or store
    with _STATES_LOCK:
        found = _STATES.get(store)
        if found is None:
            found = _STATES[store] = StoreVectors(store.backend.vectors())
        return found


def check_embedder(raw: Raw, embedder: Embedder) -> q.IndexRow | None:
    """The index record, or :class:`EmbedderMismatchError` when another model or dimension
    built the stored vectors (None: nothing is embedded yet); :class:`EmbedderError` when
    the embedder states an unusable similarity floor."""
    similarity_floor(embedder)
    rec = q.record(raw)
    if rec is not None and (rec.model_id, rec.dimension) != (
        embedder.model_id,
        embedder.dimension,
    ):
        raise EmbedderMismatchError(
            f"the stored vectors were built by {rec.model_id!r} (dimension {rec.dimension}); "
            f"the embedder given is {embedder.model_id!r} (dimension {embedder.dimension}). "
            "Vectors are never mixed: configure the model that built them, or rebuild the "
            "index with it (philont embed --rebuild, or backfill(..., rebuild=True))",
            stored=f"{rec.model_id}/{rec.dimension}",
            given=f"{embedder.model_id}/{embedder.dimension}",
        )
    return rec


# --- per channel -------------------------------------------------------------------------------


def fuse_channel(
    mem: Memory,
    kind: Kind,
    query: str,
    keyword: Mapping[Any, float],
    flt: Filter,
    wanted: int,
) -> tuple[dict[Any, float], ChannelReport]:
    """Keyword scores of one search fused with its vector candidates (the store's embedder
    must be set), and the report of what answered."""
    embedder = mem.store.embedder
    assert embedder is not None, "fuse_channel needs an embedder"
    vectors = state(mem.store)
    raw = mem.raw()
    answered = ("keyword",) if keyword else ()
    rec = check_embedder(raw, embedder)
    unembedded = _unembedded(raw, kind)
    if rec is None:
        return dict(keyword), ChannelReport(
            kind.value, answered, unembedded, "no vectors yet (run philont embed, or backfill)"
        )
    try:
        qvec = vectors.query_vector(embedder, query)
    except EmbedderError as exc:  # keyword search still answers; say why vectors did not
        log.warning("embed.query_failed", error=str(exc))
        return dict(keyword), ChannelReport(kind.value, answered, unembedded, str(exc))
    n = max(VECTOR_CANDIDATES, wanted)
    if kind is Kind.MESSAGES:
        nearest = _messages(vectors, raw, rec, qvec, flt, n)
    else:
        nearest = _keyed(mem, raw, kind, qvec, flt, n)
    floor = similarity_floor(embedder)
    similar = {k: s for k, s in nearest.items() if s >= floor}
    note: str | None = None
    if similar:
        answered = (*answered, "vector")
    elif nearest:
        note = f"no stored vector is similar enough (cosine floor {floor:.3g})"
    else:
        note = "no stored vector passes the filters"
    weight = getattr(vectors.weights, kind.value)
    return fuse(keyword, similar, weight), ChannelReport(kind.value, answered, unembedded, note)


def _messages(
    vectors: StoreVectors,
    raw: Raw,
    rec: q.IndexRow,
    qvec: Sequence[float],
    flt: Filter,
    n: int,
) -> dict[int, float]:
    """The ``n`` messages most similar to ``qvec``: coarse pass by codes, exact rescoring."""
    pool = max(POOL, 4 * n)
    qcode = codec.code(qvec)
    if vectors.engine.available(raw):
        ids = vectors.engine.nearest_messages(raw, qvec, qcode, flt, pool)
    elif flt.sql:  # bounded by the messages the filter lets through
        codes = codec.Codes(codec.code_bytes(rec.dimension))
        codes.extend(q.codes_where(raw, flt))
        ids = list(codes.nearest(qcode, pool))
    else:
        ids = vectors.nearest_codes(raw, rec, qcode, pool)
    return _rescored(qvec, q.message_vectors(raw, ids), n)


def _keyed(
    mem: Memory, raw: Raw, kind: Kind, qvec: Sequence[float], flt: Filter, n: int
) -> dict[Any, float]:
    """Notes or skills: exact, over every stored vector passing the filter (small tables)."""
    table = q.NOTES if kind is Kind.NOTES else q.SKILLS
    key = mem.store.scorer.key(kind)
    return _rescored(qvec, dict(q.keyed_vectors(raw, table, key, flt)), n)


def _rescored(qvec: Sequence[float], blobs: Mapping[Any, bytes], n: int) -> dict[Any, float]:
    keys = list(blobs)
    sims = codec.dot(qvec, (blobs[k] for k in keys))
    scored = dict(zip(keys, sims, strict=True))
    return {k: scored[k] for k in best(scored, n)}


def _unembedded(raw: Raw, kind: Kind) -> int:
    if kind is Kind.MESSAGES:
        return q.pending_messages(raw, q.high_water(raw))
    return q.pending_keyed(raw, q.NOTES if kind is Kind.NOTES else q.SKILLS)
