"""Stage 2b — resolve: mentions to the passages about them, and the passage-aware graph.

Runs after the graph stage (it needs the cleaned triples) and stores the
arrays of :class:`gearag.graph.passage_graph.GraphArrays` under ``graph/``:
which passage each entity is *about*, which entities each passage mentions,
and entity–entity relation counts; with ``ResolveConfig.ner_mentions`` also
the passages' NER-span mentions, with ``ResolveConfig.synonyms`` the synonym
edges between entity names (embedded with the build's embedder). Indices
built without this stage (or with ``entity_graph`` off) build the same
arrays in memory on first use (without NER mentions and synonyms).
"""

from __future__ import annotations

import time

import numpy as np

from gearag.graph.passage_graph import GraphArrays, write_graph_arrays
from gearag.indexing.stage import Build
from gearag.text import is_named


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
        spans = None
        if cfg.ner_mentions:
            from gearag.graph.ner import ner_spans

            started = time.perf_counter()
            spans = ner_spans(texts)
            seconds["ner"] = round(time.perf_counter() - started, 3)
        embed = None
        if cfg.synonyms:
            embedder = build.embedder()

            def embed(keys: list[str]) -> np.ndarray:
                started = time.perf_counter()
                out = np.concatenate([embedder.encode(keys[i : i + build.config.embed.batch])
                                      for i in range(0, len(keys), build.config.embed.batch)] or
                                     [np.zeros((0, embedder.dim), dtype=np.float32)])
                seconds["embed_names"] = round(time.perf_counter() - started, 3)
                return out

        started = time.perf_counter()
        arrays = GraphArrays.build([p.title for p in build.passages], texts, cols.subjects, cols.objects, cols.owner,
                                   is_named, ner_spans=spans, embed=embed, synonym_threshold=cfg.synonym_threshold,
                                   synonym_neighbours=cfg.synonym_neighbours)
        seconds["graph"] = round(time.perf_counter() - started, 3)
        seconds["prepare"] = write_graph_arrays(build.writer, arrays, prepare=cfg.prepared_graph)
        build.manifest["resolve"] = {
            "seconds": seconds,
            "synonym_edges": int(arrays.synonyms.nnz // 2) if arrays.synonyms is not None else None,
            "ner_mentions": int(arrays.resolution.ner_mentions.nnz)
            if arrays.resolution.ner_mentions is not None else None,
        }
