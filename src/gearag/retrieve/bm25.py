"""BM25 with bm25s: English stop words and Snowball stemming (PyStemmer).

This is the configuration behind the reference numbers in the shared data
README (``title + "\\n" + text``, Lucene BM25, k1 = 1.5, b = 0.75).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from gearag import setops
from gearag.arrays import offsets
from gearag.errors import IndexFormatError
from gearag.model import Hit
from gearag.retrieve.base import Retriever, RetrieverBase, top_k
from gearag.retrieve.bm25_matrix import index_flat
from gearag.retrieve.bm25_maxscore import MaxScoreTopK, ModelPostings, Term, lucene_idf
from gearag.retrieve.bm25_postings import PostingsBM25
from gearag.store.collection import CollectionStore, SearchingCollection
from gearag.tokenizer import token_ids as chunk_token_ids
from gearag.tokenizer import tokenize as tokenize

if TYPE_CHECKING:
    from gearag.retrieve.config import RetrieverConfig
    from gearag.store.interface import IndexStore


_NO_TERMS = "gearag_document_without_terms"


def _sorted_vocabulary(tokens: Any) -> Any:
    """The same tokenisation with term ids in sorted term order.

    bm25s numbers stemmed terms in the iteration order of a ``set``, which
    follows the process's string-hash seed, so two builds of one corpus wrote
    different (permuted) BM25 files. Sorted ids make the files a function of
    the texts alone (a distributed build's driver equals a single-process
    build bit for bit); scores do not depend on the numbering.
    """
    from bm25s.tokenization import Tokenized

    order = sorted(tokens.vocab)
    vocab = {term: i for i, term in enumerate(order)}
    renumber = np.empty(len(order), dtype=np.int64)
    for term, old in tokens.vocab.items():
        renumber[old] = vocab[term]
    ids = [renumber[np.asarray(doc, dtype=np.int64)].tolist() for doc in tokens.ids]
    return Tokenized(ids=ids, vocab=vocab)


#: Texts tokenised at a time by :func:`build_bm25` (their token lists are Python objects; the rest is arrays).
TOKENIZE_CHUNK = 50_000


def _sorted_token_ids(texts: Sequence[str], chunk: int) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``texts`` tokenised as bm25s does, ``chunk`` texts at a time: (sorted terms, flat ids, indptr).

    bm25s tokenises each text on its own (its ids only number the terms), so
    tokenising in chunks and numbering the terms in sorted order gives the
    ids :func:`_sorted_vocabulary` gives for the whole corpus at once, while
    only one chunk's token lists exist as Python objects.
    """
    terms: dict[str, int] = {}
    parts: list[np.ndarray] = []
    lengths = np.zeros(len(texts), dtype=np.int64)
    for start in range(0, len(texts), chunk):
        ids, counts = chunk_token_ids(texts[start : start + chunk], terms)
        lengths[start : start + len(counts)] = counts
        parts.append(ids.astype(np.int32))
    order = sorted(terms)
    renumber = np.empty(len(order), dtype=np.int32)
    for new, term in enumerate(order):
        renumber[terms[term]] = new
    ids = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int32)
    indptr = offsets(lengths)
    return order, renumber[ids] if len(ids) else ids, indptr


def build_bm25(texts: Sequence[str], k1: float = 1.5, b: float = 0.75, *, chunk: int = TOKENIZE_CHUNK) -> object:
    """Index ``texts`` into a ``bm25s.BM25`` model (term ids in sorted term order: reproducible files).

    The texts are tokenised ``chunk`` at a time and their token ids kept as
    arrays (:func:`_sorted_token_ids`); the score matrix is made from those
    arrays in pieces (:func:`~gearag.retrieve.bm25_matrix.index_flat`); the
    model is the one bm25s builds from the whole corpus's token lists.
    """
    return bm25_from_sorted_tokens(*_sorted_token_ids(texts, chunk), k1, b)


