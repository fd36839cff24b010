"""Keeping vectors current without slowing writes: the index record, its status, and batched,
resumable backfill. Appends never call a model; items are embedded later, in batches.

:func:`backfill` (the CLI's ``philont embed``, the consolidator's hook) runs one unit of work
per batch and holds no transaction while the model works: read a batch, embed it, write it
(checking the index still belongs to this model). A killed run loses at most the batch in
hand; the next run resumes after the last message embedded (messages are embedded in id order,
so everything above the largest embedded id is pending). ``mem.embeddings.backfill(...)``
does a bounded amount inside a host's own unit of work instead.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from philont.arguments import checked
from philont.db.backend import Raw
from philont.db.queries import vectors as q
from philont.db.stored_values import careful_read
from philont.embed import codec
from philont.embed.base import BATCH_SIZE, Embedder, checked_vectors
from philont.embed.search import check_embedder, state
from philont.schemas import inputs
from philont.schemas.embeddings import BackfillReport, IndexStatus
from philont.services.base import Service
from philont.store import Store

if TYPE_CHECKING:
    from philont.memory import Memory

__all__ = ["BATCH_SIZE", "EmbeddingIndex", "Progress", "backfill"]

Progress = Callable[[int, int], None]
"""Called after each committed batch with (items done, items known to be pending at start)."""


class Units(Protocol):
    def __call__(self, *, write: bool = True) -> AbstractContextManager[Memory]: ...


@dataclass
class _Run:
    embedder: Embedder
    model_id: str
    messages: int = 0
    notes: int = 0
    skills: int = 0
    batches: int = 0
    rebuilt: bool = False
    pruned: int = 0
    complete: bool = False
    keyed: list[tuple[q.Keyed, str, str, str]] = field(default_factory=list)

    def report(self) -> BackfillReport:
        return BackfillReport(
            model_id=self.model_id,
            messages=self.messages,
            notes=self.notes,
            skills=self.skills,
            batches=self.batches,
            rebuilt=self.rebuilt,
            pruned=self.pruned,
            complete=self.complete,
        )


def _hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


# --- steps on one connection -------------------------------------------------------------------


def _start(mem: Memory, embedder: Embedder, rebuild: bool) -> bool:
    """Make sure the index belongs to ``embedder``: create the record, or with ``rebuild``
    drop every vector first (a different model is refused otherwise). True if rebuilt."""
    raw = mem.raw()
    rec = q.record(raw) if rebuild else check_embedder(raw, embedder)
    if rec is not None and not rebuild:
        return False
    if rec is not None:
        q.clear(raw)
    generation = 1 if rec is None else rec.generation + 1
    q.put_record(raw, embedder.model_id, embedder.dimension, generation, _now_ms(mem))
    state(mem.store).engine.prepare(raw, embedder.dimension)
    state(mem.store).forget(raw.agent)
    return rec is not None


def _now_ms(mem: Memory) -> int:
    from philont.db.types import to_epoch_ms

    return to_epoch_ms(mem.clock())


def _keyed_todo(raw: Raw) -> list[tuple[q.Keyed, str, str, str]]:
    """Notes and skills whose text has no vector or changed since: (table, id, text, hash)."""
    todo = []
    for table in (q.NOTES, q.SKILLS):
        for key, text, stored in q.texts(raw, table):
            digest = _hash(text)
            if digest != stored:
                todo.append((table, key, text, digest))
    return todo


Todo = tuple[q.Keyed, str, str, str]
"""A note or skill to embed: (table, id, text, hash of the text)."""


def _write_keyed(mem: Memory, run: _Run, chunk: Sequence[Todo], vectors: list[list[float]]) -> None:
    raw = mem.raw()
    check_embedder(raw, run.embedder)
    for table in (q.NOTES, q.SKILLS):
        rows = [
            (key, digest, codec.pack(vec))
            for (t, key, _text, digest), vec in zip(chunk, vectors, strict=True)
            if t is table
        ]
        q.put_keyed(raw, table, rows)
        if table is q.NOTES:
            run.notes += len(rows)
        else:
            run.skills += len(rows)


CONTEXT_CHARS = 300
"""A message is embedded after (at most this much of) the message before it in its session."""


def message_texts(raw: Raw, turns: Sequence[q.Turn]) -> list[str]:
    """What is embedded for each message: the turn before it in its session (cut to
    CONTEXT_CHARS), a line break, then the message. A reply rarely repeats what it answers
    (who was asked, about what); with its question beside it, its vector carries both. On the
    dev set this took the vector channel alone from pooled R@10 0.23 to 0.38
    (docs/embeddings.md)."""
    before: dict[str, str | None] = {}
    texts = []
    for turn in turns:
        if turn.session_id not in before:
            before[turn.session_id] = q.previous_in_session(raw, turn.session_id, turn.id)
        prev = before[turn.session_id]
        texts.append(turn.content if prev is None else f"{prev[:CONTEXT_CHARS]}\n{turn.content}")
        before[turn.session_id] = turn.content
    return texts


def _write_messages(
    mem: Memory, run: _Run, rows: Sequence[q.Turn], vectors: list[list[float]], gap: bool
) -> None:
    raw = mem.raw()
    check_embedder(raw, run.embedder)
    packed = [(t.id, codec.pack(v), codec.code(v)) for t, v in zip(rows, vectors, strict=True)]
    q.put_messages(raw, packed)
    state(mem.store).engine.put_messages(
        raw, [(t.id, v) for t, v in zip(rows, vectors, strict=True)]
    )
    if gap:  # written below the high-water mark: code caches must reload
        q.bump_generation(raw)
    run.messages += len(rows)


# --- the service -------------------------------------------------------------------------------


class EmbeddingIndex(Service):
    """``mem.embeddings``: the stored vectors of this database."""

    @careful_read
    def status(self) -> IndexStatus:
        raw = self.mem.raw()
        rec = q.record(raw)
        engine = state(self.mem.store).engine
        on = engine.available(raw)
        return IndexStatus(
            model_id=None if rec is None else rec.model_id,
            dimension=None if rec is None else rec.dimension,
            generation=0 if rec is None else rec.generation,
            embedded_messages=q.count_messages(raw),
            pending_messages=q.pending_messages(raw, q.high_water(raw)),
            pending_notes=q.pending_keyed(raw, q.NOTES),
            pending_skills=q.pending_keyed(raw, q.SKILLS),
            engine=engine.name if on else "python",
            engine_note=None if on else engine.reason(),
        )

    def backfill(
        self, embedder: Embedder, *, limit: int = 256, rebuild: bool = False
    ) -> BackfillReport:
        """Embed at most ``limit`` pending items (notes and skills first, then messages in id
        order) inside this unit of work: they are kept when it commits. The model is called
        while the transaction is open, so keep ``limit`` small here; the Store-level
        :func:`backfill` holds no transaction while the model works."""
        run = _Run(embedder, embedder.model_id)
        run.rebuilt = _start(self.mem, embedder, rebuild)
        raw = self.mem.raw()
        for table in (q.NOTES, q.SKILLS):
            run.pruned += q.prune_keyed(raw, table)
        keyed = _keyed_todo(raw)[:limit]
        if keyed:
            _write_keyed(self.mem, run, keyed, checked_vectors(embedder, [k[2] for k in keyed]))
        left = limit - len(keyed)
        rows = q.messages_after(raw, q.high_water(raw), left) if left > 0 else []
        if rows:
            vectors = checked_vectors(embedder, message_texts(raw, rows))
            _write_messages(self.mem, run, rows, vectors, gap=False)
        run.batches = 1
        run.complete = not _keyed_todo(raw) and q.pending_messages(raw, q.high_water(raw), 1) == 0
        return run.report()


# --- the resumable loop ------------------------------------------------------------------------


@checked
def backfill(
    target: Store | Units,
    embedder: Embedder,
    *,
    batch_size: int = BATCH_SIZE,
    rebuild: bool = False,
    full: bool = False,
    max_batches: int | None = None,
    progress: Progress | None = None,
    stop: threading.Event | None = None,
) -> BackfillReport:
    """Embed everything pending, one committed batch at a time (see the module docstring).

    ``target`` is a Store or a units-of-work factory (``units(write=...)``). ``rebuild`` drops
    the stored vectors first (another model's, or to start over); ``full`` also looks for
    messages below the last embedded one that have no vector (rows imported later).
    ``max_batches`` and ``stop`` end the run early (resumed by the next one)."""
    units = target.begin if isinstance(target, Store) else target
    batch_size = inputs.check(inputs.Limit, batch_size, "batch_size")
    run = _Run(embedder, embedder.model_id)
    with units() as mem:
        run.rebuilt = _start(mem, embedder, rebuild)
        raw = mem.raw()
        for table in (q.NOTES, q.SKILLS):
            run.pruned += q.prune_keyed(raw, table)
    with units(write=False) as mem:
        raw = mem.raw()
        keyed = _keyed_todo(raw)
        total = len(keyed) + q.pending_messages(raw, q.high_water(raw), 10**12)

    def more() -> bool:
        return not (
            (max_batches is not None and run.batches >= max_batches)
            or (stop is not None and stop.is_set())
        )

    done = 0
    for start in range(0, len(keyed), batch_size):
        if not more():
            return run.report()
        chunk = keyed[start : start + batch_size]
        vectors = checked_vectors(embedder, [k[2] for k in chunk])
        with units() as mem:
            _write_keyed(mem, run, chunk, vectors)
        run.batches += 1
        done += len(chunk)
        if progress is not None:
            progress(done, total)
    gap_after: int | None = 0 if full else None
    while more():
        with units(write=False) as mem:
            raw = mem.raw()
            high = q.high_water(raw)
            rows: list[q.Turn] = []
            if gap_after is not None:
                rows = q.missing_messages(raw, gap_after, high, batch_size)
                if not rows:
                    gap_after = None
            if gap_after is None:
                rows = q.messages_after(raw, high, batch_size)
            texts = message_texts(raw, rows)
        if not rows:
            run.complete = True
            break
        vectors = checked_vectors(embedder, texts)
        with units() as mem:
            _write_messages(mem, run, rows, vectors, gap=gap_after is not None)
        if gap_after is not None:
            gap_after = rows[-1].id
        run.batches += 1
        done += len(rows)
        if progress is not None:
            progress(done, max(total, done))
    return run.report()
