"""MaxScore's top k over a bm25s model is the full scoring's, bit for bit (the postings BM25's own test is in
test_bm25_postings.py)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gearag.retrieve import bm25_maxscore
from gearag.retrieve.bm25 import BM25Retriever, bm25_from_token_ids, build_bm25, token_ids

COMMON = ["river", "film", "director", "born", "Paris", "album", "king", "war", "city", "song", "the", "of"]


@pytest.mark.parametrize("built_by", ["gearag", "bm25s"])  # gearag's score matrix, or bm25s's own index
@pytest.mark.parametrize("share", [1.0, 0.05])
def test_a_models_pruned_top_k_is_its_full_scorings(built_by: str, share: float,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(BM25Retriever, "PRUNE_MIN_ROWS", 0)
    monkeypatch.setattr(BM25Retriever, "PRUNE_POSTINGS", share)
    read_terms: list[int] = []  # per exact scoring of candidates: how many terms had been read whole
    scores = bm25_maxscore._scores

    def spy(postings: object, terms: list, rows: np.ndarray, read: dict) -> np.ndarray:
        read_terms.append(len(read))
        return scores(postings, terms, rows, read)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25_maxscore, "_scores", spy)
    early = 0
    rng = random.Random(5)
    rare = [f"name{i}" for i in range(500)]

    def text() -> str:
        return " ".join(rng.choice(COMMON) if rng.random() < 0.7 else rng.choice(rare)
                        for _ in range(rng.randint(2, 14)))

    texts = [text() for _ in range(900)]
    if built_by == "gearag":
        model = build_bm25(texts)
    else:
        vocab, ids, indptr = token_ids(texts)
        model = bm25_from_token_ids(vocab, [ids[indptr[i]:indptr[i + 1]] for i in range(len(texts))])
    pruned, full = BM25Retriever(model), BM25Retriever(model, prune=False)
    assert pruned.prune and not full.prune
    queries = [text() for _ in range(150)] + [f"{rng.choice(rare)} {rng.choice(rare)} film the" for _ in range(50)]
    queries += ["film film director", "name3 name3 name3 the", "nothing here", ""]
    for query in queries:
        for k in (1, 3, 10, 60):
            read_terms.clear()
            a, b = pruned.retrieve(query, k), full.retrieve(query, k)
            assert [(h.idx, h.score) for h in a] == [(h.idx, h.score) for h in b], (query, k)
            early += bool(read_terms) and read_terms[-1] < len(pruned._tokens(query))  # before reading every term
    assert early > 100 or share < 1.0  # the pruning answered many searches early
