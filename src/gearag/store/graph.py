"""The triple graph: entity → triples adjacency in CSR form.

GEAR §4.2: two triples are neighbours when they share a head or tail
entity. We store, for each normalised entity, the sorted ids of the triples
in which it is subject or object (``indptr``/``indices``, as in
``scipy.sparse.csr_matrix``), plus each triple's head and tail entity ids.
A triple's neighbours are then the union of its head's and tail's rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import orjson
from scipy import sparse

from gearag import setops
from gearag.arrays import AppendedRows, Csr, LayeredCsr, offsets
from gearag.data.jsonstrings import ChainedStrings, JsonStrings
from gearag.store.rows import JsonList


class TripleGraphStore(Protocol):
    """What the rest of gearag reads from an index's triple graph (:attr:`gearag.store.interface.IndexStore.graph`):
    :class:`TripleGraph`, :class:`LayeredTripleGraph` and the Lance backend's graph."""

    @property
    def entities(self) -> Sequence[str]:
        """Normalised entity names, by entity id."""
        ...

    @property
    def head(self) -> np.ndarray | AppendedRows:
        """Each triple's subject entity id (-1: none), int32: an array, or a base's and a delta's rows."""
        ...

    @property
    def tail(self) -> np.ndarray | AppendedRows:
        """Each triple's object entity id (-1: none), as :attr:`head`."""
        ...

    @property
    def n_entities(self) -> int: ...

    def entity_triples(self, entity: int) -> np.ndarray: ...

    def degree(self, entity: int) -> int: ...

    def neighbours(self, triple: int) -> np.ndarray: ...


class Neighbours:
    """A triple's neighbours through its ends' rows (what beam search reads), and the entity count: a base
    without state, for every triple graph that has ``entities``, ``head``, ``tail`` and :meth:`entity_triples`."""

    entities: Sequence[str]
    head: np.ndarray | AppendedRows
    tail: np.ndarray | AppendedRows

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    def entity_triples(self, entity: int) -> np.ndarray:
        raise NotImplementedError

    def neighbours(self, triple: int) -> np.ndarray:
        """Triples sharing a head or tail entity with ``triple`` (itself excluded), sorted."""
        h, t = int(self.head[triple]), int(self.tail[triple])
        parts = [self.entity_triples(h)]
        if t != h:
            parts.append(self.entity_triples(t))
        out = setops.unique(np.concatenate(parts)) if len(parts) > 1 else parts[0]
        return out[out != triple]


@dataclass(frozen=True)
class TripleGraph(Neighbours):
    """Entity ids per triple and the entity → triples adjacency."""

    entities: Sequence[str]  #: normalised entity names, indexed by entity id
    head: np.ndarray  #: int32 (T,), entity id of each triple's subject, -1 if none
    tail: np.ndarray  #: int32 (T,), entity id of each triple's object, -1 if none
    indptr: np.ndarray  #: int64 (E + 1,)
    indices: np.ndarray  #: int32 (nnz,), triple ids, sorted within each entity

    @classmethod
    def from_ids(cls, entities: Sequence[str], head: np.ndarray, tail: np.ndarray) -> TripleGraph:
        """The graph of triples whose subject and object entity ids (-1: none) are ``head`` and ``tail``;
        ``entities`` is kept as given (a list, or a generation's keys as JSON text, which it only writes)."""
        ids = entities
        n_triples = len(head)
        # Edges (entity, triple) from heads and tails, in triple order; a self-loop counts once. A counting
        # sort by entity (scipy's COO → CSR, stable) keeps each entity's triples ascending: O(edges), where
        # a lexsort of the 34M edges of a million passages took seconds.
        ents, trips = triple_edges(np.stack([np.asarray(head), np.asarray(tail)], axis=1),
                                   np.arange(n_triples, dtype=np.int32))
        csr = sparse.coo_matrix((np.ones(len(ents), dtype=np.int8), (ents, trips)),
                                shape=(len(ids), n_triples)).tocsr()
        indptr = csr.indptr.astype(np.int64)
        trips = csr.indices
        return cls(ids, head, tail, indptr, trips.astype(np.int32))

    def entity_triples(self, entity: int) -> np.ndarray:
        """Triple ids in which ``entity`` is subject or object."""
        if entity < 0:
            return self.indices[:0]
        return self.indices[self.indptr[entity] : self.indptr[entity + 1]]

    def degree(self, entity: int) -> int:
        return 0 if entity < 0 else int(self.indptr[entity + 1] - self.indptr[entity])

    def postings_csr(self) -> Csr:
        """The entity → triples rows as a :class:`~gearag.arrays.Csr` (every weight 1, not stored)."""
        return _postings(np.asarray(self.indptr), self.indices)


