"""Lean reads of ``memory_notes``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from philont.db.backend import Raw
from philont.db.models import Note
from philont.db.ordering import in_code_points
from philont.db.stored_values import register
from philont.db.types import kinds_of

TABLE = "memory_notes"


class NoteRow(NamedTuple):
    key: Any  # the column the search scored by (rowid on SQLite, id on PostgreSQL)
    id: str
    content: str
    importance: float | None
    session_id: str | None
    created_at: int
    forgotten_at: int | None


class ImportantNote(NamedTuple):
    id: str
    importance: float
    content: str


register(NoteRow, kinds_of(Note))
register(ImportantNote, kinds_of(Note))


def by_keys(raw: Raw, key: str, keys: Sequence[Any]) -> dict[Any, NoteRow]:
    """The notes whose ``key`` column is one of ``keys``, by key."""
    if not keys:
        return {}
    cond, params = raw.in_ids(key, keys)
    rows = raw.named(
        NoteRow,
        f"SELECT {key}, id, content, {raw.real('importance')}, session_id, created_at,"
        " forgotten_at"
        f" FROM {TABLE}{raw.where(cond)}",
        params,
    )
    return {r.key: r for r in rows}


def most_important(raw: Raw, limit: int) -> list[ImportantNote]:
    """Notes not forgotten, most important first, then newest (``NoteService.list``'s order)."""
    return raw.named(
        ImportantNote,
        f"SELECT id, {raw.real('importance')}, content"
        f" FROM {TABLE}{raw.where('forgotten_at IS NULL')}"
        f" ORDER BY importance DESC, created_at DESC, {in_code_points('id', raw.postgres)}"
        f" LIMIT {raw.mark}",
        [limit],
    )
