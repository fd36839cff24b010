"""Lean SQL of the stored vectors (revision v037), the same on both backends.

Every statement keeps to the unit of work's agent through ``Raw`` (``mine``/``where`` on the
table it reads first, ``same_agent`` on each join, ``key`` for conflict targets); on
PostgreSQL each of them is answered by a key that leads with ``agent_id``. INSERTs name no
agent: the column's DEFAULT is the transaction's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from philont.db.backend import Raw
from philont.db.models import VectorIndex
from philont.db.stored_values import register
from philont.db.types import kinds_of
from philont.services.search.scoring import Filter

INDEX = "philont_vector_index"
MESSAGE_VECTORS = "philont_message_vectors"
MESSAGE_CODES = "philont_message_codes"
MESSAGES = "memory_raw_messages"
COUNT_CAP = 100_000
"""Pending messages are counted up to this many (a count, not a scan of the history)."""


class IndexRow(NamedTuple):
    model_id: str
    dimension: int
    generation: int
    created_at: int


register(IndexRow, kinds_of(VectorIndex))


class Keyed(NamedTuple):
    """Where the vectors of a table keyed by a text id live, and what text is embedded."""

    base: str
    vectors: str
    key: str  # the vector table's key column (the base table's ``id``)
    text: str  # SQL of the embedded text over the base table (alias ``b``)


NOTES = Keyed("memory_notes", "philont_note_vectors", "note_id", "b.content")
# what a skill is for, as a person would ask for it: name, when to use, description, keywords
SKILLS = Keyed(
    "memory_skills",
    "philont_skill_vectors",
    "skill_id",
    "b.name || '. ' || coalesce(b.when_to_use, '') || ' ' || b.description"
    " || ' ' || coalesce(b.trigger_keywords, '')",
)


def record(raw: Raw) -> IndexRow | None:
    rows = raw.named(
        IndexRow,
        f"SELECT model_id, dimension, generation, created_at FROM {INDEX}{raw.where('id = 1')}",
    )
    return rows[0] if rows else None


def put_record(raw: Raw, model_id: str, dimension: int, generation: int, now_ms: int) -> None:
    m = raw.mark
    raw.run(f"DELETE FROM {INDEX}{raw.where()}")
    raw.run(
        f"INSERT INTO {INDEX} (id, model_id, dimension, generation, created_at)"
        f" VALUES (1, {m}, {m}, {m}, {m})",
        [model_id, dimension, generation, now_ms],
    )


def bump_generation(raw: Raw) -> None:
    raw.run(f"UPDATE {INDEX} SET generation = generation + 1{raw.where('id = 1')}")


def clear(raw: Raw) -> None:
    """Every stored vector (the record stays)."""
    for table in (MESSAGE_VECTORS, MESSAGE_CODES, NOTES.vectors, SKILLS.vectors):
        raw.run(f"DELETE FROM {table}{raw.where()}")


# --- messages ---------------------------------------------------------------------------------


def high_water(raw: Raw) -> int:
    """The largest embedded message id (0: none). Backfill embeds in id order, so every
    message above it is pending."""
    sql = f"SELECT coalesce(max(message_id), 0) FROM {MESSAGE_CODES}{raw.where()}"
    return int(raw.rows(sql)[0][0])


def pending_messages(raw: Raw, after: int, cap: int = COUNT_CAP) -> int:
    """Messages above the high-water mark, counted up to ``cap``."""
    m = raw.mark
    sql = f"SELECT count(*) FROM (SELECT 1 FROM {MESSAGES}{raw.where(f'id > {m}')} LIMIT {m}) AS t"
    return int(raw.rows(sql, [after, cap])[0][0])


class Turn(NamedTuple):
    id: int
    session_id: str
    content: str


def messages_after(raw: Raw, after: int, limit: int) -> list[Turn]:
    m = raw.mark
    rows = raw.rows(
        f"SELECT id, session_id, content FROM {MESSAGES}{raw.where(f'id > {m}')}"
        f" ORDER BY id LIMIT {m}",
        [after, limit],
    )
    return [Turn(int(i), str(s), str(c or "")) for i, s, c in rows]


def missing_messages(raw: Raw, after: int, until: int, limit: int) -> list[Turn]:
    """Messages in (after, until] without a vector (gaps: rows imported below the mark)."""
    m = raw.mark
    rows = raw.rows(
        f"SELECT b.id, b.session_id, b.content FROM {MESSAGES} AS b"
        f" WHERE {raw.mine('b')} AND b.id > {m} AND b.id <= {m}"
        f" AND NOT EXISTS (SELECT 1 FROM {MESSAGE_CODES} AS c WHERE c.message_id = b.id"
        f"{raw.same_agent('c', 'b')})"
        f" ORDER BY b.id LIMIT {m}",
        [after, until, limit],
    )
    return [Turn(int(i), str(s), str(c or "")) for i, s, c in rows]


def previous_in_session(raw: Raw, session_id: str, before_id: int) -> str | None:
    """The content of the message just before ``before_id`` in its session (the session
    index, read backwards from that id), or None for a session's first message."""
    m = raw.mark
    rows = raw.rows(
        f"SELECT content FROM {MESSAGES}{raw.where(f'session_id = {m}', f'id < {m}')}"
        " ORDER BY id DESC LIMIT 1",
        [session_id, before_id],
    )
    return None if not rows else str(rows[0][0] or "")


