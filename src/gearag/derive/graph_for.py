"""The passage graph of a loaded index, whatever it stores: the one place a query process gets it from.

The stored prepared graph when it serves the query's settings, else its sources weighed or joined otherwise
(:meth:`~gearag.graph.prepared.PreparedGraph.derived`); an index stored without one, or whose stored graph
cannot give the settings (NER mentions off), gets the graph a build would store, derived as a build derives
it (:func:`derived_prepared`), so it ranks exactly as if it had been built with it (docs/architecture.md).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

from gearag.derive.union_files import corpus_as_shard, write_from_nothing
from gearag.graph.config import PassageGraphConfig
from gearag.graph.passage_graph import GRAPH_DIR, PassageGraph
from gearag.graph.prepared import PREPARED, PreparedGraph, load_prepared, stored_prepared
from gearag.store.interface import IndexStore
from gearag.store.writer import IndexWriter


def derived_prepared(index: IndexStore) -> PreparedGraph:
    """The prepared graph a build of ``index``'s passages and triples with the entity graph on would store (under
    the default query settings), in memory: with its synonym edges (a function of the entity keys), without NER
    mentions (their spans are not read here). Cached per loaded index."""

    def build() -> PreparedGraph:
        cfg = index.config
        config = replace(cfg, resolve=replace(cfg.resolve, entity_graph=True, prepared_graph=True,
                                              synonyms=cfg.resolve.synonyms and cfg.resolve.entity_graph,
                                              ner_mentions=False))
        triples = index.triples

        def no_spans() -> list[list[str]]:
            raise AssertionError("no edge kind reads NER spans here")

        shards, union = corpus_as_shard("s-derived", index.passages, triples.subjects, triples.objects,
                                        np.asarray(triples.passage, dtype=np.int32), no_spans)
        with tempfile.TemporaryDirectory(prefix="gearag-graph-") as scratch, IndexWriter(Path(scratch) / "g") as w:
            write_from_nothing(w, config, shards, union, keep_state=False)
            prepared = load_prepared(w.path(f"{GRAPH_DIR}/{PREPARED}"), mmap=False)  # the scratch files go
        assert prepared is not None
        return prepared

    return index.cached("derived_prepared", build)


def resolution_of(index: IndexStore) -> PreparedGraph:
    """What ``index``'s entity resolution is read from: its stored prepared graph, else the prepared graph a build
    would store (:func:`derived_prepared`)."""
    stored = stored_prepared(index)
    return stored if stored is not None else derived_prepared(index)


def passage_graph_for(index: IndexStore, config: PassageGraphConfig | None = None) -> PassageGraph:
    """A cached :class:`~gearag.graph.passage_graph.PassageGraph` for ``index`` and ``config`` (module
    docstring)."""
    config = config or PassageGraphConfig()

    def build() -> PassageGraph:
        graph = stored = stored_prepared(index)  # memory-mapped: nothing corpus-sized is built per process
        if stored is not None and not stored.serves(config):
            graph = stored.derived(config)  # its sources weighed or joined otherwise (None: it cannot)
        if graph is None:  # none stored, or one that cannot give these settings: derived as a build derives it
            made = derived_prepared(index)
            graph = made if made.serves(config) else made.derived(config)
        assert graph is not None, "a graph prepared under the default settings gives every other"
        return PassageGraph(graph, config)

    return index.cached("passage_graph", build, variant=repr(config))
