"""BM25 from per-shard postings scores every row as a bm25s model over the live union does, bit for bit."""

from __future__ import annotations

import random

import numpy as np
import pytest

from gearag.retrieve import bm25_postings
from gearag.retrieve.bm25 import BM25Retriever, build_bm25, token_ids
from gearag.retrieve.bm25_postings import Postings, PostingsBM25, postings_from_tokens

WORDS = ["river", "film", "director", "born", "Paris", "album", "king", "war", "city", "song", "the", "of",
         "French", "released", "married", "father", "team", "played", "capital", "island"]


def _shard(texts: list[str], shuffled: bool = False) -> Postings:
    vocab, ids, indptr = token_ids(texts)
    if shuffled:  # a vocabulary not in sorted order (terms are then found through a dict)
        order = np.random.default_rng(len(texts)).permutation(len(vocab))
        new_id = np.empty(len(vocab), dtype=np.int64)
        new_id[order] = np.arange(len(vocab))
        vocab, ids = [vocab[i] for i in order], new_id[np.asarray(ids, dtype=np.int64)]
    p_indptr, docs, tf = postings_from_tokens(ids, indptr, len(vocab))
    return Postings(list(vocab), p_indptr, docs, tf, np.asarray(indptr), "test shard")


@pytest.mark.parametrize(("chunk", "shuffled"), [(3, False), (1 << 22, False), (5, True)])
def test_shards_with_deleted_rows_score_as_one_model_over_the_live_rows(
        chunk: int, shuffled: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bm25_postings._Part, "CHUNK", chunk)  # live postings counted a few at a time
    monkeypatch.setattr(PostingsBM25, "CACHE_MIN_POSTINGS", 2)  # frequent terms' scores kept and reused ...
    monkeypatch.setattr(PostingsBM25, "CACHE_BYTES", 600)  # ... in a cache small enough to evict
    rng = random.Random(7)
    shards = [[" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(rng.randint(5, 40))]
              for _ in range(4)]
    parts, live_texts, offset = [], [], 0
    for i, texts in enumerate(shards):
        keep = np.array([i != 1 or rng.random() < 0.6 for _ in texts])  # shard 1 has tombstones
        rows = np.where(keep, offset + np.cumsum(keep) - 1, -1)
        offset += int(keep.sum())
        parts.append((_shard(texts, shuffled and i % 2 == 0), rows))
        live_texts += [t for t, k in zip(texts, keep, strict=True) if k]
    merged = PostingsBM25(parts, collection="triples")
    model = BM25Retriever(build_bm25(live_texts), collection="triples")
    assert merged.size == len(live_texts) and merged.vocabulary() == model.vocabulary()
    queries = ["film director born in Paris", "the the of", "capital island king war", "unknown words",
               *(rng.choice(live_texts) for _ in range(10))]
    for query in queries + queries:  # the second time from the cache, where it kept them
        np.testing.assert_array_equal(merged.scores(query), model.scores(query))
        assert [h.idx for h in merged.retrieve(query, 5)] == [h.idx for h in model.retrieve(query, 5)]
    assert merged._cache and merged._cached_bytes <= PostingsBM25.CACHE_BYTES


def test_postings_naming_a_document_the_shard_does_not_have_are_one_line() -> None:
    from gearag.errors import IndexFormatError

    postings = _shard(["river film", "film director"])
    postings.docs = postings.docs.copy()
    postings.docs[-1] = 7  # two documents only
    merged = PostingsBM25([(postings, np.arange(2))])
    with pytest.raises(IndexFormatError, match="test shard: postings name documents it does not have"):
        merged.scores("film river director")



@pytest.mark.parametrize("seed", [0, 1, 2])
def test_postings_list_each_term_s_documents_in_order_with_their_counts(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_vocab = int(rng.integers(1, 40))
    docs = [rng.integers(0, n_vocab, int(rng.integers(0, 12))).tolist() for _ in range(int(rng.integers(1, 60)))]
    indptr = np.concatenate([[0], np.cumsum([len(d) for d in docs])]).astype(np.int64)
    ids = np.asarray([t for d in docs for t in d], dtype=np.int32)
    given = ids.copy()
    p_indptr, found, tf = postings_from_tokens(ids, indptr, n_vocab + 2)  # two terms no document has
    assert np.array_equal(ids, given)  # the caller's token ids are left as they were
    assert (p_indptr.dtype, found.dtype, tf.dtype) == (np.int64, np.int32, np.int32)
    assert len(p_indptr) == n_vocab + 3 and p_indptr[-1] == len(found) == len(tf)
    for term in range(n_vocab + 2):
        at = slice(p_indptr[term], p_indptr[term + 1])
        expected = [(i, d.count(term)) for i, d in enumerate(docs) if term in d]
        assert list(zip(found[at].tolist(), tf[at].tolist(), strict=True)) == expected
