"""A small generated memory (messages in sessions, notes, skills) for the semantic recall tests."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

from philont.embed import HashEmbedder
from philont.memory import Memory
from philont.schemas.timeline import MessageIn

WORDS = [
    "deploy",
    "server",
    "cluster",
    "kubernetes",
    "garden",
    "tomato",
    "basil",
    "recipe",
    "oven",
    "bake",
    "cake",
    "flour",
    "sugar",
    "travel",
    "flight",
    "berlin",
    "lisbon",
    "hotel",
    "museum",
    "painting",
    "guitar",
    "concert",
    "piano",
    "lesson",
    "invoice",
    "budget",
    "salary",
    "bank",
    "mortgage",
    "doctor",
    "appointment",
    "dentist",
    "medicine",
    "running",
    "marathon",
    "shoes",
    "knee",
    "injury",
    "physio",
    "birthday",
    "party",
    "gift",
    "sister",
    "brother",
    "wedding",
    "organization",
    "meeting",
    "project",
    "deadline",
    "report",
    "presentation",
    "slides",
    "coffee",
    "tea",
    "breakfast",
    "weekend",
    "hiking",
    "mountain",
]

QUERIES = (
    "when is the dentist appointment",
    "what did we bake for the birthday party",
    "kubernetes cluster deploy problems",
    "marathon training and knee injury",
    "flight to lisbon hotel",
    "budget for the wedding gift",
    "piano lesson with my sister",
    "organise the project meeting",
)


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 11)))


def fill(mem: Memory, *, messages: int = 120, notes: int = 12, skills: int = 6) -> None:
    """Deterministic content: ``messages`` in four sessions, some notes and skills."""
    rng = random.Random(18)
    sessions = [mem.timeline.start_session(f"s{i}").id for i in range(4)]
    batch = [
        MessageIn(
            content=sentence(rng), session_id=sessions[i % 4], role="user" if i % 2 else "assistant"
        )
        for i in range(messages)
    ]
    mem.timeline.append_many(batch)
    for _ in range(notes):
        mem.notes.add(sentence(rng), importance=rng.random())
    for i in range(skills):
        mem.skills.create(
            f"skill-{i}", sentence(rng), [rng.choice(WORDS), rng.choice(WORDS)], "do it"
        )


class CountingEmbedder(HashEmbedder):
    """The hashing embedder, counting the texts it was asked to embed."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.calls: list[int] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(len(texts))
        return super().embed(texts)


def everything(mem: Memory) -> list[Any]:
    """Every search of every query on every channel: hits with their scores."""
    out: list[Any] = []
    for query in QUERIES:
        out.append([(h.id, h.score) for h in mem.search.messages(query, limit=10)])
        out.append([(h.id, h.score) for h in mem.search.messages(query, session_ids=["s1"])])
        out.append([(h.id, h.score) for h in mem.search.notes(query, limit=5)])
        out.append([(h.id, h.score) for h in mem.search.skills(query, limit=5)])
        window = mem.retriever.retrieve(query, recent_limit=3)
        out.append([(m.message_id, m.section) for m in window.messages])
    return out