def bm25_from_sorted_tokens(terms: list[str], ids: np.ndarray, indptr: np.ndarray, k1: float = 1.5,
                            b: float = 0.75) -> object:
    """:func:`build_bm25`'s model from the texts' :func:`token_ids` (a build that keeps them tokenises once)."""
    import bm25s

    model = bm25s.BM25(k1=k1, b=b)
    if not terms:
        # Nothing indexable (no texts, or only stop words): bm25s cannot index an
        # empty vocabulary, so give every document one term no query can contain.
        tokens = bm25s.tokenize([_NO_TERMS] * max(1, len(indptr) - 1), stopwords=None, show_progress=False)
        model.index(_sorted_vocabulary(tokens), show_progress=False)
        return model
    # bm25s's index from these ids, built from the flat arrays in pieces (bm25s would take lists of ints).
    index_flat(model, terms, ids, indptr)
    return model


def token_ids(texts: Sequence[str]) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``texts`` tokenised exactly as :func:`build_bm25` does, as ``(vocab, ids, indptr)``.

    Document ``i``'s token ids are ``ids[indptr[i]:indptr[i + 1]]`` (into
    ``vocab``). Tokenising is per document, so the token lists of a union of
    corpora are the concatenation of theirs: a sharded index keeps these and
    never tokenises a passage twice (:func:`bm25_from_token_ids`).
    """
    return _sorted_token_ids(texts, TOKENIZE_CHUNK)  # in chunks: one chunk's token lists at a time


def bm25_from_token_ids(vocab: Sequence[str], docs: Sequence[np.ndarray], k1: float = 1.5,
                        b: float = 0.75) -> object:
    """The ``bm25s.BM25`` model :func:`build_bm25` makes, from documents' token ids into ``vocab``.

    Only tokens that occur in ``docs`` enter the model's vocabulary (as in a
    build from the texts), so its document frequencies, average length and
    scores equal those of :func:`build_bm25` over the same documents.
    """
    import bm25s
    from bm25s.tokenization import Tokenized

    if not docs:
        return build_bm25([""], k1, b)
    flat = np.concatenate([np.asarray(d, dtype=np.int64) for d in docs]) if docs else np.zeros(0, np.int64)
    used = setops.unique(flat)
    if not len(used):
        return build_bm25([""] * len(docs), k1, b)
    remap = np.full(len(vocab), -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    ids = [remap[np.asarray(d, dtype=np.int64)].tolist() for d in docs]
    model = bm25s.BM25(k1=k1, b=b)
    model.index(Tokenized(ids=ids, vocab={vocab[int(u)]: i for i, u in enumerate(used)}), show_progress=False)
    return model


def save_bm25(model: object, directory: Path) -> None:
    model.save(str(directory), show_progress=False)  # type: ignore[attr-defined]


def load_bm25(directory: Path, mmap: bool = True) -> object:
    import bm25s

    return bm25s.BM25.load(str(directory), mmap=mmap, show_progress=False)


class BM25Retriever(MaxScoreTopK, RetrieverBase):
    """Lexical retrieval over one bm25s index (its top k pruned where :class:`MaxScoreTopK` says)."""

    def __init__(self, model: object, collection: str = "passages", prune: bool = True) -> None:
        """``prune``: find the top k by MaxScore where it applies (a ``lucene`` model; the same hits)."""
        self.model = model
        self.collection = collection
        self._vocab: dict[str, int] = model.vocab_dict  # type: ignore[attr-defined]
        self.size = int(model.scores["num_docs"])  # type: ignore[attr-defined]
        # Each entry is idf * tf / (k1 * norm + tf) < idf only for bm25s's lucene scores (bm25+ adds a delta).
        self.lucene = getattr(model, "method", None) == "lucene" and getattr(model, "idf_method", None) == "lucene"
        self.prune = prune and self.lucene

    def _tokens(self, query: str) -> list[str]:
        return [t for t in tokenize([query])[0] if t in self._vocab]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query`` (zeros when no term matches)."""
        return self._scores(self._tokens(query))

    def _scores(self, tokens: list[str]) -> np.ndarray:
        if not tokens:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self.model.get_scores(tokens), dtype=np.float32)  # type: ignore[attr-defined]

    def scores_at(self, query: str, rows: np.ndarray) -> np.ndarray:
        """``scores(query)[rows]``, bit for bit; for a lucene model, reading only those rows' entries
        (:meth:`rows_scores`)."""
        tokens = self._tokens(query)
        if not self.lucene:
            return self._scores(tokens)[np.asarray(rows, dtype=np.int64)]
        return self.rows_scores(ModelPostings(self.model.scores), self._spans(tokens), rows)  # type: ignore[attr-defined]

    def _spans(self, tokens: list[str]) -> list[Term]:
        """The query's terms as the stored entries' spans (a repeated token twice, as ``get_scores`` adds them)."""
        indptr, terms = self.model.scores["indptr"], []  # type: ignore[attr-defined]
        for token in tokens:
            t = self._vocab[token]
            start, end = int(indptr[t]), int(indptr[t + 1])
            # The term's idf (its bound): its entries hold it already, times tf / (... + tf).
            terms.append((lucene_idf(self.size, end - start), [(0, start, end)]))
        return terms

    def retrieve(self, query: str, k: int) -> list[Hit]:
        """The top ``k`` documents: pruned where :meth:`pruning` says (the same hits) unless that would read more
        than :attr:`PRUNE_POSTINGS` of the rows in postings, else from every score."""
        tokens = self._tokens(query)
        if self.pruning(len(tokens)):
            found = self.pruned_top_k(ModelPostings(self.model.scores), self._spans(tokens), k)  # type: ignore[attr-defined]
            if found is not None:
                return [Hit(row, score, self.collection) for row, score in found]
        return top_k(self._scores(tokens), k, keep_zero=False, collection=self.collection)

    def vocabulary(self) -> dict[str, int]:
        """Every term of the model with its document frequency (for checks)."""
        indptr = np.asarray(self.model.scores["indptr"])  # type: ignore[attr-defined]
        return {t: int(indptr[i + 1] - indptr[i]) for t, i in self._vocab.items() if i < len(indptr) - 1}