def put_messages(raw: Raw, rows: Sequence[tuple[int, bytes, bytes]]) -> None:
    """(id, vector, code) rows; a message embedded meanwhile by another process is kept."""
    m = raw.mark
    raw.many(
        f"INSERT INTO {MESSAGE_VECTORS} (message_id, vector) VALUES ({m}, {m})"
        f" ON CONFLICT ({raw.key('message_id')}) DO NOTHING",
        [(i, v) for i, v, _c in rows],
    )
    raw.many(
        f"INSERT INTO {MESSAGE_CODES} (message_id, code) VALUES ({m}, {m})"
        f" ON CONFLICT ({raw.key('message_id')}) DO NOTHING",
        [(i, c) for i, _v, c in rows],
    )


def codes_after(raw: Raw, after: int) -> list[tuple[int, bytes]]:
    m = raw.mark
    rows = raw.rows(
        f"SELECT message_id, code FROM {MESSAGE_CODES}{raw.where(f'message_id > {m}')}"
        " ORDER BY message_id",
        [after],
    )
    return [(int(i), bytes(c)) for i, c in rows]


def codes_where(raw: Raw, flt: Filter) -> list[tuple[int, bytes]]:
    """Codes of the messages passing ``flt`` (conditions on ``b``, the messages table)."""
    rows = raw.rows(
        f"SELECT c.message_id, c.code FROM {MESSAGES} AS b"
        f" JOIN {MESSAGE_CODES} AS c ON c.message_id = b.id{raw.same_agent('c', 'b')}"
        f" WHERE {raw.mine('b')}{flt.where()}",
        list(flt.params),
    )
    return [(int(i), bytes(c)) for i, c in rows]


def message_vectors(raw: Raw, ids: Sequence[int]) -> dict[int, bytes]:
    if not ids:
        return {}
    cond, params = raw.in_ids("message_id", ids)
    rows = raw.rows(f"SELECT message_id, vector FROM {MESSAGE_VECTORS}{raw.where(cond)}", params)
    return {int(i): bytes(v) for i, v in rows}


def count_messages(raw: Raw) -> int:
    return int(raw.rows(f"SELECT count(*) FROM {MESSAGE_CODES}{raw.where()}")[0][0])


# --- notes and skills -------------------------------------------------------------------------


def texts(raw: Raw, t: Keyed) -> list[tuple[str, str, str | None]]:
    """Every row's (id, embedded text, hash of the text its vector was made from or None)."""
    rows = raw.rows(
        f"SELECT b.id, {t.text}, v.text_hash FROM {t.base} AS b"
        f" LEFT JOIN {t.vectors} AS v ON v.{t.key} = b.id{raw.same_agent('v', 'b')}"
        f" WHERE {raw.mine('b')} ORDER BY b.id"
    )
    return [(str(i), str(text or ""), h) for i, text, h in rows]


def put_keyed(raw: Raw, t: Keyed, rows: Sequence[tuple[str, str, bytes]]) -> None:
    """(id, text hash, vector) rows, replacing what an id had."""
    m = raw.mark
    raw.many(
        f"INSERT INTO {t.vectors} ({t.key}, text_hash, vector) VALUES ({m}, {m}, {m})"
        f" ON CONFLICT ({raw.key(t.key)}) DO UPDATE SET text_hash = excluded.text_hash,"
        " vector = excluded.vector",
        rows,
    )


def prune_keyed(raw: Raw, t: Keyed) -> int:
    """Remove vectors whose row is gone; how many."""
    orphans = raw.rows(
        f"SELECT v.{t.key} FROM {t.vectors} AS v WHERE {raw.mine('v')}"
        f" AND NOT EXISTS (SELECT 1 FROM {t.base} AS b WHERE b.id = v.{t.key}"
        f"{raw.same_agent('b', 'v')})"
    )
    for (key,) in orphans:
        raw.run(f"DELETE FROM {t.vectors}{raw.where(f'{t.key} = {raw.mark}')}", [key])
    return len(orphans)


def pending_keyed(raw: Raw, t: Keyed) -> int:
    """Rows without any vector (an edited row with an old vector is not counted)."""
    sql = (
        f"SELECT count(*) FROM {t.base} AS b WHERE {raw.mine('b')}"
        f" AND NOT EXISTS (SELECT 1 FROM {t.vectors} AS v WHERE v.{t.key} = b.id"
        f"{raw.same_agent('v', 'b')})"
    )
    return int(raw.rows(sql)[0][0])


def keyed_vectors(raw: Raw, t: Keyed, key: str, flt: Filter) -> list[tuple[Any, bytes]]:
    """(the base table's ``key`` column, vector) of the rows passing ``flt`` (on ``b``)."""
    rows = raw.rows(
        f"SELECT b.{key}, v.vector FROM {t.base} AS b JOIN {t.vectors} AS v"
        f" ON v.{t.key} = b.id{raw.same_agent('v', 'b')} WHERE {raw.mine('b')}{flt.where()}",
        list(flt.params),
    )
    return [(k, bytes(v)) for k, v in rows]
