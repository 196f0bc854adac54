"""Stage 2 — graph: tie each triple to its passage and build the entity → triples graph (GEAR §3, §4.2)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence

import numpy as np

from gearag.derive.triple_graph import corpus_triple_graph
from gearag.derive.union_files import cannot_grow, corpus_as_shard, write_from_nothing
from gearag.indexing.stage import Build, CollectionBuild, TripleColumns
from gearag.malloc import release_free_memory
from gearag.store import shards as shard_store
from gearag.store.collection import PASSAGES, TRIPLES, CollectionSpec
from gearag.store.graph import triple_graph_files
from gearag.store.index import passage_contents
from gearag.store.passage_ids import write_passages
from gearag.store.shards import shard_key
from gearag.store.writer import IndexWriter

log = logging.getLogger(__name__)


def _clean(value: str) -> str:
    """``value`` with whitespace runs made one space; the same object when it already is (as the
    extractors' triples almost always are), so the columns share the strings instead of copying them."""
    value = str(value)
    clean = " ".join(value.split())
    return value if clean == value else clean


def triple_columns(extracted: Sequence[Iterable[Iterable[str]]]) -> TripleColumns:
    """Whitespace-normalised triples with empty parts dropped, as columns in passage order."""
    indptr = np.zeros(len(extracted) + 1, dtype=np.int64)
    subjects: list[str] = []
    predicates: list[str] = []
    objects: list[str] = []
    owner: list[int] = []
    for row, triples in enumerate(extracted):
        for s, p, o in triples:
            s, p, o = _clean(s), _clean(p), _clean(o)
            if s and p and o:
                subjects.append(s)
                predicates.append(p)
                objects.append(o)
                owner.append(row)
        indptr[row + 1] = len(subjects)
    return TripleColumns(subjects, predicates, objects, owner, indptr)


def write_triples(w: IndexWriter, subjects: Sequence[str], predicates: Sequence[str], objects: Sequence[str],
                  passage: Sequence[int] | np.ndarray, indptr: np.ndarray) -> np.ndarray:
    """Write an index's triples (``triples.jsonl``), each one's passage row and the offsets of each passage's
    triples (a build's, or a compact's merged shard); the passage rows as written (int32)."""
    rows = zip(subjects, predicates, objects, strict=True)
    w.write_jsonl("triples.jsonl", (list(t) for t in rows), offsets=True)
    owner = np.asarray(passage, dtype=np.int32)
    w.write_array("arrays/triple_passage.npy", owner)
    w.write_array("arrays/passage_triple_indptr.npy", indptr)
    return owner


class GraphStage:
    """Writes the passages, the cleaned triples and the triple graph; the triple graph, resolution and optional
    edge kinds of a plain build are an add onto an empty index (:func:`~gearag.derive.union_files.write_from_nothing`),
    keeping the state its first add extends when ``graph.growable`` is on. ``union=False``: the triple graph only
    (a shard's, whose generation makes the rest)."""

    name = "graph"

    def __init__(self, union: bool = True) -> None:
        self.union = union

    def run(self, build: Build) -> None:
        assert build.extracted is not None, "the graph stage needs the extract stage"
        cols = triple_columns(build.extracted)
        build.extracted = None  # the columns replace it (later stages read build.triples)
        n = len(build.passages)
        w = build.writer
        write_passages(w, build.passages)
        if not self.union:
            graph = corpus_triple_graph(build.config.graph, cols.subjects, cols.objects,
                                        np.asarray(cols.owner, dtype=np.int64), n)
            w.write_files(triple_graph_files(graph))
            n_entities = graph.n_entities
            del graph
        owner = write_triples(w, cols.subjects, cols.predicates, cols.objects, cols.owner, cols.indptr)
        n_triples = len(cols.subjects)
        # Later stages read the triples back from the file just written (one parse per pass) instead of
        # holding them as Python strings to the end of the build: ~200 bytes a triple, 3+ GB at 1M passages.
        indptr = cols.indptr
        del cols
        build.triples = TripleColumns.read(w.path("triples.jsonl"), owner, indptr)
        if self.union:
            keep = build.config.graph.growable and cannot_grow(build.config) is None
            n_entities = self._union(build, owner, keep)
        build.collections[PASSAGES] = CollectionBuild(CollectionSpec(PASSAGES, n), passage_contents(build.passages))
        build.collections[TRIPLES] = CollectionBuild(
            CollectionSpec(TRIPLES, n_triples, sources="arrays/triple_passage.npy"),
            build.triples.lazy_texts(), weights=True
        )
        build.manifest["counts"] = {"passages": n, "triples": n_triples, "entities": n_entities}

    @staticmethod
    def _union(build: Build, owner: np.ndarray, keep_state: bool) -> int:
        """The triple graph and resolution of the build as one shard, with (``keep_state``) the union state its
        first add extends (the two one after the other: a build's peak counts more than the seconds they would
        overlap); its entity count."""
        assert build.triples is not None
        name = f"s-{shard_key(build.passages)}"

        def spans() -> Sequence[Sequence[str]]:
            assert build.ner_spans is not None, "NER mentions need the ner stage"
            return build.ner_spans

        shards, union = corpus_as_shard(name, build.passages, build.triples.subjects, build.triples.objects, owner,
                                        spans)
        n_entities, seconds, meta = write_from_nothing(build.writer, build.config, shards, union,
                                                       keep_state=keep_state)
        release_free_memory()  # what the name hashing's threads freed would stay resident in their arenas
        if keep_state:
            build.manifest["union"] = {"shard": name, "tables": shard_store.TABLES_VERSION,
                                       "union": shard_store.UNION_VERSION}
        if "edges" in meta:  # a resolution was stored
            build.manifest["resolve"] = {"seconds": seconds, **meta["edges"]}
        return n_entities
