"""Stage 2 — graph: tie each triple to its passage and build the entity → triples graph (GEAR §3, §4.2)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

import numpy as np

from gearag.config import GraphConfig
from gearag.indexing.stage import Build, CollectionBuild, TripleColumns
from gearag.store.collection import PASSAGES, TRIPLES, CollectionSpec
from gearag.store.graph import TripleGraph
from gearag.store.index import passage_contents
from gearag.store.passage_ids import write_passages
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
        sample = list(subjects[:5000]) + list(objects[:5000])
        if sample and sum(map(is_named, sample)) < 0.05 * len(sample):
            log.warning("few capitalised triple endpoints: linking every endpoint (link_entities=all)")
            named = bool
    if config.max_entity_share >= 1.0:
        return named
    cap = max(20, config.max_entity_share * n_passages)
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
    name = "graph"

    def run(self, build: Build) -> None:
        assert build.extracted is not None, "the graph stage needs the extract stage"
        cols = triple_columns(build.extracted)
        build.extracted = None  # the columns replace it (later stages read build.triples)
        n = len(build.passages)
        linkable = linkable_for(build.config.graph, cols.subjects, cols.objects, cols.owner, n)
        graph = TripleGraph.build(cols.subjects, cols.objects, linkable)
        w = build.writer
        write_passages(w, build.passages)
        rows = zip(cols.subjects, cols.predicates, cols.objects, strict=True)
        w.write_jsonl("triples.jsonl", (list(t) for t in rows), offsets=True)
        w.write_json("entities.json", graph.entities)
        owner = np.asarray(cols.owner, dtype=np.int32)
        w.write_array("arrays/triple_passage.npy", owner)
        w.write_array("arrays/passage_triple_indptr.npy", cols.indptr)
        w.write_array("arrays/triple_head.npy", graph.head)
        w.write_array("arrays/triple_tail.npy", graph.tail)
        w.write_array("arrays/entity_indptr.npy", graph.indptr)
        w.write_array("arrays/entity_indices.npy", graph.indices)
        counts = {"passages": n, "triples": len(cols.subjects), "entities": graph.n_entities}
        # Later stages read the triples back from the file just written (one parse per pass) instead of
        # holding them as Python strings to the end of the build: ~200 bytes a triple, 3+ GB at 1M passages.
        indptr = cols.indptr
        del cols, graph
        build.triples = TripleColumns.read(w.path("triples.jsonl"), owner, indptr)
        build.collections[PASSAGES] = CollectionBuild(CollectionSpec(PASSAGES, n), passage_contents(build.passages))
        build.collections[TRIPLES] = CollectionBuild(
            CollectionSpec(TRIPLES, counts["triples"], sources="arrays/triple_passage.npy"),
            build.triples.lazy_texts(), weights=True
        )
        build.manifest["counts"] = counts
