"""MaxScore's top k (gearag.retrieve.bm25_maxscore) is the full scoring's, bit for bit: over a sharded index's
postings (with tombstones) and over a bm25s model (built by gearag or by bm25s)."""

from __future__ import annotations

import random
from collections.abc import Callable

import numpy as np
import pytest

from gearag.retrieve import bm25_maxscore
from gearag.retrieve.bm25 import BM25Retriever, bm25_from_token_ids, build_bm25, token_ids
from gearag.retrieve.bm25_postings import Postings, PostingsBM25, postings_from_tokens

COMMON = ["river", "film", "director", "born", "Paris", "album", "king", "war", "city", "song", "the", "of"]


def _texts(rng: random.Random) -> Callable[[], str]:
    """Texts of common words and rare names (so the rarest terms can settle a top k)."""
    rare = [f"name{i}" for i in range(500)]
    return lambda: " ".join(rng.choice(COMMON) if rng.random() < 0.7 else rng.choice(rare)
                            for _ in range(rng.randint(2, 14)))


def _shards(rng: random.Random, text: Callable[[], str]) -> list:
    """Three shards' postings, the last with tombstones (rows -1)."""
    parts, offset = [], 0
    for i in range(3):
        texts = [text() for _ in range(rng.randint(150, 300))]
        keep = np.array([i != 2 or rng.random() < 0.7 for _ in texts])
        rows = np.where(keep, offset + np.cumsum(keep) - 1, -1)
        offset += int(keep.sum())
        vocab, ids, indptr = token_ids(texts)
        parts.append((Postings(list(vocab), *postings_from_tokens(ids, indptr, len(vocab)), np.asarray(indptr)),
                      rows))
    return parts


def _same_top_k(pruned: object, full: object, text: Callable[[], str], rng: random.Random,
                monkeypatch: pytest.MonkeyPatch) -> int:
    """Check every query's top k both ways; returns how many were answered before every term was read."""
    read_terms: list[int] = []  # per exact scoring of candidates: how many term spans had been read whole
    scores = bm25_maxscore._scores

    def spy(postings: object, terms: list, rows: np.ndarray, read: dict) -> np.ndarray:
        read_terms.append(len(read))
        return scores(postings, terms, rows, read)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25_maxscore, "_scores", spy)
    queries = [text() for _ in range(150)] + [f"name{rng.randrange(500)} name{rng.randrange(500)} film the"
                                              for _ in range(50)]
    queries += ["film film director", "name3 name3 name3 the", "nothing here", ""]
    early = 0
    for query in queries:
        for k in (1, 3, 10, 60):
            read_terms.clear()
            a, b = pruned.retrieve(query, k), full.retrieve(query, k)  # type: ignore[attr-defined]
            assert [(h.idx, h.score) for h in a] == [(h.idx, h.score) for h in b], (query, k)
            spans = sum(len(found) for _, found in pruned._terms(query)) if isinstance(pruned, PostingsBM25) \
                else len(pruned._tokens(query))  # type: ignore[attr-defined]
            early += bool(read_terms) and read_terms[-1] < spans
    return early


