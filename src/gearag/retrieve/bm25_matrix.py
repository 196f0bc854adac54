"""The BM25 score matrix bm25s builds (Lucene variant), built from flat token ids in pieces.

``bm25s.BM25.index`` takes every document's token ids as a Python list and,
for the whole corpus at once, makes the (score, document, term) triplets and
sorts them into a CSC matrix (with the numpy backend: int64 sort keys and an
argsort, ~50 bytes per nonzero at its peak). :func:`score_matrix` makes the
same arrays from the ids as one flat array, ``chunk_tokens`` tokens at a time:
a first pass counts each term's documents, a second writes each piece's
scores straight into their CSC places, so beyond the result (8 bytes per
nonzero) only one piece's pairs are held. The arithmetic is bm25s's own,
element for element (same dtypes, same order of operations), so the files are
byte-identical (``tests/retrieve/test_bm25_matrix.py`` checks this against bm25s).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from gearag.arrays import offsets

#: Tokens per piece (each costs ~60 bytes while its piece is processed: ~16 MB; the result is 8 bytes per nonzero).
CHUNK_TOKENS = 1 << 18


def _pieces(indptr: np.ndarray, chunk_tokens: int) -> Iterator[tuple[int, int]]:
    """Document ranges ``[d0, d1)`` of at most ``chunk_tokens`` tokens each (one document may exceed it)."""
    n_docs = len(indptr) - 1
    d0 = 0
    while d0 < n_docs:
        d1 = int(np.searchsorted(indptr, indptr[d0] + chunk_tokens, side="right")) - 1
        d1 = min(max(d1, d0 + 1), n_docs)
        yield d0, d1
        d0 = d1


def _pairs(ids: np.ndarray, indptr: np.ndarray, lengths: np.ndarray, d0: int,
           d1: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (term, document) pairs of documents ``d0..d1`` sorted by term then document, and each pair's count."""
    terms = ids[indptr[d0] : indptr[d1]].astype(np.int64)
    docs = np.repeat(np.arange(d0, d1, dtype=np.int64), lengths[d0:d1])
    keys, counts = np.unique((terms << 32) | docs, return_counts=True)
    return keys >> 32, keys & 0xFFFFFFFF, counts


def score_matrix(model: Any, ids: np.ndarray, indptr: np.ndarray, n_vocab: int, *,
                 chunk_tokens: int | None = None) -> dict[str, Any]:
    """``model.scores`` as ``model.index`` (bm25s 0.3, method ``lucene``) makes it for these documents.

    Document ``i``'s token ids are ``ids[indptr[i]:indptr[i + 1]]``; every
    term ``0..n_vocab-1`` occurs in some document. ``chunk_tokens``: default :data:`CHUNK_TOKENS`.
    """
    chunk_tokens = chunk_tokens or CHUNK_TOKENS
    from bm25s.scoring import _build_idf_array, _select_idf_scorer

    if model.method != "lucene":
        raise ValueError(f"score_matrix implements bm25s's 'lucene' method, not {model.method!r}")
    n_docs = len(indptr) - 1
    lengths = np.diff(indptr)
    avg_doc_len = lengths.mean()  # bm25s: np.array([len(doc) for doc in docs]).mean(), the same int64 mean
    k1, b = model.k1, model.b
    df = np.zeros(n_vocab, dtype=np.int64)
    for d0, d1 in _pieces(indptr, chunk_tokens):
        terms, _, _ = _pairs(ids, indptr, lengths, d0, d1)
        df += np.bincount(terms, minlength=n_vocab)
    idf = _build_idf_array(doc_frequencies=dict(enumerate(df.tolist())), n_docs=n_docs,
                           compute_idf_fn=_select_idf_scorer(model.idf_method), dtype=model.dtype)
    out_indptr = offsets(df)
    nnz = int(out_indptr[-1])
    data = np.empty(nnz, dtype=model.dtype)
    indices = np.empty(nnz, dtype=model.int_dtype)
    heads = out_indptr[:-1].copy()
    for d0, d1 in _pieces(indptr, chunk_tokens):
        terms, docs, counts = _pairs(ids, indptr, lengths, d0, d1)
        if not len(terms):  # documents without terms
            continue
        tf = counts.astype(model.dtype)
        # bm25s per document: tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf), l_d a Python int and l_avg a
        # float64 scalar, so the denominator's constant is float64 and the tf term float64 too (NEP 50).
        norm = k1 * ((1 - b) + b * lengths[docs].astype(np.float64) / avg_doc_len)
        scores = idf[terms] * (tf / (norm + tf))
        # CSC places: this piece's pairs are sorted by term then document and follow earlier pieces' documents.
        first = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        runs = np.diff(np.r_[first, len(terms)])
        rank = np.arange(len(terms)) - np.repeat(first, runs)
        places = heads[terms] + rank
        data[places] = scores
        indices[places] = docs
        heads[terms[first]] += runs
    return {"data": data, "indices": indices, "indptr": out_indptr, "num_docs": n_docs}


def index_flat(model: Any, terms: Sequence[str], ids: np.ndarray, indptr: np.ndarray, *,
               chunk_tokens: int | None = None) -> None:
    """Set ``model`` up as ``model.index(Tokenized(ids=docs, vocab={term: i}))`` does (``create_empty_token``)."""
    model.nonoccurrence_array = None  # set by bm25s's build for the bm25l/bm25+ methods only
    model.scores = score_matrix(model, ids, indptr, len(terms), chunk_tokens=chunk_tokens)
    vocab = {term: i for i, term in enumerate(terms)}
    if "" not in vocab:
        vocab[""] = max(vocab.values()) + 1
    model.vocab_dict = vocab
    model.unique_token_ids_set = set(vocab.values())
