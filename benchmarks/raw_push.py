"""What the forward push would cost if each edge weight were scaled at query time (a design measurement).

    python benchmarks/raw_push.py INDEX_DIR QUESTIONS_JSON [N_QUESTIONS]

Kept raw, an about term's weight would be ``share * w`` with its title name's ``1 / total`` applied
when a query reads it (BENCHMARKS.md, "What an add changes if about weights were normalised at query
time"). This times the library's own push (``run_push_sparse``) on the index's stored transition,
as it is and with every entry it reads multiplied by a per-entry gather from a per-name scale (all
ones: the same estimates), both memory-mapped as stored arrays would be. Runs alternate; medians
over every question's push.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from gearag.derive.graph_for import passage_graph_for
from gearag.graph.ppr import PageRankOperator
from gearag.store.index import Index
from gearag.store.npy import load_npy


class Scaled:
    """An entry array read as ``data[i] * scale[name[i]]`` (what a raw term's weight would cost)."""

    def __init__(self, data: Any, name: np.ndarray, scale: np.ndarray) -> None:
        self.data, self.name, self.scale = data, name, scale

    def __getitem__(self, at: np.ndarray) -> np.ndarray:
        return np.asarray(self.data[at]) * self.scale[self.name[at]]


class Columns(NamedTuple):
    indptr: Any
    indices: Any
    data: Any


def main(root: Path, questions: Path, n: int) -> None:
    graph = passage_graph_for(Index.load(root))
    stored = graph.operator
    cols = stored.columns
    n_names = graph.prepared.n_entities
    with tempfile.TemporaryDirectory() as tmp:
        rng = np.random.default_rng(0)
        np.save(f"{tmp}/name.npy", rng.integers(0, n_names, size=len(cols.data), dtype=np.int32))
        np.save(f"{tmp}/scale.npy", np.ones(n_names, dtype=np.float32))
        scaled = Columns(cols.indptr, cols.indices, Scaled(cols.data, load_npy(Path(f"{tmp}/name.npy")),
                                                           load_npy(Path(f"{tmp}/scale.npy"))))
        raw = PageRankOperator.from_columns(scaled, stored.dangling)
        seeds = [graph.seed_items(q["question"]) for q in json.loads(questions.read_text())[:n]]
        seeds = [s for s in seeds if len(s[0])]
        cfg = graph.config
        times: dict[str, list[float]] = {"stored": [], "raw": []}
        for rep in range(4):
            order = (("stored", stored), ("raw", raw)) if rep % 2 else (("raw", raw), ("stored", stored))
            for name, op in order:
                for nodes, values in seeds:
                    t = time.perf_counter()
                    op.run_push_sparse(nodes, values, damping=cfg.damping, eps=cfg.push_eps)
                    if rep:  # the first round warms both
                        times[name].append(time.perf_counter() - t)
        a = stored.run_push_sparse(*seeds[0], damping=cfg.damping, eps=cfg.push_eps)
        b = raw.run_push_sparse(*seeds[0], damping=cfg.damping, eps=cfg.push_eps)
        assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])  # a scale of ones: the same push
        for name, runs in times.items():
            ms = np.asarray(runs) * 1000
            print(f"{name}: {len(ms)} pushes, median {np.median(ms):.2f} ms, p90 {np.percentile(ms, 90):.2f} ms")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 200)