@pytest.mark.parametrize("share", [1.0, 0.05, 1e-9])  # 1e-9: nearly every pruned search gives up
def test_a_sharded_indexs_pruned_top_k_is_its_full_scorings(share: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Shards, one with tombstones, rare and common terms, repeated tokens: the same rows, order and scores."""
    monkeypatch.setattr(PostingsBM25, "PRUNE_POSTINGS", share)
    monkeypatch.setattr(PostingsBM25, "PRUNE_MIN_ROWS", 0)  # these shards are small
    monkeypatch.setattr(PostingsBM25, "PRUNE_MAX_TERMS", 99)  # long queries too
    rng = random.Random(11)
    text = _texts(rng)
    parts = _shards(rng, text)
    early = _same_top_k(PostingsBM25(parts), PostingsBM25(parts, prune=False), text, rng, monkeypatch)
    assert early > 100 or share < 1.0  # the pruning answered many searches before reading every term


@pytest.mark.parametrize("built_by", ["gearag", "bm25s"])  # gearag's score matrix, or bm25s's own index
@pytest.mark.parametrize("share", [1.0, 0.05])
def test_a_models_pruned_top_k_is_its_full_scorings(built_by: str, share: float,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BM25Retriever, "PRUNE_MIN_ROWS", 0)
    monkeypatch.setattr(BM25Retriever, "PRUNE_MAX_TERMS", 99)
    monkeypatch.setattr(BM25Retriever, "PRUNE_POSTINGS", share)
    rng = random.Random(5)
    text = _texts(rng)
    texts = [text() for _ in range(900)]
    if built_by == "gearag":
        model = build_bm25(texts)
    else:
        vocab, ids, indptr = token_ids(texts)
        model = bm25_from_token_ids(vocab, [ids[indptr[i]:indptr[i + 1]] for i in range(len(texts))])
    pruned, full = BM25Retriever(model), BM25Retriever(model, prune=False)
    assert pruned.prune and not full.prune
    early = _same_top_k(pruned, full, text, rng, monkeypatch)
    assert early > 100 or share < 1.0


def test_a_top_k_is_pruned_only_in_a_large_collection_for_a_short_query(monkeypatch: pytest.MonkeyPatch) -> None:
    """MaxScoreTopK's rule: at least PRUNE_MIN_ROWS rows and 1 to PRUNE_MAX_TERMS terms; else every row is scored
    (and the hits are the same either way)."""
    texts = [f"film director name{i % 40} " + " ".join(COMMON[: i % len(COMMON)]) for i in range(400)]
    retriever = BM25Retriever(build_bm25(texts))
    tried: list[int] = []
    monkeypatch.setattr(bm25_maxscore, "pruned_top_k", lambda postings, terms, k, most: tried.append(len(terms)))
    full = BM25Retriever(build_bm25(texts), prune=False)
    short, long = "name3 film director", "name3 " + " ".join(COMMON)
    for query in (short, long):
        assert retriever.retrieve(query, 5) == full.retrieve(query, 5)
    assert tried == []  # 400 rows: below PRUNE_MIN_ROWS
    monkeypatch.setattr(BM25Retriever, "PRUNE_MIN_ROWS", len(texts))
    for query in (short, long, "nothing here"):
        assert retriever.retrieve(query, 5) == full.retrieve(query, 5)
    assert tried == [3]  # the 13-term query scores every row, as does one without terms
    assert retriever.pruning(BM25Retriever.PRUNE_MAX_TERMS) and not retriever.pruning(BM25Retriever.PRUNE_MAX_TERMS + 1)


@pytest.mark.parametrize("kind", ["shards", "model"])
def test_scores_at_rows_are_the_score_arrays_bit_for_bit(kind: str) -> None:
    """What GEAR's reader asks for: a few candidate rows' scores (unsorted, repeated), read from their postings
    alone, equal the full score array at those rows, for rare, common, repeated and unknown tokens."""
    rng = random.Random(17)
    text = _texts(rng)
    if kind == "shards":
        retriever: PostingsBM25 | BM25Retriever = PostingsBM25(_shards(rng, text))
    else:
        retriever = BM25Retriever(build_bm25([text() for _ in range(700)]))
        assert retriever.lucene
    queries = [text() for _ in range(60)] + ["film film director name7", "nothing here", ""]
    for query in queries:
        full = retriever.scores(query)
        for n in (0, 1, 7, 200):
            rows = np.asarray([rng.randrange(retriever.size) for _ in range(n)], dtype=np.int64)
            got = retriever.scores_at(query, rows)
            assert got.dtype == np.float32
            np.testing.assert_array_equal(got, full[rows], err_msg=query)
