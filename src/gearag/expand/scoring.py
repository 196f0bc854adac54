"""Path scorers for the beam search: ``score(q, path) = cos(emb(q), emb(path text))`` (GEAR §4.2).

The path text is its triples' texts joined by spaces.

* :class:`StaticPathScorer` — exact for static (mean-of-token-vector)
  embedders: the embedding direction of a concatenation is the sum of its
  parts' token-vector sums, and each triple's sum is stored in the index as
  ``weight × unit vector``. Extending a path by every candidate is two
  matrix–vector products; nothing is re-encoded.
* :class:`NeuralPathScorer` — for neural embedders. ``mode="exact"`` encodes
  each candidate path text (batched, with an LRU cache of path embeddings);
  ``mode="sum"`` approximates a path's embedding by the normalised sum of its
  triples' unit embeddings (no encoding at query time; benchmarked against
  exact in docs/benchmarks-log.md).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from gearag.embed import index_embedder
from gearag.errors import ConfigError
from gearag.expand.beam import PathScorer
from gearag.store.collection import TRIPLES, VectorRows
from gearag.store.interface import IndexStore

SCORING_MODES = ("exact", "sum")


class StaticPathScorer(PathScorer):
    def __init__(self, query_vec: np.ndarray, vectors: VectorRows, weights: VectorRows) -> None:
        self.q = np.asarray(query_vec, dtype=np.float32)
        self.vectors = vectors
        self.weights = weights
        self._sums: dict[tuple[int, ...], np.ndarray] = {}

    def _path_sum(self, path: tuple[int, ...]) -> np.ndarray:
        if path not in self._sums:
            idx = np.fromiter(path, dtype=np.int64)
            self._sums[path] = (self.weights[idx, None] * self.vectors[idx]).sum(axis=0)
        return self._sums[path]

    def start(self, triples: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[triples] @ self.q, dtype=np.float64)

    def extend(self, path: tuple[int, ...], candidates: np.ndarray) -> np.ndarray:
        s = self._path_sum(path).astype(np.float64)
        e = np.asarray(self.vectors[candidates], dtype=np.float64)
        w = np.asarray(self.weights[candidates], dtype=np.float64)
        numerator = float(s @ self.q) + w * (e @ self.q)
        norm_sq = float(s @ s) + 2.0 * w * (e @ s) + w * w
        norm = np.sqrt(np.maximum(norm_sq, 1e-24))
        return numerator / norm


class NeuralPathScorer(PathScorer):
    def __init__(self, query_vec: np.ndarray, index: IndexStore, mode: str = "exact", cache_size: int = 20_000) -> None:
        if mode not in SCORING_MODES:
            raise ConfigError(f"unknown path scoring {mode!r} (choose from {', '.join(SCORING_MODES)})")
        self.q = np.asarray(query_vec, dtype=np.float32)
        self.index = index
        self.vectors = index.collection(TRIPLES).vectors
        self.mode = mode
        # Path embeddings depend only on the index, so one LRU per index serves every query —
        # and every thread (the service): reads, inserts and evictions hold the index's LRU lock.
        self._cache: OrderedDict[tuple[int, ...], np.ndarray] = index.cached("path_embeddings", OrderedDict)
        self._lock: threading.Lock = index.cached("path_embeddings_lock", threading.Lock)
        self._cache_size = cache_size

    def start(self, triples: np.ndarray) -> np.ndarray:
        return np.asarray(self.vectors[triples] @ self.q, dtype=np.float64)

    def extend(self, path: tuple[int, ...], candidates: np.ndarray) -> np.ndarray:
        if self.mode == "sum":
            base = np.asarray(self.vectors[list(path)], dtype=np.float64).sum(axis=0)
            paths = base + np.asarray(self.vectors[candidates], dtype=np.float64)
            norms = np.linalg.norm(paths, axis=1)
            return (paths @ self.q) / np.maximum(norms, 1e-12)
        keys = [(*path, int(c)) for c in candidates]
        with self._lock:
            found = {key: self._cache[key] for key in keys if key in self._cache}
        missing = [key for key in keys if key not in found]
        if missing:
            # Encode outside the lock (the slow part); another thread may encode the same path meanwhile,
            # which costs time but never correctness.
            texts = [" ".join(self.index.triples.text(t) for t in key) for key in missing]
            vecs = index_embedder(self.index).encode(texts)
            with self._lock:
                for key, vec in zip(missing, vecs, strict=True):
                    self._cache[key] = vec
                    found[key] = vec
                while len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return np.array([float(found[key] @ self.q) for key in keys])


def make_path_scorer(index: IndexStore, query: str, mode: str = "exact") -> PathScorer:
    """The scorer for ``query`` over ``index``: exact static arithmetic when the embedder allows it."""
    query_vec = index_embedder(index).encode([query])[0]
    triples = index.collection(TRIPLES)
    if triples.weights is not None:
        return StaticPathScorer(query_vec, triples.vectors, triples.weights)
    return NeuralPathScorer(query_vec, index, mode)
