"""Optional semantic recall: embedders, stored vectors, and their fusion with keyword search.

Nothing here runs unless a Store is given an embedder (``Store.open(path, embedder=...)``);
without one, search is exactly the keyword search. Models are optional extras and are never
downloaded: :class:`HashEmbedder` (no model, for tests) and the adapters of
:mod:`philont.embed.adapters`. See docs/embeddings.md.
"""

from typing import TYPE_CHECKING

from philont import lazy

if TYPE_CHECKING:
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

_LAZY = {
    "FastembedEmbedder": "philont.embed.adapters",
    "Model2VecEmbedder": "philont.embed.adapters",
    "OpenAIEmbedder": "philont.embed.adapters",
    "embedder_from_spec": "philont.embed.adapters",
    "Embedder": "philont.embed.base",
    "checked_vectors": "philont.embed.base",
    "FusionWeights": "philont.embed.fusion",
    "fuse": "philont.embed.fusion",
    "HashEmbedder": "philont.embed.hashing",
    "BATCH_SIZE": "philont.embed.index",
    "backfill": "philont.embed.index",
    "ChannelReport": "philont.embed.search",
}
"""Where each export lives: loaded on first use (numpy and the index are not needed to name
the default batch size, :data:`philont.embed.base.BATCH_SIZE`, or an embedder's spec)."""


__getattr__ = lazy.exports(__name__, _LAZY)
