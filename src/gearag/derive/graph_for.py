"""The passage graph of a loaded index, whatever it stores: the one place a query process gets it from.

In order: the stored prepared graph (memory-mapped) when it serves the query's
settings; that graph's sources weighed or joined otherwise
(:meth:`~gearag.graph.prepared.PreparedGraph.derived`); the stored graph
arrays, prepared in memory; and for an index stored without an entity graph
(``--no-entity-graph``) or one whose stored graph cannot give the query's
settings, the arrays derived from its passages and triples by the union's
derivation (:func:`~gearag.derive.union_files.write_union` over the corpus as
one shard, in a scratch directory), so that such an index ranks exactly as if
it had been built with them.
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from operator import attrgetter
from pathlib import Path

import numpy as np

from gearag.derive.union_files import ShardColumns, UnionRows, write_union
from gearag.graph.config import PassageGraphConfig
from gearag.graph.graph_arrays import GraphArrays
from gearag.graph.passage_graph import GRAPH_DIR, PassageGraph, stored_graph_arrays
from gearag.graph.prepared import stored_prepared
from gearag.store.interface import IndexStore
from gearag.store.rows import Mapped
from gearag.store.writer import IndexWriter


def graph_arrays_for(index: IndexStore) -> GraphArrays:
    """The index's graph arrays: stored ones, else derived from its passages and triples (cached)."""

    def build() -> GraphArrays:
        stored = stored_graph_arrays(index)
        return stored if stored is not None else derived_graph_arrays(index)

    return index.cached("graph_arrays", build)


def derived_graph_arrays(index: IndexStore) -> GraphArrays:
    """The graph arrays a build of ``index``'s passages and triples with the entity graph on would store: with
    its synonym edges (a function of the entity keys), without NER mentions (their spans are not read here)."""
    cfg = index.config
    config = replace(cfg, resolve=replace(cfg.resolve, entity_graph=True, prepared_graph=False,
                                          synonyms=cfg.resolve.synonyms and cfg.resolve.entity_graph,
                                          ner_mentions=False))
    passages, triples = index.passages, index.triples
    owner = np.asarray(triples.passage, dtype=np.int32)

    def no_spans() -> list[list[str]]:
        raise AssertionError("no edge kind reads NER spans here")

    shard = ShardColumns("s-derived", triples.subjects, triples.objects, Mapped(passages, attrgetter("text")),
                         np.arange(len(passages)), no_spans)
    with tempfile.TemporaryDirectory(prefix="gearag-graph-") as scratch, IndexWriter(Path(scratch) / "g") as w:
        write_union(w, config, [shard], UnionRows(passages, [np.ones(len(owner), dtype=bool)], owner),
                    overlap=False, keep_state=False)
        return GraphArrays.load(w.path(GRAPH_DIR))  # read into memory: the scratch files go


def passage_graph_for(index: IndexStore, config: PassageGraphConfig | None = None) -> PassageGraph:
    """A cached :class:`~gearag.graph.passage_graph.PassageGraph` for ``index`` and ``config`` (module
    docstring)."""
    config = config or PassageGraphConfig()

    def build() -> PassageGraph:
        stored = stored_prepared(index)  # memory-mapped: nothing corpus-sized is built per process
        if stored is not None and stored.serves(config):
            return PassageGraph(stored, config)
        derived = stored.derived(config) if stored is not None else None
        if derived is not None:  # the stored sources, weighed or joined otherwise: no graph built from the corpus
            return PassageGraph(derived, config)
        return PassageGraph(graph_arrays_for(index), config)

    return index.cached("passage_graph", build, variant=repr(config))
