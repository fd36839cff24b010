"""A context turn's retrieval, value for value, on a seeded timeline (a golden file).

``retrieval_golden.json`` (SQLite) and ``retrieval_golden_pg.json`` (PostgreSQL, whose
scorer differs) hold, for each query, the window ``TimelineRetriever.retrieve``
builds (ids, sections, roles, token counts) and the ranked recall hits with their scores (the
float's ``repr``) as the search and retriever gave them before their hot paths were made
faster. A faster implementation must give the same values. Regenerate only on a deliberate
change of the ranking: ``PHILONT_REGEN_GOLDEN=1 pytest``.
"""

from __future__ import annotations

import json
import os
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.engine import URL

from philont.schemas.timeline import MessageIn
from philont.store import Store

BOTH_BACKENDS = True  # run on SQLite and PostgreSQL (tests/conftest.py)
GOLDEN = {
    "sqlite": Path(__file__).with_name("retrieval_golden.json"),
    "postgres": Path(__file__).with_name("retrieval_golden_pg.json"),
}
NOW = datetime(2026, 6, 14, 4, 0, tzinfo=UTC)

_EN = [
    "berlin",
    "flat",
    "deposit",
    "landlord",
    "kaution",
    "contract",
    "dentist",
    "appointment",
    "picnic",
    "church",
    "friends",
    "guitar",
    "band",
    "concert",
    "ticket",
    "visa",
    "passport",
    "flight",
    "kyoto",
    "tea",
    "coffee",
    "budget",
    "savings",
    "pension",
    "postgres",
    "index",
    "migration",
    "deploy",
    "docker",
    "rust",
    "garden",
    "tomato",
    "bicycle",
    "marathon",
    "knee",
    "doctor",
]
_COMMON = ["the", "a", "i", "you", "it", "is", "was", "and", "to", "of", "my", "we", "that", "this"]
_ZH = ["押金", "房东", "搬家", "咖啡", "机票", "签证", "上海", "工作", "朋友", "医生", "预约"]
_QUESTIONS = [
    "What did I say about the deposit for the Berlin flat?",
    "when is my dentist appointment?",
    "Did we talk about the Kyoto flight last week?",
    "what band did I see at the concert in May",
    "postgres index migration deploy",
    "I bought a bicycle, remember?",
    "押金什么时候退？",
    "上海的签证怎么样了",
    "我的医生预约是哪天",
    "thanks!",
    "ok",
    "tea",
    "church friends picnic",
    "how is my knee doing after the marathon?",
    "the savings and pension budget",
    "zzzz unknownword",
    "Mietkaution",
    "what did the landlord say yesterday?",
    "garden tomato 咖啡",
    "What did I tell you in March about the guitar?",
]


def _text(rng: random.Random, i: int) -> str:
    if i % 9 == 0:
        return "".join(rng.choice(_ZH) for _ in range(rng.randint(2, 6))) + rng.choice(["", "？"])
    words = [rng.choice(_COMMON if rng.random() < 0.5 else _EN) for _ in range(rng.randint(2, 14))]
    return " ".join(words) + rng.choice(["", "?", ".", "!"])


def _seed(store: Store) -> None:
    rng = random.Random(13)
    start = NOW - timedelta(days=200)
    with store.begin() as mem:
        sessions = [mem.timeline.start_session(f"s{k}").id for k in range(12)]
        batch = []
        for i in range(2400):
            role = ("user", "assistant")[i % 2] if i % 97 else "system"
            at = start + timedelta(minutes=i * 120 + rng.randint(0, 60))
            batch.append(
                MessageIn(content=_text(rng, i), role=role, session_id=sessions[i // 200], at=at)
            )
        mem.timeline.append_many(batch)


def _turn(store: Store, query: str) -> dict[str, Any]:
    with store.begin(write=False) as mem:
        window = mem.retriever.retrieve(query, now=NOW)
        hits = mem.search.message_rows(query, limit=15, now=NOW)
    return {
        "query": query,
        "window": [
            [m.message_id, m.section, m.role, m.timestamp.isoformat()] for m in window.messages
        ],
        "counts": [
            window.recency_count,
            window.recall_count,
            window.recent_tokens,
            window.recall_tokens,
            window.dropped_system,
        ],
        "hits": [[h.id, h.session_id, h.role, repr(h.score)] for h in hits],
    }


def test_retrieval_is_unchanged(backend: str, target: Path | URL) -> None:
    store = Store.open(target, clock=lambda: NOW)
    try:
        _seed(store)
        got = [_turn(store, q) for q in _QUESTIONS]
    finally:
        store.close()
    if os.environ.get("PHILONT_REGEN_GOLDEN"):
        lines = ",\n".join(json.dumps(t, ensure_ascii=False) for t in got)
        GOLDEN[backend].write_text(f"[\n{lines}\n]\n", encoding="utf-8")
    expected = json.loads(GOLDEN[backend].read_text(encoding="utf-8"))
    assert [t["query"] for t in got] == [t["query"] for t in expected]
    for turn, want in zip(got, expected, strict=True):
        assert turn == want, turn["query"]
    # the file exercises what it guards: recall found something for most questions
    assert sum(1 for t in got if t["hits"]) >= len(_QUESTIONS) - 4
