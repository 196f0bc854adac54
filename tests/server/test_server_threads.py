"""Shared index, many threads: concurrent method calls give the sequential results; the path-embedding LRU holds."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from gearag.api import Gearag
from gearag.demo import QUESTIONS
from gearag.expand.scoring import NeuralPathScorer
from gearag.retrieve.bm25 import tokenize


def _key(gearag: Gearag, method: str, question: str) -> Any:
    result = gearag.retrieve(question, method, 5)
    return [(h.idx, round(h.score, 9)) for h in result.passages], result.answer


def test_concurrent_calls_match_sequential_ones(demo_index: Any) -> None:
    gearag = Gearag(demo_index)  # a fresh app: methods and caches are built under contention too
    jobs = [(m, q["question"]) for m in ("bm25", "syncge", "gear", "hybrid") for q in QUESTIONS] * 3
    with ThreadPoolExecutor(max_workers=8) as pool:
        concurrent = list(pool.map(lambda job: _key(gearag, *job), jobs))
    sequential = [_key(gearag, *job) for job in jobs]
    assert concurrent == sequential


def test_stemming_from_many_threads_matches_one_thread() -> None:
    texts = [f"running runners ran {i} times through the connected connections" for i in range(300)]
    expected = tokenize(texts)
    barrier = threading.Barrier(8)

    def work(_: int) -> list[list[str]]:
        barrier.wait()
        return tokenize(texts)

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(out == expected for out in pool.map(work, range(8)))


class _FakeEmbedder:
    """Deterministic 8-d vectors from a text's hash (stands in for a neural embedder)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        out = np.stack([np.random.default_rng(abs(hash(t)) % 2**32).standard_normal(8) for t in texts])
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)


def test_shared_path_embedding_lru_survives_concurrent_evictions(demo_index: Any) -> None:
    index = demo_index
    fake = _FakeEmbedder()
    index.cached("embedder", lambda: None)  # make sure the key exists, then swap in the fake
    saved = index._cache["embedder"]
    index._cache["embedder"] = fake
    index._cache.pop("path_embeddings", None)
    try:
        n = len(index.triples)
        rng = np.random.default_rng(0)
        paths = [tuple(int(x) for x in rng.integers(0, n, 2)) for _ in range(200)]
        candidates = np.arange(min(n, 12))
        q = fake.encode(["query"])[0]

        def expected(path: tuple[int, ...]) -> np.ndarray:
            texts = [" ".join(index.triples.text(t) for t in (*path, int(c))) for c in candidates]
            return fake.encode(texts) @ q

        want = {p: expected(p) for p in paths}
        errors: list[BaseException] = []
        barrier = threading.Barrier(6)

        def work(seed: int) -> None:
            scorer = NeuralPathScorer(q, index, "exact", cache_size=40)  # small: constant evictions
            order = np.random.default_rng(seed).permutation(len(paths))
            barrier.wait()
            try:
                for i in order:
                    got = scorer.extend(paths[i], candidates)
                    np.testing.assert_allclose(got, want[paths[i]], rtol=1e-5, atol=1e-6)
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, errors[0]
        assert len(index._cache["path_embeddings"]) <= 40
    finally:
        index._cache["embedder"] = saved
        index._cache.pop("path_embeddings", None)
