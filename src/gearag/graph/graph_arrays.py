"""What an index stores of the passage graph: the entity resolution plus the entity–entity relation counts."""

from __future__ import annotations

import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import sparse

from gearag.data.jsonio import parse_json
from gearag.graph.resolve import Resolution
from gearag.store.npy import load_npy


@dataclass
class GraphArrays:
    """What the index stores: the resolution plus the entity–entity relation counts."""

    resolution: Resolution
    relations: sparse.csr_matrix  #: entity × entity, triple counts (upper and lower both filled)
    #: The entity × entity matrices of the optional edge kinds the index stores, by transition source name
    #: (:mod:`gearag.graph.edge_kinds`): the synonym weights (cosine, symmetric) as ``synonyms``, and whatever
    #: kind is registered next.
    entity_edges: dict[str, sparse.csr_matrix] = field(default_factory=dict)

    @property
    def synonyms(self) -> sparse.csr_matrix | None:
        """The synonym edges (None: not stored)."""
        return self.entity_edges.get("synonyms")

    def matrix(self, source: str) -> sparse.csr_matrix | None:
        """The stored matrix a transition source of that name reads (None: this index has none)."""
        return self.relations if source == "relations" else self.entity_edges.get(source)

    @classmethod
    def from_resolution(cls, res: Resolution, *, relations: sparse.csr_matrix | None = None) -> GraphArrays:
        """The arrays of a resolution: its relation counts (``relations``: already made, by
        :func:`relation_counts`; else made here)."""
        return cls(res, relations if relations is not None else relation_counts(res.triple_ends, len(res.keys)))

    # -- persistence -------------------------------------------------------
    def files(self) -> dict[str, np.ndarray]:
        r = self.resolution
        out: dict[str, np.ndarray] = {}
        optional = (("ner_mentions", r.ner_mentions), *self.entity_edges.items())
        for name, m in (("about", r.about), ("mentions", r.mentions), ("relations", self.relations), *optional):
            if m is None:
                continue
            # Views where the dtype is already the stored one: a copy of every array at once was ~1 GB at 1M,
            # alive beside the prepared graph that is derived while these are written.
            out[f"{name}_indptr.npy"] = np.asarray(m.indptr, dtype=np.int64)
            out[f"{name}_indices.npy"] = np.asarray(m.indices, dtype=np.int32)
            out[f"{name}_data.npy"] = np.asarray(m.data, dtype=np.float32)
        out["triple_ends.npy"] = r.triple_ends
        return out

    def meta(self) -> dict:
        r = self.resolution
        out = {"keys": r.keys, "n_names": r.n_names, "n_passages": int(r.mentions.shape[0])}
        return out | {"entity_edges": list(self.entity_edges)} if self.entity_edges else out

    @classmethod
    def load(cls, directory: Path) -> GraphArrays:
        return cls.from_files(lambda name: (directory / name).read_bytes())

    @classmethod
    def from_files(cls, read: Callable[[str], bytes]) -> GraphArrays:
        """The arrays from their files' bytes, ``read(name)`` for each name of :meth:`files` (any store)."""
        meta = parse_json(read("entities.json"))
        n_e, n_p = len(meta["keys"]), meta["n_passages"]

        def npy(name: str) -> np.ndarray:
            return load_npy(io.BytesIO(read(name)), mmap=False)

        def csr(name: str, shape: tuple[int, int]) -> sparse.csr_matrix:
            arr = {part: npy(f"{name}_{part}.npy") for part in ("indptr", "indices", "data")}
            return sparse.csr_matrix((arr["data"], arr["indices"], arr["indptr"]), shape=shape)

        def optional(name: str, shape: tuple[int, int]) -> sparse.csr_matrix | None:
            """Arrays only some indices store (synonym edges, NER mentions): None when absent."""
            try:
                return csr(name, shape)
            except (FileNotFoundError, KeyError):
                return None

        res = Resolution(meta["keys"], meta["n_names"], csr("about", (n_e, n_p)), csr("mentions", (n_p, n_e)),
                         npy("triple_ends.npy"), optional("ner_mentions", (n_p, n_e)))
        edges = {str(name): csr(str(name), (n_e, n_e)) for name in meta.get("entity_edges", [])}
        if "entity_edges" not in meta:  # none listed (or written before the listing): at most the synonym edges
            synonyms = optional("synonyms", (n_e, n_e))
            edges = {"synonyms": synonyms} if synonyms is not None else {}
        return cls(res, csr("relations", (n_e, n_e)), edges)


def relation_pairs(triple_ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) entity pairs of triples' relations, each both ways (``triple_ends``: each triple's
    subject and object entity, -1: none): self-loops and unlinked ends count not."""
    ends = triple_ends
    keep = (ends[:, 0] >= 0) & (ends[:, 1] >= 0) & (ends[:, 0] != ends[:, 1])
    h, t = ends[keep, 0].astype(np.int64), ends[keep, 1].astype(np.int64)
    return np.concatenate([h, t]), np.concatenate([t, h])


def relation_counts(triple_ends: np.ndarray, n_entities: int) -> sparse.csr_matrix:
    """Entity × entity triple counts (:func:`relation_pairs`, summed): the relations of a resolution of
    ``n_entities`` entities."""
    rows, cols = relation_pairs(triple_ends)
    rel = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(n_entities, n_entities))
    rel.sum_duplicates()
    return rel
