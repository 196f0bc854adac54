"""Stage 2b — resolve: mentions to the passages about them, and the passage-aware graph.

Runs after the graph stage (it needs the cleaned triples) and stores the
arrays of :class:`gearag.graph.passage_graph.GraphArrays` under ``graph/``:
which passage each entity is *about*, which entities each passage mentions,
and entity–entity relation counts, plus the edge kinds the config stores
(:mod:`gearag.graph.edge_kinds`: NER mentions from the ner stage's spans,
synonym edges between entity names embedded with the build's embedder).
A growable build has made all of this in the graph stage already
(:func:`gearag.indexing.union_files.write_union`); indices built without
this stage (or with ``entity_graph`` off) build the core arrays in memory on
first use (without the optional edge kinds).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from gearag.embed.base import Embedder
from gearag.graph.edge_kinds import EdgeInputs, with_edge_kinds
from gearag.graph.passage_graph import GraphArrays, write_graph_arrays
from gearag.indexing.stage import Build
from gearag.text import is_named


def name_encoder(embedder: Callable[[], Embedder], batch: int,
                 seconds: dict[str, float] | None = None) -> Callable[[list[str]], np.ndarray]:
    """Entity names → unit rows with ``embedder()`` (loaded on the first call), ``batch`` names per call, as
    every path that stores synonym edges encodes them (``seconds["embed_names"]``: how long it took)."""

    def encode(keys: list[str]) -> np.ndarray:
        started = time.perf_counter()
        model = embedder()
        out = np.concatenate([model.encode(keys[i : i + batch]) for i in range(0, len(keys), batch)] or
                             [np.zeros((0, model.dim), dtype=np.float32)])
        if seconds is not None:
            seconds["embed_names"] = round(time.perf_counter() - started, 3)
        return out

    return encode


def edge_counts(arrays: GraphArrays) -> dict[str, int | None]:
    """What the manifest records of the optional edge kinds (None: not stored)."""
    res = arrays.resolution
    return {"synonym_edges": int(arrays.synonyms.nnz // 2) if arrays.synonyms is not None else None,
            "ner_mentions": int(res.ner_mentions.nnz) if res.ner_mentions is not None else None}


class ResolveStage:
    name = "resolve"

    def run(self, build: Build) -> None:
        cfg = build.config.resolve
        if not cfg.entity_graph or build.resolved:
            return
        assert build.triples is not None, "the resolve stage needs the graph stage"
        cols = build.triples
        seconds: dict[str, float] = {}
        texts = [p.text for p in build.passages]
        started = time.perf_counter()
        arrays = GraphArrays.build([p.title for p in build.passages], texts, cols.subjects, cols.objects, cols.owner,
                                   is_named)

        def spans() -> Sequence[Sequence[str]]:
            assert build.ner_spans is not None, "NER mentions need the ner stage"
            return build.ner_spans

        arrays = with_edge_kinds(arrays, cfg, EdgeInputs(spans, name_encoder(build.embedder, build.config.embed.batch,
                                                                             seconds)))
        seconds["graph"] = round(time.perf_counter() - started, 3)
        seconds["prepare"] = write_graph_arrays(build.writer, arrays, prepare=cfg.prepared_graph)
        build.manifest["resolve"] = {"seconds": seconds, **edge_counts(arrays)}
