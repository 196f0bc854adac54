"""Reciprocal rank fusion, top-k selection and the BM25 / dense / hybrid retrievers."""

from __future__ import annotations

import numpy as np
import pytest

from gearag.embed import index_embedder
from gearag.errors import ConfigError
from gearag.methods import make_method, method_names
from gearag.model import Hit
from gearag.retrieve import make_retriever, rrf
from gearag.retrieve.base import Retriever, top_k
from gearag.retrieve.bm25 import BM25Retriever, build_bm25, tokenize
from gearag.retrieve.config import RetrieverConfig
from gearag.retrieve.hybrid import HybridRetriever
from gearag.store.index import Index

BASE_METHODS = ("bm25", "dense", "hybrid")

# --------------------------------------------------------------------------- RRF


def test_rrf_hand_computed() -> None:
    fused = rrf([["a", "b", "c"], ["c", "d"]], k=60)
    expected = {
        "a": 1 / 61,
        "b": 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 62,
    }
    assert [key for key, _ in fused] == ["c", "a", "b", "d"]
    for key, score in fused:
        assert score == pytest.approx(expected[key], abs=1e-15)


def test_rrf_ties_break_by_first_appearance() -> None:
    # a and b both score 1/61 + 1/62; a appears first (in the first list).
    fused = rrf([["a", "b"], ["b", "a"]], k=60)
    assert [key for key, _ in fused] == ["a", "b"]
    assert fused[0][1] == pytest.approx(fused[1][1])
    fused = rrf([["b", "a"], ["a", "b"]], k=60)
    assert [key for key, _ in fused] == ["b", "a"]
    # Tied singletons from different lists: order of appearance across the lists.
    assert [key for key, _ in rrf([["x"], ["y"], ["z"]])] == ["x", "y", "z"]


def test_rrf_duplicates_count_once_at_best_rank() -> None:
    fused = dict(rrf([["a", "a", "b", "a"]], k=10))
    assert fused == pytest.approx({"a": 1 / 11, "b": 1 / 12})


def test_rrf_weights_and_k() -> None:
    fused = dict(rrf([["a", "b"], ["b"]], k=1, weights=[2.0, 0.5]))
    assert fused == pytest.approx({"a": 2.0 / 2, "b": 2.0 / 3 + 0.5 / 2})


def test_rrf_empty() -> None:
    assert rrf([]) == []
    assert rrf([[], []]) == []


def test_rrf_default_k_is_60() -> None:
    assert dict(rrf([[7]]))[7] == pytest.approx(1 / 61)


# --------------------------------------------------------------------------- top_k


def test_top_k_orders_best_first() -> None:
    scores = np.array([0.1, 0.9, 0.5, 0.7], dtype=np.float32)
    assert [h.idx for h in top_k(scores, 2)] == [1, 3]
    hits = top_k(scores, 10)
    assert [h.idx for h in hits] == [1, 3, 2, 0]
    assert hits[0] == Hit(1, pytest.approx(0.9))


def test_top_k_zero_and_empty() -> None:
    assert top_k(np.array([1.0, 2.0]), 0) == []
    assert top_k(np.array([1.0, 2.0]), -3) == []
    assert top_k(np.zeros(0), 5) == []


def test_top_k_keep_zero() -> None:
    scores = np.array([0.0, 2.0, 0.0, 1.0])
    assert [h.idx for h in top_k(scores, 4, keep_zero=False)] == [1, 3]
    assert [h.idx for h in top_k(scores, 4)] == [1, 3, 0, 2]


def test_top_k_is_the_sorted_ranking_with_ties_by_row() -> None:
    """Against the definition (sort by score, then row; keep_zero=False drops rows not above 0), on many small
    vectors full of ties and zeros, collection kept."""
    rng = np.random.default_rng(7)
    for _ in range(500):
        scores = rng.choice([-1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 2.5], int(rng.integers(0, 40))).astype(np.float32)
        k = int(rng.integers(0, 45))
        ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[: max(k, 0)]
        for keep_zero in (True, False):
            want = [i for i in ranked if keep_zero or scores[i] > 0]
            got = top_k(scores, k, keep_zero=keep_zero, collection="triples")
            assert [h.idx for h in got] == want and all(h.collection == "triples" for h in got)


def test_top_k_negative_scores() -> None:
    assert [h.idx for h in top_k(np.array([-3.0, -1.0, -2.0]), 2)] == [1, 2]


@pytest.mark.parametrize(
    ("scores", "k", "expected"),
    [
        ([1, 1, 1, 1], 4, [0, 1, 2, 3]),
        ([0, 1, 1, 0.5], 3, [1, 2, 3]),
        ([0, 1, 2, 2], 1, [2]),  # the tie straddles the cut: the lower row must win
        ([5, 3, 3, 3, 3, 3, 1], 3, [0, 1, 2]),
    ],
)
def test_top_k_ties_break_by_lower_row(scores: list[float], k: int, expected: list[int]) -> None:
    assert [h.idx for h in top_k(np.array(scores, dtype=np.float32), k)] == expected


def test_top_k_matches_a_stable_sort() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 40))
        scores = rng.integers(0, 4, size=n).astype(np.float32)
        k = int(rng.integers(1, n + 1))
        expected = sorted(range(n), key=lambda i: (-scores[i], i))[:k]
        assert [h.idx for h in top_k(scores, k)] == expected, (scores.tolist(), k)


# --------------------------------------------------------------------------- retrievers

