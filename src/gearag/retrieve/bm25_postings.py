"""BM25 scored at query time from per-shard term postings (a sharded index, issue 14).

A bm25s model stores every (document, term) score, so the corpus statistics
(document frequencies, the number of documents, the average length) are baked
into it: adding one document changes them all, and a sharded index had to
rebuild the model over the union on every ``gearag add``. Here each shard
keeps its *postings* instead (term → the shard's documents and term
frequencies, plus document lengths, :func:`postings_from_tokens`), and
:class:`PostingsBM25` merges the statistics at query time, for the query's
terms only, over the live rows of every shard (tombstoned rows left out).

The arithmetic is bm25s's own (``bm25s.BM25(k1, b)``: method and idf "lucene",
float32 scores), step for step: ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``
rounded to float32; ``tfc = tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)`` with
``avgdl`` the float64 mean length; each document's term score
``float32(idf * tfc)``, summed in float32 over the query's tokens in order
(a repeated token counts again, as in bm25s). Scores therefore equal those of
a bm25s model built over the union's texts bit for bit (tested), and an add
costs no BM25 work beyond the new shard's own postings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gearag.retrieve.base import RetrieverBase, top_k

if TYPE_CHECKING:
    from gearag.model import Hit

#: Postings files next to a shard's token ids (``tokens/<collection>/``).
POSTINGS_FILES = ("postings_indptr.npy", "postings_docs.npy", "postings_tf.npy")


def postings_from_tokens(ids: np.ndarray, indptr: np.ndarray, n_vocab: int) -> tuple[np.ndarray, ...]:
    """``(indptr, docs, tf)``: term ``t``'s documents ``docs[indptr[t]:indptr[t+1]]`` (ascending) and counts.

    ``ids``/``indptr``: the documents' token ids (document ``i`` is
    ``ids[indptr[i]:indptr[i+1]]``) into a vocabulary of ``n_vocab`` terms.
    """
    n_docs = len(indptr) - 1
    lengths: np.ndarray = np.diff(np.asarray(indptr, dtype=np.int64))
    doc = np.repeat(np.arange(n_docs, dtype=np.int64), lengths)
    pairs = np.asarray(ids, dtype=np.int64) * max(n_docs, 1) + doc
    uniq, counts = np.unique(pairs, return_counts=True)  # sorted by term, then document
    terms = uniq // max(n_docs, 1)
    p_indptr = np.zeros(n_vocab + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=n_vocab), out=p_indptr[1:])
    return p_indptr, (uniq % max(n_docs, 1)).astype(np.int32), counts.astype(np.int32)


@dataclass
class Postings:
    """One shard collection's postings: its vocabulary, term → (documents, tf), and document lengths."""

    vocab: list[str]
    indptr: np.ndarray
    docs: np.ndarray
    tf: np.ndarray
    lengths: np.ndarray
    _index: dict[str, int] | None = field(default=None, repr=False)

    def term(self, token: str) -> int | None:
        if self._index is None:
            self._index = {t: i for i, t in enumerate(self.vocab)}
        return self._index.get(token)


@dataclass
class _Part:
    postings: Postings
    #: Shard row → union row (-1: deleted).
    rows: np.ndarray


class PostingsBM25(RetrieverBase):
    """BM25 over the union of several shards' live rows, statistics merged per query term (module docstring)."""

    def __init__(self, parts: list[tuple[Postings, np.ndarray]], k1: float = 1.5, b: float = 0.75,
                 collection: str = "passages") -> None:
        self.parts = [_Part(p, np.asarray(rows, dtype=np.int64)) for p, rows in parts]
        self.k1, self.b = float(k1), float(b)
        self.collection = collection
        self.size = int(sum(int((part.rows >= 0).sum()) for part in self.parts))
        total = sum(int(part.postings.lengths[part.rows >= 0].sum()) for part in self.parts)
        # bm25s: np.array(lengths).mean(), a float64 (exact: the lengths are integers).
        self.avg_len = np.float64(total) / self.size if self.size else np.float64(0.0)

    def _term(self, token: str) -> tuple[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """Document frequency over the live rows and, per shard, (union rows, tf, lengths) of ``token``."""
        df = 0
        found = []
        for part in self.parts:
            t = part.postings.term(token)
            if t is None:
                continue
            p = part.postings
            docs = p.docs[int(p.indptr[t]) : int(p.indptr[t + 1])]
            rows = part.rows[docs]
            live = rows >= 0
            if not live.any():
                continue
            df += int(live.sum())
            found.append((rows[live], p.tf[int(p.indptr[t]) : int(p.indptr[t + 1])][live], p.lengths[docs[live]]))
        return df, found

    def document_frequency(self, token: str) -> int:
        """Live documents containing ``token`` (a stemmed term)."""
        return self._term(token)[0]

    def vocabulary(self) -> dict[str, int]:
        """Every term of the live rows with its document frequency (for checks; touches every term)."""
        out: dict[str, int] = {}
        for part in self.parts:
            p = part.postings
            live = np.zeros(len(p.docs) + 1, dtype=np.int64)
            np.cumsum(part.rows[p.docs] >= 0, out=live[1:])
            counts = live[p.indptr[1:]] - live[p.indptr[:-1]]
            for term, n in zip(p.vocab, counts.tolist(), strict=True):
                if n:
                    out[term] = out.get(term, 0) + n
        return out

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every union row for ``query`` (zeros when no term matches), as bm25s computes it."""
        from gearag.retrieve.bm25 import tokenize

        scores = np.zeros(self.size, dtype=np.float32)
        n = self.size
        for token in tokenize([query])[0]:
            df, found = self._term(token)
            if not df:
                continue  # not in the union's vocabulary: bm25s drops it from the query
            idf = np.float32(math.log(1 + (n - df + 0.5) / (df + 0.5)))
            for rows, tf, lengths in found:
                tfc = tf.astype(np.float32) / (self.k1 * ((1 - self.b) + self.b * lengths / self.avg_len)
                                               + tf.astype(np.float32))
                scores[rows] += (idf * tfc).astype(np.float32)  # rows are distinct within one term
        return scores

    def retrieve(self, query: str, k: int) -> list[Hit]:
        return top_k(self.scores(query), k, keep_zero=False, collection=self.collection)


def read_postings(shard: Path, rel: str, vocab: list[str], ids: np.ndarray, indptr: np.ndarray) -> Postings:
    """The postings stored at ``shard/rel`` (a shard's ``tokens/<collection>``), else computed from the token ids.

    Shards written before format 4 have token ids only: their postings are
    computed in memory (``gearag compact`` writes them).
    """
    from gearag.store.collection import load_array

    lengths = np.diff(np.asarray(indptr, dtype=np.int64))
    if all((shard / rel / f).exists() for f in POSTINGS_FILES):
        p_indptr, docs, tf = (np.asarray(load_array(shard, f"{rel}/{f}")) for f in POSTINGS_FILES)
        if (len(p_indptr) != len(vocab) + 1 or len(docs) != len(tf) or int(p_indptr[-1]) != len(docs)
                or (len(docs) and (int(docs.min()) < 0 or int(docs.max()) >= len(lengths)))):
            from gearag.errors import IndexFormatError

            raise IndexFormatError(f"{shard}: {rel} postings do not match its vocabulary (corrupt); rebuild the index")
    else:
        p_indptr, docs, tf = postings_from_tokens(ids, indptr, len(vocab))
    return Postings(list(vocab), p_indptr, docs, tf, lengths)
