"""Read models of the vector index: its status and what a backfill did."""

from __future__ import annotations

from philont.schemas.base import ReadModel

__all__ = ["BackfillReport", "IndexStatus"]


class IndexStatus(ReadModel):
    """The stored vectors: which model and dimension built them (None: nothing embedded yet),
    how many items each channel has embedded and how many wait (``pending``: messages above
    the last embedded one, notes and skills without any vector), and which vector search
    runs (``engine``: ``sqlite-vec``, ``pgvector`` or ``python``; ``engine_note``: why the
    database-side one does not)."""

    model_id: str | None
    dimension: int | None
    generation: int
    embedded_messages: int
    pending_messages: int
    pending_notes: int
    pending_skills: int
    engine: str
    engine_note: str | None


class BackfillReport(ReadModel):
    """What one backfill run embedded and wrote, per channel; ``batches`` committed; ``rebuilt``
    when the old vectors were dropped first; ``pruned`` vectors of deleted notes and skills;
    ``complete`` when nothing is left to embed."""

    model_id: str
    messages: int
    notes: int
    skills: int
    batches: int
    rebuilt: bool
    pruned: int
    complete: bool
