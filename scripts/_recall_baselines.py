"""The recall benchmark's comparison points: the original's message search and a plain OR query."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from philont.domain.query import build_plan
from philont.memory import Memory

LIMIT = 20
"""Hits asked for (the benchmark's largest k)."""


_SANITISE = re.compile(r"['\"*()]")


def baseline(mem: Memory, question: str, now: datetime) -> list[int]:
    """The original's searchMessages (spec section 6): the sanitised sentence as the trigram
    MATCH expression, newest first; on error or no rows, LIKE '%sentence%' (unescaped)."""
    safe = _SANITISE.sub(" ", question).strip()
    if not safe:
        return []
    conn = mem.session.connection()
    rows: list[Any] = []
    if len(safe) >= 3:
        try:
            rows = list(
                conn.exec_driver_sql(
                    "SELECT m.id FROM memory_raw_messages m JOIN memory_raw_messages_fts fts"
                    " ON fts.rowid = m.rowid WHERE memory_raw_messages_fts MATCH ?"
                    " ORDER BY m.timestamp DESC LIMIT ?",
                    (safe, LIMIT),
                )
            )
        except Exception:  # the original swallows every FTS error
            rows = []
    if not rows:
        rows = list(
            conn.exec_driver_sql(
                "SELECT id FROM memory_raw_messages WHERE content LIKE '%' || ? || '%'"
                " ORDER BY timestamp DESC LIMIT ?",
                (safe, LIMIT),
            )
        )
    return [int(r[0]) for r in rows]


def plain_or(mem: Memory, question: str, now: datetime) -> list[int]:
    """The simple fix for comparison: the same words OR-ed, one FTS5 query on our word index,
    ordered by bm25 (no idf weighting per term, no conversation context, no CJK channel)."""
    plan = build_plan(question)
    if plan is None or plan.fts_expression is None:
        return []
    rows = mem.raw().rows(
        "SELECT rowid FROM philont_raw_messages_words_fts WHERE philont_raw_messages_words_fts"
        " MATCH ? ORDER BY bm25(philont_raw_messages_words_fts, 1.0, 0.0) LIMIT ?",
        ("content : (" + plan.fts_expression + ")", LIMIT),
    )
    return [int(r[0]) for r in rows]
