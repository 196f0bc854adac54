"""BM25 scored at query time from per-shard term postings (a sharded index).

A bm25s model stores every (document, term) score, so the corpus statistics
(document frequencies, the number of documents, the average length) are baked
into it: adding one document changes them all, and a sharded index had to
rebuild the model over the union on every ``gearag add``. Here each shard
keeps its *postings* instead (term → the shard's documents and term
frequencies, plus document lengths, :func:`gearag.store.postings.postings_from_tokens`), and
:class:`PostingsBM25` merges the statistics over the live rows of every shard
(tombstoned rows left out) when a process first scores the loaded index: the
union's document frequencies, document count and average length. A query
then computes its terms' postings' scores from them — the entries a bm25s
model over the union would hold — and adds them as bm25s does; nothing per
posting is held beyond the shards' memory-mapped postings.

The arithmetic is bm25s's own (``bm25s.BM25(k1, b)``: method and idf "lucene",
float32 scores), step for step: ``idf = log(1 + (N - df + 0.5) / (df + 0.5))``
rounded to float32; ``tfc = tf / (k1 * ((1 - b) + b * dl / avgdl) + tf)`` with
``avgdl`` the float64 mean length; each document's term score
``float32(idf * tfc)``, summed in float32 over the query's tokens in order
(a repeated token counts again, as in bm25s). Scores therefore equal those of
a bm25s model built over the union's texts bit for bit (tested), and an add
costs no BM25 work beyond the new shard's own postings. The top k of a query
is found without adding up every posting where the rarest terms settle it
(:mod:`gearag.retrieve.bm25_maxscore`), with the same hits.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np

from gearag.retrieve.base import RetrieverBase, top_k
from gearag.retrieve.bm25_maxscore import MaxScoreTopK, Span, Term, find_sorted, lucene_idf
from gearag.store.postings import POSTINGS_FILES as POSTINGS_FILES
from gearag.store.postings import Postings
from gearag.store.postings import postings_from_tokens as postings_from_tokens
from gearag.store.postings import read_postings as read_postings
from gearag.tokenizer import tokenize

if TYPE_CHECKING:
    from gearag.model import Hit


class _Part:
    """One shard's postings as scoring reads them: its documents' union rows and per-term live counts.

    Nothing per posting is kept: a term's scores are computed from the stored
    (memory-mapped) documents and term frequencies when a query holds the
    term. Kept per posting (a union row, a liveness flag, a float32 score),
    the triples' postings of a 14-shard index of a million passages cost the
    first query +1.9 GB of heap and a 7.4 GB peak (docs/benchmarks-log.md, "The
    prepared passage graph").
    """

    #: Postings read at a time while counting the live documents per term (bounds the transient).
    CHUNK = 1 << 22

    def __init__(self, postings: Postings, rows: np.ndarray, k1: float, b: float, avg_len: np.float64) -> None:
        self.postings = p = postings
        self.k1, self.b, self.avg_len = k1, b, avg_len
        rows = np.asarray(rows, dtype=np.int64)
        self.deleted = bool((rows < 0).any())
        #: Per shard document: its union row (-1: deleted); None when the rows are ``offset + document``.
        self.doc_rows: np.ndarray | None = rows
        self.offset = int(rows[0]) if len(rows) else 0
        if not self.deleted and bool((np.diff(rows) == 1).all()):
            self.doc_rows = None  # consecutive: nothing per document is kept
        #: Live documents' union rows (ascending) and the documents, made when a pruned top k first asks.
        self._live: tuple[np.ndarray, np.ndarray] | None = None
        indptr = np.asarray(p.indptr, dtype=np.int64)
        if self.deleted:  # live postings per term, counted chunk by chunk
            live_before = np.zeros(len(p.docs) + 1, dtype=np.int64)
            for lo in range(0, len(p.docs), self.CHUNK):
                hi = min(lo + self.CHUNK, len(p.docs))
                live = rows[self._docs(lo, hi)] >= 0
                live_before[lo + 1 : hi + 1] = live_before[lo] + np.cumsum(live)
            #: Per term: live documents holding it.
            self.df = live_before[indptr[1:]] - live_before[indptr[:-1]]
        else:
            self.df = np.diff(indptr)

    def _docs(self, start: int, end: int) -> np.ndarray:
        """Documents of postings ``start:end``, checked (a damaged file is one line, not an IndexError)."""
        docs = np.asarray(self.postings.docs[start:end], dtype=np.int64)
        if len(docs) and (int(docs.min()) < 0 or int(docs.max()) >= self.postings.n_docs):
            from gearag.errors import IndexFormatError

            raise IndexFormatError(f"{self.postings.where}: postings name documents it does not have (corrupt); "
                                   "rebuild the index")
        return docs

    def _entries(self, docs: np.ndarray, tf: np.ndarray, idf: np.float32) -> np.ndarray:
        """bm25s's entries of documents ``docs`` with term frequencies ``tf``, step for step: ``tfc = tf / (k1 *
        ((1 - b) + b * dl / avgdl) + tf)`` in float64 from float32 tf, then ``float32(idf * tfc)``."""
        tf = np.asarray(tf).astype(np.float32)
        tfc = tf / (self.k1 * ((1 - self.b) + self.b * self.postings.lengths(docs) / self.avg_len) + tf)
        return (idf * tfc).astype(np.float32)

    def values_at(self, start: int, end: int, idf: np.float32, rows: np.ndarray) -> np.ndarray:
        """Float32 scores of postings ``start:end`` (one term's) at union ``rows`` (ascending; 0 where the term is
        not in the row), found by bisection in the term's documents: the same values :meth:`term_scores` gives."""
        out = np.zeros(len(rows), dtype=np.float32)
        docs, mine = self._docs_of(rows)
        # The term's documents are ascending (memory-mapped): bisection reads a few of their pages.
        at, found = find_sorted(self.postings.docs[start:end], docs)
        if found.any():
            out[mine[found]] = self._entries(docs[found], self.postings.tf[at[found] + start], idf)
        return out

    def _docs_of(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The documents of this part holding union ``rows`` (ascending), and where those rows are in ``rows``."""
        if self.doc_rows is None:
            docs = rows - self.offset
            mine = np.flatnonzero((docs >= 0) & (docs < self.postings.n_docs))
            return docs[mine], mine
        if self._live is None:
            live_docs = np.flatnonzero(self.doc_rows >= 0)
            self._live = (np.asarray(self.doc_rows[live_docs], dtype=np.int64), live_docs)
        live_rows, live_docs = self._live
        at, found = find_sorted(live_rows, rows)
        mine = np.flatnonzero(found)
        return live_docs[at[mine]], mine

    def term_scores(self, start: int, end: int, idf: np.float32) -> tuple[np.ndarray, np.ndarray]:
        """The union rows and float32 scores (:meth:`_entries`) of postings ``start:end`` (one term's), live rows
        only."""
        docs = self._docs(start, end)
        values = self._entries(docs, self.postings.tf[start:end], idf)
        rows = self.doc_rows[docs] if self.doc_rows is not None else docs + self.offset
        if self.deleted:
            live = rows >= 0
            rows, values = rows[live], values[live]
        return rows, values


class PostingsBM25(MaxScoreTopK, RetrieverBase):
    """BM25 over the union of several shards' live rows, statistics merged over the shards (module docstring)."""

    #: Bytes of computed term scores kept for reuse (LRU): a frequent term's postings are scored once.
    CACHE_BYTES = 64 << 20
    #: Terms with fewer postings in a shard are scored anew each time (cheaper than keeping them).
    CACHE_MIN_POSTINGS = 4096

    def __init__(self, parts: list[tuple[Postings, np.ndarray]], k1: float = 1.5, b: float = 0.75,
                 collection: str = "passages", prune: bool = True) -> None:
        """``prune``: find the top k by :mod:`gearag.retrieve.bm25_maxscore` (the same hits; False scores every
        row, as the tests compare)."""
        self.k1, self.b = float(k1), float(b)
        self.prune = prune
        self.collection = collection
        self._cache: OrderedDict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()
        live_rows = [np.asarray(rows) >= 0 for _, rows in parts]
        self.size = int(sum(int(live.sum()) for live in live_rows))
        total = sum(int(np.diff(np.asarray(p.doc_indptr, dtype=np.int64))[live].sum())
                    for (p, _), live in zip(parts, live_rows, strict=True))
        # bm25s: np.array(lengths).mean(), a float64 (exact: the lengths are integers).
        self.avg_len = np.float64(total) / self.size if self.size else np.float64(1.0)
        self.parts = [_Part(p, rows, self.k1, self.b, self.avg_len) for p, rows in parts]

    def _term(self, token: str) -> tuple[int, list[tuple[int, int, int]]]:
        """Document frequency over the live rows (the union's, summed over the shards when a query asks) and,
        per shard holding ``token``, its index and its postings' span."""
        df, found = 0, []
        for i, part in enumerate(self.parts):
            t = part.postings.term(token)
            if t is not None and part.df[t]:
                df += int(part.df[t])
                found.append((i, int(part.postings.indptr[t]), int(part.postings.indptr[t + 1])))
        return df, found

    def _term_scores(self, i: int, start: int, end: int, idf: np.float32) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_Part.term_scores` of part ``i``, from the LRU when a frequent term was scored before (the
        idf of a term is fixed for the loaded index, so its scores are too)."""
        if end - start < self.CACHE_MIN_POSTINGS or self.CACHE_BYTES <= 0:
            return self.parts[i].term_scores(start, end, idf)
        key = (i, start)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        rows, values = self.parts[i].term_scores(start, end, idf)
        rows = rows.astype(np.int32) if self.size < 2**31 else rows
        size = rows.nbytes + values.nbytes
        with self._lock:
            if key not in self._cache and size <= self.CACHE_BYTES:
                self._cache[key] = (rows, values)
                self._cached_bytes += size
                while self._cached_bytes > self.CACHE_BYTES:
                    old_rows, old_values = self._cache.popitem(last=False)[1]
                    self._cached_bytes -= old_rows.nbytes + old_values.nbytes
        return rows, values

    def vocabulary(self) -> dict[str, int]:
        """Every term of the live rows with its document frequency (for checks: built on each call)."""
        df: dict[str, int] = {}
        for part in self.parts:
            for term, count in zip(part.postings.vocab, part.df.tolist(), strict=True):
                if count:
                    df[term] = df.get(term, 0) + count
        return df

    def _terms(self, query: str) -> list[Term]:
        """The query's tokens that have postings, in order (a repeated token twice, as bm25s counts it), with
        bm25s's lucene idf over the union's live rows, rounded to float32 as its model stores it."""
        terms = []
        for token in tokenize([query])[0]:
            # A token not in the union's vocabulary has no postings: bm25s drops it from the query.
            df, found = self._term(token)
            if found:
                terms.append((lucene_idf(self.size, df), found))
        return terms

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every union row for ``query`` (zeros when no term matches), as bm25s computes it."""
        return self._scores(self._terms(query))

    def scores_at(self, query: str, rows: np.ndarray) -> np.ndarray:
        """``scores(query)[rows]``, bit for bit, reading only those rows' postings (:meth:`rows_scores`)."""
        return self.rows_scores(self, self._terms(query), rows)

    def _scores(self, terms: list[Term]) -> np.ndarray:
        scores = np.zeros(self.size, dtype=np.float32)
        for idf, found in terms:
            for i, start, end in found:
                rows, values = self._term_scores(i, start, end, idf)
                # Rows are distinct within one term, so this is scores[rows] += values, ~1.5x faster (numpy 2.4).
                np.add.at(scores, rows, values)
        return scores

    def retrieve(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` rows: pruned where :meth:`pruning` says (:mod:`gearag.retrieve.bm25_maxscore`; the same
        hits) unless the candidates would hold more than :attr:`PRUNE_POSTINGS` of the rows, else from every row's
        score."""
        from gearag.model import Hit

        terms = self._terms(query)
        if self.pruning(len(terms)):
            found = self.pruned_top_k(self, terms, k)
            if found is not None:
                return [Hit(row, score, self.collection) for row, score in found]
        return top_k(self._scores(terms), k, keep_zero=False, collection=self.collection)

    # -- what the pruned top k reads (gearag.retrieve.bm25_maxscore.Postings) --
    def term_scores(self, span: Span, idf: np.float32) -> tuple[np.ndarray, np.ndarray]:
        return self._term_scores(*span, idf)

    def values_at(self, span: Span, idf: np.float32, rows: np.ndarray) -> np.ndarray:
        i, start, end = span
        return self.parts[i].values_at(start, end, idf, rows)