def triple_edges(ends: np.ndarray, triples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (entity, triple) edges of triples ``triples`` whose subject and object entity ids are ``ends``
    ((T, 2), -1: none), in triple order: each linked end once, a self-loop once."""
    keep = ends >= 0
    keep[:, 1] &= ends[:, 1] != ends[:, 0]
    return ends[keep], np.broadcast_to(triples[:, None], ends.shape)[keep]


def _postings(indptr: np.ndarray, indices: np.ndarray) -> Csr:
    return Csr(indptr, indices, np.broadcast_to(np.ones(1, dtype=np.float32), np.shape(indices)))


class AppendedStrings(ChainedStrings):
    """A base's strings followed by a delta's (the triple graph's entity keys: an add appends entities)."""

    def __init__(self, base: Sequence[str], tail: Sequence[str]) -> None:
        super().__init__([base, tail])

    @property
    def base(self) -> Sequence[str]:
        return self.parts[0]

    @property
    def tail(self) -> Sequence[str]:
        return self.parts[1]


@dataclass(frozen=True)
class LayeredTripleGraph(Neighbours):
    """A :class:`TripleGraph` as a base's and a delta's (docs/delta.md): triples and entities appended, each
    entity's triples the base's followed by the delta's (:class:`~gearag.arrays.LayeredCsr`)."""

    entities: Sequence[str]
    head: AppendedRows  #: int32 per triple
    tail: AppendedRows
    postings: LayeredCsr  #: entity → triple ids

    def entity_triples(self, entity: int) -> np.ndarray:
        """Triple ids in which ``entity`` is subject or object (ascending: a delta appends later triples)."""
        if entity < 0:
            return np.zeros(0, dtype=np.int32)
        _, triples, _, _ = self.postings.gather(np.asarray([entity]))
        return np.asarray(triples)

    def degree(self, entity: int) -> int:
        return 0 if entity < 0 else int(self.postings.counts(np.asarray([entity]))[0])

    def whole(self) -> TripleGraph:
        """The same graph as one :class:`TripleGraph` (for a writer of whole arrays: the Lance export)."""
        counts, triples, _, _ = self.postings.gather(np.arange(self.n_entities, dtype=np.int64))
        indptr = offsets(counts)
        return TripleGraph(self.entities, np.asarray(self.head.whole(), dtype=np.int32),
                           np.asarray(self.tail.whole(), dtype=np.int32), indptr,
                           np.asarray(triples, dtype=np.int32))


#: Where a delta generation keeps its triple graph's delta (the base's arrays are the base generation's).
DELTA_DIR = "delta"


def _json_text(strings: Sequence[str]) -> bytes:
    """``strings`` as a compact JSON list: a stored list read on demand as its file's bytes (not parsed)."""
    if isinstance(strings, JsonList):
        return strings.path.read_bytes()
    return JsonStrings.of(strings).json()


def _entities_json(entities: Sequence[str]) -> Sequence[str] | orjson.Fragment:
    """Entity keys as :meth:`~gearag.store.writer.IndexWriter.write_json` takes them: a base's and a delta's as
    one list, their JSON texts joined (a million passages' 6.7M base keys are not parsed and written again)."""
    if not isinstance(entities, AppendedStrings):
        return entities
    parts = [_json_text(p).strip() for p in entities.parts if len(p)]
    if not all(p.startswith(b"[") and p.endswith(b"]") for p in parts):
        return list(entities)
    return orjson.Fragment(b"[" + b",".join(p[1:-1] for p in parts) + b"]")


def triple_graph_files(g: TripleGraph) -> dict[str, Any]:
    """The files of a generation (or a plain index) that store ``g``: its entity keys, triple ends and postings."""
    return {"entities.json": _entities_json(g.entities), "arrays/triple_head.npy": g.head,
            "arrays/triple_tail.npy": g.tail, "arrays/entity_indptr.npy": g.indptr,
            "arrays/entity_indices.npy": g.indices}


def layered_graph_files(g: LayeredTripleGraph) -> dict[str, Any]:
    """The files of ``g`` that are its delta's, under :data:`DELTA_DIR` (the appended triples' ends, the new
    entities' keys, the postings' delta rows and where each entity reads them)."""
    entities, postings = g.entities, g.postings
    if not isinstance(entities, AppendedStrings):
        raise TypeError("the entities are not a base's and a delta's")
    out: dict[str, Any] = {f"{DELTA_DIR}/triple_head.npy": g.head.tail, f"{DELTA_DIR}/triple_tail.npy": g.tail.tail,
                           f"{DELTA_DIR}/entities.json": entities.tail,
                           f"{DELTA_DIR}/postings_where.npy": np.asarray(postings.where, dtype=np.int32),
                           f"{DELTA_DIR}/postings_appends.npy": np.asarray(postings.appends, dtype=bool)}
    for name in ("indptr", "indices"):
        out[f"{DELTA_DIR}/postings_{name}.npy"] = getattr(postings.delta, name)
    return out


def open_layered_graph(base: TripleGraph, read: Callable[[str], Any]) -> LayeredTripleGraph:
    """The triple graph ``base`` plus the delta ``read(rel)`` gives (:func:`layered_graph_files`' files)."""
    indptr, indices = (read(f"{DELTA_DIR}/postings_{k}.npy") for k in ("indptr", "indices"))
    postings = LayeredCsr(base.postings_csr(), _postings(indptr, indices), read(f"{DELTA_DIR}/postings_where.npy"),
                          read(f"{DELTA_DIR}/postings_appends.npy"))
    return LayeredTripleGraph(AppendedStrings(base.entities, read(f"{DELTA_DIR}/entities.json")),
                              AppendedRows(np.asarray(base.head), read(f"{DELTA_DIR}/triple_head.npy")),
                              AppendedRows(np.asarray(base.tail), read(f"{DELTA_DIR}/triple_tail.npy")), postings)
