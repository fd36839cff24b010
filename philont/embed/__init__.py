"""Optional semantic recall: embedders, stored vectors, and their fusion with keyword search.

Nothing here runs unless a Store is given an embedder (``Store.open(path, embedder=...)``);
without one, search is exactly the keyword search. Models are optional extras and are never
downloaded: :class:`HashEmbedder` (no model, for tests) and the adapters of
:mod:`philont.embed.adapters`. See docs/embeddings.md.
"""

from philont.embed.adapters import (
    FastembedEmbedder,
    Model2VecEmbedder,
    OpenAIEmbedder,
    embedder_from_spec,
)
from philont.embed.base import Embedder, checked_vectors
from philont.embed.fusion import FusionWeights, fuse
from philont.embed.hashing import HashEmbedder
from philont.embed.index import BATCH_SIZE, backfill
from philont.embed.search import ChannelReport

__all__ = [
    "BATCH_SIZE",
    "ChannelReport",
    "Embedder",
    "FastembedEmbedder",
    "FusionWeights",
    "HashEmbedder",
    "Model2VecEmbedder",
    "OpenAIEmbedder",
    "backfill",
    "checked_vectors",
    "embedder_from_spec",
    "fuse",
]
