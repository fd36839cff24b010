"""Pure parts of semantic recall: score fusion, vector storage form, sign-bit codes, the
contract every embedder's output is checked against, and the hashing test embedder."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from philont.embed import codec
from philont.embed.base import checked_vectors
from philont.embed.fusion import FusionWeights, fuse, normalised
from philont.embed.hashing import HashEmbedder
from philont.errors import EmbedderError

scores = st.dictionaries(st.integers(0, 50), st.floats(0.001, 100.0), max_size=20)
sims = st.dictionaries(st.integers(0, 50), st.floats(-1.0, 1.0), max_size=20)


@given(scores, sims)
def test_weight_zero_gives_the_keyword_scores_unchanged(
    keyword: dict[int, float], similar: dict[int, float]
) -> None:
    assert fuse(keyword, similar, 0.0) == keyword


@given(scores)
def test_no_vector_candidates_gives_the_keyword_scores_unchanged(keyword: dict[int, float]) -> None:
    assert fuse(keyword, {}, 0.4) == keyword


@given(scores, sims, st.floats(0.05, 0.95))
def test_fused_scores_stay_on_the_keyword_scale(
    keyword: dict[int, float], similar: dict[int, float], weight: float
) -> None:
    fused = fuse(keyword, similar, weight)
    top = max(keyword.values(), default=1.0)
    assert all(0.0 < s <= top * (1 + 1e-9) for s in fused.values())
    # every keyword hit survives (its keyword share is positive)
    assert set(keyword) <= set(fused)


@given(scores, sims, st.floats(0.05, 0.95))
def test_a_document_better_in_both_channels_is_never_ranked_below(
    keyword: dict[int, float], similar: dict[int, float], weight: float
) -> None:
    fused = fuse(keyword, similar, weight)
    vec = normalised(similar)
    for a in fused:
        for b in fused:
            if keyword.get(a, 0.0) >= keyword.get(b, 0.0) and vec.get(a, 0.0) >= vec.get(b, 0.0):
                assert fused[a] >= fused[b] - 1e-9


def test_weight_one_ranks_by_similarity_alone() -> None:
    fused = fuse({1: 5.0, 2: 1.0}, {1: 0.1, 2: 0.9, 3: 0.5}, 1.0)
    assert sorted(fused, key=fused.__getitem__, reverse=True) == [2, 3]  # 1 is the weakest: 0


def test_a_fusion_weight_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="messages"):
        FusionWeights(messages=1.5)


@given(st.lists(st.floats(-1e3, 1e3, width=32), min_size=1, max_size=70))
def test_vectors_round_trip_through_their_storage_form(values: list[float]) -> None:
    blob = codec.pack(values)
    assert len(blob) == 4 * len(values)
    assert list(codec.unpack(blob)) == pytest.approx(values, rel=1e-6, abs=1e-30)


@given(st.lists(st.floats(-1.0, 1.0), min_size=1, max_size=130))
def test_a_code_holds_one_bit_per_positive_component_in_whole_words(values: list[float]) -> None:
    blob = codec.code(values)
    assert len(blob) == codec.code_bytes(len(values)) and len(blob) % 8 == 0
    bits = int.from_bytes(blob, "little")
    assert [bool(bits >> i & 1) for i in range(len(values))] == [v > 0 for v in values]
    assert bits >> len(values) == 0


def _random_codes(n: int, width: int) -> list[tuple[int, bytes]]:
    import random

    rng = random.Random(7)
    return [(i, rng.randbytes(width)) for i in range(n)]


def test_hamming_nearest_is_the_same_with_and_without_numpy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = _random_codes(500, 16)
    query = rows[17][1]
    fast = codec.Codes(16)
    fast.extend(rows)
    fast_distances = list(fast.distances(query))
    monkeypatch.setattr(codec, "_np", None)
    slow = codec.Codes(16)
    slow.extend(rows)
    assert list(slow.distances(query)) == fast_distances
    assert fast_distances[17] == 0
    cut = sorted(fast_distances)[9]
    want = {k for k, d in zip(range(500), fast_distances, strict=True) if d < cut}
    assert want <= set(slow.nearest(query, 10))


def test_dot_is_the_cosine_of_unit_vectors_with_and_without_numpy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emb = HashEmbedder(32)
    a, b, c = checked_vectors(emb, ["deploy the service", "deployment of services", "cake"])
    expected = [sum(x * y for x, y in zip(a, v, strict=True)) for v in (a, b, c)]
    blobs = [codec.pack(v) for v in (a, b, c)]
    assert codec.dot(a, blobs) == pytest.approx(expected, abs=1e-6)
    monkeypatch.setattr(codec, "_np", None)
    assert codec.dot(a, blobs) == pytest.approx(expected, abs=1e-6)
    assert expected[0] == pytest.approx(1.0, abs=1e-6) and expected[1] > expected[2]


class _Broken:
    model_id = "broken"
    dimension = 4

    def __init__(self, answer: Sequence[Sequence[float]]) -> None:
        self.answer = answer

    def embed(self, texts: Sequence[str]) -> Sequence[Sequence[float]]:
        return self.answer


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([], "returned 0 vectors for 1"),
        ([[1.0, 0.0, 0.0]], "dimension 3"),
        ([[1.0, math.nan, 0.0, 0.0]], "non-finite"),
        ([[1.0, math.inf, 0.0, 0.0]], "non-finite"),
    ],
)
def test_an_embedder_that_breaks_its_contract_is_refused_with_a_typed_error(
    answer: list[list[float]], message: str
) -> None:
    with pytest.raises(EmbedderError, match=message) as err:
        checked_vectors(_Broken(answer), ["text"])
    assert err.value.code == "embedder_error"


def test_checked_vectors_are_unit_length_and_zero_stays_zero() -> None:
    out = checked_vectors(_Broken([[3.0, 4.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]), ["a", "b"])
    assert out == [[0.6, 0.8, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]


@given(st.text(max_size=200))
def test_the_hashing_embedder_is_deterministic_and_unit_length_or_zero(text: str) -> None:
    emb = HashEmbedder(48)
    (a,) = emb.embed([text])
    assert a == HashEmbedder(48).embed([text])[0] and len(a) == 48
    norm = math.sqrt(sum(x * x for x in a))
    assert norm == pytest.approx(1.0) or norm == 0.0


def test_the_hashing_embedder_puts_shared_word_pieces_closer() -> None:
    a, b, c = checked_vectors(HashEmbedder(128), ["deployment plan", "deploying", "banana bread"])
    cos = lambda x, y: sum(p * q for p, q in zip(x, y, strict=True))  # noqa: E731
    assert cos(a, b) > cos(a, c)


@settings(max_examples=60, deadline=None)
@given(
    words=st.integers(1, 4),
    n=st.integers(1, 120),
    take=st.integers(1, 150),
    seed=st.integers(0, 2**16),
    split=st.floats(0, 1),
)
def test_nearest_orders_by_distance_then_newest_with_and_without_numpy(
    words: int, n: int, take: int, seed: int, split: float
) -> None:
    """The same keys in the same order on both paths (ties: the larger key first), also after
    the column of codes grew (the word-by-word copy is rebuilt)."""
    import random

    rng = random.Random(seed)
    width = 8 * words
    # few distinct bit patterns: many equal distances, so the tie rule decides
    patterns = [rng.randbytes(width) for _ in range(3)]
    rows = [(i, rng.choice(patterns)) for i in range(n)]
    query = rng.choice(patterns)
    fast = codec.Codes(width)
    cut = int(n * split)
    fast.extend(rows[:cut])
    fast.nearest(query, take)  # builds the arrays before the column grows
    fast.extend(rows[cut:])
    q = int.from_bytes(query, "little")
    distance = {k: (int.from_bytes(b, "little") ^ q).bit_count() for k, b in rows}
    expected = sorted(distance, key=lambda k: (distance[k], -k))[:take]
    assert fast.nearest(query, take) == expected
    original = codec._np
    try:
        codec._np = None
        slow = codec.Codes(width)
        slow.extend(rows)
        assert slow.nearest(query, take) == expected
    finally:
        codec._np = original
