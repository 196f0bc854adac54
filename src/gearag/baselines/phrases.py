"""HippoRAG's phrase nodes over gearag's triples: names, passage counts, specificity and synonym edges.

Phrase nodes are the normalised subjects and objects of *all* triples
(HippoRAG keeps every OpenIE argument, not only named entities, unlike
gearag's own entity graph). Normalisation follows HippoRAG's
``processing_phrases``: lower-case, every character other than ASCII letters,
digits and spaces becomes a space; we also collapse runs of spaces, so
``"The  Beatles"`` and ``"the beatles"`` meet.

Everything here is plain numpy/scipy and knows nothing about queries; the synonym KNN lives in
:mod:`gearag.graph.synonyms` (shared with the passage-aware graph).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

# One KNN for HippoRAG's phrase nodes and gearag's entity nodes (re-exported for the baseline's callers).
from gearag.graph.synonyms import SYNONYM_BLOCK, synonym_edges

__all__ = ["SYNONYM_BLOCK", "PhraseTable", "normalise_phrase", "phrase_table", "synonym_edges"]

_NOT_ALNUM = re.compile(r"[^a-z0-9 ]")
_SPACES = re.compile(r"\s+")

def normalise_phrase(text: str) -> str:
    """HippoRAG's phrase key: lower-case ASCII letters, digits and single spaces."""
    return _SPACES.sub(" ", _NOT_ALNUM.sub(" ", text.lower())).strip()


@dataclass
class PhraseTable:
    """Phrase nodes of a triple table and how they tie to triples and passages."""

    #: Normalised phrase per node id.
    phrases: list[str]
    #: Node id of each triple's subject and object (-1 when the argument normalises to nothing).
    subject: np.ndarray
    object: np.ndarray
    #: (passages × phrases) count of the passage's triples that mention the phrase
    #: (HippoRAG v1's ``docs_to_facts × facts_to_phrases``).
    passage_phrase: sparse.csr_matrix

    @property
    def size(self) -> int:
        return len(self.phrases)

    def passages_per_phrase(self) -> np.ndarray:
        """How many distinct passages each phrase occurs in (HippoRAG's ``phrase_to_num_doc``)."""
        return np.diff(self.passage_phrase.tocsc().indptr).astype(np.int64)

    def specificity(self) -> np.ndarray:
        """Node specificity ``1/|P_i|`` (HippoRAG §3.2); 1 for a phrase in no passage."""
        counts = self.passages_per_phrase()
        return np.where(counts > 0, 1.0 / np.maximum(counts, 1), 1.0)

    def relation_edges(self) -> sparse.csr_matrix:
        """Symmetric phrase×phrase weights: how many triples join the two phrases (self-loops dropped)."""
        ok = (self.subject >= 0) & (self.object >= 0) & (self.subject != self.object)
        s, o = self.subject[ok], self.object[ok]
        n = self.size
        ones = np.ones(s.shape[0], dtype=np.float64)
        m = sparse.coo_matrix((ones, (s, o)), shape=(n, n)).tocsr()
        return (m + m.T).tocsr()


def phrase_table(subjects: Sequence[str], objects: Sequence[str], passage: np.ndarray,
                 n_passages: int) -> PhraseTable:
    """Phrase nodes of triples ``(subjects[i], ·, objects[i])`` from passage rows ``passage[i]``."""
    ids: dict[str, int] = {}

    def node(text: str) -> int:
        key = normalise_phrase(text)
        if not key:
            return -1
        found = ids.get(key)
        if found is None:
            found = ids[key] = len(ids)
        return found

    subj = np.fromiter((node(s) for s in subjects), dtype=np.int64, count=len(subjects))
    obj = np.fromiter((node(o) for o in objects), dtype=np.int64, count=len(objects))
    rows = np.concatenate([passage, passage]).astype(np.int64)
    cols = np.concatenate([subj, obj])
    keep = cols >= 0
    # A phrase that is both subject and object of one triple counts once for that triple.
    same = np.concatenate([np.zeros_like(subj, dtype=bool), subj == obj])
    keep &= ~same
    data = np.ones(int(keep.sum()), dtype=np.float64)
    matrix = sparse.coo_matrix((data, (rows[keep], cols[keep])), shape=(n_passages, len(ids))).tocsr()
    matrix.sum_duplicates()
    return PhraseTable(list(ids), subj, obj, matrix)