def collection_bm25(coll: CollectionStore) -> Retriever:
    """The BM25 retriever over ``coll``, built once per collection: the backend's own full-text search, else
    scored from a sharded index's postings, else the bm25s model stored with it."""
    if isinstance(coll, SearchingCollection):
        return coll.bm25_retriever()
    postings = coll.bm25_postings
    if postings is not None:
        return coll.cached("bm25_retriever", lambda: PostingsBM25(*postings(), coll.name))
    model = _model(coll)  # loaded first: its own entry of the collection's cache
    return coll.cached("bm25_retriever", lambda: BM25Retriever(model, coll.name))


def _model(coll: CollectionStore) -> object:
    """The bm25s model over ``coll``'s rows (memory-mapped), loaded once; a damaged one is an IndexFormatError."""
    directory = coll.bm25_dir

    def load() -> object:
        try:
            return load_bm25(directory)
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            reason = "corrupt" if "pickle" in str(exc).lower() else f"corrupt: {type(exc).__name__}"
            raise IndexFormatError(f"{coll.root}: BM25 index {coll.spec.bm25} is unreadable ({reason}); "
                                   "rebuild the index") from None

    return coll.cached("bm25", load)


def search_bm25(coll: CollectionStore, query: str, k: int) -> list[Hit]:
    """The top ``k`` rows of ``coll`` by BM25 for ``query`` (rows without a query term left out), best first
    (:func:`collection_bm25`'s, the backend's own full-text search included)."""
    return collection_bm25(coll).retrieve(query, k)


def bm25_scores(coll: CollectionStore, query: str, rows: np.ndarray) -> np.ndarray:
    """BM25 scores of ``rows`` of ``coll`` for ``query`` (0 where no query term occurs): the collection's score
    array at those rows, read from their postings alone (both BM25 retrievers' ``scores_at``)."""
    if isinstance(coll, SearchingCollection):
        return coll.bm25_scores(query, rows)
    retriever: Any = collection_bm25(coll)
    return np.asarray(retriever.scores_at(query, np.asarray(rows, dtype=np.int64)), dtype=np.float32)


def bm25_retriever(index: IndexStore, collection: str, config: RetrieverConfig) -> Retriever:
    """Registry factory: BM25 over one collection of ``index`` (bm25s, or the backend's full-text search)."""
    return collection_bm25(index.collection(collection))
