"""Model adapters without downloads: an OpenAI-compatible server on 127.0.0.1, a model2vec model
built here, fastembed refusing to fetch, and the spec strings of the CLI."""

from __future__ import annotations

import importlib.util
import json
import socket
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from philont.embed import (
    FastembedEmbedder,
    HashEmbedder,
    Model2VecEmbedder,
    OpenAIEmbedder,
    checked_vectors,
    embedder_from_spec,
)
from philont.embed.base import KNOWN_FLOORS, NOISE_SDS, similarity_floor
from philont.errors import EmbedderError, EmbedderUnavailableError


class _Stub(BaseHTTPRequestHandler):
    """An OpenAI-compatible /v1/embeddings answering with the hashing embedder's vectors, in
    reversed ``data`` order (clients must sort by ``index``); model ``fail`` answers 500."""

    requests: ClassVar[list[dict[str, Any]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Stub.requests.append(
            {"path": self.path, "auth": self.headers.get("Authorization"), **body}
        )
        if body["model"] == "fail":
            self.send_response(500)
            self.end_headers()
            return
        vectors = HashEmbedder(24).embed(body["input"])
        data = [{"index": i, "embedding": v, "object": "embedding"} for i, v in enumerate(vectors)]
        payload = json.dumps({"data": list(reversed(data)), "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Stub)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    _Stub.requests.clear()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_an_openai_compatible_server_embeds_in_order_and_tells_the_dimension(server: str) -> None:
    emb = OpenAIEmbedder("text-embedding-3-small", base_url=server, api_key="k")
    assert emb.dimension == 24 and emb.model_id == "openai:text-embedding-3-small"
    texts = ["deploy the server", "bake a cake", "deploy"]
    got, want = emb.embed(texts), HashEmbedder(24).embed(texts)
    assert len(got) == 3 and all(g == pytest.approx(w) for g, w in zip(got, want, strict=True))
    last = _Stub.requests[-1]
    assert last["path"] == "/v1/embeddings" and last["auth"] == "Bearer k"
    assert last["input"] == texts


def test_a_server_error_and_an_unreachable_server_are_typed_errors(server: str) -> None:
    with pytest.raises(EmbedderError, match="HTTP 500") as err:
        OpenAIEmbedder("fail", base_url=server, dimension=24).embed(["x"])
    assert err.value.details["status"] == 500
    # a port nobody listens on: bound here and never listened on (a port closed again could be
    # taken meanwhile by another process's listener)
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        port = bound.getsockname()[1]
        with pytest.raises(EmbedderUnavailableError, match="cannot be reached"):
            OpenAIEmbedder("m", base_url=f"http://127.0.0.1:{port}/v1", dimension=3).embed(["x"])


def _tiny_model2vec(path: Path) -> Path:
    np = pytest.importorskip("numpy")
    model2vec = pytest.importorskip("model2vec")
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {"[UNK]": 0, "[PAD]": 1, "deploy": 2, "server": 3, "cake": 4, "bake": 5}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    vectors = np.random.default_rng(0).normal(size=(len(vocab), 16)).astype(np.float32)
    model2vec.StaticModel(vectors, tok, normalize=True).save_pretrained(str(path))
    return path


def test_a_model2vec_model_on_disk_embeds_without_a_hub(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = _tiny_model2vec(tmp_path / "tiny-m2v")
    emb = embedder_from_spec(f"model2vec:{path}")
    assert isinstance(emb, Model2VecEmbedder)
    assert emb.dimension == 16 and emb.model_id == "model2vec:tiny-m2v"
    a, b, c = checked_vectors(emb, ["deploy server", "server deploy", "bake cake"])
    assert a == pytest.approx(b)  # a static model ignores word order
    assert a != pytest.approx(c)


def test_a_model2vec_directory_that_does_not_exist_is_refused_not_downloaded(
    tmp_path: Path,
) -> None:
    with pytest.raises(EmbedderUnavailableError, match="never downloaded"):
        Model2VecEmbedder(tmp_path / "minishlab-potion-base-8M")


def test_fastembed_never_fetches_a_model(tmp_path: Path) -> None:
    with pytest.raises(EmbedderUnavailableError) as err:
        FastembedEmbedder("BAAI/bge-small-en-v1.5", cache_dir=str(tmp_path))
    if importlib.util.find_spec("fastembed") is None:
        assert "not installed" in str(err.value)
    else:  # pragma: no cover - fastembed is not in the dev set-up
        assert "local cache" in str(err.value)


@pytest.mark.parametrize("spec", ["", "bert", "model2vec:", "openai:", "fastembed"])
def test_an_unknown_embedder_spec_is_refused(spec: str) -> None:
    with pytest.raises(EmbedderUnavailableError, match="unknown embedder"):
        embedder_from_spec(spec)


def test_the_hash_spec_takes_a_dimension() -> None:
    emb = embedder_from_spec("hash:40")
    assert emb.dimension == 40 and emb.model_id == "philont-hash-v1-40"


@pytest.mark.parametrize(
    "spec", ["hash:0", "hash:4", "hash:abc", "hash:4097", "hash:-8", "hash:8.5"]
)
def test_a_hash_spec_with_an_unusable_dimension_is_refused_by_name(spec: str) -> None:
    # It raised the built-in ValueError, and `philont embed` printed a traceback.
    with pytest.raises(EmbedderUnavailableError, match="dimension must be a whole number"):
        embedder_from_spec(spec)


# --- similarity floors -------------------------------------------------------------------------


class _Bare:
    """An embedder of the three protocol members only (no floor of its own)."""

    model_id = "bare"
    dimension = 100

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0] * self.dimension for _ in texts]


class _States(_Bare):
    def __init__(self, floor: object) -> None:
        self.similarity_floor = floor


@pytest.mark.parametrize("dimension", [8, 64, 384, 4096])
def test_a_floor_not_stated_is_the_noise_bound_of_the_dimension(dimension: int) -> None:
    expected = min(NOISE_SDS / dimension**0.5, 0.95)  # 8 dimensions: 1.41, held below 1
    assert similarity_floor(HashEmbedder(dimension)) == pytest.approx(expected)
    bare = _Bare()
    bare.dimension = dimension
    assert similarity_floor(bare) == pytest.approx(expected)


@pytest.mark.parametrize("floor", [-1.0, 0.0, 0.35, 0.99])
def test_a_stated_floor_is_used(floor: float) -> None:
    assert similarity_floor(_States(floor)) == floor


@pytest.mark.parametrize("floor", [float("nan"), float("inf"), 1.0, 1.5, -1.01, "high"])
def test_an_unusable_stated_floor_is_a_typed_error(floor: object) -> None:
    with pytest.raises(EmbedderError, match="similarity floor"):
        similarity_floor(_States(floor))


def test_the_adapters_take_a_floor_or_know_the_measured_one(server: str) -> None:
    named = OpenAIEmbedder("m", base_url=server, dimension=8, similarity_floor=0.42)
    assert similarity_floor(named) == 0.42
    unknown = OpenAIEmbedder("m", base_url=server, dimension=64)
    assert unknown.similarity_floor is None and similarity_floor(unknown) == 0.5
    model = "sentence-transformers/all-MiniLM-L6-v2"
    known = OpenAIEmbedder(model, base_url=server, dimension=384)
    assert similarity_floor(known) == KNOWN_FLOORS[model] == 0.35
