"""Stage 2 — graph: tie each triple to its passage and build the entity → triples graph (GEAR §3, §4.2)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from operator import attrgetter

import numpy as np

from gearag.config import GraphConfig
from gearag.graph.hubs import NAMED_SAMPLE, hub_cap, too_few_named
from gearag.indexing.stage import Build, CollectionBuild, TripleColumns
from gearag.indexing.union_files import ShardColumns, UnionRows, cannot_grow, write_union
from gearag.malloc import release_free_memory
from gearag.store import shards as shard_store
from gearag.store.collection import PASSAGES, TRIPLES, CollectionSpec
from gearag.store.graph import TripleGraph
from gearag.store.index import passage_contents
from gearag.store.passage_ids import write_passages
from gearag.store.rows import Mapped
from gearag.store.shards import shard_key
from gearag.text import is_named, normalise_entity

log = logging.getLogger(__name__)


def _clean(value: str) -> str:
    """``value`` with whitespace runs made one space; the same object when it already is (as the
    extractors' triples almost always are), so the columns share the strings instead of copying them."""
    value = str(value)
    clean = " ".join(value.split())
    return value if clean == value else clean


def linkable_for(
    config: GraphConfig, subjects: Sequence[str], objects: Sequence[str], owner: Sequence[int] | np.ndarray,
    n_passages: int,
) -> Callable[[str], bool]:
    """The endpoint filter for ``link_entities`` and ``max_entity_share``.

    ``named`` falls back to ``all`` (with a warning) for a corpus with almost
    no capitalised endpoints, e.g. lower-cased text, where it would link nothing.
    """
    named: Callable[[str], bool] = is_named
    if config.link_entities == "all":
        named = bool
    else:
        sample = list(subjects[:NAMED_SAMPLE]) + list(objects[:NAMED_SAMPLE])
        if too_few_named(sum(map(is_named, sample)), len(sample)):
            log.warning("few capitalised triple endpoints: linking every endpoint (link_entities=all)")
            named = bool
    if config.max_entity_share >= 1.0:
        return named
    cap = hub_cap(config.max_entity_share, n_passages)
    seen: dict[str, set[int]] = {}
    for s, o, p in zip(subjects, objects, owner, strict=True):
        for e in (s, o):
            if named(e):
                seen.setdefault(normalise_entity(e), set()).add(p)
    hubs = {e for e, rows in seen.items() if len(rows) > cap}
    return lambda e: named(e) and normalise_entity(e) not in hubs


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


class GraphStage:
    """Writes the passages, the cleaned triples and the triple graph.

    In a plain build whose ``graph.growable`` is on (and that ``gearag add``
    can extend: :func:`~gearag.indexing.union_files.cannot_grow`), the triple
    graph and the entity resolution are made by
    :func:`~gearag.indexing.union_files.write_union` for the build as one
    shard: the same arrays, plus the state the index's first add extends (the
    resolve stage then has nothing left to do). ``union=False``: the triple
    graph only (a shard of a sharded index, whose generation makes the rest).
    """

    name = "graph"

    def __init__(self, union: bool = True) -> None:
        self.union = union

    def run(self, build: Build) -> None:
        assert build.extracted is not None, "the graph stage needs the extract stage"
        cols = triple_columns(build.extracted)
        build.extracted = None  # the columns replace it (later stages read build.triples)
        n = len(build.passages)
        growable = self.union and build.config.graph.growable and cannot_grow(build.config) is None
        w = build.writer
        write_passages(w, build.passages)
        if not growable:
            linkable = linkable_for(build.config.graph, cols.subjects, cols.objects, cols.owner, n)
            graph = TripleGraph.build(cols.subjects, cols.objects, linkable)
            w.write_json("entities.json", graph.entities)
            w.write_array("arrays/triple_head.npy", graph.head)
            w.write_array("arrays/triple_tail.npy", graph.tail)
            w.write_array("arrays/entity_indptr.npy", graph.indptr)
            w.write_array("arrays/entity_indices.npy", graph.indices)
            n_entities = graph.n_entities
            del graph
        rows = zip(cols.subjects, cols.predicates, cols.objects, strict=True)
        w.write_jsonl("triples.jsonl", (list(t) for t in rows), offsets=True)
        owner = np.asarray(cols.owner, dtype=np.int32)
        w.write_array("arrays/triple_passage.npy", owner)
        w.write_array("arrays/passage_triple_indptr.npy", cols.indptr)
        n_triples = len(cols.subjects)
        # Later stages read the triples back from the file just written (one parse per pass) instead of
        # holding them as Python strings to the end of the build: ~200 bytes a triple, 3+ GB at 1M passages.
        indptr = cols.indptr
        del cols
        build.triples = TripleColumns.read(w.path("triples.jsonl"), owner, indptr)
        if growable:
            n_entities = self._union(build, owner)
        build.collections[PASSAGES] = CollectionBuild(CollectionSpec(PASSAGES, n), passage_contents(build.passages))
        build.collections[TRIPLES] = CollectionBuild(
            CollectionSpec(TRIPLES, n_triples, sources="arrays/triple_passage.npy"),
            build.triples.lazy_texts(), weights=True
        )
        build.manifest["counts"] = {"passages": n, "triples": n_triples, "entities": n_entities}

    @staticmethod
    def _union(build: Build, owner: np.ndarray) -> int:
        """The triple graph, resolution and union state of the build as one shard (the two one after the other:
        a build's peak counts more than the seconds they would overlap); its entity count."""
        assert build.triples is not None
        name = f"s-{shard_key(build.passages)}"
        def spans() -> Sequence[Sequence[str]]:
            assert build.ner_spans is not None, "NER mentions need the ner stage"
            return build.ner_spans

        shard = ShardColumns(name, build.triples.subjects, build.triples.objects,
                             Mapped(build.passages, attrgetter("text")), np.arange(len(build.passages)), spans)
        union = UnionRows(build.passages, [np.ones(len(owner), dtype=bool)], owner)
        n_entities, seconds, meta = write_union(build.writer, build.config, [shard], union, overlap=False)
        release_free_memory()  # what the preparation's transition thread freed would stay resident after the stage
        build.manifest["union"] = {"shard": name, "tables": shard_store.TABLES_VERSION,
                                   "union": shard_store.UNION_VERSION}
        build.resolved = build.config.resolve.entity_graph
        if build.resolved:  # what the resolve stage records of its own run
            build.manifest["resolve"] = {"seconds": seconds, "synonym_edges": None, "ner_mentions": None,
                                         **meta.get("edges", {})}
        return n_entities