QUERIES = [
    ("Which team drafted Dell Curry?", 1),
    ("What is the highest mountain on Earth?", 6),
    ("How do green plants turn sunlight into glucose?", 5),
    ("Which rock band had John Lennon and Paul McCartney?", 3),
]


def test_bm25_tokenizer_stems_and_drops_stopwords() -> None:
    assert tokenize(["The players of the game", "PLAYING an a"]) == [["player", "game"], ["play"]]


@pytest.mark.parametrize("method", BASE_METHODS)
@pytest.mark.parametrize(("query", "expected"), QUERIES)
def test_expected_passage_first(tiny_index: Index, method: str, query: str, expected: int) -> None:
    hits = make_retriever(tiny_index, method, "passages").retrieve(query, 3)
    assert hits[0].idx == expected, [tiny_index.passages[h.idx].title for h in hits]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
    assert len({h.idx for h in hits}) == len(hits)


def test_bm25_scores_and_no_match(tiny_index: Index) -> None:
    r = make_retriever(tiny_index, "bm25")
    assert isinstance(r, BM25Retriever)
    assert r.retrieve("zzzqqq the of", 5) == []
    assert not r.scores("zzzqqq").any()
    hits = r.retrieve("Liverpool", 10)
    # Only passages that mention Liverpool score above zero.
    assert {h.idx for h in hits} == {3, 4}
    assert all(h.score > 0 for h in hits)


def test_bm25_hand_computed_idf_order() -> None:
    model = build_bm25(["apple banana", "apple cherry", "apple apple apple"])
    r = BM25Retriever(model)
    s = r.scores("cherry")
    assert s[1] > 0 and s[0] == 0 and s[2] == 0
    # "apple" is in every document; the one repeating it most ranks first.
    assert r.retrieve("apple", 1)[0].idx == 2


def test_dense_scores_are_cosines(tiny_index: Index) -> None:
    r = make_retriever(tiny_index, "dense")
    hits = r.retrieve("basketball", len(tiny_index.passages))
    q = index_embedder(tiny_index).encode(["basketball"])[0]
    expected = np.asarray(tiny_index.collection("passages").vectors) @ q
    assert [h.idx for h in hits] == sorted(range(len(expected)), key=lambda i: (-expected[i], i))
    for h in hits:
        assert h.score == pytest.approx(float(expected[h.idx]), abs=1e-5)
        assert -1.0 - 1e-5 <= h.score <= 1.0 + 1e-5


def test_hybrid_is_rrf_of_bm25_and_dense(tiny_index: Index) -> None:
    query = "Curry basketball father"
    n = len(tiny_index.passages)
    bm25 = make_retriever(tiny_index, "bm25").retrieve(query, 100)
    dense = make_retriever(tiny_index, "dense").retrieve(query, 100)
    expected = rrf([[h.idx for h in bm25], [h.idx for h in dense]], k=60)
    hits = make_retriever(tiny_index, "hybrid").retrieve(query, n)
    assert [(h.idx, pytest.approx(h.score)) for h in hits] == [(i, s) for i, s in expected[:n]]
    # A passage first in both lists gets 2 / 61.
    if bm25[0].idx == dense[0].idx:
        assert hits[0].score == pytest.approx(2 / 61)


def test_hybrid_rrf_k_option(tiny_index: Index) -> None:
    hits = make_retriever(tiny_index, "hybrid", config=RetrieverConfig(rrf_k=1)).retrieve("Mount Everest Himalayas", 1)
    assert hits[0].idx == 6 and hits[0].score == pytest.approx(1.0)  # 1/(1+1) twice


def test_retrieve_many_equals_retrieve(tiny_index: Index) -> None:
    queries = [q for q, _ in QUERIES]
    for method in BASE_METHODS:
        r = make_retriever(tiny_index, method)
        many = r.retrieve_many(queries, 4)
        single = [r.retrieve(q, 4) for q in queries]
        assert [[h.idx for h in hits] for hits in many] == [[h.idx for h in hits] for hits in single]
        for a, b in zip(many, single, strict=True):
            assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)
    assert make_retriever(tiny_index, "dense").retrieve_many([], 3) == []


def test_triple_target(tiny_index: Index) -> None:
    for method in BASE_METHODS:
        hits = make_retriever(tiny_index, method, "triples").retrieve("Himalayas", 2)
        assert hits, method
        assert tiny_index.triples[hits[0].idx].as_tuple() == ("Mount Everest", "mentions", "Himalayas")


def test_retriever_is_cached_and_protocol(tiny_index: Index) -> None:
    a = make_retriever(tiny_index, "hybrid")
    assert a is make_retriever(tiny_index, "hybrid")
    assert isinstance(a, HybridRetriever) and isinstance(a, Retriever)


def test_unknown_retriever_and_target(tiny_index: Index) -> None:
    with pytest.raises(ConfigError, match="unknown retriever 'bm26'"):
        make_retriever(tiny_index, "bm26")
    with pytest.raises(ConfigError, match="no collection 'entities'"):
        make_retriever(tiny_index, "bm25", "entities")


def test_methods_registry(tiny_index: Index) -> None:
    assert set(BASE_METHODS) <= set(method_names())
    result = make_method(tiny_index, "bm25")("Which team drafted Dell Curry?", 2)
    assert result.passages[0].idx == 1 and len(result.passages) <= 2
    assert result.answer is None and result.trace is None
    with pytest.raises(ConfigError, match="unknown method 'nope'"):
        make_method(tiny_index, "nope")
