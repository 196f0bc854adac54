"""A shard collection's BM25 postings as stored: term → documents and term frequencies (format 4).

This module owns the postings files next to a shard's token ids
(:data:`POSTINGS_FILES`), computing them from token ids
(:func:`postings_from_tokens`), the :class:`Postings` container and
reading them back (:func:`read_postings`), and :class:`ShardPostings`, what a
sharded index hands retrieval to score BM25 from. The scoring itself is
:class:`gearag.retrieve.bm25_postings.PostingsBM25`'s.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from gearag.errors import IndexFormatError
from gearag.store.npy import load_array

#: Postings files next to a shard's token ids (``tokens/<collection>/``).
POSTINGS_FILES = ("postings_indptr.npy", "postings_docs.npy", "postings_tf.npy")


def postings_from_tokens(ids: np.ndarray, indptr: np.ndarray, n_vocab: int) -> tuple[np.ndarray, ...]:
    """``(indptr, docs, tf)``: term ``t``'s documents ``docs[indptr[t]:indptr[t+1]]`` (ascending) and counts.

    ``ids``/``indptr``: the documents' token ids (document ``i`` is
    ``ids[indptr[i]:indptr[i+1]]``) into a vocabulary of ``n_vocab`` terms.
    The token lists are a document × term matrix by rows already. Its
    transpose by one counting pass (scipy's CSR → CSC, which visits the rows
    in order) lists each term's documents in order, a document once per
    occurrence, so a term's counts are runs of equal neighbours. That is
    linear in the tokens, where sorting the (term, document) pairs was not:
    at a million passages the postings took 13.7 s of the first add's
    conversion (docs/benchmarks-log.md, "The first add after a build: postings by a transpose").
    """
    from scipy import sparse

    n_docs, n_tokens = len(indptr) - 1, len(ids)
    # 32-bit offsets where they fit: scipy then reads the token ids as they are (read-only: it does not sort them).
    kind = np.int32 if max(n_tokens, n_vocab) < np.iinfo(np.int32).max else np.int64
    by_doc = sparse.csr_matrix((np.ones(n_tokens, dtype=np.int8), np.asarray(ids).astype(kind, copy=False),
                                np.asarray(indptr).astype(kind, copy=False)), shape=(n_docs, max(n_vocab, 0)))
    by_term = by_doc.tocsc()
    del by_doc
    docs, t_indptr = by_term.indices, by_term.indptr.astype(np.int64)
    del by_term
    first = np.ones(n_tokens, dtype=bool)  # an occurrence that starts a (term, document) run
    np.not_equal(docs[1:], docs[:-1], out=first[1:])
    first[t_indptr[:-1][t_indptr[:-1] < n_tokens]] = True  # a term's first document starts a run
    starts = np.flatnonzero(first)
    del first
    tf = np.empty(len(starts), dtype=np.int32)  # run lengths, made in place (no int64 copies of the starts)
    np.subtract(starts[1:], starts[:-1], out=tf[:-1], casting="unsafe")
    tf[-1:] = n_tokens - starts[-1:]
    # Both are new arrays already (int64 offsets, the documents' own int32 when they fit): not copied again.
    return (np.searchsorted(starts, t_indptr).astype(np.int64, copy=False),
            docs[starts].astype(np.int32, copy=False), tf)


@dataclass
class Postings:
    """One shard collection's postings: its vocabulary, term → (documents, tf), and its documents' token
    offsets (``doc_indptr``: document ``i`` has ``doc_indptr[i + 1] - doc_indptr[i]`` tokens)."""

    vocab: list[str]
    indptr: np.ndarray
    docs: np.ndarray
    tf: np.ndarray
    doc_indptr: np.ndarray
    where: str = ""  #: the shard and collection, for errors
    _index: dict[str, int] | None = field(default=None, repr=False)
    _sorted: bool = field(default=False, repr=False)

    @property
    def n_docs(self) -> int:
        return len(self.doc_indptr) - 1

    def lengths(self, docs: np.ndarray) -> np.ndarray:
        """Token counts of documents ``docs`` (read from the offsets: no per-document array is kept)."""
        indptr = self.doc_indptr
        return np.asarray(indptr[docs + 1], dtype=np.int64) - np.asarray(indptr[docs], dtype=np.int64)

    def term(self, token: str) -> int | None:
        """``token``'s term id: by bisection in the sorted vocabulary gearag writes (a dict of millions of
        terms per shard cost hundreds of MB), else through a dict (a vocabulary in another order)."""
        if self._index is None:
            ordered = all(a < b for a, b in zip(self.vocab, self.vocab[1:], strict=False))
            self._index = {} if ordered else {t: i for i, t in enumerate(self.vocab)}
            self._sorted = ordered
        if self._sorted:
            i = bisect_left(self.vocab, token)
            return i if i < len(self.vocab) and self.vocab[i] == token else None
        return self._index.get(token)


def read_postings(shard: Path, rel: str, vocab: list[str], ids: Callable[[], np.ndarray],
                  indptr: np.ndarray) -> Postings:
    """The postings stored at ``shard/rel`` (a shard's ``tokens/<collection>``), else computed from the token ids
    (``ids()``: read only then).

    Shards written before format 4 have token ids only: their postings are
    computed in memory (``gearag compact`` writes them).
    """
    if all((shard / rel / f).exists() for f in POSTINGS_FILES):
        # Memory-mapped; the documents they name are checked as a query reads them (not all at load).
        p_indptr, docs, tf = (np.asarray(load_array(shard, f"{rel}/{f}")) for f in POSTINGS_FILES)
        if len(p_indptr) != len(vocab) + 1 or len(docs) != len(tf) or int(p_indptr[-1]) != len(docs):
            raise IndexFormatError(f"{shard}: {rel} postings do not match its vocabulary (corrupt); rebuild the index")
    else:
        p_indptr, docs, tf = postings_from_tokens(ids(), indptr, len(vocab))
    return Postings(list(vocab), p_indptr, docs, tf, indptr, f"{shard}: {rel}")


class ShardPostings(NamedTuple):
    """BM25 over a sharded index's collection, as stored: each shard's postings and which union row each of its
    documents is (-1: tombstoned), and the BM25 parameters."""

    parts: list[tuple[Postings, np.ndarray]]
    k1: float
    b: float
