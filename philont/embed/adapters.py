"""Embedders for real models, each an optional extra; none of them ever downloads a model.

* :class:`Model2VecEmbedder` (``pip install 'philont[model2vec]'``): static embeddings, numpy
  only, from a model directory on this machine.
* :class:`FastembedEmbedder` (``pip install 'philont[fastembed]'``): ONNX on the CPU, no torch,
  from fastembed's cache on this machine (``local_files_only``).
* :class:`OpenAIEmbedder` (no extra: the standard library speaks HTTP): any server with an
  OpenAI-compatible ``POST /v1/embeddings`` (OpenAI, vLLM, llama.cpp, Ollama, LM Studio, ...).

:func:`embedder_from_spec` builds one from a short text (the CLI's ``--embedder``).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from philont.embed.base import Embedder, known_floor
from philont.embed.hashing import HashEmbedder
from philont.errors import EmbedderError, EmbedderUnavailableError, InvalidInputError

__all__ = ["FastembedEmbedder", "Model2VecEmbedder", "OpenAIEmbedder", "embedder_from_spec"]


class _Adapter:
    """What every adapter holds: the id of its model, the dimension of its vectors and its
    cosine floor (set by the adapter's constructor: the ``similarity_floor`` given, else the
    model's measured one from :data:`~philont.embed.base.KNOWN_FLOORS`, else None, which
    :func:`~philont.embed.base.similarity_floor` reads as the dimension's noise bound)."""

    _model_id: str
    _dimension: int
    similarity_floor: float | None = None

    def _identify(self, library: str, name: str, similarity_floor: float | None) -> None:
        """Model id ``library:name``; the floor given, else ``name``'s measured one (or None)."""
        self._model_id = f"{library}:{name}"
        self.similarity_floor = (
            similarity_floor if similarity_floor is not None else known_floor(name)
        )

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dimension(self) -> int:
        return self._dimension


class Model2VecEmbedder(_Adapter):
    """A model2vec ``StaticModel`` loaded from a local directory (or given ready-made)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        model: Any = None,
        similarity_floor: float | None = None,
    ) -> None:
        if model is None:
            if path is None:
                raise EmbedderUnavailableError("model2vec: give the model's local directory")
            if not Path(path).is_dir():
                raise EmbedderUnavailableError(
                    f"model2vec: no model directory at {str(path)!r} (models are never downloaded)"
                )
            try:
                from model2vec import StaticModel
            except ModuleNotFoundError as exc:
                raise EmbedderUnavailableError(
                    "model2vec is not installed: pip install 'philont[model2vec]'"
                ) from exc
            model = StaticModel.from_pretrained(str(path))
        self._model = model
        self._dimension = int(model.dim)
        name = Path(str(path)).name if path is not None else type(model).__name__
        self._identify("model2vec", name, similarity_floor)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in self._model.encode(list(texts))]


class FastembedEmbedder(_Adapter):
    """A fastembed ``TextEmbedding`` from fastembed's local cache only."""

    def __init__(
        self,
        model_name: str,
        *,
        cache_dir: str | None = None,
        similarity_floor: float | None = None,
    ) -> None:
        try:
            from fastembed import TextEmbedding
        except ModuleNotFoundError as exc:
            raise EmbedderUnavailableError(
                "fastembed is not installed: pip install 'philont[fastembed]'"
            ) from exc
        try:
            self._model = TextEmbedding(model_name, cache_dir=cache_dir, local_files_only=True)
        except Exception as exc:  # fastembed raises plain exceptions for a missing model
            raise EmbedderUnavailableError(
                f"fastembed model {model_name!r} is not in the local cache "
                f"(models are never downloaded here): {exc}"
            ) from exc
        probe = next(iter(self._model.embed(["dimension probe"])))
        self._dimension = len(probe)
        self._identify("fastembed", model_name, similarity_floor)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(map(float, row)) for row in self._model.embed(list(texts))]


class OpenAIEmbedder(_Adapter):
    """``POST {base_url}/embeddings`` with ``{"model", "input": [...]}``; the answer's
    ``data[i].embedding`` (ordered by ``index``). ``dimension`` is asked of the server once
    (one probe text) unless given."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = "https://api.openai.com/v1",
        api_key: str | None = None,
        dimension: int | None = None,
        timeout: float = 30.0,
        similarity_floor: float | None = None,
    ) -> None:
        self.model = model
        self._identify("openai", model, similarity_floor)
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = timeout
        self._dimension = dimension if dimension is not None else len(self.embed(["probe"])[0])

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        body = json.dumps({"model": self.model, "input": list(texts)}).encode("utf-8")
        request = urllib.request.Request(
            f"{self.base_url}/embeddings",
            data=body,
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        if self.api_key:
            request.add_header("Authorization", f"Bearer {self.api_key}")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            raise EmbedderError(
                f"embeddings server answered HTTP {exc.code} for {self.model!r}", status=exc.code
            ) from exc
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            raise EmbedderUnavailableError(
                f"embeddings server {self.base_url} cannot be reached: {exc}"
            ) from exc
        except ValueError as exc:
            raise EmbedderError(f"embeddings server sent no JSON: {exc}") from exc
        return _vectors(answer, len(texts))


def _vectors(answer: Any, expected: int) -> list[list[float]]:
    try:
        items = sorted(answer["data"], key=lambda item: int(item.get("index", 0)))
        vectors = [[float(x) for x in item["embedding"]] for item in items]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EmbedderError(f"embeddings answer has no data[].embedding list: {exc}") from exc
    if len(vectors) != expected:
        raise EmbedderError(f"embeddings server returned {len(vectors)} vectors for {expected}")
    return vectors


def embedder_from_spec(spec: str) -> Embedder:
    """An embedder from ``hash[:DIM]``, ``model2vec:DIR``, ``fastembed:MODEL`` or
    ``openai:MODEL[@BASE_URL]`` (the key from ``$OPENAI_API_KEY``)."""
    kind, rest = check_embedder_spec(spec)
    if kind == "hash":
        return HashEmbedder(int(rest) if rest else 64)
    if kind == "model2vec":
        return Model2VecEmbedder(rest)
    if kind == "fastembed":
        return FastembedEmbedder(rest)
    model, _, base = rest.partition("@")
    return OpenAIEmbedder(model, base_url=base) if base else OpenAIEmbedder(model)


def check_embedder_spec(spec: str) -> tuple[str, str]:
    """An embedder spec's kind and the rest, or :class:`EmbedderUnavailableError`: its form,
    and a hash embedder's dimension; no model is loaded and nothing is connected."""
    kind, _, rest = spec.partition(":")
    if kind == "hash":
        try:
            HashEmbedder(int(rest) if rest else 64)
        except (ValueError, InvalidInputError) as exc:
            raise EmbedderUnavailableError(
                f"unusable embedder {spec!r}: the hash dimension must be a whole number from 8"
                " to 4096"
            ) from exc
        return kind, rest
    if kind in ("model2vec", "fastembed", "openai") and rest:
        return kind, rest
    raise EmbedderUnavailableError(
        f"unknown embedder {spec!r}: use hash[:DIM], model2vec:DIR, fastembed:MODEL or "
        "openai:MODEL[@BASE_URL]"
    )
