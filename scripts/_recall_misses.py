"""Where the recall benchmark's evidence is missed, by category (``bench_recall --misses``).

Each evidence turn of each question falls in one bucket: found in the top 10; ranked 11-20;
a keyword candidate (it scores on its own words, rules and context off) but ranked below 20;
or no candidate at all (none of the question's words is in it, or it was cut from a common
word's candidates), then told apart by where it sits: within two turns of a top-10 hit in the
same session, in a session of a top-10 hit, or elsewhere.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from _recall_data import Conversation

from philont.domain.ranking import RankingOptions
from philont.services.search import SearchService
from philont.store import Store

BUCKETS = (
    "top 10",
    "rank 11-20",
    "keyword candidate, below 20",
    "no candidate: within 2 turns of a top-10 hit",
    "no candidate: in a top-10 hit's session",
    "no candidate: elsewhere",
)
DEPTH = 1_000


def _bucket(e: int, ids: list[int], matched: set[int], session_of: dict[int, str]) -> str:
    rank = ids.index(e) if e in ids else None
    if rank is not None and rank < 10:
        return BUCKETS[0]
    if rank is not None and rank < 20:
        return BUCKETS[1]
    if e in matched:
        return BUCKETS[2]
    top = ids[:10]
    if any(abs(e - t) <= 2 and session_of[t] == session_of[e] for t in top):
        return BUCKETS[3]
    if session_of[e] in {session_of[t] for t in top}:
        return BUCKETS[4]
    return BUCKETS[5]


def misses(
    conversations: list[Conversation],
    options: dict[str, Any],
    opener: Callable[[Conversation], AbstractContextManager[Store]],
) -> tuple[Counter[tuple[Any, str]], Counter[Any], Counter[Any]]:
    """(category, bucket) -> evidence turns, and per category the questions and turns."""
    buckets: Counter[tuple[Any, str]] = Counter()
    questions: Counter[Any] = Counter()
    turns: Counter[Any] = Counter()
    for conv in conversations:
        session_of = {m[0]: m[1] for m in conv.messages}
        with opener(conv) as store, store.begin(write=False) as mem:
            for q in conv.questions:
                ids = _ids(SearchService(mem, **options), q.text, conv.now)
                bare = SearchService(mem, context_weights=(), ranking=RankingOptions.none())
                matched = set(_ids(bare, q.text, conv.now))
                questions[q.category] += 1
                for e in q.evidence:
                    turns[q.category] += 1
                    buckets[(q.category, _bucket(e, ids, matched, session_of))] += 1
    return buckets, questions, turns


def _ids(search: SearchService, text: str, now: datetime) -> list[int]:
    return [h.id for h in search.messages(text, limit=DEPTH, now=now)]


def print_misses(
    conversations: list[Conversation],
    name: str,
    options: dict[str, Any],
    opener: Callable[[Conversation], AbstractContextManager[Store]],
) -> None:
    buckets, questions, turns = misses(conversations, options, opener)
    print(f"\nwhere the evidence turns are ({name}), by category:")
    cats = sorted(questions, key=str)
    print(f"{'':<50}" + "".join(f"{f'cat {c}':>14}" for c in cats))
    print(
        f"{'questions / evidence turns':<50}"
        + "".join(f"{f'{questions[c]} / {turns[c]}':>14}" for c in cats)
    )
    for b in BUCKETS:
        cells = "".join(
            f"{f'{buckets[(c, b)]} ({100 * buckets[(c, b)] / max(turns[c], 1):.0f}%)':>14}"
            for c in cats
        )
        print(f"{b:<50}{cells}")
