"""Semantic recall on both backends: nothing changes without an embedder, vectors are never
mixed, appends never call a model, searches say what is not embedded, filters bound the search,
the coarse pass keeps the nearest, and the consolidator keeps vectors current."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy.engine import URL

from philont import settings, tools
from philont.db.queries import vectors as q
from philont.embed import FusionWeights, HashEmbedder, backfill, checked_vectors, codec
from philont.embed.search import state
from philont.errors import EmbedderMismatchError
from philont.services.search.scoring import Kind
from philont.store import Store
from tests.embed.helpers import QUERIES, CountingEmbedder, everything, fill

BOTH_BACKENDS = True


@pytest.fixture
def filled(target: Path | URL) -> Iterator[Path | URL]:
    with Store.open(target) as store, store.begin() as mem:
        fill(mem)
    yield target


def test_without_an_embedder_search_is_exactly_keyword_search_on_a_file_with_vectors(
    filled: Path | URL,
) -> None:
    with Store.open(filled) as plain, plain.begin() as mem:
        before = everything(mem)
    emb = HashEmbedder(256)  # its noise floor (0.25) is below every query's best match
    with Store.open(filled) as store:
        assert backfill(store, emb).complete
    with Store.open(filled) as plain, plain.begin() as mem:
        assert everything(mem) == before  # identical hits and scores
        assert mem.search.reports == {}
    with Store.open(filled, embedder=emb) as store:
        state(store).weights = FusionWeights(0.0, 0.0, 0.0)
        with store.begin() as mem:
            assert everything(mem) == before  # the fusion hook with weight 0 changes nothing
        state(store).weights = FusionWeights()
        with store.begin() as mem:
            fused = everything(mem)
            assert mem.search.reports[Kind.MESSAGES].answered == ("keyword", "vector")
    assert fused != before  # and with a weight it does change the ranking


def test_an_embedder_of_another_model_or_dimension_is_refused(filled: Path | URL) -> None:
    with Store.open(filled) as store:
        backfill(store, HashEmbedder(64))
    for other in (HashEmbedder(32), _Renamed(64)):
        with pytest.raises(EmbedderMismatchError, match="never mixed") as err:
            Store.open(filled, embedder=other)
        assert err.value.code == "embedder_mismatch"
        assert err.value.stored == "philont-hash-v1-64/64"
        with Store.open(filled) as store:
            with pytest.raises(EmbedderMismatchError):
                backfill(store, other)
            with store.begin(write=False) as mem:
                status = mem.embeddings.status()
                assert (status.model_id, status.dimension) == ("philont-hash-v1-64", 64)
                assert status.embedded_messages == 120


def test_rebuild_on_request_replaces_every_vector_with_the_new_models(filled: Path | URL) -> None:
    with Store.open(filled) as store:
        backfill(store, HashEmbedder(64))
        report = backfill(store, HashEmbedder(32), rebuild=True)
        assert report.rebuilt and report.complete and report.messages == 120
        with store.begin(write=False) as mem:
            raw = mem.raw()
            rec = q.record(raw)
            assert rec is not None and (rec.model_id, rec.dimension, rec.generation) == (
                "philont-hash-v1-32",
                32,
                2,
            )
            blobs = q.message_vectors(raw, list(range(1, 200)))
            assert len(blobs) == 120 and {len(b) for b in blobs.values()} == {32 * 4}
    with Store.open(filled, embedder=HashEmbedder(32)) as store, store.begin() as mem:
        assert mem.search.messages(QUERIES[0])


def test_appends_never_call_a_model_and_a_query_is_embedded_once(target: Path | URL) -> None:
    emb = CountingEmbedder()
    with Store.open(target, embedder=emb) as store:
        with store.begin() as mem:
            fill(mem, messages=40)
            mem.notes.add("a note written during the turn")
        assert emb.calls == []
        backfill(store, emb, batch_size=16)
        assert sum(emb.calls) == 40 + 13 + 6 and max(emb.calls) <= 16
        emb.calls.clear()
        with store.begin() as mem:
            mem.search.messages("deploy the cluster")
            mem.search.notes("deploy the cluster")
            mem.search.skills("deploy the cluster")
            mem.retriever.retrieve("deploy the cluster")
        assert emb.calls == [1]


def test_a_view_for_an_agent_shares_its_stores_query_vectors_codes_and_weights(
    filled: Path | URL,
) -> None:
    # A view (store.for_agent, shared(agent=...): one per call) had a vector search state of
    # its own: every search through a new view embedded its query again (a model call) and
    # read every code again, and fusion weights set on the Store did not hold there.
    emb = CountingEmbedder(256)  # as the first test: vectors change the ranking
    with Store.open(filled) as plain:
        backfill(plain, emb)
        with plain.begin() as mem:
            before = everything(mem)
    agent = os.environ.get(settings.AGENT_ENV, "solo")  # PostgreSQL: this test's agent
    with Store.open(filled, embedder=emb) as store:
        state(store).weights = FusionWeights(0.0, 0.0, 0.0)
        emb.calls.clear()
        with store.begin() as mem:
            assert everything(mem) == before
        embedded = len(emb.calls)
        for view in (store.for_agent(agent), store.for_agent(agent).for_agent(agent)):
            with view.begin() as mem:
                assert everything(mem) == before  # the Store's weights
        assert len(emb.calls) == embedded  # every query's vector was the Store's


def test_searches_say_how_many_recent_items_are_not_embedded_and_keywords_still_find_them(
    filled: Path | URL,
) -> None:
    emb = HashEmbedder(64)
    with Store.open(filled, embedder=emb) as store:
        with store.begin() as mem:
            assert mem.search.messages("garden tomato")
            report = mem.search.reports[Kind.MESSAGES]
            assert report.answered == ("keyword",) and report.unembedded == 120
            assert "no vectors yet" in (report.note or "")
        backfill(store, emb)
        with store.begin() as mem:
            for text in ("zucchini harvest one", "zucchini harvest two", "zucchini harvest three"):
                mem.timeline.append(text, session_id="s2")
            mem.notes.add("zucchini soup recipe")
        with store.begin() as mem:
            hits = mem.search.messages("zucchini", limit=5)
            assert {h.content for h in hits[:3]} == {
                "zucchini harvest one",
                "zucchini harvest two",
                "zucchini harvest three",
            }
            assert mem.search.reports[Kind.MESSAGES].unembedded == 3
            assert mem.search.notes("zucchini")[0].content == "zucchini soup recipe"
            assert mem.search.reports[Kind.NOTES].unembedded == 1
            window = mem.retriever.retrieve("zucchini", recent_limit=1)
            # the embedded messages hold no zucchini: nothing is similar enough to answer
            assert window.recall_channels == ("keyword",) and window.unembedded == 3
            assert "no stored vector is similar enough" in (
                mem.search.reports[Kind.MESSAGES].note or ""
            )
            hits = mem.search.messages("marathon knee injury", limit=5)
            assert mem.search.reports[Kind.MESSAGES].answered == ("keyword", "vector")
        result = tools.call("recall_sessions", {"query": "zucchini harvest"}, db=store)
        assert result.ok
        assert "(answered by: keyword; 3 recent messages not embedded yet" in result.text


def test_recall_sessions_without_an_embedder_reads_as_before(filled: Path | URL) -> None:
    with Store.open(filled) as store:
        backfill(store, HashEmbedder(64))
        result = tools.call("recall_sessions", {"query": "dentist appointment"}, db=store)
    assert result.ok and "answered by" not in result.text


def test_the_vector_channel_finds_what_no_keyword_matches(target: Path | URL) -> None:
    emb = HashEmbedder(256)
    with Store.open(target, embedder=emb) as store:
        with store.begin() as mem:
            mem.timeline.append("organization of the party")
            mem.timeline.append("we talked about the weather")
        backfill(store, emb)
        with Store.open(target) as plain, plain.begin() as mem:
            assert mem.search.messages("organisation") == []
        with store.begin() as mem:
            hits = mem.search.messages("organisation")
            assert hits[0].content == "organization of the party"  # (its reply: a share)
            assert mem.search.reports[Kind.MESSAGES].answered == ("vector",)


def _gibberish(rng: random.Random) -> str:
    """Two to four made-up words (no word of the generated memory, nor any stem of one)."""
    return " ".join(
        "".join(rng.choice("bcdfghjklmnpqrstvwxz") + rng.choice("aeiouy") for _ in range(3)) + "q"
        for _ in range(rng.randint(2, 4))
    )


@pytest.mark.parametrize("dimension", [64, 256])
def test_a_query_that_matches_nothing_gets_no_semantic_hits(
    filled: Path | URL, dimension: int
) -> None:
    """Without a similarity floor every query got the nearest vectors, however far: a query of
    made-up words found messages, notes and skills."""
    emb = HashEmbedder(dimension)
    rng = random.Random(dimension)
    with Store.open(filled, embedder=emb) as store:
        backfill(store, emb)
        with store.begin() as mem:
            for query in [_gibberish(rng) for _ in range(12)]:
                assert mem.search.messages(query) == [], query
                assert mem.search.notes(query) == [], query
                assert mem.search.skills(query) == [], query
                report = mem.search.reports[Kind.MESSAGES]
                assert report.answered == () and "similar enough" in (report.note or "")
                assert mem.retriever.retrieve(query, recent_limit=0).messages == []
            assert mem.search.messages(QUERIES[3])  # a real query still finds by both
            assert mem.search.reports[Kind.MESSAGES].answered == ("keyword", "vector")


def test_a_floor_no_stored_vector_reaches_leaves_exactly_keyword_search(
    filled: Path | URL,
) -> None:
    with Store.open(filled) as plain, plain.begin() as mem:
        keyword = [[(h.id, h.score) for h in mem.search.messages(q, limit=10)] for q in QUERIES]
    emb = _Floored(64, 0.999)
    with Store.open(filled, embedder=emb) as store:
        backfill(store, emb)
        with store.begin() as mem:
            fused = [[(h.id, h.score) for h in mem.search.messages(q, limit=10)] for q in QUERIES]
            assert mem.search.reports[Kind.MESSAGES].answered == ("keyword",)
    assert fused == keyword


def test_filters_bound_the_vector_search_and_it_matches_an_exact_scan(filled: Path | URL) -> None:
    emb = HashEmbedder(64)
    with Store.open(filled, embedder=emb) as store:
        backfill(store, emb)
        state(store).weights = FusionWeights(1.0, 1.0, 1.0)  # vector evidence alone
        with store.begin() as mem:
            raw = mem.raw()
            everything_ = q.message_vectors(raw, list(range(1, 200)))
            sessions = dict(
                raw.rows(f"SELECT id, session_id FROM memory_raw_messages{raw.where()}")
            )
            for query in QUERIES:
                (qvec,) = checked_vectors(emb, [query])
                sims = dict(zip(everything_, codec.dot(qvec, everything_.values()), strict=True))
                in_s1 = sorted((i for i in sims if sessions[i] == "s1"), key=lambda i: -sims[i])
                hits = mem.search.messages(query, session_ids=["s1"], limit=5)
                assert {h.session_id for h in hits} == {"s1"}
                vector_best = [h.id for h in hits if sims[h.id] >= sims[in_s1[4]]]
                assert set(vector_best) <= set(in_s1[:5])


def test_the_engine_in_use_is_detected_and_reported(target: Path | URL, backend: str) -> None:
    with Store.open(target) as store, store.begin(write=False) as mem:
        status = mem.embeddings.status()
    assert status.model_id is None and status.embedded_messages == 0
    if backend == "postgres":
        # pgvector cannot be installed on our machines: the portable path runs, and says why
        assert status.engine == "python"
        assert status.engine_note == "the pgvector extension is not installed in this database"
    elif status.engine == "python":
        assert status.engine_note is not None and (
            "cannot load extensions" in status.engine_note or "not installed" in status.engine_note
        )
    else:  # pragma: no cover - a Python whose sqlite3 loads extensions, with sqlite-vec
        assert status.engine == "sqlite-vec" and status.engine_note is None


def test_edited_notes_are_embedded_again_and_deleted_skills_lose_their_vector(
    filled: Path | URL,
) -> None:
    emb = HashEmbedder(64)
    with Store.open(filled, embedder=emb) as store:
        backfill(store, emb)
        with store.begin() as mem:
            note = mem.notes.list(limit=1)[0]
            mem.notes.upsert(note.id, "rewritten: the piano lesson moved to friday")
            assert mem.skills.delete("skill-0")
        report = backfill(store, emb)
        assert (report.notes, report.skills, report.pruned, report.messages) == (1, 0, 1, 0)
        with store.begin(write=False) as mem:
            assert q.pending_keyed(mem.raw(), q.SKILLS) == 0
            assert len(q.keyed_vectors(mem.raw(), q.SKILLS, "id", _no_filter())) == 5


def test_the_consolidator_tick_embeds_what_is_pending(filled: Path | URL) -> None:
    from philont.learning import Consolidator
    from philont.llm.scripted import ScriptedModel

    emb = HashEmbedder(64)
    with Store.open(filled, embedder=emb) as store:
        Consolidator.for_store(store, ScriptedModel([])).tick()
        with store.begin(write=False) as mem:
            status = mem.embeddings.status()
    assert status.embedded_messages == 120 and status.pending_messages == 0


def _no_filter():  # type: ignore[no-untyped-def]
    from philont.services.search.scoring import Filter

    return Filter()


class _Renamed(HashEmbedder):
    @property
    def model_id(self) -> str:
        return "another-model"


class _Floored(HashEmbedder):
    """The hashing embedder stating another similarity floor."""

    def __init__(self, dimension: int, floor: float) -> None:
        super().__init__(dimension)
        self._floor = floor

    @property
    def similarity_floor(self) -> float:
        return self._floor


def test_a_message_is_embedded_after_the_turn_before_it_in_its_session(target: Path | URL) -> None:
    from philont.embed.index import CONTEXT_CHARS, message_texts
    from philont.schemas.timeline import MessageIn

    long_question = "where did Ines move " + "x" * 400
    with Store.open(target) as store, store.begin() as mem:
        mem.timeline.start_session("a")
        mem.timeline.start_session("b")
        mem.timeline.append_many(
            [
                MessageIn(content=long_question, session_id="a"),
                MessageIn(content="hello from b", session_id="b"),
                MessageIn(content="to Porto, near the river", session_id="a", role="assistant"),
                MessageIn(content="and b again", session_id="b", role="assistant"),
            ]
        )
        raw = mem.raw()
        first = [t for t in q.messages_after(raw, 0, 10) if t.session_id in ("a", "b")]
        # the whole list, and the same messages one at a time (earlier turns read back)
        texts = message_texts(raw, first)
        assert texts == [
            long_question,
            "hello from b",
            f"{long_question[:CONTEXT_CHARS]}\nto Porto, near the river",
            "hello from b\nand b again",
        ]
        assert [message_texts(raw, [t])[0] for t in first] == texts
