"""Stage 2b — resolve: mentions to the passages about them, and the passage-aware graph (issue 9).

Runs after the graph stage (it needs the cleaned triples) and stores the
arrays of :class:`gearag.graph.passage_graph.GraphArrays` under ``graph/``:
which passage each entity is *about*, which entities each passage mentions,
and entity–entity relation counts. Indices built without this stage (or
with ``entity_graph`` off) build the same arrays in memory on first use.
"""

from __future__ import annotations

from gearag.graph.passage_graph import GraphArrays, write_graph_arrays
from gearag.indexing.stage import Build
from gearag.text import is_named


class ResolveStage:
    name = "resolve"

    def run(self, build: Build) -> None:
        if not build.config.resolve.entity_graph:
            return
        assert build.triples is not None, "the resolve stage needs the graph stage"
        cols = build.triples
        arrays = GraphArrays.build([p.title for p in build.passages], [p.text for p in build.passages],
                                   cols.subjects, cols.objects, cols.owner, is_named)
        write_graph_arrays(build.writer, arrays)
