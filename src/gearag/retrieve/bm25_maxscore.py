"""The top k of a BM25 query without adding up every posting: MaxScore (Turtle & Flood, 1995).

Every posting of a query's terms used to be added into a score array over all rows: at a million
passages a common term of a triple (16.9M rows) has ~1M postings, and passageLink's two BM25
retrievals per linked triple were most of a GEAR question (docs/benchmarks-log.md, "Scale at 10k, 100k and
1M passages"). A term's score in a row is below its idf (bm25s's ``idf * tf / (k1 * norm + tf)``,
the fraction below 1), so a row that holds none of the rarest terms scores less than the sum of
the other terms' idfs. :func:`pruned_top_k` reads the rarest terms' postings first: their rows are
the candidates, and what those terms give each candidate is a lower bound of its score. Once the
k-th best bound beats what any other row could reach, it scores the candidates exactly over every
term (looking the other terms' postings up instead of reading them all) and returns their top k;
until then it reads the next rarest term, and gives up (None: the caller scores every row) when
the postings read pass ``max_postings``.

The result is the full scoring's, bit for bit: each candidate's score is summed in float32 over the
query's tokens in order, as the score array is (a term a row lacks adds 0, which changes nothing),
and ties still break by lower row (tested against the full scoring).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from gearag import setops
from gearag.retrieve.base import top_k

#: One term's postings in one part (shard): (part, first posting, end).
Span = tuple[int, int, int]
#: A query token that has postings: its idf (float32, as bm25s stores it) and its spans.
Term = tuple[np.float32, list[Span]]
#: Collections with fewer rows score every row: over 101k passages or 170k triples a score array costs under
#: 2 ms, which pruning did not beat; over 1.7M triples it did, 0.7 against 2.1 ms a search, and over 16.9M
#: triples 1.3 against 28 ms (docs/benchmarks-log.md, "Where MaxScore pays: rows and query length").
PRUNE_MIN_ROWS = 1_000_000
#: Queries with more terms (tokens with postings, a repeated one counted again) score every row: with many
#: terms of similar idf the rarest terms' bound rarely beats the rest's before the postings read pass
#: :data:`PRUNE_POSTINGS`, so the attempt is mostly lost time (1M passages, questions of 10 or more terms: 4
#: of 114 pruned; every triple query up to 14 terms was).
PRUNE_MAX_TERMS = 9
#: A pruned top k gives up (every row is scored) once the postings it read pass this share of the rows.
PRUNE_POSTINGS = 0.05
#: A float32 score and the float64 sums it is compared with differ by rounding, ~6e-8 per term: the bound of a
#: row outside the candidates must fall short of the k-th best candidate's by this factor.
MARGIN = 1e-4


def lucene_idf(n_docs: int, df: int) -> np.float32:
    """bm25s's lucene idf of a term in ``df`` of ``n_docs`` documents, rounded to float32 as its model stores it
    (the bound of the term's scores)."""
    return np.float32(math.log(1 + (n_docs - df + 0.5) / (df + 0.5)))


def find_sorted(haystack: np.ndarray, needles: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``needles`` is in the ascending ``haystack`` (clipped to its last place) and whether it is
    there. The needles take the haystack's dtype, so a memory-mapped haystack is bisected, not converted."""
    if not len(haystack):
        return np.zeros(len(needles), dtype=np.int64), np.zeros(len(needles), dtype=bool)
    needles = needles.astype(haystack.dtype, copy=False)
    at = np.minimum(np.searchsorted(haystack, needles), len(haystack) - 1)
    return at, np.asarray(haystack[at]) == needles


class MaxScoreTopK:
    """When a BM25 retriever finds its top k by :func:`pruned_top_k`: the defaults above, as class attributes a
    retriever (or a test) can override."""

    PRUNE_POSTINGS = PRUNE_POSTINGS
    PRUNE_MIN_ROWS = PRUNE_MIN_ROWS
    PRUNE_MAX_TERMS = PRUNE_MAX_TERMS
    prune: bool  #: False: always score every row
    size: int  #: the collection's rows

    def pruning(self, n_terms: int) -> bool:
        """Whether a query of ``n_terms`` terms is worth a pruned top k in this collection."""
        return self.prune and self.size >= self.PRUNE_MIN_ROWS and 0 < n_terms <= self.PRUNE_MAX_TERMS

    def pruned_top_k(self, postings: Postings, terms: Sequence[Term], k: int) -> list[tuple[int, float]] | None:
        """:func:`pruned_top_k` giving up past :attr:`PRUNE_POSTINGS` of the rows (None: score every row)."""
        return pruned_top_k(postings, terms, k, max(int(self.size * self.PRUNE_POSTINGS), 1))

    @staticmethod
    def rows_scores(postings: Postings, terms: Sequence[Term], rows: np.ndarray) -> np.ndarray:
        """The float32 scores of ``rows`` (any order, repeats allowed): the full score array's at those rows, bit
        for bit, found by bisection in each term's postings instead of adding up all of them (GEAR's reader
        scores a few hundred candidate triples of 16.9M per step)."""
        unique, inverse = np.unique(np.asarray(rows, dtype=np.int64), return_inverse=True)
        return _scores(postings, terms, unique, {})[inverse]


class Postings(Protocol):
    def term_scores(self, span: Span, idf: np.float32) -> tuple[np.ndarray, np.ndarray]:
        """All of a span's rows (ascending) and float32 scores."""
        ...

    def values_at(self, span: Span, idf: np.float32, rows: np.ndarray) -> np.ndarray:
        """A span's float32 scores at ``rows`` (ascending union rows; 0 where a row has no posting)."""
        ...


def pruned_top_k(postings: Postings, terms: Sequence[Term], k: int,
                 max_postings: int) -> list[tuple[int, float]] | None:
    """The ``k`` best (row, score) of the query ``terms`` (in token order), best first, rows scoring 0 left out;
    None when the candidates would need more than ``max_postings`` postings (score every row instead)."""
    if k <= 0 or not terms:
        return []
    order = sorted(range(len(terms)), key=lambda j: -float(terms[j][0]))  # rarest (highest idf) first
    bounds = [float(terms[j][0]) for j in order]
    rest = np.concatenate([np.cumsum(bounds[::-1])[::-1], [0.0]])  # rest[s]: bound of the terms after s
    # A candidate's bound after s terms is at most theirs (rest[0] - rest[s]): no check can pass before the first s
    # where that beats rest[s]. If reading that far would pass max_postings, give up before reading any.
    first = next(s for s in range(1, len(order) + 1)
                 if s == len(order) or rest[s] * (1 + MARGIN) < (rest[0] - rest[s]) * (1 - MARGIN))
    if sum(end - start for j in order[:first] for _, start, end in terms[j][1]) > max_postings:
        return None
    read: dict[tuple[int, Span], tuple[np.ndarray, np.ndarray]] = {}
    n_postings = 0
    for s in range(1, len(order) + 1):
        j = order[s - 1]
        for span in terms[j][1]:
            rows, values = postings.term_scores(span, terms[j][0])
            read[(j, span)] = (np.asarray(rows, dtype=np.int64), values)
            n_postings += len(rows)
        if n_postings > max_postings:
            return None
        if s < len(order):
            if s < first or n_postings < k:
                continue  # no check can pass yet, or fewer candidates than k (another row may still enter)
            # What the terms read so far give each candidate is a lower bound of its score (the others add
            # at least 0): once the k-th best bound beats what a row without them can reach, they decide.
            candidates, inverse = np.unique(np.concatenate([r for r, _ in read.values()]), return_inverse=True)
            if len(candidates) < k:
                continue
            partial = np.bincount(inverse, weights=np.concatenate([v for _, v in read.values()]).astype(np.float64),
                                  minlength=len(candidates))
            kth = float(np.partition(partial, len(partial) - k)[len(partial) - k])
            if not rest[s] * (1 + MARGIN) < kth * (1 - MARGIN):
                continue
        else:  # every term read: the candidates are every row that scores
            candidates = setops.unique(np.concatenate([r for r, _ in read.values()]))
        exact = _scores(postings, terms, candidates, read)
        return [(int(candidates[h.idx]), h.score) for h in top_k(exact, k, keep_zero=False)]
    return None  # unreachable: the last round reads every term


def _scores(postings: Postings, terms: Sequence[Term], rows: np.ndarray,
            read: dict[tuple[int, Span], tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Exact float32 scores of ``rows`` (ascending), summed over the terms in token order."""
    out = np.zeros(len(rows), dtype=np.float32)
    for j, (idf, spans) in enumerate(terms):
        term = np.zeros(len(rows), dtype=np.float32)
        for span in spans:
            got = read.get((j, span))
            if got is None:
                term += postings.values_at(span, idf, rows)  # a row is in one span of a term: the rest add 0
                continue
            span_rows, values = got
            at, hit = find_sorted(span_rows, rows)
            term[hit] = values[at[hit]]
        out += term
    return out


class ModelPostings:
    """A bm25s model's score matrix (by term: documents ascending, float32 scores) as :class:`Postings` (span
    ``(0, start, end)``: one term's entries)."""

    def __init__(self, scores: dict) -> None:
        self.indices, self.data = scores["indices"], scores["data"]

    def term_scores(self, span: Span, idf: np.float32) -> tuple[np.ndarray, np.ndarray]:
        _, start, end = span
        return np.asarray(self.indices[start:end], dtype=np.int64), np.asarray(self.data[start:end])

    def values_at(self, span: Span, idf: np.float32, rows: np.ndarray) -> np.ndarray:
        _, start, end = span
        out = np.zeros(len(rows), dtype=np.float32)
        at, hit = find_sorted(self.indices[start:end], rows)
        out[hit] = self.data[start + at[hit]]
        return out
